"""Tournaments end to end: the real CLI, real TOML files, real engines, a real SQLite store.

The first test runs `arbiter` as a program of its own, as a user does; the others run the
same command line in this process (a second of interpreter start-up less each), but for
the kills and signals, which need a process to kill."""

from __future__ import annotations

import json
import random
import re
import signal
import subprocess
import sys
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import pytest
from commands import arbiter, invoke
from files import bot, write_tournament
from paths import BADBOT, ROOT
from processes import killed_after_games
from stores import games_stored, read_store

from arbiter.results.records import read_records
from arbiter.results.store import Store
from arbiter.rules import Game, Variant
from arbiter.runs.schedule import WAIT
from arbiter.runs.tournament import load_tournament

ENGINES = ROOT / "arbiter" / "bots" / "engines.toml"


BASIC = 'rounds = 1\nconcurrency = 2\ntc = "10+0.1"\nsize = 7\nrandom_openings = 1\nseed = 5'


@pytest.mark.smoke
def test_round_robin_stores_every_game_once_and_prints_the_elo_table(tmp_path: Path) -> None:
    t = write_tournament(tmp_path, BASIC, [bot("alpha"), bot("beta"), bot("gamma")])
    done = arbiter("tournament", "run", str(t), "--every", "2")
    assert done.returncode == 0, done.stderr
    db = tmp_path / "t.sqlite"
    stored = read_store(db)
    games = {row.game_id: row for row in stored.games}
    assert len(stored.games) == 6 == len(games) and not stored.damage
    pairs = {(g.seat1, g.seat2) for g in games.values()}
    assert pairs == {
        (a, b) for a in ("alpha", "beta", "gamma") for b in ("alpha", "beta", "gamma") if a != b
    }
    for data in stored.records:
        row = games[data["game_id"]]
        # Keyed by the file's names, never by what the engines answer to `name`.
        assert data["seat1"] == row.seat1 and data["seat2"] == row.seat2
        assert data["winner"] == (row.seat1, row.seat2)[row.winner_seat - 1]
        assert row.termination == data["termination"] == "connection"
        replay = Game(Variant(8, 7, True))
        for move in data["moves"]:
            replay.play(move)
        assert replay.winner is not None
    # The engines table keeps the identity, the engine's own answer and hashes.
    engines = stored.engines
    assert {(e["name"], e["reply_name"]) for e in engines} == {
        (n, f"reply-{n}") for n in ("alpha", "beta", "gamma")
    }
    assert all(e["program_sha256"] and len(str(e["script_sha256"])) == 64 for e in engines)
    for n in range(1, 7):
        assert f"Started game {n} of 6" in done.stderr
    assert "games left, ETA" in done.stderr  # the periodic standings
    out = done.stdout
    for word in (
        "rank",
        "engine",
        "Elo",
        "±95%",
        "games",
        "score %",
        "W-L",
        "LOS next",
        "faults",
        "Seat 1 advantage",
        "alpha",
        "beta",
        "gamma",
    ):
        assert word in out
    status = invoke("tournament", "status", str(t), "--json")
    assert status.returncode == 0, status.stderr
    data = json.loads(status.stdout)
    assert data["done"] == 6 and data["left"] == 0 and data["games"] == 6
    assert [e["rank"] for e in data["engines"]] == [1, 2, 3]
    assert sum(e["wins"] for e in data["engines"]) == 6
    assert abs(sum(e["elo"] for e in data["engines"])) < 0.5  # centred on the pool mean
    assert set(data["seat_advantage"]) == {"elo", "error"} and data["connected"] is True
    for e in data["engines"]:
        assert set(e) == {
            "rank",
            "name",
            "elo",
            "error",
            "games",
            "wins",
            "losses",
            "score",
            "faults",
            "los_next",
        }
    # Re-running a finished tournament plays nothing and changes nothing.
    again = invoke("tournament", "run", str(t))
    assert again.returncode == 0, again.stderr
    assert "Started game" not in again.stderr
    assert games_stored(db) == 6


def test_gauntlet_plays_the_challenger_against_each_other_engine(tmp_path: Path) -> None:
    header = BASIC + '\nformat = "gauntlet"\nchallenger = "hero"'
    t = write_tournament(tmp_path, header, [bot("a"), bot("hero"), bot("b")])
    done = invoke("tournament", "run", str(t), "-q")
    assert done.returncode == 0, done.stderr
    games = read_store(tmp_path / "t.sqlite").pairings()
    assert sorted(games.elements()) == sorted(
        [("hero", "a"), ("a", "hero"), ("hero", "b"), ("b", "hero")]
    )


def test_adding_an_engine_or_a_round_plays_only_the_new_games(tmp_path: Path) -> None:
    t = write_tournament(tmp_path, BASIC, [bot("a"), bot("b")])
    assert invoke("tournament", "run", str(t), "-q").returncode == 0
    db = tmp_path / "t.sqlite"
    before = {r["game_id"]: r for r in read_store(db).records}
    assert len(before) == 2
    t = write_tournament(
        tmp_path, BASIC.replace("rounds = 1", "rounds = 2"), [bot("a"), bot("b"), bot("c")]
    )
    done = invoke("tournament", "run", str(t))
    assert done.returncode == 0, done.stderr
    assert done.stderr.count("Started game") == 10  # 12 scheduled, 2 stored
    after = {r["game_id"]: r for r in read_store(db).records}
    assert len(after) == 12
    assert {k: after[k] for k in before} == before  # the old games are untouched


@pytest.mark.parametrize(
    ("change", "key"),
    [
        (lambda h, e: (h.replace('tc = "10+0.1"', 'tc = "20+0.1"'), e), "tournament.tc"),
        # The other conditions of play are compared the same way as tc: slow.
        pytest.param(
            lambda h, e: (h.replace("size = 7", "size = 11"), e),
            "tournament.size",
            marks=pytest.mark.slow,
        ),
        pytest.param(
            lambda h, e: (h + "\npie = false", e), "tournament.pie", marks=pytest.mark.slow
        ),
        pytest.param(
            lambda h, e: (h, [bot("a", "ok", "--ms", "1"), e[1]]),
            "engine 'a'.command",
            marks=pytest.mark.slow,
        ),
    ],
    ids=["tc", "size", "pie", "command"],
)
def test_a_changed_condition_is_refused_unless_fresh(tmp_path: Path, change, key: str) -> None:
    engines = [bot("a"), bot("b")]
    t = write_tournament(tmp_path, BASIC, engines)
    assert invoke("tournament", "run", str(t), "-q").returncode == 0
    header, engines = change(BASIC, engines)
    t = write_tournament(tmp_path, header, engines)
    refused = invoke("tournament", "run", str(t), "-q")
    assert refused.returncode == 2
    [line] = refused.stderr.strip().splitlines()
    assert key in line and "--fresh" in line and str(t) in line
    fresh = invoke("tournament", "run", str(t), "-q", "--fresh")
    assert fresh.returncode == 0, fresh.stderr
    kept = [p for p in tmp_path.glob("t.*.sqlite")]
    assert len(kept) == 1 and games_stored(kept[0]) == 2
    assert games_stored(tmp_path / "t.sqlite") == 2


def test_openings_are_shared_within_each_pair_and_used_in_order(tmp_path: Path) -> None:
    (tmp_path / "open.txt").write_text("# two openings\nc3 swap d4\n\ne5   # one ply\n")
    header = BASIC.replace("random_openings = 1", 'openings = "open.txt"').replace(
        "rounds = 1", "rounds = 2"
    )
    t = write_tournament(tmp_path, header, [bot("a"), bot("b")])
    done = invoke("tournament", "run", str(t), "-q")
    assert done.returncode == 0, done.stderr
    records = read_store(tmp_path / "t.sqlite").records  # in play order

    def opening(moves: list[str]) -> str:
        return next(o for o in ("c3 swap d4", "e5") if moves[: len(o.split())] == o.split())

    openings = [opening(r["moves"]) for r in records]
    assert len(openings) == 4
    assert openings[0] == openings[1] and openings[2] == openings[3]  # shared within pairs
    assert {openings[0], openings[2]} == {"c3 swap d4", "e5"}  # in order, one per round
    # The records say which plies the opening played.
    assert [r["opening"] for r in records] == [len(o.split()) for o in openings]
    assert all(r["swapped"] == (o == "c3 swap d4") for r, o in zip(records, openings, strict=True))


def test_an_opening_line_that_skips_the_swap_decision_is_refused(tmp_path: Path) -> None:
    (tmp_path / "open.txt").write_text("e5\nc3 d4\n")
    t = write_tournament(
        tmp_path,
        BASIC.replace("random_openings = 1", 'openings = "open.txt"'),
        [bot("a"), bot("b")],
    )
    done = invoke("tournament", "run", str(t), "-q")
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert "open.txt" in done.stderr and "line 2" in done.stderr
    assert "move 2 is the swap decision" in done.stderr and "first stone" in done.stderr
    assert not (tmp_path / "t.sqlite").exists()


def test_under_the_pie_rule_engines_decide_the_swap_after_a_random_stone(tmp_path: Path) -> None:
    from arbiter.bots.connection import Tables, wants_swap

    # random_openings = 3 plays one stone under the pie rule: move 2 is the engine's.
    header = (
        BASIC.replace("random_openings = 1", "random_openings = 3")
        .replace("rounds = 1", "rounds = 6")
        .replace("size = 7", "size = 11")
    )
    t = write_tournament(
        tmp_path,
        f'{header}\nengines_file = {json.dumps(str(ENGINES))}\nengines = ["heuristic", "random"]',
        [],
    )
    done = invoke("tournament", "run", str(t), "-q")
    assert done.returncode == 0, done.stderr
    records = read_store(tmp_path / "t.sqlite").records
    assert len(records) == 12 and all(r["opening"] == 1 for r in records)
    tables = Tables(Game(Variant(8, 11, True)).geometry)
    decided = 0
    for r in records:
        if r["seat2"] != "heuristic":
            continue  # the random bot swaps at a coin toss
        game = Game(Variant(8, 11, True))
        game.play(r["moves"][0])
        assert r["swapped"] == wants_swap(tables, game) == (r["moves"][1] == "swap")
        decided += r["swapped"]
    assert decided, "no opening stone in the central zone: choose another seed"


def test_a_store_whose_random_openings_took_the_swap_decision_is_not_resumed(
    tmp_path: Path,
) -> None:
    from arbiter.runs.tournament import load_tournament

    header = BASIC.replace("random_openings = 1", "random_openings = 2")
    t = write_tournament(tmp_path, header, [bot("a"), bot("b")])
    loaded = load_tournament(t)
    old = {k: v for k, v in loaded.conditions().items() if k != "swap_decision"}
    with Store.open(loaded.output) as store:  # as a store started before the pie fix
        store.begin("t", old, loaded.definition(), loaded.entries())
    before = loaded.output.read_bytes()
    done = invoke("tournament", "run", str(t), "-q")
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert "random_openings" in done.stderr and "swap decision" in done.stderr
    assert "--fresh" in done.stderr
    assert loaded.output.read_bytes() == before
    assert invoke("tournament", "run", str(t), "-q", "--fresh").returncode == 0


def test_random_openings_differ_between_pairs_and_match_within(tmp_path: Path) -> None:
    header = BASIC.replace("random_openings = 1", "random_openings = 3\npie = false").replace(
        "rounds = 1", "rounds = 3"
    )
    t = write_tournament(tmp_path, header, [bot("a"), bot("b")])
    assert invoke("tournament", "run", str(t), "-q").returncode == 0
    stored = read_store(tmp_path / "t.sqlite")
    by_pair: dict[str, set[tuple[str, ...]]] = {}
    for record in stored.records:  # each game starts with its pair's three random plies
        by_pair.setdefault(record["pair"], set()).add(tuple(record["moves"][:3]))
    assert len(stored.records) == 6
    assert by_pair.keys() == {row.pair_key for row in stored.games}
    assert len(by_pair) == 3 and all(len(v) == 1 for v in by_pair.values())
    assert len({next(iter(v)) for v in by_pair.values()}) == 3


def test_identical_games_between_deterministic_engines_are_pointed_out(tmp_path: Path) -> None:
    first = ROOT / "tests" / "engines" / "firstcell.py"
    engines = [
        f'[[engine]]\nname = "{n}"\ncommand = {json.dumps([sys.executable, str(first)])}\n'
        for n in ("d1", "d2")
    ]
    header = BASIC.replace("random_openings = 1", "random_openings = 0").replace(
        "rounds = 1", "rounds = 2"
    )
    t = write_tournament(tmp_path, header, engines)
    done = invoke("tournament", "run", str(t), "-q")
    assert done.returncode == 0, done.stderr
    assert "all 4 games between d1 and d2 were identical" in done.stdout
    status = invoke("tournament", "status", str(t))
    assert "were identical" in status.stdout and "openings" in status.stdout


def _deterministic(*names: str) -> list[str]:
    first = ROOT / "tests" / "engines" / "firstcell.py"
    return [
        f'[[engine]]\nname = "{n}"\ncommand = {json.dumps([sys.executable, str(first)])}\n'
        for n in names
    ]


def test_a_file_without_openings_opens_each_pair_with_a_random_stone(tmp_path: Path) -> None:
    # Deterministic engines from the empty board would replay one game per seat order.
    header = BASIC.replace("random_openings = 1\n", "").replace("rounds = 1", "rounds = 2")
    t = write_tournament(tmp_path, header, _deterministic("d1", "d2"))
    done = invoke("tournament", "run", str(t), "-q")
    assert done.returncode == 0, done.stderr
    assert "identical" not in done.stdout
    records = read_store(tmp_path / "t.sqlite").records
    assert len(records) == 4 and all(r["opening"] == 1 for r in records)
    assert len({r["moves"][0] for r in records}) == 2  # one stone per pair, two pairs


def test_a_store_started_from_the_empty_board_resumes_as_it_was_started(tmp_path: Path) -> None:
    # A store written when a file without random_openings meant the empty board: the
    # same file resumes it (no refusal), and its new games are of the same kind.
    header = BASIC.replace("random_openings = 1", "random_openings = 0")
    t = write_tournament(tmp_path, header, _deterministic("d1", "d2"))
    assert invoke("tournament", "run", str(t), "-q").returncode == 0
    t.write_text(
        t.read_text().replace("random_openings = 0\n", "").replace("rounds = 1", "rounds = 2")
    )
    done = invoke("tournament", "run", str(t))
    assert done.returncode == 0, done.stderr
    assert "started when a file without random_openings" in done.stderr
    assert "set random_openings = 1" in done.stderr and "--fresh" in done.stderr
    records = read_store(tmp_path / "t.sqlite").records
    assert len(records) == 4 and all(r.get("opening", 0) == 0 for r in records)
    assert "all 4 games between d1 and d2 were identical" in done.stdout
    fresh = invoke("tournament", "run", str(t), "-q", "--fresh")
    assert fresh.returncode == 0, fresh.stderr
    records = read_store(tmp_path / "t.sqlite").records
    assert len(records) == 4 and all(r["opening"] == 1 for r in records)


BAD_FILES = [
    ("[tournament\nname = 'x'", "not valid TOML", ""),
    ('[tournament]\nrounds = "two"', "tournament.rounds", "integer"),
    ("[tournament]\nround = 2", "unknown key(s) round", "allowed keys"),
    ('[tournament]\ntc = "fast"', "tournament.tc", "BASE+INC"),
    ("[tournament]\nsize = 12", "tournament.size", "Atoll sizes"),
    ('[tournament]\nformat = "knockout"', "tournament.format", "round-robin"),
    (
        '[tournament]\n[[engine]]\nname = "a"\ncommand = ["./nope.py"]',
        "engine 'a'",
        "does not exist",
    ),
    ('[tournament]\n[[engine]]\ncommand = ["python3", "x.py"]', "engine #1", "name"),
    ('[tournament]\nopenings = "open.txt"', "open.txt", "line 2"),
    (
        '[tournament]\n[[engine]]\nname = "a"\ncommand = "python3"\ncolour = 1',
        "engine 'a'",
        "colour",
    ),
    ('[tournament]\nformat = "swiss"\nrounds = 2', "tournament.rounds", "at most 1 rounds"),
    ('[tournament]\nformat = "adaptive"', "tournament.games", "budget of games"),
    ('[tournament]\nformat = "adaptive"\ngames = 8\nrounds = 2', "tournament.rounds", "games = N"),
    ('[tournament]\nformat = "adaptive"\ngames = 8\nuntil = "best"', "tournament.until", '"top:K"'),
    (
        '[tournament]\nformat = "adaptive"\ngames = 8\nuntil = "top:2"',
        "tournament.until",
        "at most top:1",
    ),
    (
        '[tournament]\nformat = "adaptive"\ngames = 8\nconfidence = 0.9',
        "tournament.confidence",
        "without a stop rule",
    ),
]


@pytest.mark.smoke
@pytest.mark.parametrize(
    ("text", "where", "what"),
    BAD_FILES,
    ids=[
        "syntax",
        "type",
        "unknown-key",
        "tc",
        "size",
        "format",
        "missing-program",
        "no-name",
        "illegal-opening",
        "unknown-engine-key",
        "swiss-rounds",
        "adaptive-budget",
        "adaptive-rounds",
        "adaptive-until",
        "adaptive-top",
        "adaptive-confidence",
    ],
)
def test_bad_tournament_files_are_one_clear_line_and_exit_2(
    tmp_path: Path, text: str, where: str, what: str
) -> None:
    (tmp_path / "open.txt").write_text("c3\nc3 c3\n")
    path = tmp_path / "bad.toml"
    path.write_text(text + "\n" + (bot("x") + bot("y") if "[[engine]]" not in text else ""))
    done = invoke("tournament", "run", str(path), "-q")
    assert done.returncode == 2, done.stderr
    [line] = done.stderr.strip().splitlines()
    assert where in line and what in line and "Traceback" not in line
    assert str(path.name) in line or "open.txt" in line


@pytest.mark.smoke
def test_duplicate_engine_names_are_refused(tmp_path: Path) -> None:
    t = write_tournament(tmp_path, BASIC, [bot("same"), bot("same")])
    done = invoke("tournament", "run", str(t), "-q")
    assert done.returncode == 2
    assert 'duplicate engine name "same"' in done.stderr and "t.toml" in done.stderr


@pytest.mark.parametrize("verdict", ["H1", pytest.param("H0", marks=pytest.mark.slow)])
def test_sprt_stops_the_match_on_both_sides(tmp_path: Path, verdict: str) -> None:
    # An engine that resigns at its first genmove loses every game: a decided resign
    # game, never a void one. (Both sides of the stop are checked on a fake executor in
    # test_driver.py; here through the command line.)
    loser = f"{sys.executable} {BADBOT} resign --name loser"
    winner = f"{sys.executable} {BADBOT} ok --name winner"
    records = tmp_path / "r.jsonl"
    first, second = (winner, loser) if verdict == "H1" else (loser, winner)
    done = invoke(
        "match",
        first,
        second,
        "--games",
        "200",
        "--tc",
        "10+0.1",
        "--json",
        "-q",
        "--sprt",
        "elo0=0,elo1=100",
        "--records",
        str(records),
    )
    assert done.returncode == 0, done.stderr
    data = json.loads(done.stdout)
    test = data["sprt"]
    assert test["result"] == verdict and test["model"] == "pairs"
    assert test["games"] == data["games"] < 200 and data["games"] % 2 == 0  # whole pairs
    assert (test["llr"] >= test["upper"]) if verdict == "H1" else (test["llr"] <= test["lower"])
    pairs = data["games"] // 2
    assert test["pairs"] == ([0, 0, pairs] if verdict == "H1" else [pairs, 0, 0])
    # The stop's own estimate: no finite end toward the side every game went.
    after = test["estimate"]
    assert (
        (after["elo"], after["upper"]) == (None, None)
        if verdict == "H1"
        else (after["elo"], after["lower"]) == (None, None)
    )
    # Without --games the match plays until the test decides (not 2 games, the default
    # without --sprt).
    text = invoke("match", first, second, "--tc", "10+0.1", "-q", "--sprt", "elo0=0,elo1=100")
    assert "SPRT (pairs): LLR" in text.stdout and f"{verdict} accepted" in text.stdout
    assert "median-unbiased" in text.stdout
    assert f"over {data['games']} games" in text.stdout
    games = list(read_records(records))
    assert games and all(not g.void and g.termination.value == "resign" for g in games)
    assert all(g.winner == "winner" and g.plies - g.opening <= 1 for g in games)


@pytest.mark.parametrize(
    ("model", "verdict"),
    [
        ("pairs", "H1"),
        pytest.param("pairs", "H0", marks=pytest.mark.slow),
        pytest.param("games", "H1", marks=pytest.mark.slow),
    ],
)
def test_pair_tests_decide_matches_of_real_engines(model: str, verdict: str) -> None:
    """Equal engines accept H0 (elo0 = 0); against an engine that resigns every game it
    plays white (half its games, so a score of about 75%, +190 Elo) H1 (elo1 = 100).
    The equal engines play random moves, unseeded: the test of them is made with
    alpha = 0.002, so that it accepts H1 by chance (at most about alpha) once in some
    five hundred runs, not once in twenty."""
    alpha = ",alpha=0.002" if verdict == "H0" else ""
    plain = f"{sys.executable} {BADBOT} ok --name plain"
    half = f"{sys.executable} {BADBOT} {'resign-white' if verdict == 'H1' else 'ok'} --name half"
    done = invoke(
        "match",
        plain,
        half,
        "--no-pie",
        "--size",
        "7",
        "--tc",
        "10+0.1",
        "--json",
        "-q",
        "--sprt",
        f"elo0=0,elo1=100,model={model}{alpha}",
    )
    assert done.returncode == 0, done.stderr
    data = json.loads(done.stdout)
    test = data["sprt"]
    assert test["result"] == verdict and test["model"] == model
    if model == "pairs":
        lost, split, won = test["pairs"]
        assert sum(test["pairs"]) * 2 == data["games"]
        if verdict == "H1":  # plain never loses a pair twice: half resigns as white
            assert lost == 0 and won > 0 and split > 0
        assert test["estimate"] is not None
    else:
        assert test["estimate"] is None  # the median-unbiased estimate is the pair test's


@pytest.mark.smoke
def test_bad_sprt_is_a_usage_error() -> None:
    done = invoke(
        "match", "--engines", str(ENGINES), "random", "random", "--sprt", "elo0=10,elo1=5"
    )
    assert done.returncode == 2 and "elo1 > elo0" in done.stderr


def test_ratings_from_records_report_bad_lines_and_strict_fails(tmp_path: Path) -> None:
    t = write_tournament(tmp_path, BASIC, [bot("a"), bot("b"), bot("c")])
    assert invoke("tournament", "run", str(t), "-q").returncode == 0
    out = tmp_path / "all.jsonl"
    exported = invoke("tournament", "export", str(t), "--records", str(out))
    assert exported.returncode == 0, exported.stderr
    lines = out.read_text().splitlines()
    assert len(lines) == 6
    first_id = json.loads(lines[0])["game_id"]
    shown = invoke("show", str(out), "--game", first_id[:8])  # a unique prefix
    assert shown.returncode == 0, shown.stderr
    assert shown.stdout.startswith(f"Game {first_id}:")
    from_store = json.loads(invoke("ratings", str(t), "--json").stdout)
    from_records = json.loads(invoke("ratings", str(out), "--json").stdout)
    assert from_store == from_records
    with out.open("a") as handle:
        handle.write('{"schema": 1, "seat1": "a"}\nnot json\n')
    lenient = invoke("ratings", str(out), "--matrix")
    assert lenient.returncode == 0
    assert f"{out}:7: not a game record" in lenient.stderr and f"{out}:8:" in lenient.stderr
    assert "pairs 2/1/0" in lenient.stdout
    strict = invoke("ratings", str(out), "--strict")
    assert strict.returncode == 2
    [line] = strict.stderr.strip().splitlines()
    assert f"{out}:7" in line


def test_ratings_formats_anchor_and_match_records(tmp_path: Path) -> None:
    records = tmp_path / "m.jsonl"
    done = invoke(
        "match",
        "--engines",
        str(ENGINES),
        "random",
        "skeleton",
        "--games",
        "4",
        "--tc",
        "10+0.1",
        "-q",
        "--records",
        str(records),
    )
    assert done.returncode == 0, done.stderr
    anchored = json.loads(
        invoke("ratings", str(records), "--json", "--anchor", "random=1000").stdout
    )
    by_name = {e["name"]: e for e in anchored["engines"]}
    assert by_name["random"]["elo"] == 1000 and by_name["random"]["error"] == 0
    csv_out = invoke("ratings", str(records), "--format", "csv").stdout.splitlines()
    assert csv_out[0].startswith("rank,engine,elo,error,")
    md = invoke("ratings", str(records), "--format", "markdown").stdout
    assert md.splitlines()[1].startswith("|--")
    bad = invoke("ratings", str(records), "--anchor", "nobody=0")
    assert bad.returncode == 2 and "nobody" in bad.stderr


# Slow: a second run refused by the lock is also checked, with the lock file deleted, by
# test_store_trust.py (test_deleting_the_lock_file_lets_no_second_run_in).
def test_second_run_on_the_same_store_is_refused(tmp_path: Path) -> None:
    slow = [bot("a", "slow", "--ms", "50"), bot("b", "slow", "--ms", "50")]
    t = write_tournament(tmp_path, BASIC.replace("rounds = 1", "rounds = 5"), slow)
    first = subprocess.Popen(
        [sys.executable, "-m", "arbiter", "tournament", "run", str(t)],
        cwd=ROOT,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert first.stderr is not None
        for line in first.stderr:
            if line.startswith("Started game"):
                break
        second = invoke("tournament", "run", str(t), "-q")  # refused: no process needed
        assert second.returncode == 2
        assert "another run is using this results store" in second.stderr
        for line in first.stderr:
            if line.startswith("Finished game"):
                break
        first.send_signal(signal.SIGTERM)
        out, _ = first.communicate(timeout=60)
        assert first.returncode == 143
        assert "rank" in out and "replayed on resume" in out  # standings so far
    finally:
        first.kill()
        first.wait()


@pytest.mark.parametrize(
    ("rounds", "kills"),
    [
        (1, 1),  # one kill, then the resume: every run checks this
        pytest.param(3, 3, marks=pytest.mark.slow),  # three kills at random moments
    ],
)
def test_kill_9_at_random_moments_loses_nothing_and_stores_nothing_twice(
    tmp_path: Path, rounds: int, kills: int
) -> None:
    engines = [bot("a", "slow", "--ms", "5"), bot("b", "slow", "--ms", "5"), bot("c")]
    t = write_tournament(tmp_path, BASIC.replace("rounds = 1", f"rounds = {rounds}"), engines)
    db = tmp_path / "t.sqlite"
    total = 6 * rounds
    rng = random.Random(7)
    finished_before: set[str] = set()
    for _ in range(kills):
        killed_after_games(t, rng.randint(1, 4))  # SIGKILL: no clean-up at all
        with Store.open_read(db) as store:
            stored = store.done_ids()
            assert store.integrity() == []  # SQLite finds the file sound
        assert finished_before <= stored  # nothing committed is ever lost
        assert len(stored) >= len(finished_before) + 1 or len(stored) == total
        finished_before = stored
    done = invoke("tournament", "run", str(t))
    assert done.returncode == 0, done.stderr
    ids = read_store(db).ids
    assert len(ids) == len(set(ids)) == total
    assert done.stderr.count("Started game") == total - len(finished_before)


def test_export_never_overwrites_the_tournament_or_its_store(tmp_path: Path) -> None:
    t = write_tournament(tmp_path, BASIC, [bot("a"), bot("b")])
    assert invoke("tournament", "run", str(t), "-q").returncode == 0
    store = tmp_path / "t.sqlite"
    before = store.read_bytes()
    for target in (store, t, tmp_path / "t.sqlite-wal"):
        done = invoke("tournament", "export", str(t), "--records", str(target))
        assert done.returncode == 2 and "would overwrite" in done.stderr
    assert store.read_bytes() == before
    assert games_stored(store) == 2


def test_a_damaged_or_foreign_store_is_one_line(tmp_path: Path) -> None:
    t = write_tournament(tmp_path, BASIC, [bot("a"), bot("b")])
    assert invoke("tournament", "run", str(t), "-q").returncode == 0
    store = tmp_path / "t.sqlite"
    data = bytearray(store.read_bytes())
    data[4096:8192] = b"\xff" * 4096
    store.write_bytes(bytes(data))
    for args in (
        ["tournament", "status", str(t)],
        ["ratings", str(store)],
        ["tournament", "export", str(t), "--records", str(tmp_path / "o.jsonl")],
    ):
        done = invoke(*args)
        assert done.returncode in (1, 2) and "Traceback" not in done.stderr, args
        assert len(done.stderr.strip().splitlines()) == 1
    foreign = write_tournament(
        tmp_path, BASIC + '\noutput = "notes.txt"', [bot("a"), bot("b")], name="f"
    )
    (tmp_path / "notes.txt").write_text("not a database\n" * 100)
    done = invoke("tournament", "run", str(foreign), "-q")
    assert done.returncode == 2 and "tournament.output" in done.stderr
    assert (tmp_path / "notes.txt").read_text() == "not a database\n" * 100


def test_ratings_count_each_game_once_across_sources(tmp_path: Path) -> None:
    t = write_tournament(tmp_path, BASIC, [bot("a"), bot("b")])
    assert invoke("tournament", "run", str(t), "-q").returncode == 0
    out = tmp_path / "e.jsonl"
    assert invoke("tournament", "export", str(t), "--records", str(out)).returncode == 0
    store = tmp_path / "t.sqlite"
    for sources in (
        [str(t), str(store)],
        [str(store), str(store)],
        [str(out), str(store)],
        [str(out), str(out)],
    ):
        done = invoke("ratings", *sources, "--json")
        assert done.returncode == 0, done.stderr
        assert json.loads(done.stdout)["games"] == 2, sources


def test_an_engine_answering_another_engines_name_cannot_take_it(tmp_path: Path) -> None:
    records = tmp_path / "r.jsonl"
    impostor = f"{sys.executable} {BADBOT} resign --name random"
    done = invoke(
        "match",
        impostor,
        "random",
        "--engines",
        str(ENGINES),
        "--games",
        "2",
        "--tc",
        "10+0.1",
        "--records",
        str(records),
        "--json",
        "-q",
    )
    assert done.returncode == 0, done.stderr
    summary = json.loads(done.stdout)
    assert summary["engines"] == ["random#2", "random"]
    games = list(read_records(records))
    assert all(g.winner == "random" for g in games)  # the real one, by its given name


@pytest.mark.smoke
def test_hostile_inputs_to_ratings_and_sprt_are_one_line(tmp_path: Path) -> None:
    bad = tmp_path / "bad.jsonl"
    record = {
        "schema": 1,
        "seat1": "a",
        "seat2": "b",
        "termination": "connection",
        "void": False,
        "winner": "a",
        "pair": [1, 2],
    }
    bad.write_text(json.dumps(record) + "\n" + "[" * 100_000 + "\n")
    done = invoke("ratings", str(bad))
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert f"{bad}:1:" in done.stderr and f"{bad}:2:" in done.stderr
    sprt = invoke(
        "match", "--engines", str(ENGINES), "random", "random", "--sprt", "elo0=0,elo1=1e308"
    )
    assert sprt.returncode == 2 and "--sprt" in sprt.stderr
    nul = tmp_path / "nul.toml"
    nul.write_text('[tournament]\nname = "x\\u0000y"\n' + bot("a") + bot("b"))
    done = invoke("tournament", "run", str(nul), "-q")
    assert done.returncode == 2 and "NUL" in done.stderr and "name" in done.stderr


def test_an_engine_that_cannot_start_is_left_out_where_the_file_says_so(tmp_path: Path) -> None:
    fixed = tmp_path / "fixed"  # the engine starts once this file exists
    script = f'[ -e {fixed} ] || {{ echo "no weights" >&2; exit 3; }}; exec "$0" "$@"'
    broken = (
        '[[engine]]\nname = "broken"\ncommand = '
        + json.dumps(["sh", "-c", script, sys.executable, str(BADBOT), "ok"])
        + "\n"
    )
    header = f'{BASIC}\non_start_failure = "leave-out"'
    t = write_tournament(tmp_path, header, [bot("a"), broken, bot("b")])
    done = invoke("tournament", "run", str(t))
    assert done.returncode == 1, done.stderr  # not every game was played
    assert "broken was left out (broken could not be started" in done.stdout
    assert "its 4 game(s) are stored as void" in done.stdout
    stored = read_store(tmp_path / "t.sqlite")
    assert [sorted((r["seat1"], r["seat2"])) for r in stored.records] == [["a", "b"]] * 2
    assert len(stored.voids) == 4
    for void in stored.voids:
        assert "broken" in (void["seat1"], void["seat2"]) and void["termination"] == "setup"
        assert void["reason"].startswith("not played: broken could not be started")
        assert void["evidence"]["engine"] == "broken" and void["evidence"]["stage"] == "start"
    status = invoke("tournament", "status", str(t))
    assert status.returncode == 0 and "broken could not be started" in status.stdout
    # Once it starts, a run plays its games and only those.
    fixed.touch()
    again = invoke("tournament", "run", str(t), "-q")
    assert again.returncode == 0, again.stderr
    assert games_stored(tmp_path / "t.sqlite") == 6
    bad = write_tournament(tmp_path, f'{BASIC}\non_start_failure = "skip"', [bot("a")], "bad")
    done = invoke("tournament", "run", str(bad), "-q")
    assert done.returncode == 2 and "on_start_failure" in done.stderr
    assert '"leave-out"' in done.stderr


def test_leave_out_stops_a_run_that_would_have_no_game_left(tmp_path: Path) -> None:
    script = 'echo "no weights" >&2; exit 3'
    broken = (
        '[[engine]]\nname = "broken"\ncommand = '
        + json.dumps(["sh", "-c", script, sys.executable, str(BADBOT), "ok"])
        + "\n"
    )
    header = f'{BASIC}\non_start_failure = "leave-out"'
    # Two engines must be left to play: otherwise the run stops as by default.
    lone = write_tournament(tmp_path, header, [bot("a"), broken], name="lone")
    done = invoke("tournament", "run", str(lone), "-q")
    assert done.returncode == 1 and "broken could not be started" in done.stdout
    assert "without broken no game of the schedule is left" in done.stdout
    assert not read_store(tmp_path / "lone.sqlite").voids
    # A gauntlet whose challenger cannot start has no game left either.
    gauntlet = write_tournament(
        tmp_path,
        f'{header}\nformat = "gauntlet"\nchallenger = "broken"',
        [bot("a"), broken, bot("b")],
        name="g",
    )
    done = invoke("tournament", "run", str(gauntlet), "-q")
    assert done.returncode == 1 and "no game of the schedule is left" in done.stdout
    assert not read_store(tmp_path / "g.sqlite").voids


def test_an_engine_that_never_starts_stops_the_tournament_wherever_it_is_scheduled(
    tmp_path: Path,
) -> None:
    broken = (
        '[[engine]]\nname = "broken"\ncommand = '
        + json.dumps([sys.executable, str(BADBOT), "crash-start"])
        + "\n"
    )
    header = BASIC.replace("concurrency = 2", "concurrency = 1").replace("rounds = 1", "rounds = 2")
    t = write_tournament(tmp_path, header, [bot("a"), bot("b"), broken])
    done = invoke("tournament", "run", str(t))
    assert done.returncode == 1
    assert "broken could not be started" in done.stdout
    # It stopped before any game: no retry after retry, no void chain.
    assert "Started game" not in done.stderr and "void" not in done.stderr


def _gauntlet_with_tests(tmp_path: Path) -> Path:
    """hero against an engine that resigns (H1), the heuristic bot (H0) and its own
    double (always a split: the test stays at 0 and runs to its cap of 6 pairs)."""
    first = [sys.executable, str(ROOT / "tests" / "engines" / "firstcell.py")]
    engines = [
        f'[[engine]]\nname = "hero"\ncommand = {json.dumps(first)}\n',
        bot("weak", "resign"),
        '[[engine]]\nname = "strong"\ncommand = ["{python}", "-m", "arbiter.bots.heuristic_bot"]\n',
        f'[[engine]]\nname = "double"\ncommand = {json.dumps(first)}\n',
    ]
    header = (
        BASIC.replace("rounds = 1", "rounds = 6").replace("concurrency = 2", "concurrency = 1")
        + '\nformat = "gauntlet"\nchallenger = "hero"'
        + "\nsprt = { elo0 = -150, elo1 = 150 }"
    )
    return write_tournament(tmp_path, header, engines)


def test_each_pairing_of_a_gauntlet_stops_when_its_pair_test_decides(tmp_path: Path) -> None:
    t = _gauntlet_with_tests(tmp_path)
    done = invoke("tournament", "run", str(t), "-q")
    assert done.returncode == 0, done.stderr
    assert "hero vs weak: SPRT (pairs): LLR 3.45 [-2.94, 2.94], H1 accepted" in done.stdout
    status = invoke("tournament", "status", str(t), "--json")
    data = json.loads(status.stdout)
    tests = {tuple(row["engines"]): row for row in data["sprt"]}
    assert tests[("hero", "weak")]["result"] == "H1"
    assert tests[("hero", "weak")]["pairs"] == [0, 0, 4] and tests[("hero", "weak")]["games"] == 8
    assert tests[("hero", "strong")]["result"] == "H0"
    assert tests[("hero", "strong")]["pairs"] == [4, 0, 0]
    assert tests[("hero", "double")]["result"] == "inconclusive"
    assert tests[("hero", "double")]["pairs"] == [0, 6, 0]  # to its cap
    assert tests[("hero", "double")]["model"] == "pairs"
    assert data["done"] == 28 and data["left"] == 0 and data["scheduled"] == 36
    text = invoke("tournament", "status", str(t))
    assert "28 of 36 games played, 0 left, 8 not needed" in text.stdout
    assert "hero vs strong: SPRT (pairs): LLR -3.45" in text.stdout
    # The report shows each pairing's test.
    page = tmp_path / "t.html"
    assert invoke("report", str(t), "-o", str(page)).returncode == 0
    html = page.read_text()
    assert 'id="tests">Sequential tests' in html
    for pairing, llr, result, pairs in (
        ("hero vs weak", "3.45", "H1 accepted", "4 / 0 / 0"),
        ("hero vs strong", "-3.45", "H0 accepted", "0 / 0 / 4"),
        ("hero vs double", "0.00", "inconclusive (the rounds cap came first)", "0 / 6 / 0"),
    ):
        row = html[html.index(f'class="name">{pairing}</th>') :].split("</tr>")[0]
        assert f"<td>{llr}</td>" in row and result in row and f"<td>{pairs}</td>" in row
    # A decided pairing never plays again; more rounds go to the one still testing.
    t.write_text(t.read_text().replace("rounds = 6", "rounds = 7"))
    more = invoke("tournament", "run", str(t), "-q")
    assert more.returncode == 0, more.stderr
    assert games_stored(tmp_path / "t.sqlite") == 30
    # The test is a condition of play.
    t.write_text(t.read_text().replace("elo0 = -150", "elo0 = -100"))
    changed = invoke("tournament", "run", str(t), "-q")
    assert changed.returncode == 2 and "sprt" in changed.stderr and "--fresh" in changed.stderr


def test_a_tested_pairing_resumes_after_kill_9_where_its_test_was(tmp_path: Path) -> None:
    t = _gauntlet_with_tests(tmp_path)
    killed_after_games(t, 9)  # the middle of round 2: weak's and strong's tests go on
    assert 9 <= games_stored(tmp_path / "t.sqlite") < 28
    done = invoke("tournament", "run", str(t), "-q")
    assert done.returncode == 0, done.stderr
    data = json.loads(invoke("tournament", "status", str(t), "--json").stdout)
    pairs = {tuple(row["engines"]): row["pairs"] for row in data["sprt"]}
    assert pairs == {
        ("hero", "weak"): [0, 0, 4],
        ("hero", "strong"): [4, 0, 0],
        ("hero", "double"): [0, 6, 0],
    }
    assert data["done"] == 28
    ids = read_store(tmp_path / "t.sqlite").ids
    assert len(ids) == len(set(ids)) == 28


@pytest.mark.smoke
def test_a_bad_test_in_a_tournament_file_is_one_line(tmp_path: Path) -> None:
    for bad, words in (
        ("{ elo0 = 10, elo1 = 0 }", "elo1 > elo0"),
        ('{ elo0 = 0, elo1 = 10, model = "trinomial" }', "pairs or games"),
        ("{ elo0 = 0, elo1 = 10, alpha = 0.7 }", "alpha"),
        ("{ elo1 = 10 }", "needs elo0"),
        ("{ elo0 = 0, elo1 = 5, x = 1 }", "key x;"),
        ('"elo0=0,elo1=5"', "table"),
        ('{ elo0 = "0", elo1 = 10 }', "a number"),
    ):
        t = write_tournament(tmp_path, f"{BASIC}\nsprt = {bad}", [bot("a"), bot("b")])
        done = invoke("tournament", "run", str(t), "-q")  # refused before any engine starts
        assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr
        assert "sprt" in done.stderr and words in done.stderr, done.stderr
        assert not (tmp_path / "t.sqlite").exists()


def test_a_decided_test_stays_decided_when_pairs_in_flight_finish(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """At concurrency 2 a pair may still be playing when its pairing's test decides: its
    games are stored and rated, but the test counts no pair after its decision, in the
    run and when read again from the store, so it never comes undecided. Status counts
    what is left without holding the stored ids (its memory follows the pairings)."""
    header = BASIC.replace("rounds = 1", "rounds = 8") + "\nsprt = { elo0 = -150, elo1 = 150 }"
    t = write_tournament(tmp_path, header, [bot("hero"), bot("weak", "resign")])
    done = invoke("tournament", "run", str(t), "-q")
    assert done.returncode == 0, done.stderr
    assert "hero vs weak: SPRT (pairs): LLR 3.45 [-2.94, 2.94], H1 accepted" in done.stdout
    stored = games_stored(tmp_path / "t.sqlite")
    assert 8 <= stored < 16
    data = json.loads(invoke("tournament", "status", str(t), "--json").stdout)
    [test] = data["sprt"]
    assert test["result"] == "H1" and test["pairs"] == [0, 0, 4] and data["left"] == 0

    def every_id(store: Store) -> set[str]:
        raise AssertionError("status held every stored id")

    with monkeypatch.context() as patch:
        patch.setattr(Store, "done_ids", every_id)
        status = invoke("tournament", "status", str(t), "--json")
    assert status.returncode == 0, status.stderr
    assert json.loads(status.stdout) == data
    t.write_text(t.read_text().replace("rounds = 8", "rounds = 9"))
    again = invoke("tournament", "run", str(t), "-q")
    assert again.returncode == 0 and games_stored(tmp_path / "t.sqlite") == stored


def test_a_rounds_cap_below_what_the_sprt_needs_is_warned_at_start(tmp_path: Path) -> None:
    header = BASIC + "\nsprt = { elo0 = 0, elo1 = 150 }"
    t = write_tournament(tmp_path, header, [bot("a"), bot("b")])
    done = invoke("tournament", "run", str(t), "-q")
    assert done.returncode == 0, done.stderr
    assert (
        f"warning: {t}: tournament.rounds = 1 caps each pairing's SPRT (elo0 = 0, elo1 ="
        " 150) below the about 15 pairs it is expected to need" in done.stderr
    )
    assert "raise rounds to 15 or more" in done.stderr
    # A gap wide enough for one pair: no warning.
    t.write_text(t.read_text().replace("elo0 = 0, elo1 = 150", "elo0 = -600, elo1 = 600"))
    enough = invoke("tournament", "run", str(t), "-q", "--fresh")
    assert enough.returncode == 0, enough.stderr
    assert "expected to need" not in enough.stderr


def test_progress_blocks_show_the_tests_that_changed_and_a_summary(tmp_path: Path) -> None:
    # One game at a time, a block every pair: each block names the one pairing whose
    # test moved, never the untouched ones, and an undecided test below its cap reads
    # "going on" as status and the report say.
    header = BASIC.replace("rounds = 1", "rounds = 2").replace("concurrency = 2", "concurrency = 1")
    header += "\nsprt = { elo0 = 0, elo1 = 150 }"
    t = write_tournament(tmp_path, header, [bot("a"), bot("b"), bot("c")])
    done = invoke("tournament", "run", str(t), "--every", "2")
    assert done.returncode == 0, done.stderr
    blocks = done.stderr.split("games left, ")[1:]
    assert len(blocks) == 5
    for block in blocks:
        assert "SPRT on 3 pairings: " in block
        assert len([line for line in block.splitlines() if ": SPRT (pairs)" in line]) == 1
    assert "going on; pairs" in done.stderr and "inconclusive;" not in done.stderr
    # At the end every pairing's test, each at its cap.
    assert done.stdout.count("inconclusive (the rounds cap came first)") == 3


def swiss_file(folder: Path, engines: int, rounds: int, extra: str = "") -> Path:
    header = BASIC.replace("rounds = 1", f'format = "swiss"\nrounds = {rounds}{extra}')
    return write_tournament(folder, header, [bot(f"bot{i:02}") for i in range(engines)])


def swiss_status(t: Path) -> dict[str, Any]:
    status = invoke("tournament", "status", str(t), "--json")
    assert status.returncode == 0, status.stderr
    data: dict[str, Any] = json.loads(status.stdout)
    return data


@pytest.mark.parametrize(
    ("engines", "rounds", "kill_after"),
    [
        # Slow: the kill -9 of a round-robin is in the fast run; a Swiss resumes the same way.
        pytest.param(12, 5, 29, marks=pytest.mark.slow),  # killed in round 3 of 5
        pytest.param(7, 5, 8, marks=pytest.mark.slow),  # in round 3, with byes
    ],
)
def test_a_swiss_killed_mid_round_resumes_to_the_same_pairings(
    tmp_path: Path, engines: int, rounds: int, kill_after: int
) -> None:
    t = swiss_file(tmp_path, engines, rounds)
    t.write_text(t.read_text().replace("concurrency = 2", "concurrency = 3"))
    pairs_per_round = engines // 2
    proc = subprocess.Popen(
        [sys.executable, "-m", "arbiter", "tournament", "run", str(t)],
        cwd=ROOT,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert proc.stderr is not None
    started: dict[int, tuple[str, str]] = {}  # game number: its seats, as announced
    finished = 0
    for line in proc.stderr:
        if match := re.match(r"Started game (\d+) of \d+ \((\S+) vs (\S+)\)", line):
            started[int(match[1])] = (match[2], match[3])
            if finished >= kill_after:
                break  # a game has just started: it is in flight at the kill
        if line.startswith("Finished game"):
            finished += 1
    proc.kill()  # SIGKILL, mid-round: games in flight are never stored
    proc.wait()
    proc.stderr.close()
    db = tmp_path / "t.sqlite"
    before = swiss_status(t)
    stored_before = set(read_store(db).ids)
    in_play = (max(started) - 1) // (2 * pairs_per_round) + 1  # the round of the last start
    assert before["swiss"]["rounds_complete"] == in_play - 1
    assert len(before["swiss"]["pairings"]) == in_play  # the round in play is paired
    assert before["done"] == len(stored_before) < before["scheduled"]
    done = invoke("tournament", "run", str(t))
    assert done.returncode == 0, done.stderr
    # Only the missing games were played, and every game is stored once.
    total = 2 * pairs_per_round * rounds
    assert done.stderr.count("Started game") == total - len(stored_before)
    ids = read_store(db).ids
    assert len(ids) == len(set(ids)) == total
    after = swiss_status(t)
    assert after["done"] == after["scheduled"] == total and after["left"] == 0
    pairings = after["swiss"]["pairings"]
    # The rounds paired before the kill are paired the same after it...
    assert pairings[:in_play] == before["swiss"]["pairings"]
    # ...including the games in flight at the kill, replayed between the same seats.
    for number, seats in started.items():
        index = (number - 1) % (2 * pairs_per_round)
        pair = pairings[(number - 1) // (2 * pairs_per_round)]["pairs"][index // 2]
        assert seats == (tuple(pair) if index % 2 == 0 else tuple(pair[::-1]))
    # Every engine plays every round, and no two engines meet twice.
    names = sorted(f"bot{i:02}" for i in range(engines))
    met: list[frozenset[str]] = []
    for round_ in pairings:
        byes = [round_["bye"]] if round_["bye"] else []
        assert sorted([e for pair in round_["pairs"] for e in pair] + byes) == names
        met += [frozenset(pair) for pair in round_["pairs"]]
    assert len(met) == len(set(met)) == pairs_per_round * rounds
    # The Swiss table stands beside the Elo table, in the run's output and in status.
    assert "Buchholz" in done.stdout and "Elo" in done.stdout
    assert f"Swiss: {rounds} of {rounds} rounds complete" in done.stdout
    points = sum(row["points"] for row in after["swiss"]["standings"])
    assert points == pairs_per_round * rounds + (engines % 2) * rounds


def test_a_swiss_of_an_odd_field_gives_byes_and_refuses_a_changed_field(tmp_path: Path) -> None:
    t = swiss_file(tmp_path, 3, 2)
    done = invoke("tournament", "run", str(t), "-q")
    assert done.returncode == 0, done.stderr
    data = swiss_status(t)
    assert data["scheduled"] == data["done"] == 4
    assert len({round_["bye"] for round_ in data["swiss"]["pairings"]}) == 2
    status = invoke("tournament", "status", str(t))
    assert "Swiss: 2 of 2 rounds complete" in status.stdout and "bye" in status.stdout
    # Another engine would change the pairings of the rounds played: refused. More
    # rounds play on from the stored ones, up to one bye each.
    t.write_text(t.read_text().replace("rounds = 2", "rounds = 3") + bot("late"))
    refused = invoke("tournament", "run", str(t), "-q")
    assert refused.returncode == 2
    assert "engines changed" in refused.stderr and "added late" in refused.stderr
    assert "--fresh" in refused.stderr
    t.write_text(t.read_text().replace(bot("late"), ""))
    again = invoke("tournament", "run", str(t), "-q")
    assert again.returncode == 0, again.stderr
    data = swiss_status(t)
    assert data["done"] == 6 and len({r["bye"] for r in data["swiss"]["pairings"]}) == 3
    assert [row["points"] for row in data["swiss"]["standings"]] != [0, 0, 0]
    t.write_text(t.read_text().replace("rounds = 3", "rounds = 4"))
    too_many = invoke("tournament", "run", str(t), "-q")
    assert too_many.returncode == 2 and "at most 3 rounds" in too_many.stderr


def started_games(
    lines: Iterable[str],
    stop: Callable[[int], bool] | None = None,
) -> dict[int, tuple[str, str]]:
    """The games a run's stderr says it started (number: seats), read until `stop(finished)`
    is true at a start."""
    started: dict[int, tuple[str, str]] = {}
    finished = 0
    for line in lines:
        if match := re.match(r"Started game (\d+) of \d+ \((\S+) vs (\S+)\)", line):
            started[int(match[1])] = (match[2], match[3])
            if stop is not None and stop(finished):
                break
        if line.startswith("Finished game"):
            finished += 1
    return started


def test_an_adaptive_run_keeps_its_budget_resumes_exactly_and_ranks_the_strongest_first(
    tmp_path: Path,
) -> None:
    weak = [bot(f"weak{i}", "resign", "--after", "2") for i in range(5)]
    header = BASIC.replace("rounds = 1", 'format = "adaptive"\ngames = 46\nuntil = "top:1"')
    t = write_tournament(
        tmp_path, header.replace("concurrency = 2", "concurrency = 3"), [bot("strong"), *weak]
    )
    proc = subprocess.Popen(
        [sys.executable, "-m", "arbiter", "tournament", "run", str(t)],
        cwd=ROOT,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert proc.stderr is not None
    before = started_games(proc.stderr, lambda finished: finished >= 15)
    proc.kill()  # SIGKILL in batch 3 (two warm-up batches of six games come first)
    proc.wait()
    proc.stderr.close()
    db = tmp_path / "t.sqlite"
    stored = set(read_store(db).ids)
    assert 15 <= len(stored) < 46
    # The schedule rebuilt from the store recomputes the batch in play: what it hands
    # out is exactly what the resumed run plays, and the games in flight at the kill
    # come back with the same numbers and seats.
    with Store.open_read(db) as store:
        schedule = load_tournament(t, engines_here=False).schedule(store)
        pending: dict[int, tuple[str, str]] = {}
        while (game := schedule.next()) is not None and game is not WAIT:
            assert game.game_id not in stored
            pending[game.number] = game.engines
    assert pending and all(pending[n] == seats for n, seats in before.items() if n in pending)
    done = invoke("tournament", "run", str(t))
    assert done.returncode == 0, done.stderr
    after = started_games(done.stderr.splitlines())
    assert {n: after[n] for n in pending} == pending
    # The budget is kept, in whole pairs; the strongest engine is ranked first.
    rows = read_store(db)
    assert len(rows.ids) == len(set(rows.ids)) and len(rows.ids) % 2 == 0
    assert len(rows.ids) <= 46 and set(stored) <= set(rows.ids)
    status = swiss_status(t)
    assert status["engines"][0]["name"] == "strong"
    assert status["done"] == len(rows.ids) and status["left"] == (
        0 if status["adaptive"]["over"] else 46 - len(rows.ids)
    )
    assert status["adaptive"]["until"] == "top:1" and status["adaptive"]["budget"] == 46
    assert "Adaptive:" in done.stdout and "stop rule until" in done.stdout
    # Its keys are its own, and a budget is in whole pairs.
    odd = write_tournament(
        tmp_path, header.replace("games = 46", "games = 45"), [bot("a"), bot("b")], name="odd"
    )
    refused = invoke("tournament", "run", str(odd), "-q")
    assert refused.returncode == 2 and "tournament.games" in refused.stderr
    assert "seat-swapped pairs" in refused.stderr
    wrong = write_tournament(tmp_path, BASIC + '\nuntil = "top:1"', [bot("a"), bot("b")], "w")
    refused = invoke("tournament", "run", str(wrong), "-q")
    assert refused.returncode == 2 and "adaptive runs only" in refused.stderr
