"""Hex games as SGF: real matches played through the CLI, the SGF read back by sgfmill
and checked against the records and against the rules.

`tournament export --format sgf` and `show --sgf` write the files; every check reads
them with an SGF library, never with the writer's own code.
"""

from __future__ import annotations

import json
import os
import re
import stat
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest
from commands import invoke
from paths import BADBOT, ROOT
from sgfmill import sgf, sgf_grammar

from arbiter.results.records import GameRecord, Termination, read_records
from arbiter.rules import Color

# An engine given as a command line goes under the name it answers: this one holds `]`
# and `\`, which SGF text must escape.
NAME = "sw]ap\\per"
SWAPPER = f"{sys.executable} {BADBOT} swapper --name '{NAME}'"
RESIGNER = f"resigner={sys.executable} {BADBOT} resign --after 2"
CRASHER = f"crasher={sys.executable} {BADBOT} crash --after 2"
CELL = re.compile(r"^[a-z][0-9]+$")


@dataclass
class Played:
    folder: Path
    store: Path  # a Hex match, random against a bot that swaps whenever it may
    swaps: Path  # the same games as records
    faults: Path  # a Hex match ended by a resignation and by a crash
    atoll_store: Path  # an Atoll match
    atoll: Path  # the same game as records


@pytest.fixture(scope="module")
def played(tmp_path_factory: pytest.TempPathFactory) -> Played:
    folder = tmp_path_factory.mktemp("sgf")
    p = Played(
        folder,
        folder / "hex.sqlite",
        folder / "hex.jsonl",
        folder / "faults.jsonl",
        folder / "atoll.sqlite",
        folder / "atoll.jsonl",
    )
    hex_args = ["--islands", "4", "--size", "5", "--tc", "5+0", "-q"]
    for args in (
        [
            "random",
            SWAPPER,
            "--games",
            "4",
            "--seed",
            "2",
            "--records",
            str(p.swaps),
            "--store",
            str(p.store),
            *hex_args,
        ],
        [RESIGNER, CRASHER, "--games", "2", "--records", str(p.faults), *hex_args],
        [
            "random",
            "skeleton",
            "--games",
            "1",
            "--size",
            "7",
            "--tc",
            "5+0",
            "-q",
            "--records",
            str(p.atoll),
            "--store",
            str(p.atoll_store),
        ],
    ):
        done = invoke("match", *args, cwd=folder)
        assert done.returncode == 0, done.stderr
    return p


def games_of(path: Path) -> list[sgf.Sgf_game]:
    """Every game tree of an SGF collection, as sgfmill reads it."""
    return [
        sgf.Sgf_game.from_coarse_game_tree(tree)
        for tree in sgf_grammar.parse_sgf_collection(path.read_bytes())
    ]


def expected_result(record: GameRecord) -> str:
    if record.void:
        return "Void"
    colour = "B" if record.winner == record.black else "W"
    how = {Termination.CONNECTION: "", Termination.RESIGN: "Resign", Termination.TIME: "Time"}.get(
        record.termination, "Forfeit"
    )
    return f"{colour}+{how}"


def check_game(game: sgf.Sgf_game, record: GameRecord) -> None:
    """The SGF game says what the record says: board, players, result, and the moves,
    whose colours follow HexGui's swap (White moves again after `swap-pieces`) and whose
    stones make the position the rules make of the record."""
    root = game.get_root()
    assert root.get("FF") == 4 and root.get("GM") == 11 and root.get("CA") == "UTF-8"
    assert game.get_size() == record.variant["size"]
    assert root.get("PB") == record.black and root.get("PW") == record.white
    assert root.get("GN") == record.game_id and record.game_id in root.get("GC")
    assert root.get("RE") == expected_result(record)
    assert root.get("DT") == record.started[:10]
    assert not {"B", "W", "AB", "AW", "PL"} & set(root.properties())  # moves in nodes only
    played: list[tuple[str, str]] = []
    for node in game.get_main_sequence()[1:]:
        [(colour, [value])] = node.get_raw_property_map().items()
        played.append((colour, value.decode()))
    assert [v for _, v in played] == ["swap-pieces" if m == "swap" else m for m in record.moves]
    assert all(CELL.match(v) for _, v in played if v != "swap-pieces")
    for n, (colour, value) in enumerate(played):
        if n == 0:
            assert colour == "B"
        elif played[n - 1][1] == "swap-pieces":
            assert colour == "W" and value != "swap-pieces"
        else:
            assert colour != played[n - 1][0]
        if value == "swap-pieces":
            assert n == 1 and colour == "W"
    stones = {v: c for c, v in played if v != "swap-pieces"}
    rules = record.replay()
    names = rules.geometry.names
    assert stones == {
        names[i]: "B" if c == Color.BLACK else "W" for i, c in enumerate(rules.colors) if c
    }
    if record.termination is Termination.CONNECTION:
        assert rules.winner is not None
        assert root.get("RE") == ("B+" if rules.winner is Color.BLACK else "W+")
    if not record.void:
        assert (root.get("PB") if root.get("RE")[0] == "B" else root.get("PW")) == record.winner


def test_export_writes_every_hex_game_as_hexgui_does(played: Played) -> None:
    out = played.folder / "export.sgf"
    done = invoke("tournament", "export", str(played.store), "--format", "sgf", "--out", str(out))
    assert done.returncode == 0, done.stderr
    assert "Wrote 4 Hex games as SGF" in done.stderr
    records = list(read_records(played.swaps))
    games = games_of(out)
    assert len(games) == len(records) == 4
    for game, record in zip(games, records, strict=True):
        check_game(game, record)
    # The bot that swaps whenever it may swapped as seat 2: the swapper took Black.
    swapped = [r for r in records if r.seat2 == NAME]
    assert swapped and all(r.moves[1] == "swap" and r.black == NAME for r in swapped)
    assert "\\]" in out.read_text() and "\\\\" in out.read_text()  # the name, escaped
    # As HexGui writes it: the root's properties, then one node per move.
    assert out.read_text().startswith("(;FF[4]GM[11]")
    assert ";B[" + swapped[0].moves[0] + "];W[swap-pieces];W[" in out.read_text()


def test_show_writes_one_game_with_its_result(played: Played) -> None:
    faults = list(read_records(played.faults))
    assert {r.termination for r in faults} == {Termination.RESIGN, Termination.CRASH}
    for record, source in [(r, played.faults) for r in faults] + [
        (r, played.swaps) for r in read_records(played.swaps)
    ]:
        out = played.folder / f"{record.game_id}.sgf"
        done = invoke("show", str(source), "--game", record.game_id, "--sgf", str(out))
        assert done.returncode == 0, done.stderr
        assert f"Wrote game {record.game_id} as SGF to {out}." in done.stderr
        [game] = games_of(out)
        check_game(game, record)
        # The same game on standard output.
        shown = invoke("show", str(source), "--game", record.game_id, "--sgf", "-")
        assert shown.returncode == 0 and shown.stdout == out.read_text()
    crash = next(r for r in faults if r.termination is Termination.CRASH)
    [game] = games_of(played.folder / f"{crash.game_id}.sgf")
    assert "crasher forfeits (crash: genmove" in game.get_root().get("GC")


def test_void_attempts_and_atoll_games_are_left_out_saying_so(played: Played) -> None:
    lines = played.swaps.read_text().splitlines()
    void = json.loads(lines[0])
    void.update(
        game_id="hex-void",
        void=True,
        winner=None,
        winner_color=None,
        termination="setup",
        moves=[],
        move_ms=[],
        plies=0,
        opening=0,
        reason="random failed to start",
    )
    mixed = played.folder / "mixed.jsonl"
    mixed.write_text(
        "\n".join([*lines, json.dumps(void), *played.atoll.read_text().splitlines()]) + "\n"
    )
    out = played.folder / "mixed.sgf"
    done = invoke("show", str(mixed), "--sgf", str(out))
    assert done.returncode == 0, done.stderr
    assert "Wrote 4 Hex games as SGF" in done.stderr
    assert "Left out 1 void attempt(s)" in done.stderr
    assert "Left out 1 Atoll game(s): Atoll has no standard game record format" in done.stderr
    assert [g.get_root().get("GN") for g in games_of(out)] == [
        r.game_id for r in read_records(played.swaps)
    ]
    # Named with --game, a void attempt is written, its result Void.
    single = played.folder / "void.sgf"
    done = invoke("show", str(mixed), "--game", "hex-void", "--sgf", str(single))
    assert done.returncode == 0, done.stderr
    [game] = games_of(single)
    check_game(game, GameRecord.from_json(void))
    assert "void attempt" in game.get_root().get("GC")
    # An Atoll game has no SGF: exit 2, nothing written.
    [atoll] = read_records(played.atoll)
    refused = invoke(
        "show", str(mixed), "--game", atoll.game_id, "--sgf", str(played.folder / "atoll.sgf")
    )
    assert refused.returncode == 2 and "Atoll has no standard" in refused.stderr
    refused = invoke("show", str(played.atoll), "--sgf", str(played.folder / "atoll.sgf"))
    assert refused.returncode == 2 and "no rated Hex game" in refused.stderr
    refused = invoke(
        "tournament",
        "export",
        str(played.atoll_store),
        "--format",
        "sgf",
        "--out",
        str(played.folder / "atoll.sgf"),
    )
    assert refused.returncode == 2
    assert "holds Atoll games; Atoll has no standard game record format" in refused.stderr
    assert "--records" in refused.stderr
    assert not (played.folder / "atoll.sgf").exists()


def test_sgf_outputs_are_never_written_over_what_they_did_not_write(played: Played) -> None:
    out = played.folder / "kept.sgf"
    export = ["tournament", "export", str(played.store)]
    assert invoke(*export, "--format", "sgf", "--out", str(out)).returncode == 0
    first = out.read_text()
    again = invoke(*export, "--format", "sgf", "--out", str(out))
    assert again.returncode == 2 and "left alone" in again.stderr and "--force" in again.stderr
    out.write_text("(;FF[4]GM[11]SZ[5])\n")
    forced = invoke(*export, "--format", "sgf", "--out", str(out), "--force")
    assert forced.returncode == 0 and out.read_text() == first
    for args, message in (
        ([], "give --records FILE or --out FILE"),
        (["--records", "a.jsonl", "--out", "a.sgf"], "not both"),
        (["--records", "a.sgf", "--format", "sgf"], "--records writes JSON lines"),
        (["--format", "sgf", "--out", str(played.store)], "tournament's own files"),
    ):
        refused = invoke(*export, *args, cwd=played.folder)
        assert refused.returncode == 2 and message in refused.stderr, refused.stderr
    assert not (played.folder / "a.sgf").exists() and not (played.folder / "a.jsonl").exists()
    # A FIFO is streamed to, never replaced.
    fifo = played.folder / "fifo"
    os.mkfifo(fifo)
    reader = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)  # so that the writer can open it
    try:
        streamed = invoke(*export, "--format", "sgf", "--out", str(fifo))
        assert streamed.returncode == 0, streamed.stderr
        data = b""
        while chunk := os.read(reader, 1 << 16):
            data += chunk
    finally:
        os.close(reader)
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode) and data.decode() == first
    # `show --sgf` replaces an SGF file, and nothing else.
    records = played.swaps.read_bytes()
    refused = invoke("show", str(played.swaps), "--game", "1", "--sgf", str(played.swaps))
    assert refused.returncode == 2 and "left alone" in refused.stderr
    assert played.swaps.read_bytes() == records
    replaced = invoke("show", str(played.swaps), "--game", "1", "--sgf", str(out))
    assert replaced.returncode == 0 and len(games_of(out)) == 1
    position = invoke("show", str(played.swaps), "--game", "1", "--ply", "2", "--sgf", "-")
    assert position.returncode == 2 and "whole games" in position.stderr


def test_names_are_escaped_and_hold_no_control_character(played: Played) -> None:
    """A name an engine answered may hold anything: the file holds it escaped, one line,
    safe to print, and an SGF reader reads back the visible escape."""
    data = next(r for r in read_records(played.swaps) if r.swapped).to_json()
    hostile = "evil\x1b[31m]\n\\"
    renamed = {data["seat2"]: hostile}
    for key in ("seat1", "seat2", "black", "white", "winner"):
        data[key] = renamed.get(data[key], data[key])
    records = played.folder / "hostile.jsonl"
    records.write_text(json.dumps(data) + "\n")
    out = played.folder / "hostile.sgf"
    done = invoke("show", str(records), "--sgf", str(out))
    assert done.returncode == 0, done.stderr
    text = out.read_text()
    assert not any(ord(c) < 32 and c != "\n" for c in text) and "\x1b" not in text
    [game] = games_of(out)
    assert game.get_root().get("PB") == "evil\\x1b[31m]\\x0a\\"


def test_show_sgf_streams_the_collection_as_it_reads_the_records(played: Played) -> None:
    """`show --sgf` writes each game as it reads it: the first game's tree comes out of a
    pipe before the rest of the records go in, and the whole output is the collection
    the store's export writes of the same games, byte for byte."""
    import selectors
    import subprocess

    lines = played.swaps.read_text().splitlines(keepends=True)
    export = played.folder / "streamed-export.sgf"
    done = invoke(
        "tournament", "export", str(played.store), "--format", "sgf", "--out", str(export)
    )
    assert done.returncode == 0, done.stderr
    with subprocess.Popen(
        [sys.executable, "-m", "arbiter", "show", "/dev/stdin", "--sgf", "-"],
        cwd=ROOT,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
    ) as child:
        assert child.stdin is not None and child.stdout is not None
        try:
            child.stdin.write(lines[0].encode())
            child.stdin.flush()
            first = b""
            with selectors.DefaultSelector() as selector:
                selector.register(child.stdout, selectors.EVENT_READ)
                while not first.endswith(b")\n"):
                    assert selector.select(timeout=60), "no game came out before the input ended"
                    chunk = os.read(child.stdout.fileno(), 1 << 16)
                    assert chunk, "the command ended before writing a game"
                    first += chunk
            child.stdin.write("".join(lines[1:]).encode())
            child.stdin.close()
            rest = child.stdout.read()
            assert child.wait(timeout=60) == 0
        finally:
            if child.poll() is None:
                child.kill()
    assert first + rest == export.read_bytes()
    assert len(games_of(export)) == 4 and first.count(b"(;") == 1
    out = played.folder / "streamed-show.sgf"
    shown = invoke("show", str(played.swaps), "--sgf", str(out))
    assert shown.returncode == 0 and out.read_bytes() == export.read_bytes()
