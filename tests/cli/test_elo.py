"""One Elo: `match`, `ratings`, its head-to-head table and the report print the same
estimate for the same games; unbounded numbers say so; every format holds the table asked
for; games of one name under different conditions are named, or rated apart.

Through the real CLI, on the records of a real match of the bundled bots and on synthetic
records that the one reader replays and checks like any other."""

from __future__ import annotations

import csv
import io
import json
import math
import re
from pathlib import Path

import pytest
from commands import invoke
from paths import ROOT

from arbiter.results.records import GameRecord, Termination, read_records
from arbiter.results.score import KEYS, MatchResult
from arbiter.views.report import summary_json, summary_lines

ENGINES = ROOT / "arbiter" / "bots" / "engines.toml"

Game = tuple[str, str, str]  # seat 1, seat 2, winner


def record(n: int, game: Game, *, tc: str = "6+0.06", prefix: str = "g") -> GameRecord:
    """A rated game that ended by resignation before a move: valid, and replayable."""
    seat1, seat2, winner = game
    return GameRecord(
        game_id=f"{prefix}-{n}",
        variant={"size": 5, "islands": 4, "pie": True},
        seat1=seat1,
        seat2=seat2,
        tc={"seat1": tc, "seat2": tc},
        started=f"2025-01-01T00:{n // 60:02d}:{n % 60:02d}.000Z",
        finished="2025-01-01T01:00:00.000Z",
        winner=winner,
        termination=Termination.RESIGN,
        pair=f"{prefix}-pair{n // 2}",
    )


def write(path: Path, games: list[Game], **kwargs: str) -> Path:
    path.write_text("".join(record(n, g, **kwargs).dumps() + "\n" for n, g in enumerate(games)))
    return path


def swapped(a: str, b: str, a_seat1: tuple[int, int], b_seat1: tuple[int, int]) -> list[Game]:
    """Games of a and b: a's (wins, losses) with a in seat 1, b's with b in seat 1."""
    return (
        [(a, b, a)] * a_seat1[0]
        + [(a, b, b)] * a_seat1[1]
        + [(b, a, b)] * b_seat1[0]
        + [(b, a, a)] * b_seat1[1]
    )


def ok(*args: str) -> tuple[str, str]:
    done = invoke(*args)
    assert done.returncode == 0, done.stderr
    return done.stdout, done.stderr


def ratings_json(*args: str) -> dict[str, object]:
    data: dict[str, object] = json.loads(ok("ratings", *args, "--json")[0])
    return data


def h2h(data: dict[str, object], engine: str, opponent: str) -> dict[str, object]:
    matrix = data["matrix"]
    assert isinstance(matrix, list)
    [row] = [r for r in matrix if (r["engine"], r["opponent"]) == (engine, opponent)]
    assert isinstance(row, dict)
    return row


# ------------------------------------------------------------------ match and ratings


@pytest.fixture(scope="module")
def played(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """A real 4-game Hex match of two bundled bots, in a store and a records file."""
    folder = tmp_path_factory.mktemp("elo")
    store, records = folder / "m.sqlite", folder / "m.jsonl"
    ok(
        "match",
        "--engines",
        str(ENGINES),
        "random",
        "skeleton",
        "--games",
        "4",
        "--islands",
        "4",
        "--size",
        "5",
        "--tc",
        "5+0",
        "--store",
        str(store),
        "--records",
        str(records),
        "-q",
    )
    return store, records


def test_match_and_ratings_print_one_estimate_for_one_match(played: tuple[Path, Path]) -> None:
    store, records = played
    # The same command again finds every game stored: its summary is of those games.
    again = (
        "match",
        "--engines",
        str(ENGINES),
        "random",
        "skeleton",
        "--games",
        "4",
        "--islands",
        "4",
        "--size",
        "5",
        "--tc",
        "5+0",
        "--store",
        str(store),
        "-q",
    )
    summary = json.loads(ok(*again, "--json")[0])
    text = ok(*again)[0]
    assert summary["resumed"] == summary["games"] == 4 and summary["prior"] == 2.0
    for source in (records, store):
        data = ratings_json(str(source), "--matrix")
        row = h2h(data, "random", "skeleton")
        # The pairing's own estimate is the match's, and in a pool of two, the pool's too.
        expected = {"elo": summary["elo"], "error": summary["elo_error"], "los": summary["los"]}
        assert row["head_to_head"] == row["pool"] == expected
        table = ok("ratings", str(source), "--matrix")[0]
        [line] = [x for x in table.splitlines() if x.startswith("random ")]
        [shown] = re.findall(r"Elo difference: (\S+ ± \d+) \(95%\)", text)
        assert line.count(shown) == 2  # head-to-head and pool fit, as the match prints it


@pytest.mark.parametrize(
    ("games", "elo_sign"),
    [
        (swapped("a", "b", (2, 0), (1, 1)), 1),  # 3-1, seats swapped
        (swapped("a", "b", (1, 0), (1, 0)), 0),  # 1-1
        (swapped("a", "b", (0, 2), (2, 0)), -1),  # 0-4
    ],
)
def test_a_match_summary_is_the_fit_ratings_makes_of_its_games(
    tmp_path: Path, games: list[Game], elo_sign: int
) -> None:
    path = write(tmp_path / "m.jsonl", games)
    result = MatchResult(names=("a", "b"), given=("a", "b"))
    for game in read_records(path):
        result.add_stored(game)
    summary = summary_json(result)
    row = h2h(ratings_json(str(path), "--matrix"), "a", "b")
    assert row["head_to_head"] == {
        "elo": summary["elo"],
        "error": summary["elo_error"],
        "los": summary["los"],
    }
    assert summary["elo"] is not None and summary["elo_error"] is not None
    assert (summary["elo"] > 0) - (summary["elo"] < 0) == elo_sign
    assert summary["elo_error"] < 1000  # not the normal approximation's 1863 or 3600
    lines = "\n".join(summary_lines(result))
    assert "Elo difference: " in lines and "+/-" not in lines and "inf" not in lines
    assert f"{summary['elo_error']:.0f} (95%)" in lines


# -------------------------------------------------------------------- the matrix


CYCLE = (
    swapped("A", "B", (2, 1), (1, 2))  # A beats B 4-2 ...
    + swapped("B", "C", (3, 0), (0, 3))  # ... but B beats C 6-0
    + swapped("C", "A", (3, 0), (0, 3))  # ... and C beats A 6-0
    + swapped("A", "D", (2, 1), (2, 1))
)  # A and D: 3-3


def test_the_head_to_head_table_puts_the_pairings_result_beside_the_pool_fit(
    tmp_path: Path,
) -> None:
    pool = write(tmp_path / "pool.jsonl", CYCLE)
    alone = write(tmp_path / "ab.jsonl", CYCLE[:6])
    data = ratings_json(str(pool), "--matrix")
    ab = h2h(data, "A", "B")
    assert (ab["wins"], ab["losses"], ab["score"]) == (4, 2, 0.6667)
    own, fitted = ab["head_to_head"], ab["pool"]
    assert isinstance(own, dict) and isinstance(fitted, dict)
    # A won its games against B, and its own estimate says so; the pool fit, which the
    # other games inform, puts A below B.
    assert own["elo"] > 0 > fitted["elo"]
    # The pairing's own estimate is what rating its games alone gives.
    assert own == h2h(ratings_json(str(alone), "--matrix"), "A", "B")["pool"]
    # An even pairing is even on its own, whatever the pool fit makes of it.
    ad = h2h(data, "A", "D")
    assert ad["score"] == 0.5 and ad["head_to_head"]["elo"] == 0.0  # type: ignore[index]
    assert ad["pool"]["elo"] != 0.0  # type: ignore[index]
    # The text table labels the two apart and explains them.
    text = ok("ratings", str(pool), "--matrix")[0]
    assert "Elo, head-to-head" in text and "Elo diff, pool fit" in text
    assert "score %" in text and "even in sign" in text
    [line] = [x for x in text.splitlines() if re.match(r"A\s+B\s", x)]
    assert "4-2" in line and "66.7" in line
    assert f"{own['elo']:+.0f} ± {own['error']:.0f}" in line
    assert f"{fitted['elo']:+.0f} ± {fitted['error']:.0f}" in line


def test_every_format_holds_the_head_to_head_table(tmp_path: Path) -> None:
    pool = write(tmp_path / "pool.jsonl", CYCLE)
    # CSV: one table a csv reader takes whole, of numbers and plain names.
    out = ok("ratings", str(pool), "--matrix", "--format", "csv")[0]
    rows = list(csv.reader(io.StringIO(out)))
    header, body = rows[0], rows[1:]
    assert header[:6] == ["engine", "opponent", "games", "wins", "losses", "score"]
    assert all(re.fullmatch(r"[a-z0-9_]+", h) for h in header)
    assert len(body) == 8 and all(len(r) == len(header) for r in body)
    for r in body:
        for value in r[2:]:
            assert value == "" or float(value) == float(value)  # a number, or empty
    assert "%" not in out and "+" not in out and "±" not in out
    board = list(csv.reader(io.StringIO(ok("ratings", str(pool), "--format", "csv")[0])))
    assert board[0][:9] == [
        "rank",
        "engine",
        "elo",
        "error",
        "games",
        "wins",
        "losses",
        "score",
        "los_next",
    ]
    for r in board[1:]:
        assert [float(v) for v in r[2:9] if v] and not any(c in "".join(r) for c in "+%")
    # JSON: the matrix is there, not dropped.
    data = ratings_json(str(pool), "--matrix")
    assert isinstance(data["matrix"], list) and len(data["matrix"]) == 8
    assert "matrix" not in ratings_json(str(pool))
    # Markdown: both tables as Markdown tables, each note a paragraph of its own.
    md = ok("ratings", str(pool), "--matrix", "--format", "markdown")[0]
    tables = [b for b in md.split("\n\n") if b.startswith("|")]
    assert len(tables) == 2 and all(line.startswith("|") for t in tables for line in t.splitlines())
    assert "| engine" in tables[1] and "Elo, head-to-head" in tables[1]


# ---------------------------------------------------------------------- unbounded


def test_without_a_prior_unbounded_ratings_print_as_unbounded(tmp_path: Path) -> None:
    games = (
        swapped("mcts", "a", (3, 0), (0, 3))
        + swapped("mcts", "b", (3, 0), (0, 3))
        + swapped("a", "b", (2, 1), (1, 2))
    )
    path = write(tmp_path / "p.jsonl", games)
    text = ok("ratings", str(path), "--prior", "0", "--matrix")[0]
    board = text.split("\n\n")[0]
    assert not re.search(r"\binf\b", text)
    rows = [x.split() for x in board.splitlines()[2:5]]
    assert {r[1] for r in rows} == {"mcts", "a", "b"}
    # Elo unbounded, no error, no LOS: games, score, W-L and faults follow.
    assert all(r[2] == "unbounded" and len(r) == 7 and "%" not in " ".join(r) for r in rows)
    assert "Seat 1 advantage: unbounded" in text
    assert "Unbounded: mcts won all 12 of its games" in text and "--prior 2" in text
    data = ratings_json(str(path), "--prior", "0", "--matrix")
    engines = data["engines"]
    assert isinstance(engines, list)
    assert all(e["elo"] is None and e["error"] is None and e["los_next"] is None for e in engines)
    assert data["unbounded"] == ["mcts won all 12 of its games"]
    assert h2h(data, "mcts", "a")["head_to_head"] == {"elo": None, "error": None, "los": None}
    # The pairing a-b (4-2, seats balanced) is bounded on its own: plain maximum
    # likelihood of a 2:1 score, 400 log10(2).
    own = h2h(data, "a", "b")["head_to_head"]
    assert own["elo"] == pytest.approx(400 * math.log10(2), abs=0.1)  # type: ignore[index]
    csv_rows = list(
        csv.reader(io.StringIO(ok("ratings", str(path), "--prior", "0", "--format", "csv")[0]))
    )
    assert all(r[2] == r[3] == r[8] == "" for r in csv_rows[1:])
    # With the default prior the same games are bounded, with a LOS between neighbours.
    default = ratings_json(str(path))
    assert all(isinstance(e["elo"], float) for e in default["engines"])  # type: ignore[union-attr]
    assert default["unbounded"] is None
    # The report says the same.
    page = tmp_path / "r.html"
    ok("report", str(path), "--prior", "0", "-o", str(page))
    html = page.read_text()
    assert html.count("<td>unbounded</td>") == 3 and "∞" not in html.split('id="crosstable"')[0]
    assert '<circle class="dot"' not in html


# --------------------------------------------------------------------- conditions


def test_one_name_under_different_conditions_is_named_or_rated_apart(
    played: tuple[Path, Path], tmp_path: Path
) -> None:
    store, records = played
    # The same engines at another time control, random at a new version.
    later = tmp_path / "later.jsonl"
    with later.open("w") as out:
        for game in read_records(records):
            data = game.to_json()
            data["game_id"] += "-later"
            data["tc"] = {"seat1": "2+0.02", "seat2": "2+0.02"}
            data["versions"] = {
                k: v + "-new" if k == "random" else v for k, v in data["versions"].items()
            }
            out.write(json.dumps(data) + "\n")
    # A store and its own records agree on what was played: nothing to say.
    assert "Warning" not in ok("ratings", str(store), str(records))[1]
    out, err = ok("ratings", str(store), str(later))
    warnings = [x for x in err.splitlines() if x.startswith("Warning:")]
    assert len(warnings) == 2
    random_line, skeleton_line = sorted(warnings)
    assert random_line.startswith("Warning: random: ") and "rated as one engine" in random_line
    assert f"tc 5+0 ({store}: 4 games), 2+0.02 ({later}: 4 games)" in random_line
    assert f"version 1.0 ({store}: 4 games), 1.0-new ({later}: 4 games)" in random_line
    assert "--split-by conditions" in random_line
    assert "tc 5+0" in skeleton_line and "version" not in skeleton_line
    assert len(out.splitlines()) == 5  # two engines, rated as one each
    # --split-by conditions: an engine per set of conditions, named by what differs.
    split = ratings_json(str(store), str(later), "--split-by", "conditions")
    names = {e["name"]: e for e in split["engines"]}  # type: ignore[union-attr]
    assert set(names) == {
        "random [5+0, version 1.0]",
        "random [2+0.02, version 1.0-new]",
        "skeleton [5+0]",
        "skeleton [2+0.02]",
    }
    assert all(e["games"] == 4 for e in names.values())
    err = invoke("ratings", str(store), str(later), "--split-by", "conditions").stderr
    assert "Warning" not in err
    assert (
        f"random is rated apart by tc and version: random [5+0, version 1.0] ({store}: 4 games)"
    ) in err
    # By the time control alone: the version goes with it, so nothing is left mixed.
    by_tc = invoke("ratings", str(store), str(later), "--split-by", "tc")
    assert by_tc.returncode == 0 and "Warning" not in by_tc.stderr
    assert "random [2+0.02]" in by_tc.stdout
    # The anchor must name one of the engines rated apart.
    anchored = invoke("ratings", str(store), str(later), "--split-by", "tc", "--anchor", "random=0")
    assert anchored.returncode == 2 and "'random [5+0]'" in anchored.stderr
    pinned = ratings_json(
        str(store), str(later), "--split-by", "tc", "--anchor", "random [5+0]=100"
    )
    assert {e["name"]: e["elo"] for e in pinned["engines"]}["random [5+0]"] == 100  # type: ignore[union-attr]
    # The report rates them as one engine too, and says so.
    report = invoke("report", str(store), str(later), "-o", str(tmp_path / "r.html"))
    assert report.returncode == 0 and report.stderr.count("Warning: ") == 2
    assert "`arbiter ratings --split-by conditions` rates them apart" in report.stderr
    bad = invoke("ratings", str(store), "--split-by", "colour")
    assert bad.returncode == 2 and "--split-by" in bad.stderr and "tc, board" in bad.stderr


def test_the_match_result_counts_by_seat(tmp_path: Path) -> None:
    path = write(tmp_path / "m.jsonl", swapped("a", "b", (2, 0), (1, 1)))
    result = MatchResult(names=("a", "b"))
    for game in read_records(path):
        engines = (KEYS[("a", "b").index(game.seat1)], KEYS[("a", "b").index(game.seat2)])
        result.add(engines, game)
    assert result.by_seat == [[0, 2], [1, 1]] and result.seat1_wins() == 3
    assert result.stats().wins == 3 and result.stats().losses == 1


@pytest.mark.slow
def test_with_enough_pairs_match_and_ratings_take_the_interval_from_the_pairs(
    tmp_path: Path,
) -> None:
    """A match of 12 seat-swapped pairs: the head-to-head estimate and its interval are
    the pairs' in `match` and in `ratings --matrix` alike, and the interval is the fit's
    scaled by the pairs' own variance."""
    import sys

    from arbiter.results.ratings import estimate_difference
    from arbiter.results.sprt import paired

    badbot = ROOT / "tests" / "engines" / "badbot.py"
    records = tmp_path / "m.jsonl"
    done = invoke(
        "match",
        f"a={sys.executable} {badbot} ok",
        f"b={sys.executable} {badbot} ok",
        "--games",
        "24",
        "--size",
        "7",
        "--tc",
        "10+0.1",
        "-c",
        "2",
        "--json",
        "--records",
        str(records),
    )
    assert done.returncode == 0, done.stderr
    summary = json.loads(done.stdout)
    rated = json.loads(invoke("ratings", str(records), "--matrix", "--json").stdout)
    [row] = [r for r in rated["matrix"] if r["engine"] == "a"]
    pairs = row["pairs"]
    assert pairs["won_twice"] + pairs["split"] + pairs["lost_twice"] == 12
    assert row["head_to_head"]["elo"] == summary["elo"]
    assert row["head_to_head"]["error"] == summary["elo_error"]
    score = MatchResult(names=("a", "b"))
    for record in read_records(records):
        score.add((KEYS[0], KEYS[1]) if record.seat1 == "a" else (KEYS[1], KEYS[0]), record)
    (a_lost, a_won), (b_lost, b_won) = score.by_seat
    fitted = estimate_difference((a_won, a_lost), (b_won, b_lost))
    counts = [pairs["lost_twice"], pairs["split"], pairs["won_twice"]]
    assert score.pairs() == counts
    assert summary["elo_error"] == round(paired(fitted, counts).error or 0, 1)
