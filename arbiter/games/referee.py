"""The referee: plays one game between two engines and turns every fault into a verdict.

The referee owns the rules and the clocks. Per ply it writes the opponent's last move,
the clock update and `genmove` to the engine on move in one write, then reads the
answers in order: one pipe round trip per ply.

Fault policy: before the first `genmove` is written, any fault makes the game void (it
is replayed and never rated); from then on a fault forfeits the game to the other
engine. A failure of the harness itself always voids the game.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

import trio

from arbiter import logs, pauses
from arbiter.engines import dialect
from arbiter.engines.dialect import Dialect
from arbiter.engines.process import EngineInfo, StderrLog
from arbiter.engines.sandbox import Breach
from arbiter.errors import (
    ArbiterInternalError,
    EngineError,
    EngineFailure,
    EngineTerminatedError,
    EngineTimeout,
)
from arbiter.protocol.codec import Response
from arbiter.protocol.session import EngineSession
from arbiter.results.records import Evidence, GameRecord, StoneColor, Termination, timestamp
from arbiter.rules import SWAP, Color, Game, IllegalMove, Variant
from arbiter.rules.clock import GameClock, TimeControl
from arbiter.text import escape, shorten

log = logging.getLogger(__name__)


class Player(Protocol):
    """What the referee needs of an engine; `arbiter.engines.process.Engine` is the real one."""

    name: str
    info: EngineInfo
    session: EngineSession
    stderr: StderrLog
    dialect: Dialect

    @property
    def returncode(self) -> int | None: ...

    def supports(self, command: str) -> bool: ...

    def kill(self) -> None: ...

    async def wait_exit(self, timeout: float) -> int | None: ...

    async def settle_stderr(self, timeout: float) -> None: ...

    def exit_words(self, code: int) -> str: ...

    def breach(self) -> Breach | None: ...


@dataclass(frozen=True)
class RefereeConfig:
    margin: float = 0.1  # seconds over the clock before a move loses on time
    grace: float = 0.5  # further seconds before the referee stops waiting and kills
    infinite_move_limit: float = 600.0  # the deadline for one move under `inf`
    command_timeout: float = 10.0  # any non-move command
    exit_wait: float = 1.0  # how long to wait for a crashed engine's exit status


@dataclass(frozen=True)
class GameSpec:
    """Everything needed to play one game, deterministic and picklable."""

    game_id: str
    variant: Variant
    tc: tuple[TimeControl, TimeControl]  # seat 1, seat 2
    opening: tuple[str, ...] = ()
    seed: int | None = None
    pair: str = ""  # the seat-swapped pair this game belongs to
    commands: tuple[tuple[str, ...], tuple[str, ...]] = ((), ())  # seat 1's and seat 2's argv


    def record(
        self, seat1: str, seat2: str, termination: Termination, **outcome: Any
    ) -> GameRecord:
        """This game's record, made once from its outcome (`started` defaults to now)."""
        v = self.variant
        outcome.setdefault("started", timestamp())
        return GameRecord(
            game_id=self.game_id,
            variant={"size": v.size, "islands": v.islands, "pie": v.pie},
            seat1=seat1,
            seat2=seat2,
            tc={"seat1": str(self.tc[0]), "seat2": str(self.tc[1])},
            termination=termination,
            seed=self.seed,
            pair=self.pair,
            commands={"seat1": list(self.commands[0]), "seat2": list(self.commands[1])},
            **outcome,
        )


@dataclass
class GameOutcome:
    record: GameRecord
    faulty: set[int] = field(default_factory=set)  # seat indices (0, 1) to restart


@dataclass
class _Progress:
    """What has happened so far in a game: the record is made from it at the end."""

    started: bool = False  # a game starts when its first genmove has been written
    moves: list[str] = field(default_factory=list)
    move_ms: list[float] = field(default_factory=list)
    stalled: float = 0.0  # seconds of the engines' waits the harness itself was stalled


@dataclass(frozen=True)
class _Verdict:
    termination: Termination
    winner_seat: int | None = None  # None: void
    reason: str = ""
    evidence: Evidence | None = None


@dataclass
class _Wait:
    """What a game's cancel scope is waiting for: a deadline that passes is charged
    to this engine, in these words."""

    seat: int = 0
    commands: list[tuple[str, ...]] = field(default_factory=list)
    index: int = -1  # the answer awaited; -1 while the commands are being written
    move_limited: bool = False  # the move deadline, not a command deadline, applies
    start: float = 0.0
    budget: float = 0.0


class _HarnessStalled(Exception):
    """A deadline passed while the harness itself was not running: nobody watched the
    engine, so nobody can say it was too slow."""

    def __init__(self, seat: int, stalled: float, detail: str) -> None:
        self.seat = seat
        self.stalled = stalled
        self.detail = detail
        super().__init__(detail)


class _Fault(Exception):
    """A verdict against the engine in `seat`."""

    def __init__(self, seat: int, termination: Termination, detail: str) -> None:
        self.seat = seat
        self.termination = termination
        self.detail = detail
        super().__init__(detail)


# Faults a broken resource limit shows up as: a killed process, silence, a cut answer.
_LIMIT_CAN_CAUSE = frozenset(
    {Termination.CRASH, Termination.STALL, Termination.TIME, Termination.PROTOCOL}
)


def _fault_from_error(seat: int, exc: EngineError, what: str) -> _Fault:
    if isinstance(exc, EngineTimeout):
        return _Fault(seat, Termination.STALL, f"{what}: {exc.detail}")
    if isinstance(exc, EngineTerminatedError):
        return _Fault(seat, Termination.CRASH, f"{what}: {exc.detail}")
    if isinstance(exc, EngineFailure):
        return _Fault(seat, Termination.PROTOCOL, f"{what}: {exc.detail}")
    return _Fault(seat, Termination.PROTOCOL, f"{what}: {exc.detail}")


def harness_fault(game_id: str, exc: BaseException) -> _Verdict:
    """A bug of the harness's own in this game: void, logged with its traceback, and
    the traceback kept in the record, since a one-line reason can never tell the story."""
    error = ArbiterInternalError(f"{type(exc).__name__}: {exc}")
    error.__cause__ = exc
    log.error("harness error in game %s", game_id, exc_info=exc)
    detail = shorten(escape(str(error)), 500)  # one line, whatever the exception says
    return _Verdict(
        Termination.HARNESS,
        reason=f"harness error: {detail}; the traceback is in the record's evidence and in"
               f" {logs.where()}",
        evidence=Evidence.of_harness(detail, exc),
    )  # fmt: skip


def unsupported_variant(engine: Player, variant: Variant) -> str | None:
    """Why this engine cannot play this variant at all (a configuration error)."""
    return dialect.unsupported(engine.dialect, engine.supports, engine.name, variant)


class Referee:
    """Plays games between two engines, seat 1 placing the first stone."""

    def __init__(self, config: RefereeConfig | None = None) -> None:
        self.config = config or RefereeConfig()

    async def play(self, spec: GameSpec, engines: Sequence[Player]) -> GameOutcome:
        started = timestamp()
        game = Game(spec.variant)
        progress = _Progress()
        faulty: set[int] = set()
        try:
            await self._setup(spec, engines)
            winner_seat, termination = await self._play_moves(spec, engines, game, progress)
            verdict = _Verdict(termination, winner_seat)
        except _Fault as fault:
            verdict = await self._judge_fault(fault, engines, progress)
            faulty.add(fault.seat)
        except _HarnessStalled as stall:
            faulty.add(stall.seat)
            name = engines[stall.seat].name
            detail = (f"the harness itself did not run for {stall.stalled:.2f} s (paused,"
                      f" suspended or starved of CPU) while {name} was to answer; {stall.detail}")
            log.warning("game %s is void: %s", spec.game_id, detail)
            verdict = _Verdict(
                Termination.HARNESS, reason=f"{detail}; not charged to {name}, replayed",
                evidence=Evidence.of_harness(
                    detail, transcript=engines[stall.seat].session.transcript.tail()),
            )  # fmt: skip
        except Exception as exc:
            faulty.update((0, 1))
            verdict = harness_fault(spec.game_id, exc)
        return GameOutcome(self._record(spec, engines, game, progress, verdict, started), faulty)

    def _record(self, spec: GameSpec, engines: Sequence[Player], game: Game,
                progress: _Progress, verdict: _Verdict, started: str) -> GameRecord:  # fmt: skip
        """The game's record, made once, from the verdict and what was played."""
        names = [engines[0].name, engines[1].name]
        seat = verdict.winner_seat
        black_seat = 1 if game.swapped else 0
        return spec.record(
            names[0], names[1], verdict.termination,
            started=started,
            finished=timestamp(),
            swapped=game.swapped,
            black=names[black_seat],
            white=names[1 - black_seat],
            moves=progress.moves,
            move_ms=progress.move_ms,
            winner=None if seat is None else names[seat],
            winner_color=None if seat is None else (
                StoneColor.BLACK if seat == black_seat else StoneColor.WHITE),
            void=seat is None,
            reason=verdict.reason,
            versions={e.name: e.info.version for e in engines},
            # What each engine answered to `name`, whole (up to the cap): a label only.
            answers={"seat1": engines[0].info.name, "seat2": engines[1].info.name},
            evidence=verdict.evidence,
            stalled_ms=round(progress.stalled * 1000, 1),
        )  # fmt: skip

    async def _judge_fault(self, fault: _Fault, engines: Sequence[Player],
                           progress: _Progress) -> _Verdict:  # fmt: skip
        """The verdict on a fault, with its evidence: a forfeit once the game has
        started, a void game before."""
        engine = engines[fault.seat]
        if fault.termination is Termination.CRASH and engine.returncode is None:
            code = await engine.wait_exit(self.config.exit_wait)
            if code is not None:
                fault.detail += f"; {engine.exit_words(code)}"
        await engine.settle_stderr(self.config.exit_wait)
        # A faulty engine is in an unknown state: no polite quit, it is killed now and
        # restarted for its next game.
        engine.session.broken = engine.session.broken or fault
        engine.kill()
        termination, limit = fault.termination, None
        if termination in _LIMIT_CAN_CAUSE and (breach := engine.breach()) is not None:
            # What the engine did is only the symptom: the kernel says which limit it hit.
            termination = Termination(breach.limit)
            fault.detail += f"; {breach.detail}"
            limit = {"limit": breach.limit, **breach.evidence}
        reason = f"{engine.name}: {fault.detail}"
        evidence = Evidence(
            engine=engine.name,
            detail=fault.detail,
            transcript=engine.session.transcript.tail(),
            returncode=engine.returncode,
            stderr_tail=engine.stderr.tail(),
            limit=limit,
        )
        if progress.started:
            return _Verdict(termination, 1 - fault.seat, reason, evidence)
        return _Verdict(
            Termination.SETUP,
            reason=f"set-up failed ({termination}): {reason}",
            evidence=evidence,
        )

    async def _setup(self, spec: GameSpec, engines: Sequence[Player]) -> None:
        variant = spec.variant
        timeout = self.config.command_timeout
        for seat, engine in enumerate(engines):
            problem = unsupported_variant(engine, variant)
            if problem is not None:
                raise _Fault(seat, Termination.SETUP, problem)
            commands = dialect.setup_commands(
                engine.dialect, engine.supports, variant, spec.tc[seat]
            )
            try:
                await engine.session.pipeline(commands, timeout=timeout)
            except EngineError as exc:
                raise _fault_from_error(seat, exc, "set-up") from exc

    async def _play_moves(
        self,
        spec: GameSpec,
        engines: Sequence[Player],
        game: Game,
        progress: _Progress,
    ) -> tuple[int, Termination]:
        cfg = self.config
        beat = pauses.heartbeat()
        clocks = [GameClock(spec.tc[0], cfg.margin), GameClock(spec.tc[1], cfg.margin)]
        owner = {Color.BLACK: 0, Color.WHITE: 1}
        pending: list[list[tuple[str, str]]] = [[], []]  # moves each engine has not seen
        families = [dialect.time_family(e.dialect, e.supports) for e in engines]
        for text in spec.opening:
            # Openings are validated when the schedule is built; a bad one is a harness bug.
            color = game.to_move
            move = game.parse_move(text)
            game.play(move)
            name = game.move_name(move)
            progress.moves.append(name)
            progress.move_ms.append(0.0)
            for seat in (0, 1):
                pending[seat].append((color.letter, name))
            if move == SWAP:
                owner = {Color.BLACK: 1, Color.WHITE: 0}
        wait = _Wait()
        while True:
            # One cancel scope serves a run of plies: entering a scope per ply was the
            # largest single cost of a ply. `_exchange` moves its deadline before each wait.
            # A deadline that passes just after its answer arrived leaves the scope
            # cancelled without a wait to interrupt; the next ply then gets a fresh scope.
            with trio.CancelScope() as scope:
                while not scope.cancel_called:
                    color = game.to_move
                    seat = owner[color]
                    engine = engines[seat]
                    clock = clocks[seat]
                    commands = dialect.ply_commands(
                        engine.dialect, families[seat], pending[seat], clocks, owner, color
                    )
                    n_play = len(pending[seat])
                    budget = clock.deadline(cfg.grace, cfg.infinite_move_limit)
                    answer, elapsed = await self._exchange(
                        seat, engine, commands, n_play, budget, progress, scope, wait
                    )
                    stalled = beat.stalled(wait.start, wait.start + elapsed)
                    if stalled:  # time nobody watched is nobody's
                        elapsed = max(0.0, elapsed - stalled)
                        progress.stalled += stalled
                    pending[seat].clear()
                    if not clock.stop(elapsed):  # a late answer loses on time, whatever it says
                        raise _Fault(
                            seat,
                            Termination.TIME,
                            f"used {elapsed * 1000:.0f} ms with {self._left(clock, elapsed)}",
                        )
                    if not answer.ok:
                        raise _Fault(
                            seat,
                            Termination.PROTOCOL,
                            f"answered {commands[-1][0]!r} with ? {answer.text}",
                        )
                    word = answer.text.strip().lower()
                    if word == "resign":
                        return 1 - seat, Termination.RESIGN
                    if "\n" in word:
                        raise _Fault(
                            seat, Termination.PROTOCOL, "genmove answer spans several lines"
                        )
                    try:
                        move = game.parse_move(word)
                        game.play(move)
                    except (IllegalMove, ValueError) as exc:
                        raise _Fault(seat, Termination.ILLEGAL, str(exc)) from exc
                    name = game.move_name(move)
                    progress.moves.append(name)
                    progress.move_ms.append(round(elapsed * 1000, 1))
                    pending[1 - seat].append((color.letter, name))
                    if move == SWAP:
                        owner = {Color.BLACK: owner[Color.WHITE], Color.WHITE: owner[Color.BLACK]}
                    if game.winner is not None:
                        return seat, Termination.CONNECTION
            if scope.cancelled_caught:
                engines[wait.seat].kill()
                fault = self._timed_out(wait)
                stalled = beat.stalled(wait.start, trio.current_time())
                if stalled:
                    progress.stalled += stalled
                    raise _HarnessStalled(wait.seat, stalled, fault.detail)
                raise fault

    def _deadline_parts(self, budget: float) -> str:
        cfg = self.config
        clock = budget - cfg.margin - cfg.grace
        if clock <= 0 or budget == cfg.infinite_move_limit:
            return f"move limit {budget:g} s"
        return f"clock {clock:.2f} s + margin {cfg.margin:g} s + grace {cfg.grace:g} s"

    @staticmethod
    def _left(clock: GameClock, elapsed: float) -> str:
        if clock.tc.per_move:
            return f"a fixed {clock.tc.per_move * 1000:.0f} ms per move"
        return f"{(clock.remaining + elapsed) * 1000:.0f} ms on the clock"

    async def _exchange(
        self,
        seat: int,
        engine: Player,
        commands: list[tuple[str, ...]],
        n_play: int,
        budget: float,
        progress: _Progress,
        scope: trio.CancelScope,
        wait: _Wait,
    ) -> tuple[Response, float]:
        """Send one ply's commands back to back; return the genmove answer and its time.

        The deadline of the game's cancel scope is moved only before an await that can
        wait: the write and the first answer share the command deadline (or the move
        deadline, if sooner); each later non-move answer has its own, counted from the
        previous answer; the genmove answer has the move deadline. An engine that
        answers a whole ply in one write costs one deadline per ply. `wait` says what
        was awaited, for the verdict if a deadline passes.
        """
        session = engine.session
        cfg = self.config
        last = len(commands) - 1
        index = -1
        start = trio.current_time()
        wait.seat, wait.commands, wait.budget, wait.index, wait.start = (
            seat, commands, budget, -1, start
        )  # fmt: skip
        wait.move_limited = budget <= cfg.command_timeout
        scope.deadline = start + min(budget, cfg.command_timeout)
        try:
            await session.send_many(commands)
            progress.started = True
            wait.start = start = trio.current_time()
            deadline = start + budget
            index = 0
            while index <= last:
                wait.index = index
                if index == last:
                    scope.deadline = deadline
                    wait.move_limited = True
                elif index:
                    limit = trio.current_time() + cfg.command_timeout
                    wait.move_limited = deadline <= limit
                    scope.deadline = min(deadline, limit)
                for response in await session.receive_ready():
                    if not response.ok and index < last:
                        what = " ".join(commands[index])
                        if index < n_play:
                            raise _Fault(
                                seat,
                                Termination.DESYNC,
                                f"rejected the legal move {what!r}: ? {response.text}",
                            )
                        raise _Fault(
                            seat, Termination.PROTOCOL, f"answered {what!r} with ? {response.text}"
                        )
                    index += 1
            return response, trio.current_time() - start
        except EngineError as exc:
            what = " ".join(commands[index]) if index >= 0 else "sending the move"
            raise _fault_from_error(seat, exc, what) from exc

    def _timed_out(self, wait: _Wait) -> _Fault:
        """The fault for a wait whose deadline passed (the engine is already killed)."""
        cfg = self.config
        waited = trio.current_time() - wait.start
        if wait.index < 0:
            return _Fault(
                wait.seat, Termination.STALL, f"waited {waited:.1f} s for it to read its stdin"
            )
        if wait.move_limited:
            return _Fault(
                wait.seat,
                Termination.TIME,
                f"no answer to {' '.join(wait.commands[-1])!r} after {waited:.2f} s"
                f" ({self._deadline_parts(wait.budget)}); the engine was killed",
            )
        return _Fault(
            wait.seat,
            Termination.STALL,
            f"no answer to {' '.join(wait.commands[wait.index])!r}"
            f" within {cfg.command_timeout:g} s",
        )
