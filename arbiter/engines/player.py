"""The engine adapter: one engine's side of a game, spoken in the game's own verbs.

The referee keeps the rules, the clocks and the verdicts and never touches the wire. A
`Player` turns a game's set-up and each turn (the opponent's moves since this engine's
last turn, both clocks, the colour to move, the time it may take) into the commands its
engine understands (its dialect), writes them over its session, and turns what comes back
into an answer or one typed `Fault`. Every wait has a deadline. The session's stream is
any byte stream: a pipe to a local process today; what keeps the engine running (killing
it, its exit status, its stderr) is its `Host`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import NamedTuple, Protocol

import trio

from arbiter.engines import dialect
from arbiter.engines.dialect import Command, Dialect, TimeFamily
from arbiter.engines.process import Engine, EngineInfo, StderrLog
from arbiter.engines.sandbox import Breach
from arbiter.errors import EngineError, EngineTerminatedError, EngineTimeout
from arbiter.protocol.session import EngineSession
from arbiter.protocol.session import GameLog as GameLog  # the referee's type, through its adapter
from arbiter.results.records import Evidence, Termination
from arbiter.rules import SWAP, Color, Variant
from arbiter.rules.clock import GameClock, TimeControl

RESIGN = "resign"

# Faults a broken resource limit shows up as: a killed process, silence, a cut answer.
_LIMIT_CAN_CAUSE = frozenset(
    {Termination.CRASH, Termination.STALL, Termination.TIME, Termination.PROTOCOL}
)


class Fault(Exception):
    """What one engine did wrong, in the referee's terms.

    `started` says whether this turn's `genmove` had been written when it happened: a
    fault before any game's first `genmove` voids the game instead of losing it.
    `command` is the command whose answer was at fault (refused, unusable or never
    given), if there was one, and `answer` what the engine said after its `?`.
    """

    def __init__(
        self,
        kind: Termination,
        detail: str,
        *,
        started: bool = False,
        command: Command | None = None,
        answer: str = "",
    ) -> None:
        self.kind = kind
        self.detail = detail
        self.started = started
        self.command = command
        self.answer = answer
        super().__init__(detail)


class Reply(NamedTuple):
    """An answer to `genmove`, as it came: `move` lower-cased (`RESIGN` for a
    resignation), or `refused` set when it is no move at all. The referee judges the
    clock first, since a late answer loses on time whatever it says. (A tuple: one is
    made every ply.)"""

    move: str
    elapsed: float  # seconds from the last command written to the answer
    waited_since: float  # when the wait began (trio time), for the harness's stall check
    refused: Fault | None = None


@dataclass(frozen=True)
class Autopsy:
    """The verdict's material on a faulty engine: the fault as the kernel explains it."""

    kind: Termination
    detail: str
    evidence: Evidence


class Host(Protocol):
    """What keeps an engine running at the far end of its session: a local process
    (`arbiter.engines.process.Engine`) today."""

    info: EngineInfo
    stderr: StderrLog

    @property
    def returncode(self) -> int | None: ...

    def kill(self) -> None: ...

    async def wait_exit(self, timeout: float) -> int | None: ...

    async def settle_stderr(self, timeout: float) -> None: ...

    def exit_words(self, code: int) -> str: ...

    def breach(self) -> Breach | None: ...


@dataclass
class _Wait:
    """What a turn is waiting for: a deadline that passes is charged in these words."""

    commands: list[Command] = field(default_factory=list)
    index: int = -1  # the answer awaited; -1 while the commands are being written
    move_limited: bool = False  # the move deadline, not the command deadline, applies
    start: float = 0.0


def fault_from_error(exc: EngineError, what: str, *, started: bool = False) -> Fault:
    """The fault an error of the session amounts to. A `?` is never one: the player reads
    `?` answers itself, so that the fault can name the command refused."""
    if isinstance(exc, EngineTimeout):
        kind = Termination.STALL
    elif isinstance(exc, EngineTerminatedError):
        kind = Termination.CRASH
    else:
        kind = Termination.PROTOCOL
    return Fault(kind, f"{what}: {exc.detail}", started=started)


class Player:
    """One engine, as a seat at the board sees it."""

    # Network time per move that is not charged to the clock (only a remote engine has
    # any: `arbiter.engines.remote`); a local engine's wire is the pipe, and it has none.
    latency_allowance = 0.0
    remote = False

    def allowance(self, elapsed: float) -> float:
        """The part of `elapsed`, the wait for this engine's move, not charged to it."""
        return 0.0

    def reported_ms(self) -> float:
        """What the engine's own side said its last move took (-1: nothing said)."""
        return -1.0

    # The CPU seconds its processes have used, where they are measured (a local engine on
    # a CPU clock: `Player.of`); None: its clock charges wall time whatever it is told.
    cpu_seconds: Callable[[], float] | None = None

    def __init__(
        self, session: EngineSession, host: Host, dialect: Dialect, command_timeout: float
    ) -> None:
        self.session = session
        self.host = host
        self.dialect = dialect
        self.command_timeout = command_timeout  # every exchange that is not a move
        self.family = TimeFamily.NONE  # the clock commands it is told, fixed at set-up
        # This game's parameter values told by protocol, not in its command (name, value
        # as written): sent during set-up (PROTOCOL.md 5.4).
        self.params: tuple[tuple[str, str], ...] = ()
        self._wait = _Wait()

    @classmethod
    def of(cls, engine: Engine) -> Player:
        """The player over a local engine process."""
        player = cls(engine.session, engine, engine.dialect, engine.deadlines.command)
        if engine.meter is not None:
            player.cpu_seconds = engine.cpu_seconds
        return player

    @property
    def name(self) -> str:
        return self.session.name

    @name.setter
    def name(self, value: str) -> None:
        self.session.name = value

    @property
    def info(self) -> EngineInfo:
        return self.host.info

    def supports(self, command: str) -> bool:
        return command in self.host.info.commands

    def unsupported(self, variant: Variant) -> str | None:
        """Why this engine cannot play this variant at all (a configuration error)."""
        return dialect.unsupported(self.dialect, self.supports, self.name, variant)

    def setup_commands(self, variant: Variant, tc: TimeControl) -> list[Command]:
        told = dialect.param_commands(self.dialect, self.supports, self.params)
        params = told if isinstance(told, list) else []
        return dialect.setup_commands(self.dialect, self.supports, variant, tc, params)

    def params_problem(self) -> str | None:
        """Why this engine cannot be told its parameter values (a configuration error)."""
        told = dialect.param_commands(self.dialect, self.supports, self.params)
        return f"{self.name}: {told}" if isinstance(told, str) else None

    async def new_game(self, variant: Variant, tc: TimeControl) -> None:
        """Set up a game: the variant, an empty board and this engine's clock."""
        problem = self.unsupported(variant)
        if problem is not None:
            raise Fault(Termination.SETUP, problem)
        commands = self.setup_commands(variant, tc)
        try:
            timeout = self.command_timeout
            answers = await self.session.pipeline_responses(commands, timeout=timeout)
        except EngineError as exc:
            raise fault_from_error(exc, "set-up") from exc
        for command, answer in zip(commands, answers, strict=True):
            if not answer.ok:
                raise Fault(
                    Termination.PROTOCOL,
                    f"set-up: {' '.join(command)!r} failed: ? {answer.text}",
                    command=command,
                    answer=answer.text,
                )
        self.family = dialect.time_family(self.dialect, self.supports)

    async def turn(
        self,
        unseen: Sequence[tuple[str, str]],
        clocks: Sequence[GameClock],
        color: Color,
        budget: float,
        scope: trio.CancelScope,
    ) -> Reply:
        """One turn, written in one go: the moves this engine has not seen (colour letter,
        move name), both clocks (Black's, White's), then `genmove` for `color`.

        `scope` is the caller's cancel scope; one scope serves a run of turns, since
        entering a scope per ply was the largest single cost of a ply. Its deadline is
        moved only before an await that can wait: the write and the first answer share
        the command deadline (or the move deadline, if sooner); each later non-move answer
        has its own, counted from the previous answer; the `genmove` answer has the move
        deadline, `budget` seconds after the write. If the scope is cancelled,
        `timed_out` says what was awaited.
        """
        commands = dialect.ply_commands(self.dialect, self.family, unseen, clocks, color)
        session = self.session
        timeout = self.command_timeout
        wait = self._wait
        last = len(commands) - 1
        n_play = len(unseen)
        start = trio.current_time()
        wait.commands, wait.index, wait.start = commands, -1, start
        wait.move_limited = budget <= timeout
        scope.deadline = start + min(budget, timeout)
        index = -1
        try:
            await session.send_many(commands)
            wait.start = start = trio.current_time()
            deadline = start + budget
            index = 0
            while index <= last:
                wait.index = index
                if index == last:
                    scope.deadline = deadline
                    wait.move_limited = True
                elif index:
                    limit = trio.current_time() + timeout
                    wait.move_limited = deadline <= limit
                    scope.deadline = min(deadline, limit)
                for response in await session.receive_ready():
                    if not response.ok and index < last:
                        what = commands[index]
                        if index < n_play:
                            raise Fault(
                                Termination.DESYNC,
                                f"rejected the legal move {' '.join(what)!r}: ? {response.text}",
                                started=True,
                                command=what,
                                answer=response.text,
                            )
                        raise Fault(
                            Termination.PROTOCOL,
                            f"answered {' '.join(what)!r} with ? {response.text}",
                            started=True,
                            command=what,
                            answer=response.text,
                        )
                    index += 1
        except EngineError as exc:
            doing = " ".join(commands[index]) if index >= 0 else "sending the move"
            raise fault_from_error(exc, doing, started=index >= 0) from exc
        elapsed = trio.current_time() - start
        if not response.ok:
            return Reply(
                "",
                elapsed,
                start,
                Fault(
                    Termination.PROTOCOL,
                    f"answered {commands[-1][0]!r} with ? {response.text}",
                    started=True,
                    command=commands[-1],
                    answer=response.text,
                ),
            )
        word = response.text.strip().lower()
        if "\n" in word:
            several = Fault(
                Termination.PROTOCOL,
                "genmove answer spans several lines",
                started=True,
                command=commands[-1],
            )
            return Reply("", elapsed, start, several)
        if word == self.dialect.swap:  # the pie move in the engine's spelling
            word = SWAP
        return Reply(word, elapsed, start)

    def timed_out(self) -> Fault:
        """The fault for the turn whose deadline passed; `move_limited` faults are lost on
        time (`TIME`), the rest are stalls."""
        wait = self._wait
        waited = trio.current_time() - wait.start
        if wait.index < 0:
            return Fault(Termination.STALL, f"waited {waited:.1f} s for it to read its stdin")
        # The answer awaited is named even when the move deadline passed: an engine stuck
        # on a `play` never got as far as thinking, and its author must know which.
        awaited = wait.commands[wait.index]
        begun = self.session.unfinished()
        if wait.move_limited:
            return Fault(
                Termination.TIME,
                f"no answer to {' '.join(awaited)!r} after {waited:.2f} s{begun}",
                started=True,
                command=awaited,
            )
        return Fault(
            Termination.STALL,
            f"no answer to {' '.join(awaited)!r} within {self.command_timeout:g} s{begun}",
            started=True,
            command=awaited,
        )

    @property
    def waited_since(self) -> float:
        """When the turn that timed out began to wait (trio time)."""
        return self._wait.start

    def transcript(self) -> list[str]:
        return self.session.transcript.tail()

    def log_to(self, game_log: GameLog | None, seat: int = 0) -> None:
        """Write this engine's exchanges into a game's full transcript, as `seat` (1 or
        2), until called with None."""
        self.session.game_log = game_log
        self.session.seat = seat

    def kill(self) -> None:
        self.host.kill()

    async def autopsy(self, fault: Fault, exit_wait: float) -> Autopsy:
        """Kill the faulty engine (its state is unknown: no polite quit; it is restarted
        for its next game) and gather the evidence: its exit status, the end of its
        stderr and transcript, and the resource limit it hit, which is the real cause
        when the fault is only its symptom."""
        host, detail = self.host, fault.detail
        if fault.kind is Termination.CRASH and host.returncode is None:
            code = await host.wait_exit(exit_wait)
            if code is not None:
                detail += f"; {host.exit_words(code)}"
        await host.settle_stderr(exit_wait)
        self.session.broken = self.session.broken or fault
        host.kill()
        kind, limit = fault.kind, None
        if kind in _LIMIT_CAN_CAUSE and (breach := host.breach()) is not None:
            kind = Termination(breach.limit)
            detail += f"; {breach.detail}"
            limit = {"limit": breach.limit, **breach.evidence}
        evidence = Evidence(
            engine=self.name,
            detail=detail,
            transcript=self.transcript(),
            returncode=host.returncode,
            stderr_tail=host.stderr.tail(),
            limit=limit,
        )
        return Autopsy(kind, detail, evidence)
