"""An arena file's [[room]] tables: what each room inherits, and the errors."""

from __future__ import annotations

from pathlib import Path

import pytest
from arena_helpers import arena_file
from commands import invoke

from arbiter.arena.config import load_arena
from arbiter.arena.roster import players_path


def test_rooms_inherit_the_arena_table_and_keep_stores_of_their_own(tmp_path: Path) -> None:
    rooms = '[[room]]\nname = "atoll"\n\n[[room]]\nname = "hex"\nislands = 4\nsize = 9\n'
    arena = load_arena(arena_file(tmp_path, extra=rooms + 'output = "hex.sqlite"\n'))
    atoll, hex_ = arena.rooms
    assert arena.room == "atoll" and arena.output == atoll.output  # the first room
    assert (atoll.room, atoll.variant.size, atoll.variant.islands) == ("atoll", 7, 8)
    assert (hex_.room, hex_.variant.size, hex_.variant.islands) == ("hex", 9, 4)
    assert str(atoll.tc) == str(hex_.tc) == "10+0.1" and hex_.engines.keys() == {"random"}
    assert atoll.output.name == "test-arena-atoll.sqlite" and hex_.output.name == "hex.sqlite"
    assert players_path(hex_) == players_path(atoll) == tmp_path / "test-arena.players.json"
    plain = load_arena(arena_file(tmp_path))  # the file without rooms is as it was
    assert plain.rooms == () and plain.room == "" and plain.title == "test-arena"


@pytest.mark.parametrize(
    ("rooms", "says"),
    [
        ('[[room]]\nname = "a"\nlisten = "127.0.0.1:1"', "unknown key(s) listen"),
        ('[[room]]\nname = "a b"', '"a b" is not a room\'s name'),
        ('[[room]]\nname = "a"\n[[room]]\nname = "a"', 'two rooms are named "a"'),
        (
            '[[room]]\nname = "a"\noutput = "x.sqlite"\n[[room]]\nname = "b"\noutput = "x.sqlite"',
            "two rooms keep their games in x.sqlite",
        ),
        ('[[room]]\nname = "a"\nsize = 8', "room 'a'.size"),
    ],
)
def test_a_bad_room_is_a_usage_error_naming_it(tmp_path: Path, rooms: str, says: str) -> None:
    done = invoke("arena", "status", str(arena_file(tmp_path, extra=rooms)))
    assert done.returncode == 2 and says in done.stderr, done.stderr
    assert len(done.stderr.strip().splitlines()) == 1


def test_the_readers_take_a_room_by_name(tmp_path: Path) -> None:
    file = str(arena_file(tmp_path, extra='[[room]]\nname = "a"\n[[room]]\nname = "b"\n'))
    done = invoke("arena", "status", file, "--room", "b")
    assert done.returncode == 2 and "no store yet at" in done.stderr, done.stderr
    assert "test-arena-b.sqlite" in done.stderr
    done = invoke("arena", "export", file, "--room", "c", "--records", str(tmp_path / "x.jsonl"))
    assert done.returncode == 2 and 'no room "c" in the arena file' in done.stderr
    assert "its rooms: a, b" in done.stderr
