"""One rule finds a game by what a person types (`arbiter.results.games`): read from
every record (`choose_game`) or from the ids of the lines alone (`find_game`, what
`show --game` uses on files of any size), the same query names the same game, or is
refused with the same message."""

from __future__ import annotations

from pathlib import Path

import pytest

from arbiter.errors import ConfigError
from arbiter.results.games import GameChoice, choose_game, find_game
from arbiter.results.records import BadLine, GameRecord, RecordWriter, Termination, read_records


def record(game_id: str) -> GameRecord:
    return GameRecord(
        game_id=game_id,
        variant={"size": 7, "islands": 8, "pie": True},
        seat1="a",
        seat2="b",
        tc={"seat1": "10+0.1", "seat2": "10+0.1"},
        started="2026-01-01T00:00:00.000Z",
        finished="2026-01-01T00:00:01.000Z",
        swapped=False,
        black="a",
        white="b",
        moves=["d1", "e4"],
        move_ms=[1.0, 2.0],
        winner="a",
        winner_color="black",
        termination=Termination.RESIGN,
        reason="",
        versions={"a": "1", "b": "1"},
        evidence=None,
        seed=1,
    )


def write(path: Path, ids: list[str], bad_first: bool = False) -> Path:
    writer = RecordWriter(path)
    for game_id in ids:
        writer.write(record(game_id))
    writer.close()
    if bad_first:  # a line that is not a record: the listing's numbers are not line numbers
        path.write_text("not a record\n" + path.read_text())
    return path


def outcome(pick: object) -> str:
    try:
        return pick().game_id  # type: ignore[operator]
    except ConfigError as exc:
        return f"refused: {exc}"


QUERIES = ["m1-2", "m1-", "m2", "m", "2", "3", "4", "9", "zz", "m1-1x"]


@pytest.mark.parametrize("bad_first", [False, True])
@pytest.mark.parametrize(
    "ids",
    [
        ["m1-1", "m1-2", "m1-3"],  # one match: a number is its game number
        ["m1-1", "m1-2", "m2-1", "m2-3"],  # two: a number is the listing's
        ["x-3", "x-1", "x-2", "x-10"],  # game numbers out of listing order
    ],
)
@pytest.mark.parametrize("query", QUERIES)
def test_both_readings_choose_the_same_game(
    tmp_path: Path, ids: list[str], bad_first: bool, query: str
) -> None:
    path = str(write(tmp_path / "games.jsonl", ids, bad_first))
    skipped: list[BadLine] = []
    every = outcome(lambda: choose_game(read_records(path, skipped), query, path))
    found = outcome(lambda: find_game(path, query, strict=False))
    assert found == every


def test_a_number_is_a_matchs_game_number_before_the_listings(tmp_path: Path) -> None:
    path = str(write(tmp_path / "one.jsonl", ["x-3", "x-1", "x-2"], bad_first=True))
    assert find_game(path, "1", strict=False).game_id == "x-1"
    mixed = str(write(tmp_path / "two.jsonl", ["x-3", "y-1", "x-2"], bad_first=True))
    assert find_game(mixed, "1", strict=False).game_id == "x-3"  # the first record listed


def test_an_ambiguous_prefix_and_an_unknown_id_say_how_to_name_one(tmp_path: Path) -> None:
    path = str(write(tmp_path / "games.jsonl", ["m1-1", "m1-2"]))
    with pytest.raises(ConfigError, match=r"2 games start with 'm1'.*give more of the id"):
        find_game(path, "m1", strict=False)
    with pytest.raises(ConfigError, match=r"no game 'q'.*ids here: m1-1, m1-2"):
        find_game(path, "q", strict=False)
    with pytest.raises(ConfigError, match="holds no games"):
        choose_game([], "1", "empty.jsonl")


def test_a_line_offered_without_an_id_is_counted_but_never_chosen() -> None:
    choice: GameChoice[int] = GameChoice("2", listing=False)
    for number, found in enumerate([None, "a-1", "b-1"], 1):
        choice.offer(found, number)
    assert choice.chosen("f") is None  # the listing's second game: only the listing tells
    named: GameChoice[int] = GameChoice("b-1", listing=False)
    for number, found in enumerate([None, "a-1", "b-1"], 1):
        named.offer(found, number)
    assert named.chosen("f") == 3


def test_a_game_record_is_what_is_returned(tmp_path: Path) -> None:
    path = str(write(tmp_path / "games.jsonl", ["m1-1"]))
    assert find_game(path, "m1-1", strict=False) == record("m1-1")
