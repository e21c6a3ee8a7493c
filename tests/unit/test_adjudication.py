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
