"""The referee's adjudication: a proven connection ends the game for its owner."""

from __future__ import annotations

import random

from fakes import ScriptedBot, play_virtual

from arbiter.games.adjudication import Adjudication, Adjudicator, proof_json
from arbiter.games.referee import RefereeConfig
from arbiter.results.records import GameRecord, Termination
from arbiter.rules import Color, Game, Variant
from arbiter.rules.proof import Level, Proof, find_proof, has_won

HEX5 = Variant(islands=4, size=5, pie=False)


class LineBot(ScriptedBot):
    """Plays its line of cells, then the first free cell."""

    def __init__(self, line: list[str]) -> None:
        super().__init__(0.0, 0)
        self.line = line

    def choose_move(self, game: Game, color: Color) -> str:
        for name in self.line:
            if game.colors[game.geometry.names.index(name)] == 0:
                return name
        return game.move_name(game.legal_cells()[0])


def reprove(record: GameRecord) -> Proof:
    """The proof of an adjudicated record found again from its final position: the
    search is deterministic, so it is the proof the referee found (or one as good)."""
    game = record.replay()
    assert record.winner_color is not None
    owner = Color.BLACK if record.winner_color.value == "black" else Color.WHITE
    proof = find_proof(game.geometry, game.colors, owner, level=Level.HSEARCH)
    assert proof is not None, f"game {record.game_id}: no proof for the winner"
    return proof


def check_evidence(record: GameRecord) -> None:
    """The proof as recorded: cells that are empty, carriers pairwise disjoint, the
    owner the winner's colour."""
    assert record.evidence is not None and record.evidence.proof is not None
    data = record.evidence.proof
    game = record.replay()
    names = game.geometry.names
    assert data["owner"] == record.winner_color
    seen: set[str] = set()
    for link in data["links"]:
        cells = set(link["carrier"])
        assert not cells & seen, "two links share a cell"
        seen |= cells
        assert all(game.colors[names.index(c)] == 0 for c in cells)
    assert len(data["chain"]) == len(data["links"]) + 1
    assert GameRecord.from_json(record.to_json()) == record


def play_out(record: GameRecord, seed: int) -> None:
    """The opponent moves first, at random (half its moves into the carrier); the owner
    answers with `Proof.respond`, else plays at random outside it; the owner wins."""
    rng = random.Random(seed)
    game = record.replay()
    geom, colors = game.geometry, list(game.colors)
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


async def test_a_proven_connection_ends_the_game_for_its_owner() -> None:
    black = LineBot(["b2", "c3", "d4"])
    white = LineBot(["a1", "e1", "a5"])
    config = RefereeConfig(adjudicate=Adjudication.PROVEN)
    outcome, _, _ = await play_virtual((black, white), "20+0.1", config, variant=HEX5)
    record: GameRecord = outcome.record  # type: ignore[attr-defined]
    assert record.termination is Termination.ADJUDICATED, record.reason
    assert record.winner == "p1" and record.winner_color == "black"
    assert not record.void
    game = record.replay()
    assert game.winner is None  # not connected on the board: proven
    assert len(record.moves) <= 5
    check_evidence(record)
    assert record.evidence is not None and record.evidence.engine == "referee"
    for seed in range(20):
        play_out(record, seed)


async def test_without_adjudication_the_same_line_is_played_out() -> None:
    black = LineBot(["b2", "c3", "d4"])
    white = LineBot(["a1", "e1", "a5"])
    outcome, _, _ = await play_virtual((black, white), "20+0.1", variant=HEX5)
    record: GameRecord = outcome.record  # type: ignore[attr-defined]
    assert record.termination is Termination.CONNECTION
    assert record.evidence is None


def test_the_side_to_move_is_asked_first_and_hsearch_waits_for_a_full_board() -> None:
    game = Game(HEX5)
    for move in ["b2", "a1", "c3", "e1", "d4"]:
        game.play(move)
    judge = Adjudicator()
    proof = judge.judge(game)
    assert proof is not None and proof.owner is Color.BLACK
    assert judge.last_hsearch is None  # 5 of 25 cells: the cheap levels only
    assert proof_json(game, proof)["owner"] == "black"
