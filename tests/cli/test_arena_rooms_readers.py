"""The commands that read results, given an arena file with rooms: the summaries show
every room in turn, the readers of one store take --room and refuse a file of several
rooms without it, naming them. The stores are made here, through `Store`, as a served
arena's rooms fill theirs (no server runs)."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path
from typing import Any

import pytest
from commands import invoke

from arbiter.results.records import GameRecord, Termination
from arbiter.results.store import Store
from arbiter.runs.schedule import ScheduledGame

ROOMS = """\
[arena]
name = "ladder"
listen = "127.0.0.1:0"

[[room]]
name = "atoll11"
size = 7

[[room]]
name = "hex11"
islands = 4
size = 5

[[room]]
name = "quiet"
"""
# Each room's engines and games: (winner, loser) in play order. "quiet" has no store.
PLAYED = {
    "atoll11": [("alpha", "beta"), ("alpha", "beta"), ("beta", "alpha"), ("alpha", "beta")],
    "hex11": [("gamma", "delta"), ("delta", "gamma"), ("gamma", "delta")],
}
NAMES = "atoll11, hex11, quiet"


def _store(path: Path, room: str, games: list[tuple[str, str]]) -> None:
    with Store.open(path) as store:
        store.begin("ladder", {"format": "arena"}, {"name": "ladder"}, {})
        for number, (winner, loser) in enumerate(games, 1):
            seats = (winner, loser) if number % 2 else (loser, winner)
            record = GameRecord(
                game_id=f"{room}-{number}",
                variant={},
                seat1=seats[0],
                seat2=seats[1],
                tc={},
                started=f"2026-01-01T00:00:{number:02d}Z",
                termination=Termination.RESIGN,
                winner=winner,
            )
            store.write(ScheduledGame(number, record.game_id, seats, 1, ""), record)


@pytest.fixture(scope="module")
def rooms(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A folder with an arena file of three rooms, two of which have played."""
    folder = tmp_path_factory.mktemp("rooms")
    (folder / "rooms.toml").write_text(ROOMS)
    for room, games in PLAYED.items():
        _store(folder / f"ladder-{room}.sqlite", room, games)
    (folder / "plain.toml").write_text(ROOMS.split("[[room]]")[0])  # no rooms
    return folder


def _engines(board: dict[str, Any]) -> set[str]:
    return {str(e["name"]) for e in board["engines"]}


def test_ratings_of_a_rooms_file_is_every_room_in_turn_headed_by_its_name(rooms: Path) -> None:
    done = invoke("ratings", "rooms.toml", cwd=rooms)
    assert done.returncode == 0, done.stderr
    text = done.stdout
    heads = [text.index(f"Room {r}:") for r in ("atoll11", "hex11", "quiet")]
    assert heads == sorted(heads), text
    atoll, hex_, quiet = text[heads[0] : heads[1]], text[heads[1] : heads[2]], text[heads[2] :]
    assert "alpha" in atoll and "gamma" not in atoll
    assert "gamma" in hex_ and "delta" in hex_ and "alpha" not in hex_
    assert quiet.startswith("Room quiet: no store yet at ")  # one line, no error
    assert "ladder-quiet.sqlite" in quiet and len(quiet.strip().splitlines()) == 1

    as_json = invoke("ratings", "rooms.toml", "--json", cwd=rooms)
    assert as_json.returncode == 0, as_json.stderr
    data = json.loads(as_json.stdout)
    assert list(data) == ["atoll11", "hex11", "quiet"]
    assert data["atoll11"]["games"] == 4 and _engines(data["atoll11"]) == {"alpha", "beta"}
    assert data["hex11"]["games"] == 3 and _engines(data["hex11"]) == {"gamma", "delta"}
    assert data["quiet"]["games"] == 0 and data["quiet"]["engines"] == []
    assert data["quiet"]["note"].startswith("no store yet at")
    # One room: shaped as a file without rooms is, the leaderboard of its store.
    one = invoke("ratings", "rooms.toml", "--room", "hex11", "--json", cwd=rooms)
    alone = invoke("ratings", "ladder-hex11.sqlite", "--json", cwd=rooms)
    assert one.returncode == 0, one.stderr
    assert json.loads(one.stdout) == json.loads(alone.stdout) == data["hex11"]


def test_ratings_as_csv_of_a_rooms_file_is_one_table_per_room_with_a_room_column(
    rooms: Path,
) -> None:
    done = invoke("ratings", "rooms.toml", "--format", "csv", cwd=rooms)
    assert done.returncode == 0, done.stderr
    tables = done.stdout.strip().split("\n\n")
    assert len(tables) == 2, done.stdout
    for table, (room, names) in zip(
        tables, [("atoll11", {"alpha", "beta"}), ("hex11", {"gamma", "delta"})], strict=True
    ):
        rows = list(csv.DictReader(io.StringIO(table)))
        assert {r["room"] for r in rows} == {room}
        assert {r["engine"] for r in rows} == names
    assert "Room quiet: no store yet at" in done.stderr


def test_status_of_a_rooms_file_is_every_room_and_one_with_room(rooms: Path) -> None:
    for command in (["arena", "status"], ["tournament", "status"]):
        done = invoke(*command, "rooms.toml", cwd=rooms)
        assert done.returncode == 0, done.stderr
        lines = done.stdout.splitlines()
        said = [line for line in lines if line.startswith("Arena ladder ")]
        assert said[0].startswith("Arena ladder atoll11: 4 games stored"), said
        assert said[1].startswith("Arena ladder hex11: 3 games stored"), said
        assert said[2].startswith("Arena ladder quiet: no store yet at"), said
        assert len(said) == 3

        as_json = invoke(*command, "rooms.toml", "--json", cwd=rooms)
        assert as_json.returncode == 0, as_json.stderr
        data = json.loads(as_json.stdout)
        assert list(data) == ["atoll11", "hex11", "quiet"]
        assert [data[r]["games"] for r in data] == [4, 3, 0]
        assert data["hex11"]["room"] == "hex11" and "standings" in data["hex11"]
        assert "standings" not in data["quiet"] and "no store yet" in data["quiet"]["note"]

        one = invoke(*command, "rooms.toml", "--room", "hex11", "--json", cwd=rooms)
        assert one.returncode == 0, one.stderr
        assert json.loads(one.stdout) == data["hex11"]
        # One room asked for by name and not played: an error, as for a file without rooms.
        quiet = invoke(*command, "rooms.toml", "--room", "quiet", cwd=rooms)
        assert quiet.returncode == 2 and "no store yet at" in quiet.stderr


@pytest.mark.parametrize(
    ("command", "what"),
    [
        (["report", "rooms.toml", "-o", "OUT"], "a report is of one store"),
        (["arena", "export", "rooms.toml", "--records", "OUT"], "export writes one"),
        (["tournament", "export", "rooms.toml", "--records", "OUT"], "export writes one"),
        (["openings", "swapmap", "rooms.toml", "--svg", "OUT"], "a swap map is of one store"),
        (["ratings", "rooms.toml", "ladder-hex11.sqlite"], "ratings combines its sources"),
    ],
)
def test_a_reader_of_one_store_refuses_a_file_of_rooms_without_room(
    rooms: Path, tmp_path: Path, command: list[str], what: str
) -> None:
    out = tmp_path / "out"
    done = invoke(*(str(out) if a == "OUT" else a for a in command), cwd=rooms)
    assert done.returncode == 2, done.stderr
    assert done.stderr.splitlines() == [
        f"Error: rooms.toml: the arena has rooms {NAMES}, each with a store of its own,"
        f" and {what}" + done.stderr.split(what, 1)[1].splitlines()[0]
    ]
    assert "(add --room NAME, e.g. --room atoll11)" in done.stderr
    assert done.stdout == "" and not out.exists()  # nothing written before the refusal


def test_a_reader_of_one_store_reads_the_room_named(rooms: Path, tmp_path: Path) -> None:
    page = tmp_path / "hex.html"
    done = invoke("report", "rooms.toml", "--room", "hex11", "-o", str(page), cwd=rooms)
    assert done.returncode == 0, done.stderr
    assert "3 rated games" in done.stderr
    text = page.read_text()
    assert "gamma" in text and "alpha" not in text and "rooms.toml (room hex11)" in text
    for command in (["arena", "export"], ["tournament", "export"]):
        records = tmp_path / f"{command[0]}.jsonl"
        done = invoke(*command, "rooms.toml", "--room", "atoll11", "--records", str(records))
        assert done.returncode == 2  # run from elsewhere: the file is not there
        done = invoke(
            *command, "rooms.toml", "--room", "atoll11", "--records", str(records), cwd=rooms
        )
        assert done.returncode == 0, done.stderr
        ids = [json.loads(line)["game_id"] for line in records.read_text().splitlines()]
        assert ids == [f"atoll11-{n}" for n in range(1, 5)]
    both = invoke("ratings", "rooms.toml", "ladder-atoll11.sqlite", "--room", "hex11", cwd=rooms)
    assert both.returncode == 0, both.stderr  # one room, combined with another source
    assert "alpha" in both.stdout and "gamma" in both.stdout


def test_one_room_needs_no_room_option(tmp_path: Path) -> None:
    (tmp_path / "one.toml").write_text(ROOMS.split('\n[[room]]\nname = "hex11"')[0])
    _store(tmp_path / "ladder-atoll11.sqlite", "atoll11", PLAYED["atoll11"])
    records = tmp_path / "games.jsonl"
    done = invoke("arena", "export", "one.toml", "--records", str(records), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert len(records.read_text().splitlines()) == 4


@pytest.mark.parametrize(
    ("command", "says"),
    [
        (["ratings", "rooms.toml", "--room", "nope"], f"its rooms: {NAMES}"),
        (["report", "rooms.toml", "--room", "nope", "-o", "OUT"], f"its rooms: {NAMES}"),
        (["arena", "status", "rooms.toml", "--room", "nope"], f"its rooms: {NAMES}"),
        (["arena", "status", "plain.toml", "--room", "hex11"], "the file has no [[room]]"),
        (["tournament", "status", "plain.toml", "--room", "hex11"], "the file has no [[room]]"),
        (["ratings", "ladder-hex11.sqlite", "--room", "hex11"], "only an arena file has rooms"),
        (["tournament", "status", "ladder-hex11.sqlite", "--room", "x"], "not an arena file"),
        (
            ["tournament", "export", "--example", "demo", "--room", "x", "--records", "OUT"],
            "demo.toml is not an arena file",
        ),
    ],
)
def test_a_room_that_is_not_there_is_one_line(
    rooms: Path, tmp_path: Path, command: list[str], says: str
) -> None:
    out = tmp_path / "out"
    done = invoke(*(str(out) if a == "OUT" else a for a in command), cwd=rooms)
    assert done.returncode == 2, done.stderr
    assert len(done.stderr.splitlines()) == 1 and says in done.stderr, done.stderr
    assert "--room" in done.stderr and not out.exists()


def test_show_names_the_room_to_export(rooms: Path) -> None:
    done = invoke("show", "rooms.toml", cwd=rooms)
    assert done.returncode == 2
    assert "arbiter tournament export rooms.toml --room atoll11 --records" in done.stderr


def test_a_room_whose_ratings_fail_names_the_room_and_prints_no_other(rooms: Path) -> None:
    done = invoke("ratings", "rooms.toml", "--anchor", "alpha=0", cwd=rooms)
    assert done.returncode == 2 and done.stdout == ""  # not atoll11's table, then an error
    assert done.stderr.splitlines() == [
        "Error: rooms.toml: room hex11: --anchor names 'alpha', which has no games here"
        " (engines: gamma, delta)"
    ]


@pytest.mark.parametrize(
    "command",
    [
        ["ratings", "rooms.toml", "--room", "quiet"],
        ["report", "rooms.toml", "--room", "quiet", "-o", "OUT"],
        ["arena", "export", "rooms.toml", "--room", "quiet", "--records", "OUT"],
    ],
)
def test_a_room_named_that_nobody_played_in_is_one_line(
    rooms: Path, tmp_path: Path, command: list[str]
) -> None:
    out = tmp_path / "out"
    done = invoke(*(str(out) if a == "OUT" else a for a in command), cwd=rooms)
    assert done.returncode == 2
    assert done.stderr.splitlines() == [
        f"Error: rooms.toml: no store yet at {rooms / 'ladder-quiet.sqlite'}"
        " (start the server: arbiter arena serve rooms.toml)"
    ]
    assert not out.exists() and not (rooms / "ladder-quiet.sqlite").exists()
