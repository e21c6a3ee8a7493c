"""Reading a game's transcript (`--transcripts DIR`) and checking it against its record."""

from __future__ import annotations

import re
from pathlib import Path

from arbiter.results.records import GameRecord

LINE = re.compile(r"^(\d+) ([<>])(.+)\(([12])\):(?: (.*))?$")


def exchanges(path: Path) -> list[tuple[int, str, str, int, str]]:
    """A transcript's lines as (ms, direction, name, seat, text), headers left out."""
    out = []
    for line in path.read_text().splitlines():
        if line.startswith("#"):
            continue
        match = LINE.match(line)
        assert match, line
        ms, arrow, name, seat, text = match.groups()
        out.append((int(ms), arrow, name, int(seat), text or ""))
    return out


def check_transcript(path: Path, record: GameRecord) -> None:
    """The file tells the game the record tells: its seats, the opening told to both, every
    other move as the mover's answer to `genmove` (the engine at fault's last exchanges as
    in its evidence), the times in order, and how it ended."""
    text = path.read_text()
    first, *_, last = text.splitlines()
    v = record.variant
    board = f"{'Hex' if v['islands'] == 4 else 'Atoll'} {v['size']}"
    assert first.startswith(
        f"# Game {record.game_id}: {board}, seat 1 {record.seat1}, seat 2"
        f" {record.seat2}, time control {record.tc['seat1']}"
    )
    assert last.startswith(f"# {record.winner} wins ({record.termination})")
    lines = exchanges(path)
    assert [ms for ms, *_ in lines] == sorted(ms for ms, *_ in lines)
    assert {(seat, name) for _, _, name, seat, _ in lines} == {(1, record.seat1), (2, record.seat2)}
    asked: dict[tuple[int, str], None] = {}
    moves = []
    for _, arrow, _, seat, words in lines:
        if arrow == ">" and " genmove " in f" {words}":
            asked[(seat, words.split()[0])] = None
        elif arrow == "<" and words.startswith("="):
            number, _, move = words[1:].partition(" ")
            if (seat, number) in asked:
                moves.append(move)
    # An opening is told to each engine (`play`) before its first `genmove`.
    opening = record.moves[: len(record.moves) - len(moves)]
    assert record.moves[len(opening) :] == moves
    for seat in (1, 2):
        told = []
        for _, arrow, _, at, words in lines:
            if at == seat and arrow == ">" and " genmove " in f" {words}":
                break
            if at == seat and arrow == ">" and " play " in f" {words}":
                told.append(words.split()[-1])
        assert told[: len(opening)] == opening
    if record.evidence is not None:
        seat = 1 if record.evidence.engine == record.seat1 else 2
        mine = [f"{a} {t}".rstrip() for _, a, _, s, t in lines if s == seat]
        assert record.evidence.transcript == mine[-len(record.evidence.transcript) :]
