"""`match --adjudicate proven`: games a proof ends, stored with their proof, sound."""

from __future__ import annotations

import contextlib
import json
import re
import sqlite3
from pathlib import Path

import pytest
from commands import invoke
from files import write_tournament
from proofs import check_evidence, play_out

from arbiter.results.records import GameRecord, Termination


def match(tmp_path: Path, *extra: str) -> tuple[int, str, str]:
    done = invoke(
        "match",
        "random",
        "skeleton",
        "--size",
        "7",
        "--tc",
        "5+0.05",
        "--store",
        "m.sqlite",
        *extra,
        cwd=tmp_path,
    )
    return done.returncode, done.stdout, done.stderr


def test_match_adjudicates_proven_games_and_keeps_the_proof(tmp_path: Path) -> None:
    rc, out, err = match(
        tmp_path, "--games", "4", "--adjudicate", "proven", "--records", "r.jsonl", "--json", "-q"
    )
    assert rc == 0, err
    summary = json.loads(out)
    lines = (tmp_path / "r.jsonl").read_text().splitlines()
    records = [GameRecord.from_json(json.loads(line)) for line in lines]
    adjudicated = [r for r in records if r.termination is Termination.ADJUDICATED]
    assert adjudicated, "random bots on Atoll 7 leave proven positions in every game"
    assert summary["terminations"]["adjudicated"] == len(adjudicated)
    empty = sum(r.rules.geometry.n_cells - r.replay().n_stones for r in adjudicated)
    saved = summary["adjudicated"]
    assert (saved["games"], saved["cells_left"]) == (len(adjudicated), empty)
    expected = engine_seconds_saved(records)
    assert saved["engine_seconds_by_engine"] == pytest.approx(expected, abs=0.011)
    assert saved["engine_seconds"] == pytest.approx(sum(expected.values()), abs=0.03)
    # Every engine with moves left has an estimate. Its size is not checked: random
    # bots answer in well under a millisecond, so on a quick machine the JSON's two
    # decimals round it to 0.0.
    assert set(saved["engine_seconds_by_engine"]) == set(expected) and expected
    for record in adjudicated:
        assert record.replay().winner is None  # ended before the board connected
        check_evidence(record)
        for seed in range(10):  # the proof's owner wins against random replies
            play_out(record, seed)
    status = invoke("tournament", "status", "m.sqlite", "--json", cwd=tmp_path)
    stored = json.loads(status.stdout)["adjudicated"]
    assert stored["engine_seconds_by_engine"] == pytest.approx(expected, abs=0.011)
    assert (stored["games"], stored["cells_left"]) == (saved["games"], saved["cells_left"])
    text = invoke("tournament", "status", "m.sqlite", cwd=tmp_path).stdout
    assert f"about {saved['engine_seconds']:.1f} s of engine time saved at most" in text
    shown = invoke("show", "r.jsonl", "--game", adjudicated[0].game_id, cwd=tmp_path)
    assert "wins by a proven connection" in shown.stdout
    assert "link " in shown.stdout and "carrier " in shown.stdout

    # The store was started with adjudication: playing on without it is refused.
    rc, out, err = match(tmp_path, "--games", "6")
    assert rc == 2
    assert "--adjudicate: changed from 'proven' to 'off'" in err and "--fresh" in err


def engine_seconds_saved(records: list[GameRecord]) -> dict[str, float]:
    """The engine time saved as the docs define it, computed here from the records: each
    engine's share of the adjudicated games' empty cells (the engine on move first) times
    its mean time per move in those games, opening moves left out."""
    total: dict[str, list[float]] = {}
    left: dict[str, int] = {}
    for r in records:
        if r.termination is not Termination.ADJUDICATED:
            continue
        seats = (r.seat1, r.seat2)
        for ply in range(r.opening, r.plies):
            mover = total.setdefault(seats[ply % 2], [0.0, 0])
            mover[0] += r.move_ms[ply]
            mover[1] += 1
        empty = r.rules.geometry.n_cells - r.replay().n_stones
        first, second = seats[r.plies % 2], seats[(r.plies + 1) % 2]
        left[first] = left.get(first, 0) + (empty + 1) // 2
        left[second] = left.get(second, 0) + empty // 2
    return {e: n * total[e][0] / total[e][1] / 1000 for e, n in left.items() if n}


def test_a_store_started_before_adjudication_refuses_it(tmp_path: Path) -> None:
    rc, _, err = match(tmp_path, "--games", "2")
    assert rc == 0, err
    # As a store started before the condition existed keeps them: without the key.
    with contextlib.closing(sqlite3.connect(tmp_path / "m.sqlite")) as db, db:
        (text,) = db.execute("SELECT value FROM meta WHERE key = 'conditions'").fetchone()
        conditions = json.loads(text)
        assert conditions.pop("adjudicate") == "off"
        db.execute("UPDATE meta SET value = ? WHERE key = 'conditions'", (json.dumps(conditions),))
    rc, _, err = match(tmp_path, "--games", "4")
    assert rc == 0, err  # played out, as before: no change
    rc, _, err = match(tmp_path, "--games", "4", "--adjudicate", "proven")
    assert rc == 2 and "--adjudicate: changed from 'off' to 'proven'" in err, err


def test_a_tournament_records_adjudication_and_refuses_a_change(tmp_path: Path) -> None:
    header = 'engines = ["random", "skeleton"]\nrounds = 2\nsize = 7\ntc = "5+0.05"\n'
    path = write_tournament(tmp_path, header + 'adjudicate = "proven"', [])
    done = invoke("tournament", "run", str(path), "-q", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    status = json.loads(invoke("tournament", "status", str(path), "--json", cwd=tmp_path).stdout)
    # Random bots on Atoll 7: a proof ends about 3 games in 4 (4 games: none ended so
    # about once in 200 runs).
    assert status["adjudicated"]["games"] >= 1
    report = invoke("report", str(path), "-o", "r.html", cwd=tmp_path)
    assert report.returncode == 0, report.stderr
    page = (tmp_path / "r.html").read_text()
    assert "proven: a game ends when one side has a proven connection" in page
    assert "s of engine time saved at most" in page

    write_tournament(tmp_path, header, [])  # adjudicate left out: "off"
    done = invoke("tournament", "run", str(path), "-q", cwd=tmp_path)
    assert done.returncode == 2
    assert "tournament.adjudicate: changed from 'proven' to 'off'" in done.stderr, done.stderr
    assert "--fresh" in done.stderr


def test_an_unknown_adjudication_is_refused_with_the_choices(tmp_path: Path) -> None:
    header = 'engines = ["random", "skeleton"]\nadjudicate = "always"\n'
    path = write_tournament(tmp_path, header, [])
    done = invoke("tournament", "run", str(path), cwd=tmp_path)
    assert done.returncode == 2
    assert 'tournament.adjudicate: unknown value "always"' in done.stderr, done.stderr
    assert '"off", "proven"' in done.stderr


def test_an_arena_states_adjudication_and_refuses_a_change(tmp_path: Path) -> None:
    import pytest
    import trio
    from arena_helpers import arena_file

    from arbiter.arena.config import load_arena
    from arbiter.arena.serve import serve
    from arbiter.errors import ConfigError
    from arbiter.results.store import Store

    proven = load_arena(arena_file(tmp_path, engines="", extra='adjudicate = "proven"'))
    assert proven.conditions()["adjudicate"] == "proven"
    store, _ = Store.open_for_run(proven.output)
    with store:
        store.begin(proven.name, proven.conditions(), {}, {})
    off = load_arena(arena_file(tmp_path, engines=""))
    assert off.conditions()["adjudicate"] == "off"

    async def start() -> None:
        with trio.fail_after(30):  # a server that started would serve until stopped
            await serve(off, print)

    with pytest.raises(ConfigError) as refused:  # before the port opens
        trio.run(start)
    said = str(refused.value)
    assert "arena.adjudicate: changed from 'proven' to 'off'" in said, said


def test_show_draws_an_adjudicated_games_proof_on_its_final_board(tmp_path: Path) -> None:
    from xml.etree import ElementTree

    from arbiter.games.adjudication import proof_json
    from arbiter.results.records import Evidence, StoneColor
    from arbiter.rules import Color, Game, Variant
    from arbiter.rules.proof import Level, find_proof

    # The guide's Hex 5 example: b2, c3 and d4 joined by two bridges and to both of
    # Black's edges by second-row templates.
    game = Game(Variant(islands=4, size=5, pie=False))
    for move in ["b2", "a1", "c3", "e1", "d4"]:
        game.play(move)
    proof = find_proof(game.geometry, game.colors, Color.BLACK, level=Level.BRIDGES)
    assert proof is not None
    data = proof_json(game, proof)
    record = GameRecord(
        game_id="g1",
        variant={"islands": 4, "size": 5, "pie": False},
        seat1="one",
        seat2="two",
        tc={"seat1": "5+0.05", "seat2": "5+0.05"},
        started="2026-01-01T00:00:00+00:00",
        termination=Termination.ADJUDICATED,
        black="one",
        white="two",
        moves=["b2", "a1", "c3", "e1", "d4"],
        move_ms=[1.0] * 5,
        winner="one",
        winner_color=StoneColor.BLACK,
        evidence=Evidence(engine="referee", detail="proven connection", proof=data),
    )
    (tmp_path / "r.jsonl").write_text(json.dumps(record.to_json()) + "\n")
    done = invoke("show", "r.jsonl", "--game", "g1", "--svg", "p.svg", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    svg = ElementTree.parse(tmp_path / "p.svg").getroot()
    ns = "{http://www.w3.org/2000/svg}"
    drawn = svg.find(f"{ns}g[@class='proof']")
    assert drawn is not None and drawn.get("data-owner") == "black"
    ringed = {
        c.get("data-name") for c in drawn.iter(f"{ns}circle") if c.get("class") == "proof-stone"
    }
    assert ringed == {"b2", "c3", "d4"}
    shaded: dict[str, set[str]] = {}
    for cell in drawn.iter(f"{ns}polygon"):
        kind = (cell.get("class") or "").removeprefix("carrier ")
        shaded.setdefault(kind, set()).add(str(cell.get("data-name")))
    expected: dict[str, set[str]] = {}
    for link in data["links"]:
        kind = {"bridge": "bridge", "edge template II": "edge2"}[link["kind"]]
        expected.setdefault(kind, set()).update(link["carrier"])
    assert shaded == expected and set(expected) == {"bridge", "edge2"}
    legend = [t.text for t in drawn.iter(f"{ns}text")]
    assert legend == ["black's proven chain", "bridge carrier", "edge template II carrier"]
    # The report's viewer gets the same drawing for its final board (report.js marks the
    # cells with the classes board.css colours).
    done = invoke("report", "r.jsonl", "-o", "r.html", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    page = (tmp_path / "r.html").read_text()
    found = re.search(
        r'<script type="application/json" id="report-data">(.*?)</script>', page, re.S
    )
    assert found is not None
    (view,) = json.loads(found.group(1))["games"]
    names = Variant(islands=4, size=5, pie=False).geometry.names
    assert view["pf"]["o"] == "black"
    assert {names[i] for i in decode_cells(view["pf"]["st"])} == {"b2", "c3", "d4"}
    drawn_kinds = {
        css: {names[i] for i in decode_cells(cells)} for css, _, cells in view["pf"]["k"]
    }
    assert drawn_kinds == expected
    assert 'id="proof-legend"' in page and ".board .cell.carrier.edge2 polygon" in page
    # An earlier position is not the one proven: no proof is drawn on it.
    done = invoke("show", "r.jsonl", "--game", "g1", "--ply", "3", "--svg", "q.svg", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert 'class="proof"' not in (tmp_path / "q.svg").read_text()


def decode_cells(text: str) -> list[int]:
    """The report's cell encoding (two digits a cell), as report.js decodes it."""
    from arbiter.views.html import CELL_DIGITS

    return [
        CELL_DIGITS.index(text[i]) * 64 + CELL_DIGITS.index(text[i + 1])
        for i in range(0, len(text), 2)
    ]
