"""The outside judge through real processes: a solver engine asked who wins.

The solver written here answers with the side that has a proof from `arbiter.rules.proof`
where one exists, else `unknown`: what an outside solver does, a search that says who
wins without playing the game out. Hostile solvers hang, answer garbage, die, refuse or
ramble; none of them may stop a game, lose it, or outlive it.
"""

from __future__ import annotations

import sys
from dataclasses import replace
from pathlib import Path

import pytest
import trio
from inline import inline_engine
from paths import BADBOT
from processes import running

from arbiter.engines.dialect import Dialect
from arbiter.engines.process import Deadlines, EngineSpec
from arbiter.executors.game_worker import GameWorker
from arbiter.executors.jobs import ExecutorSettings, Finished, GameJob
from arbiter.games.referee import GameSpec, RefereeConfig
from arbiter.games.solver import OutsideJudge, SolverSettings
from arbiter.results.records import GameRecord, Termination
from arbiter.rules import Color, Game, Variant
from arbiter.rules.clock import TimeControl
from arbiter.rules.proof import Level, find_proof

DEADLINES = Deadlines(handshake=5.0, command=1.0, quit=0.5, term=0.5)
ROOMY = TimeControl.parse("20+0.1")
ATOLL7 = Variant(size=7, pie=False)  # the opening below plays move 2

# A solver: the side with a proven connection, asked first for the side to move, else
# "unknown". It writes its process id where $PIDS says, so that a test can check that
# none outlives its game.
SOLVER = """
from arbiter.rules import Color, Game, Variant
from arbiter.rules.proof import Level, find_proof

if os.environ.get("PIDS"):
    with open(os.environ["PIDS"], "a") as pids:
        pids.write(f"{os.getpid()}\\n")
MODE = os.environ.get("MODE", "prove")

class Bot(sk.Bot):
    def __init__(self):
        super().__init__()
        self.commands["test-solve"] = self.cmd_test_solve
        self.commands["test-budget"] = lambda args: ""

    def cmd_test_solve(self, args):
        if MODE == "hang":
            time.sleep(3600)
        if MODE == "die":
            os._exit(1)
        if MODE == "garbage":
            self.send("hello there\\n\\n")
            return ""
        if MODE == "refuse":
            raise sk.GtpError("cannot solve")
        if MODE == "ramble":
            return "black\\nwhite"
        g = self.game
        game = Game(Variant(g.islands, g.size, g.pie))
        for _, move in g.history:
            game.play(move)
        for color in (game.to_move, game.to_move.other):
            if find_proof(game.geometry, game.colors, color, level=Level.HSEARCH):
                return "black" if color is Color.BLACK else "white"
        return "unknown"

sys.exit(Bot().run())
"""


def solver(mode: str, pids: Path, budget: float = 5.0, start: float = 0.0) -> SolverSettings:
    spec = inline_engine("prover", SOLVER)
    dialect = Dialect(solve=("test-solve",), solve_budget=("test-budget",))
    spec = replace(spec, env={"MODE": mode, "PIDS": str(pids)}, dialect=dialect)
    return SolverSettings("prover", spec, budget=budget, start=start)


def player(name: str) -> EngineSpec:
    return EngineSpec((sys.executable, str(BADBOT), "ok", "--name", name), name=name)


# An opening after which Black, to move, holds a proven connection on Atoll 7: whatever
# the random players do next, the solver finds it at its first question.
PROVEN_FOR_BLACK = [
    "c4",
    "c2",
    "b3",
    "g5",
    "b4",
    "c3",
    "d5",
    "f5",
    "b6",
    "g4",
    "g1",
    "a5",
    "a1",
    "e3",
]


async def play(settings: SolverSettings, games: int) -> tuple[list[GameRecord], list[str]]:
    """`games` games of two random players on Atoll 7 from `PROVEN_FOR_BLACK`, seats
    swapped each game, judged by `settings`' solver: the records, and what the solver
    did wrong."""
    executor = ExecutorSettings(
        engines={"a": player("a"), "b": player("b")},
        referee=RefereeConfig(margin=0.1, grace=0.3),
        deadlines=DEADLINES,
        solver=settings,
    )
    events: list[object] = []
    with trio.fail_after(60):
        async with trio.open_nursery() as nursery:
            worker = GameWorker(executor, nursery, events.append)
            for number in range(games):
                spec = GameSpec(f"g-{number}", ATOLL7, (ROOMY, ROOMY), tuple(PROVEN_FOR_BLACK))
                await worker.play(GameJob(number, spec, ("a", "b")[:: 1 - 2 * (number % 2)]))
            assert worker.judge is not None
            faults = worker.judge.faults
            await worker.aclose()
    return [e.record for e in events if isinstance(e, Finished)], faults


def test_the_opening_is_proven_for_black_whatever_black_plays() -> None:
    """What the tests below rely on: after any move of Black's, the search still finds
    Black's proof (so White has none: the proofs are sound)."""
    opened = Game(ATOLL7)
    for move in PROVEN_FOR_BLACK:
        opened.play(move)
    for cell in opened.legal_cells():
        game = opened.copy()
        game.play(cell)
        assert game.winner is None
        assert find_proof(game.geometry, game.colors, Color.BLACK, level=Level.HSEARCH)


async def test_a_solver_that_names_a_winner_ends_the_game_for_it(tmp_path: Path) -> None:
    pids = tmp_path / "pids"
    records, faults = await play(solver("prove", pids), 2)
    assert faults == [] and len(records) == 2
    for record in records:
        assert record.termination is Termination.ADJUDICATED, record.reason
        # Asked after the first ply the engines played: Black's proof held.
        assert record.plies == len(PROVEN_FOR_BLACK) + 1
        assert record.winner == record.black and record.winner_color == "black"
        evidence = record.evidence
        assert evidence is not None and evidence.proof is None and evidence.engine == "prover"
        assert evidence.solver == {
            "engine": "prover",
            "command": "test-solve",
            "answer": "black",
            "budget": 5.0,
        }
        game = record.replay()
        assert game.winner is None
        assert find_proof(game.geometry, game.colors, Color.BLACK, level=Level.HSEARCH)
        # The exchange that decided it: the question and its answer.
        assert evidence.transcript[-3].endswith(" test-solve"), evidence.transcript
        assert evidence.transcript[-2].endswith(" black"), evidence.transcript
        assert "'test-solve' with 'black': Black wins" in record.reason
        assert "its word, not a proof" in record.reason
        assert GameRecord.from_json(record.to_json()) == record
    # One solver process served both games, and is gone.
    started = pids.read_text().split()
    assert len(started) == 1 and not running(int(started[0]))


# Each hostile solver, and what it is charged with when at fault (None: in order).
HOSTILE = {
    "hang": "no answer to 'test-solve' within 0.7 s",
    "die": "exit",
    "garbage": "hello there",
    "refuse": None,
    "ramble": None,
}


@pytest.mark.slow
async def test_a_hostile_solver_never_stops_or_decides_a_game(tmp_path: Path) -> None:
    for mode, fault in HOSTILE.items():
        pids = tmp_path / f"{mode}.pids"
        settings = solver(mode, pids, budget=0.2)
        settings = replace(settings, spec=replace(settings.spec, command_timeout=0.5))
        records, faults = await play(settings, 2 if fault else 1)
        for record in records:  # played out, rated as always
            assert record.termination is Termination.CONNECTION, (mode, record.reason)
            assert not record.void and record.replay().winner is not None
        started = [int(pid) for pid in pids.read_text().split()]
        assert not any(running(pid) for pid in started), mode
        if fault is None:
            # Its answers name no winner, but it is in order: asked every ply, kept.
            assert faults == [] and len(started) == 1, (mode, faults)
        else:
            # At fault once a game: closed, asked nothing more that game, started
            # afresh for the next.
            assert len(faults) == 2 and all(fault in f for f in faults), (mode, faults)
            assert len(started) == 2, mode


async def test_the_solver_is_not_started_before_the_board_is_full_enough(tmp_path: Path) -> None:
    settings = solver("prove", tmp_path / "pids", start=0.5)
    async with trio.open_nursery() as nursery:
        judge = OutsideJudge(settings, nursery, DEADLINES)
        game = Game(ATOLL7)
        while game.n_stones + 1 < 0.5 * game.geometry.n_cells:
            game.play(game.legal_cells()[0])
            assert await judge.ask(game) is None
        assert judge.engine is None and not (tmp_path / "pids").exists()
