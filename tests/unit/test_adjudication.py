"""The referee's adjudication: a proven connection ends the game for its owner."""

from __future__ import annotations

from fakes import ScriptedBot, play_virtual
from proofs import check_evidence, play_out

from arbiter.games.adjudication import Adjudication, Adjudicator, proof_json
from arbiter.games.referee import RefereeConfig
from arbiter.results.records import GameRecord, Termination
from arbiter.rules import Color, Game, Variant

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


def test_the_cheap_levels_prove_before_hsearch_is_due() -> None:
    game = Game(HEX5)
    for move in ["b2", "a1", "c3", "e1", "d4"]:
        game.play(move)
    judge = Adjudicator()
    proof = judge.judge(game)
    assert proof is not None and proof.owner is Color.BLACK
    assert judge.last_hsearch is None  # 5 of 25 cells: the cheap levels only
    assert proof_json(game, proof)["owner"] == "black"


def test_the_side_to_move_wins_with_a_key_move_when_no_side_has_a_proof() -> None:
    game = Game(HEX5)
    for move in ["e4", "a1", "d3", "b4"]:
        game.play(move)
    assert Adjudicator(winning_move=None).judge(game) is None  # no proof for either side
    proof = Adjudicator().judge(game)
    assert proof is not None and proof.owner is Color.BLACK is game.to_move
    recorded = proof_json(game, proof)
    # Black plays c2, then holds bridges and edge templates from edge to edge.
    assert recorded["key"] == "c2" and ["c2"] in [g["stones"] for g in recorded["chain"]]
    assert {link["kind"] for link in recorded["links"]} == {"bridge", "edge template II"}


async def test_a_key_move_ends_the_game_for_the_side_to_move() -> None:
    black = LineBot(["e4", "d3", "c2"])
    white = LineBot(["a1", "b4", "a5"])
    config = RefereeConfig(adjudicate=Adjudication.PROVEN)
    outcome, _, _ = await play_virtual((black, white), "20+0.1", config, variant=HEX5)
    record: GameRecord = outcome.record  # type: ignore[attr-defined]
    assert record.termination is Termination.ADJUDICATED and record.winner_color == "black"
    assert record.moves == ["e4", "a1", "d3", "b4"]  # ended before Black played its key
    assert "Black, to move, has a proven connection once it plays c2" in record.reason
    check_evidence(record)
    for seed in range(20):  # Black plays c2 first, then keeps the proof
        play_out(record, seed)
