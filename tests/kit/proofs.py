"""Checks of an adjudicated game's proof, shared by the unit and command-line tests:
the proof as recorded, and the owner winning it against random replies."""

from __future__ import annotations

import random

from arbiter.results.records import GameRecord
from arbiter.rules import Color
from arbiter.rules.geometry import Geometry
from arbiter.rules.proof import Level, Proof, find_proof, has_won


def final_colors(record: GameRecord) -> tuple[Geometry, list[int], Color]:
    """An adjudicated record's final position with its proof's key move played (a win
    for the side to move: it plays the key first), and the proof's owner."""
    game = record.replay()
    assert record.winner_color is not None
    owner = Color.BLACK if record.winner_color.value == "black" else Color.WHITE
    colors = list(game.colors)
    assert record.evidence is not None and record.evidence.proof is not None
    key = record.evidence.proof.get("key")
    if key is not None:
        assert game.to_move is owner, "a key move is the side to move's"
        cell = game.geometry.names.index(key)
        assert colors[cell] == 0
        colors[cell] = int(owner)
    return game.geometry, colors, owner


def reprove(record: GameRecord) -> Proof:
    """The proof of an adjudicated record found again from its final position (its key
    move played): the search is deterministic, so it is the proof the referee found (or
    one as good)."""
    geom, colors, owner = final_colors(record)
    proof = find_proof(geom, colors, owner, level=Level.HSEARCH)
    assert proof is not None, f"game {record.game_id}: no proof for the winner"
    return proof


def check_evidence(record: GameRecord) -> None:
    """The proof as recorded: cells that are empty, carriers pairwise disjoint, the
    owner the winner's colour."""
    assert record.evidence is not None and record.evidence.proof is not None
    data = record.evidence.proof
    geom, colors, _ = final_colors(record)
    names = geom.names
    assert data["owner"] == record.winner_color
    seen: set[str] = set()
    for link in data["links"]:
        cells = set(link["carrier"])
        assert not cells & seen, "two links share a cell"
        seen |= cells
        assert all(colors[names.index(c)] == 0 for c in cells)
    assert len(data["chain"]) == len(data["links"]) + 1
    assert GameRecord.from_json(record.to_json()) == record


def play_out(record: GameRecord, seed: int) -> None:
    """The opponent moves first, at random (half its moves into the carrier); the owner
    answers with `Proof.respond`, else plays at random outside it; the owner wins."""
    rng = random.Random(seed)
    geom, colors, _ = final_colors(record)
    proof = reprove(record)
    owner, opp = proof.owner, proof.owner.other
    while True:
        empty = [c for c, v in enumerate(colors) if v == 0]
        if not empty:
            break
        inside = sorted(proof.carrier)
        cell = rng.choice(inside) if inside and rng.random() < 0.5 else rng.choice(empty)
        colors[cell] = int(opp)
        reply, proof = proof.respond(cell)
        if reply is None:
            outside = [c for c, v in enumerate(colors) if v == 0 and c not in proof.carrier]
            reply = rng.choice(outside) if outside else None
        if reply is not None:
            assert colors[reply] == 0
            colors[reply] = int(owner)
    assert has_won(geom, colors, owner) and not has_won(geom, colors, opp)
