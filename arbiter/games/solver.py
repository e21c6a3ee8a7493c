"""The outside judge: an engine asked who wins the position, trusted, not proven.

A tournament's `solver` names an engine whose definition has a `solve_command` (MoHex
answers `dfpn-solve-state` with the winner of the position it was given, or `empty`
when its search ran out of time). Once the board is `solve_from` full, after every ply
that did not end the game, the referee gives it the moves it has not seen yet and asks,
with `solve_budget` seconds to answer. An answer that names a winner (`black`, `white`,
`b`, `w`) ends the game for that colour: termination `adjudicated`, its evidence naming
the solver, the command and the answer. Anything else plays on: another word
(`unknown`, `empty`), a `?`, several lines, silence past the deadline, a crash.

The answer is the solver's word, not a proof: a solver with a bug can end a game for the
wrong side, and nothing here can tell. The referee's own proofs (`adjudicate =
"proven"`) are checked and kept with their carriers; a solver's answer is kept as it was
said. Its engine runs in its own process group like any engine, every exchange has a
deadline, and a solver at fault is closed and asked nothing more until the next game,
so a solver that hangs or dies costs a game one budget at most, never its result.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import trio

from arbiter.definitions import Key
from arbiter.engines import dialect
from arbiter.engines.config import EnginesFile, KnownEngines
from arbiter.engines.process import Deadlines, Engine, EngineSpec, start_engine
from arbiter.errors import ConfigError, EngineError
from arbiter.rules import SWAP, Color, Game
from arbiter.text import escape, shorten, toml_value

__all__ = [
    "ANSWER_LIMIT",
    "SOLVE_BUDGET",
    "SOLVE_FROM",
    "Judgement",
    "OutsideJudge",
    "SolverSettings",
    "load_solver",
    "solver_keys",
    "winner_named",
]

log = logging.getLogger(__name__)

SOLVE_FROM = 0.5  # the fraction of cells filled before the solver is asked
SOLVE_BUDGET = 10.0  # seconds the solver is given per question
ANSWER_LIMIT = 200  # characters of an answer kept in a record
_WINNERS = {"black": Color.BLACK, "b": Color.BLACK, "white": Color.WHITE, "w": Color.WHITE}


def solver_keys(guide: str) -> tuple[Key, ...]:
    """The keys of a tournament file that name its solver (`guide`: the guide's folder,
    relative to the reference page that lists them)."""
    where = f"[An outside judge]({guide}/adjudication.md#an-outside-judge)"
    return (
        Key(
            "solver",
            str,
            "an engine whose definition has a `solve_command`: a key of `engines_file`, a"
            " bundled bot or one of this file's `[[engine]]` names; once the board is"
            " `solve_from` full it is asked who wins after every ply, and a winner it names"
            f" ends the game (its word is trusted, not proven: see {where})",
        ),
        Key(
            "solve_budget",
            float,
            "seconds the solver has for each question (0.01-3600); it is told them with its"
            " `solve_budget_command` and waited for that long plus its `command_timeout`",
            default=SOLVE_BUDGET,
            low=0.01,
            high=3600,
            unit=" seconds",
        ),
        Key(
            "solve_from",
            float,
            "the fraction of the board's cells filled before the solver is asked (0-1)",
            default=SOLVE_FROM,
            low=0,
            high=1,
        ),
    )


def load_solver(
    get: Callable[[str], Any],
    where: str,
    here: Path,
    engines: Mapping[str, EngineSpec],
    local: bool = True,
) -> SolverSettings | None:
    """A file's solver (`get` reads its keys, `engines` are its players by name): one of
    its engines, else a key of its `engines_file` or a bundled bot; ConfigError naming
    the key when there is none or it has no `solve_command`."""
    key = get("solver")
    if key is None:
        return None
    spec = engines.get(key)
    if spec is None:
        file = get("engines_file")
        origin = f"{where}.engines_file (relative to the tournament file)"
        known = KnownEngines(None if file is None else EnginesFile(here / file, origin=origin))
        if key not in known:
            raise ConfigError(
                f"no engine {toml_value(key)} to be the solver in {known.searched()}",
                where=f"{where}.solver",
                hint="name one of its engines, a key of its engines_file or a bundled bot",
            )
        spec = known.spec(key, local=local)
    if spec.dialect.solve is None:
        raise ConfigError(
            f"{toml_value(key)} has no solve_command, so it cannot be asked who wins",
            where=f"{where}.solver",
            hint='add solve_command = "dfpn-solve-state" (MoHex) to its definition',
        )
    name = spec.name or key
    return SolverSettings(name, spec, get("solve_budget"), get("solve_from"))


@dataclass(frozen=True)
class SolverSettings:
    """A run's outside judge: picklable, sent to every worker with its engines."""

    name: str  # the engine's name, as records and conditions give it
    spec: EngineSpec
    budget: float = SOLVE_BUDGET
    start: float = SOLVE_FROM

    def conditions(self) -> dict[str, Any]:
        """What a store keeps of it: games judged by another solver, or asked on
        another schedule, are not played under the same conditions."""
        solve = self.spec.dialect.solve or ()
        return {
            "engine": self.name,
            "command": " ".join(solve),
            "budget": self.budget,
            "from": self.start,
        }


@dataclass(frozen=True)
class Judgement:
    """A solver's answer that names a winner: what the record keeps of it."""

    winner: Color
    evidence: dict[str, Any]  # engine, command, answer (capped, escaped), budget, empty
    transcript: list[str]  # the end of the exchange with the solver


def winner_named(answer: str) -> Color | None:
    """The colour an answer names as the winner; None for anything else (a solver that
    does not know says so in its own words: `unknown`, `empty`)."""
    text = answer.strip().lower()
    if "\n" in text:
        return None
    return _WINNERS.get(text)


class OutsideJudge:
    """One solver engine, started when first asked and kept between games; at fault, it
    is closed and asked nothing more this game, and started afresh for the next."""

    def __init__(
        self, settings: SolverSettings, nursery: trio.Nursery, deadlines: Deadlines
    ) -> None:
        self.settings = settings
        self.nursery = nursery
        self.deadlines = deadlines
        self.engine: Engine | None = None
        self.seen = -1  # moves of this game the engine has; -1: the game is not set up
        self.silent = False  # at fault this game: asked nothing more
        self.faults: list[str] = []  # what went wrong, in order (for logs and tests)

    def new_game(self) -> None:
        self.seen = -1
        self.silent = False

    async def ask(self, game: Game) -> Judgement | None:
        """The solver's judgement of `game`'s position when it names a winner; None
        when it is not asked yet, does not know, answers nonsense or is at fault."""
        if self.silent:
            return None
        filled = game.n_stones / game.geometry.n_cells
        if filled < self.settings.start:
            return None
        try:
            return await self._ask(game)
        except EngineError as exc:
            await self._fault(exc.detail)
        except _Unusable as exc:
            await self._fault(str(exc))
        return None

    async def _ask(self, game: Game) -> Judgement | None:
        settings = self.settings
        if self.engine is None:
            self.engine = await start_engine(settings.spec, self.nursery, self.deadlines)
            self.seen = -1
        engine = self.engine
        spec_dialect = engine.dialect
        supports = engine.info.commands.__contains__
        timeout = engine.deadlines.command
        commands: list[dialect.Command] = []
        if self.seen < 0:
            problem = dialect.unsupported(spec_dialect, supports, settings.name, game.variant)
            if problem is not None:
                raise _Unusable(problem)
            commands += dialect.position_setup(supports, game.variant)
            self.seen = 0
        for letter, move in game_plies(game)[self.seen :]:
            commands.append(dialect.play_command(spec_dialect, letter, move))
        *told, question = dialect.solve_commands(spec_dialect, settings.budget)
        answers = await engine.session.pipeline_responses([*commands, *told], timeout=timeout)
        for command, answer in zip([*commands, *told], answers, strict=True):
            if not answer.ok:
                text = shorten(escape(answer.text), ANSWER_LIMIT)
                raise _Unusable(f"answered {' '.join(command)!r} with ? {text}")
        self.seen = len(game.moves)
        [said] = await engine.session.pipeline_responses(
            [question], timeout=settings.budget + timeout
        )
        if not said.ok:
            return None  # `?`: it cannot judge this position; play on
        winner = winner_named(said.text)
        if winner is None:
            return None
        evidence = {
            "engine": settings.name,
            "command": " ".join(question),
            "answer": shorten(escape(said.text.strip()), ANSWER_LIMIT),
            "budget": settings.budget,
        }
        return Judgement(winner, evidence, engine.session.transcript.tail())

    async def _fault(self, detail: str) -> None:
        """Close a solver at fault; its game plays on without it."""
        self.silent = True
        self.faults.append(detail)
        log.warning(
            "solver %s: %s; its game plays on without it", self.settings.name, escape(detail)
        )
        engine, self.engine = self.engine, None
        if engine is not None:
            engine.kill()
            await engine.aclose()

    async def aclose(self) -> None:
        engine, self.engine = self.engine, None
        if engine is not None:
            await engine.aclose()


class _Unusable(Exception):
    """The solver answered a command of the position with `?`, or cannot play this
    variant: it cannot be asked about this game."""


def game_plies(game: Game) -> list[tuple[str, str]]:
    """Each ply as the referee tells it: the mover's colour letter and the move's name
    (after the pie move, played by White, White moves again: arbiter.rules.Game)."""
    plies = []
    color = Color.BLACK
    for move in game.moves:
        plies.append((color.letter, game.move_name(move)))
        color = Color.WHITE if move == SWAP else color.other
    return plies
