"""`arbiter check`: a conformance run for bot authors that finds what loses games.

It talks to the engine the way the referee does (its dialect, set-up batches, moves
written back to back, the clock update right before `genmove`), on every variant the
engine lists or declares, from deterministic positions (`--seed`), and checks every
answer against the referee's own board. One engine process serves the checks while they
pass; after a failure it is restarted, so one failure does not hide the next. Each
failure carries a hint that says what to change in the bot.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Awaitable, Callable
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any

import trio

from arbiter import text
from arbiter.check.probes import (
    centre_cell,
)
from arbiter.check.wins import TOP, invented_top_cells
from arbiter.engines.player import RESIGN, Fault, GameLog, Player
from arbiter.engines.process import Deadlines, Engine, EngineSpec, spec_deadlines, start_engine
from arbiter.errors import (
    EngineError,
    EngineStartError,
    EngineTerminatedError,
    EngineTimeout,
    ProtocolError,
)
from arbiter.games.referee import RefereeConfig, clock_left
from arbiter.results.records import Termination
from arbiter.results.transcripts import CAP
from arbiter.rules import Color, Game, IllegalMove, IllegalReason, Variant
from arbiter.rules.clock import GameClock, TimeControl
from arbiter.rules.game import SWAP_ALIASES

REQUIRED_COMMANDS = (
    "protocol_version",
    "name",
    "version",
    "known_command",
    "list_commands",
    "quit",
    "boardsize",
    "clear_board",
    "play",
    "genmove",
)


@dataclass
class CheckResult:
    name: str
    passed: bool
    required: bool
    detail: str = ""
    hint: str = ""
    note: bool = False  # not a check: what could not be checked, said after the table

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


class CheckFailed(Exception):
    def __init__(self, detail: str, hint: str = "") -> None:
        self.detail = detail
        self.hint = hint
        super().__init__(detail)


class Checker:
    """Runs checks on one engine process, kept across checks while they pass (so an engine
    that ignores `quit` costs one slow shutdown, not one per check) and restarted after a
    failure, since its state is unknown then."""

    def __init__(
        self,
        spec: EngineSpec,
        timeout: float | None,
        nursery: trio.Nursery,
        transcripts: Path | None = None,
        show: bool = False,
    ) -> None:
        # As a run would start it: its definition's deadlines, unless --timeout says.
        referee = spec_deadlines(spec, Deadlines())
        if timeout is not None:
            spec = replace(spec, start_timeout=None, command_timeout=None)
        self.spec = spec
        self.timeout = referee.command if timeout is None else timeout
        self.nursery = nursery
        # Short shutdown waits: "exit on quit" and "exit on end of input" measure exits
        # themselves, and an engine that ignores quit should not slow the run.
        self.deadlines = Deadlines(
            handshake=referee.handshake if timeout is None else timeout,
            command=self.timeout,
            quit=0.5,
            term=0.5,
        )
        self.latencies: list[float] = []  # per command, non-thinking commands only
        self.move_times: list[float] = []
        self.stderr_bytes = 0
        self.results: list[CheckResult] = []
        self.notes: list[
            tuple[str, str]
        ] = []  # (check, why)  # what could not be checked, said after the table
        self.transcripts = transcripts  # a folder for each position's exchange
        self.show = show  # each position's exchange on stderr (-v)
        self.positions = 0
        self.last_transcript: Path | None = None  # the file of the latest position
        self._engine: Engine | None = None

    async def ask(self, engine: Engine, *command: str) -> tuple[bool, str]:
        start = time.perf_counter()
        [response] = await engine.session.pipeline_responses([command], timeout=self.timeout)
        self.latencies.append(time.perf_counter() - start)
        return response.ok, response.text

    async def ok(self, engine: Engine, *command: str) -> str:
        ok, text = await self.ask(engine, *command)
        if not ok:
            raise CheckFailed(
                f"{' '.join(command)!r} was refused: ? {text}",
                "the engine must accept this command as the protocol describes it",
            )
        return text

    async def new_game(self, engine: Engine, variant: Variant, tc: TimeControl) -> Player:
        """The referee's set-up of a game, as one batch; all of it must be accepted."""
        player = Player.of(engine)
        start = time.perf_counter()
        try:
            await player.new_game(variant, tc)
        except Fault as fault:
            raise CheckFailed(fault.detail, self._hint(fault, variant)) from fault
        self.latencies.append(
            (time.perf_counter() - start) / len(player.setup_commands(variant, tc))
        )
        return player

    def _hint(self, fault: Fault, variant: Variant) -> str:
        """What to change in the bot, for a fault in a game's set-up or a turn."""
        command = fault.command or ("",)
        if isinstance(fault.__cause__, EngineError) and fault.command is None:
            return _hint_for(fault.__cause__)  # the session's own error says more
        if fault.kind is Termination.SETUP:
            return "declare what the engine plays (islands, sizes) in its engine definition"
        if command[0] == "boardsize":
            return (
                "if it does not play this size, declare the sizes it plays (sizes = [...])"
                " in its engine definition"
            )
        if command[0] == "play" and command[2:] == (self.spec.dialect.swap,):
            return (
                "declare how it spells the pie move in its engine definition"
                ' (e.g. swap = "swap-pieces")'
            )
        if fault.kind is Termination.DESYNC:
            size = "" if variant.size == 11 else f"rebuild the board on boardsize {variant.size}; "
            return size + _board_hint(variant)
        if command[0] in ("time_left", "atoll-time_left"):
            return "accept the clock commands the referee sends"
        if command[0] == "genmove":
            return "genmove must answer a move; its stderr shows why it could not"
        return "the engine must accept this command as the protocol describes it"

    async def position(
        self,
        engine: Engine,
        variant: Variant,
        game: Game,
        *,
        moves: list[str] | None = None,
        clock: TimeControl | None = None,
        then: Callable[[str], list[str]] | None = None,
        more: Callable[[str], list[str] | None] | None = None,
    ) -> str:
        """Set up `variant`, then play `game`'s moves and ask for the next one in one turn,
        exactly as the referee does (the same player, clock rules and deadlines); the
        answer must be legal on the referee's board, and in time if there is a clock.

        With `then`, the engine first chooses the first stone itself, and `then(answer)`
        gives the whole game up to the second question (the answer first): a bot that
        keeps what it learnt at its first genmove of a game shows it there. With `more`,
        `more(answer)` gives the moves after that answer up to one more question (None:
        no more), whose answer is returned: a bot shows there how it recorded its own."""
        tc = clock or TimeControl(infinite=True)
        game_log = GameLog(CAP) if self.transcripts is not None or self.show else None
        if game_log is not None:
            Player.of(engine).log_to(game_log, 1)
        try:
            player = await self.new_game(engine, variant, tc)
            replay = Game(variant)
            if then is not None:
                first = await self._turn(player, variant, replay, [], tc, clock)
                moves = then(first)[1:]
            unseen: list[tuple[str, str]] = []
            for move in moves if moves is not None else [game.move_name(m) for m in game.moves]:
                color = replay.to_move
                replay.play(move)
                unseen.append((color.letter, replay.move_name(replay.moves[-1])))
            answer = await self._turn(player, variant, replay, unseen, tc, clock)
            extra = more(answer) if more is not None else None
            if extra is None:
                return answer
            unseen = []
            for move in extra:
                color = replay.to_move
                replay.play(move)
                unseen.append((color.letter, replay.move_name(replay.moves[-1])))
            return await self._turn(player, variant, replay, unseen, tc, clock)
        except CheckFailed as exc:
            if game_log is not None:
                self._stop_log(engine, variant, game_log)
                game_log = None
                if self.last_transcript is not None:
                    exc.detail += f" (the exchange is in {self.last_transcript})"
            raise
        finally:
            if game_log is not None:
                self._stop_log(engine, variant, game_log)

    def _stop_log(self, engine: Engine, variant: Variant, game_log: GameLog) -> None:
        Player.of(engine).log_to(None)
        self._keep(variant, game_log.lines([engine.info.name or "engine"]))

    def _keep(self, variant: Variant, lines: list[str]) -> None:
        """One position's exchange: to its own file under --transcripts, and to stderr
        with -v (lines already escaped by the log)."""
        self.positions += 1
        header = f"position {self.positions}: {variant}"
        if self.show:
            print("\n".join([header, *lines]), file=sys.stderr)
        if self.transcripts is not None:
            path = self.transcripts / f"position-{self.positions:03d}.log"
            try:
                path.write_text("\n".join([header, *lines]) + "\n", encoding="utf-8")
                self.last_transcript = path
            except OSError as exc:
                raise CheckFailed(
                    f"cannot write {path}: {exc.strerror}", "give --transcripts a writable folder"
                ) from exc

    async def _turn(
        self,
        player: Player,
        variant: Variant,
        replay: Game,
        unseen: list[tuple[str, str]],
        tc: TimeControl,
        clock: TimeControl | None,
    ) -> str:
        """One turn after `unseen`, checked on `replay` (where the answer is played)."""
        color = replay.to_move
        rules = RefereeConfig()
        clocks = (GameClock(tc, rules.margin), GameClock(tc, rules.margin))
        mine = clocks[0 if color is Color.BLACK else 1]
        budget = (
            mine.deadline(rules.grace, rules.infinite_move_limit)
            if clock is not None
            else self.timeout
        )
        with trio.CancelScope() as scope:
            try:
                reply = await player.turn(unseen, clocks, color, budget, scope)
            except Fault as fault:
                raise CheckFailed(fault.detail, self._hint(fault, variant)) from fault
        if scope.cancelled_caught:
            late = player.timed_out()
            limit = f" (limit {budget:g} s)" if late.kind is Termination.TIME else ""
            raise CheckFailed(late.detail + limit, _late_hint(late, clock))
        self.move_times.append(reply.elapsed)
        if not mine.stop(reply.elapsed):
            raise CheckFailed(
                f"answered genmove after {reply.elapsed:.2f} s with"
                f" {clock_left(mine, reply.elapsed)}",
                _BUDGET_HINT,
            )
        if reply.refused is not None:
            raise CheckFailed(reply.refused.detail, self._hint(reply.refused, variant))
        word = reply.move
        if word == RESIGN:
            return word
        try:
            replay.play(replay.parse_move(word), color)
        except IllegalMove as exc:
            if exc.reason is IllegalReason.SWAP_NOT_ALLOWED and not variant.pie:
                hint = "after atoll-pie off, never answer swap"
            elif exc.reason is IllegalReason.ISLAND and _invented(variant, word):
                hint = TOP
            elif exc.reason in (IllegalReason.OCCUPIED, IllegalReason.ISLAND):
                hint = _board_hint(variant)
            elif exc.reason is IllegalReason.OFF_BOARD:
                hint = (
                    "genmove must answer an empty cell of the board it was given: "
                    + _board_hint(variant)
                )
            else:
                hint = (
                    "genmove must answer an empty cell (or the pie move as move 2) for the"
                    " given colour"
                )
            raise CheckFailed(f"genmove {color.letter} answered {word!r}: {exc}", hint) from exc
        return word

    async def no_swap_without_pie(self, engine: Engine, variant: Variant) -> str:
        """Move 2 after a first stone on the centre, the one a swap rule likes best: a
        bot whose swap logic forgets the pie setting swaps here, whatever the seed."""
        game = Game(variant)
        first = game.move_name(centre_cell(variant))
        answer = await self.position(engine, variant, game, moves=[first])
        if answer in SWAP_ALIASES or answer == self.spec.dialect.swap:
            raise CheckFailed(
                f"answered the pie move after {first} (the centre) with the pie rule off",
                "after atoll-pie off, never answer swap, whatever the first stone",
            )
        return f"{answer} after {first} (no swap, pie off)"

    async def run(
        self,
        name: str,
        body: Callable[[Engine], Awaitable[str | None]],
        *,
        required: bool = True,
        fresh: bool = False,
    ) -> None:
        try:
            if fresh:
                await self._close()
            if self._engine is None:
                self._engine = await start_engine(self.spec, self.nursery, self.deadlines)
            engine = self._engine
            detail = await body(engine)
            if detail is not None:  # None: nothing was checked (it says why in a note)
                self.results.append(CheckResult(name, True, required, detail))
        except CheckFailed as exc:
            detail = text.escape(exc.detail) + await self._last_stderr()
            hint = _UNENDED_HINT if _UNENDED in exc.detail else exc.hint
            self.results.append(CheckResult(name, False, required, detail, hint))
            await self._close()
        except EngineError as exc:
            detail = text.escape(str(exc)) + await self._last_stderr(exc.stderr_tail)
            hint = _UNENDED_HINT if _UNENDED in str(exc) else _hint_for(exc)
            self.results.append(CheckResult(name, False, required, detail, hint))
            await self._close()
        if fresh:
            await self._close()

    async def _last_stderr(self, tail: str = "") -> str:
        if self._engine is not None:
            await self._engine.settle_stderr(0.5)
            tail = tail or self._engine.stderr.tail()
        lines = tail.strip().splitlines()
        return f"\nlast stderr line: {text.name(lines[-1], 200)}" if lines else ""

    async def _close(self) -> None:
        engine, self._engine = self._engine, None
        if engine is not None:
            self.stderr_bytes += engine.stderr.total
            await engine.aclose()

    async def aclose(self) -> None:
        await self._close()


def _hint_for(exc: EngineError) -> str:
    """What to change in the bot, chosen by the kind of error it caused."""
    if isinstance(exc, EngineStartError):
        return "check the command line; try running it in a terminal"
    if isinstance(exc, EngineTimeout):
        return _SILENT_HINT
    if isinstance(exc, EngineTerminatedError):
        return "the engine exited: run it by hand and read its stderr (traceback?)"
    if isinstance(exc, ProtocolError):
        if "echo the command id" in exc.detail:
            return "start every response with '=' or '?' followed by the command's id"
        return "write only responses to stdout; send logs to stderr"
    return "see protocol/PROTOCOL.md"


def _late_hint(late: Fault, clock: TimeControl | None) -> str:
    """What to change in a bot that did not answer in time: stuck before `genmove` is a
    reading or flushing bug, not slow thinking; a clocked move is limited by its clock
    (which --timeout does not change), an unclocked one by --timeout."""
    if late.command is None or late.command[0] != "genmove":
        return _SILENT_HINT
    if clock is not None:
        return _BUDGET_HINT
    return (
        "answer genmove within the time it is told (the clock update comes right before"
        " it), or raise --timeout for a slow engine"
    )


_PIPELINE_HINT = (
    "read stdin line by line and answer each command in order: several commands can arrive"
    " before the first is answered"
)
_SILENT_HINT = (
    "answer every command, in order, and flush stdout after each response (ending it with"
    " an empty line); " + _PIPELINE_HINT
)
_UNENDED = "never ended the answer with an empty line"  # the session's words
_UNENDED_HINT = (
    "end every answer with an empty line: '=ID result', then a newline, then another"
    " newline (PROTOCOL.md section 2.2), and flush stdout"
)
_BUDGET_HINT = (
    "budget each move from the time the referee sends right before genmove"
    " (atoll-time_left or time_left): an answer over the clock loses the game"
)


def _invented(variant: Variant, word: str) -> bool:
    """Whether `word` names the cell above the top of an even Atoll file."""
    letters = "abcdefghijklmnopqrstuvwxyz"
    tops = {f"{letters[x]}{variant.size - 1}" for x, _ in invented_top_cells(variant)}
    return word.lower() in tops


def _board_hint(variant: Variant) -> str:
    """Where cell names are defined, with the convention of this variant: Atoll and Hex
    number their rows from opposite ends, the mistake code shared by both makes."""
    if variant.islands == 4:
        names = (
            "column letter + row number, rows counted from the top: a1 is the top-left"
            " corner (PROTOCOL.md section 4.2)"
        )
    else:
        names = "file letter + rank, rank 1 the bottom cell of its file (PROTOCOL.md section 4.1)"
    return (
        "its board disagrees with the referee's: honour boardsize and clear_board, and"
        f" read cells as {names}"
    )
