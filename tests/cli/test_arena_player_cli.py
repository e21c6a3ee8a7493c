"""`arbiter arena player`: what it writes to the players file, and its errors."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from arena_helpers import arena_file
from commands import invoke

from arbiter.arena.config import load_arena, token_matches
from arbiter.arena.roster import Watch, players_path


def test_add_ban_unban_remove_edit_the_players_file_and_never_the_arena_file(
    tmp_path: Path,
) -> None:
    file = arena_file(tmp_path, players=("alice",))
    before = file.read_bytes()
    added = invoke("arena", "player", "add", str(file), "dave", "--games-at-once", "2")
    assert added.returncode == 0, added.stderr
    token = added.stdout.strip()
    assert "dave may log in from now on" in added.stderr
    assert invoke("arena", "player", "ban", str(file), "alice", "--reason", "x\ny").returncode == 0
    watch = Watch(load_arena(file, engines_here=False))
    entry = watch.entry("dave")
    assert entry is not None and token_matches(token, entry.token_hash)
    assert entry.games_at_once == 2
    why = watch.barred("alice")
    assert (
        why is not None and why.startswith("alice is banned from this arena: x") and "\n" not in why
    )
    assert invoke("arena", "player", "unban", str(file), "alice").returncode == 0
    assert invoke("arena", "player", "remove", str(file), "dave").returncode == 0
    assert watch.look()
    assert watch.entry("dave") is None and watch.barred("alice") is None
    assert json.loads(players_path(watch.arena).read_text()) == {"players": {}, "banned": {}}
    assert file.read_bytes() == before


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (("add", "alice"), "alice is a [[player]] of the arena file already"),
        (("add", "random"), "random is one of the arena's own engines"),
        (("add", "al@ice"), "'@', which joins a name to its engine's version"),
        (("add", "ALICE"), "looks like 'alice', which is taken"),
        (("add", "eve", "--token-hash", "sha256$x$y"), "--token-hash: not a token hash"),
        (("remove", "alice"), "alice is a [[player]] of the arena file, not one added"),
        (("remove", "eve"), "no player eve was added"),
        (("unban", "eve"), "eve is not banned"),
    ],
)
def test_a_player_change_that_cannot_be_made_is_one_line_and_status_2(
    tmp_path: Path, args: tuple[str, ...], says: str
) -> None:
    file = arena_file(tmp_path, players=("alice",))
    done = invoke("arena", "player", args[0], str(file), *args[1:])
    assert done.returncode == 2, done.stderr
    assert says in done.stderr and len(done.stderr.strip().splitlines()) == 1, done.stderr
    assert not players_path(load_arena(file, engines_here=False)).exists()


def test_a_players_file_spoilt_by_hand_keeps_the_last_good_players(tmp_path: Path) -> None:
    file = arena_file(tmp_path, players=())
    assert invoke("arena", "player", "ban", str(file), "mallory").returncode == 0
    watch = Watch(load_arena(file, engines_here=False))
    players_path(watch.arena).write_text("{not json")
    assert not watch.look()
    assert watch.barred("mallory") is not None
    done = invoke("arena", "player", "unban", str(file), "mallory")
    assert done.returncode == 2 and "not JSON" in done.stderr
