"""`arbiter check`: a conformance run for bot authors that finds what loses games.

It talks to the engine the way the referee does (its dialect, set-up batches, moves
written back to back, the clock update right before `genmove`), on every variant the
engine lists or declares, from deterministic positions (`--seed`), and checks every
answer against the referee's own board. One engine process serves the checks while they
pass; after a failure it is restarted, so one failure does not hide the next. Each
failure carries a hint that says what to change in the bot.
"""

from __future__ import annotations

import random
import statistics
import time
from collections.abc import Awaitable, Callable
from dataclasses import asdict, dataclass
from typing import Any

import trio
from tabulate import tabulate

from arbiter import text
from arbiter.engines import dialect as wire
from arbiter.engines.player import RESIGN, Fault, Player
from arbiter.engines.process import Deadlines, Engine, EngineSpec, start_engine
from arbiter.errors import (
    EngineError,
    EngineStartError,
    EngineTerminatedError,
    EngineTimeout,
    ProtocolError,
)
from arbiter.games.referee import RefereeConfig, clock_left
from arbiter.probes import MISREADINGS, Probe, centre_cell, mappings, mirror_probes, plain_probes
from arbiter.results.records import Termination
from arbiter.rules import VALID_ATOLL_SIZES, Color, Game, IllegalMove, IllegalReason, Variant
from arbiter.rules.clock import GameClock, TimeControl
from arbiter.rules.game import SWAP_ALIASES

REQUIRED_COMMANDS = (
    "protocol_version", "name", "version", "known_command", "list_commands", "quit",
    "boardsize", "clear_board", "play", "genmove",
)  # fmt: skip


@dataclass
class CheckResult:
    name: str
    passed: bool
    required: bool
    detail: str = ""
    hint: str = ""

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

    def __init__(self, spec: EngineSpec, timeout: float | None, nursery: trio.Nursery) -> None:
        referee = Deadlines()
        self.spec = spec
        self.timeout = referee.command if timeout is None else timeout
        self.nursery = nursery
        # Short shutdown waits: "exit on quit" and "exit on end of input" measure exits
        # themselves, and an engine that ignores quit should not slow the run.
        self.deadlines = Deadlines(
            handshake=referee.handshake if timeout is None else timeout,
            command=self.timeout, quit=0.5, term=0.5,
        )  # fmt: skip
        self.latencies: list[float] = []  # per command, non-thinking commands only
        self.move_times: list[float] = []
        self.stderr_bytes = 0
        self.results: list[CheckResult] = []
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
        self.latencies.append((time.perf_counter() - start)
                              / len(player.setup_commands(variant, tc)))  # fmt: skip
        return player

    def _hint(self, fault: Fault, variant: Variant) -> str:
        """What to change in the bot, for a fault in a game's set-up or a turn."""
        command = fault.command or ("",)
        if isinstance(fault.__cause__, EngineError) and fault.command is None:
            return _hint_for(fault.__cause__)  # the session's own error says more
        if fault.kind is Termination.SETUP:
            return "declare what the engine plays (islands, sizes) in its engine definition"
        if command[0] == "boardsize":
            return ("if it does not play this size, declare the sizes it plays (sizes = [...])"
                    " in its engine definition")  # fmt: skip
        if command[0] == "play" and command[2:] == (self.spec.dialect.swap,):
            return ('declare how it spells the pie move in its engine definition'
                    ' (e.g. swap = "swap-pieces")')  # fmt: skip
        if fault.kind is Termination.DESYNC:
            size = "" if variant.size == 11 else f"rebuild the board on boardsize {variant.size}; "
            return size + _board_hint(variant)
        if command[0] in ("time_left", "atoll-time_left"):
            return "accept the clock commands the referee sends"
        if command[0] == "genmove":
            return "genmove must answer a move; its stderr shows why it could not"
        return "the engine must accept this command as the protocol describes it"

    async def position(self, engine: Engine, variant: Variant, game: Game, *,
                       moves: list[str] | None = None, clock: TimeControl | None = None,
                       ) -> str:  # fmt: skip
        """Set up `variant`, then play `game`'s moves and ask for the next one in one turn,
        exactly as the referee does (the same player, clock rules and deadlines); the
        answer must be legal on the referee's board, and in time if there is a clock."""
        tc = clock or TimeControl(infinite=True)
        player = await self.new_game(engine, variant, tc)
        replay = Game(variant)
        unseen: list[tuple[str, str]] = []
        for move in moves if moves is not None else [game.move_name(m) for m in game.moves]:
            color = replay.to_move
            replay.play(move)
            unseen.append((color.letter, replay.move_name(replay.moves[-1])))
        color = replay.to_move
        rules = RefereeConfig()
        clocks = (GameClock(tc, rules.margin), GameClock(tc, rules.margin))
        mine = clocks[0 if color is Color.BLACK else 1]
        budget = (mine.deadline(rules.grace, rules.infinite_move_limit) if clock is not None
                  else self.timeout)  # fmt: skip
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
            elif exc.reason in (IllegalReason.OCCUPIED, IllegalReason.ISLAND):
                hint = _board_hint(variant)
            elif exc.reason is IllegalReason.OFF_BOARD:
                hint = ("genmove must answer an empty cell of the board it was given: "
                        + _board_hint(variant))  # fmt: skip
            else:
                hint = ("genmove must answer an empty cell (or the pie move as move 2) for the"
                        " given colour")  # fmt: skip
            raise CheckFailed(f"genmove {color.letter} answered {word!r}: {exc}", hint) from exc
        return word

    async def no_swap_without_pie(self, engine: Engine, variant: Variant) -> str:
        """Move 2 after a first stone on the centre, the one a swap rule likes best: a
        bot whose swap logic forgets the pie setting swaps here, whatever the seed."""
        game = Game(variant)
        first = game.move_name(centre_cell(variant))
        answer = await self.position(engine, variant, game, moves=[first])
        if answer in SWAP_ALIASES or answer == self.spec.dialect.swap:
            raise CheckFailed(f"answered the pie move after {first} (the centre) with the pie"
                              " rule off", "after atoll-pie off, never answer swap, whatever"
                              " the first stone")  # fmt: skip
        return f"{answer} after {first} (no swap, pie off)"

    async def run(self, name: str, body: Callable[[Engine], Awaitable[str]], *,
                  required: bool = True, fresh: bool = False) -> None:  # fmt: skip
        try:
            if fresh:
                await self._close()
            if self._engine is None:
                self._engine = await start_engine(self.spec, self.nursery, self.deadlines)
            engine = self._engine
            detail = await body(engine)
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
    return ("answer genmove within the time it is told (the clock update comes right before"
            " it), or raise --timeout for a slow engine")  # fmt: skip


def _near_full_position(variant: Variant, seed: int) -> Game:
    """A position with few empty cells and no winner yet, for the edge-case genmove."""
    rng = random.Random(seed)
    game = Game(Variant(variant.islands, variant.size, pie=False))
    cells = list(range(game.geometry.n_cells))
    rng.shuffle(cells)
    progress = True
    while progress:
        progress = False
        for cell in cells:
            if game.colors[cell]:
                continue
            trial = game.copy()
            if trial.play(cell) is None:
                game = trial
                progress = True
    return game


# As long as the referee waits after `quit` before it signals the group (PROTOCOL.md 7.3).
EXIT_WAIT = Deadlines().quit
HEX_SIZES = (2, 5, 11, 19, 26)  # the smallest and largest, and sizes people play
MAIN_SIZE = 11


def variants_to_check(spec: EngineSpec, supports: Callable[[str], bool]) -> list[Variant]:
    """Every variant the engine lists or declares: its declared sizes, else every Atoll
    size and the smallest, largest and usual Hex sizes; Hex when it plays 4 islands; the
    pie rule on and off. The standard board comes first."""
    d = spec.dialect
    islands = [8, 4] if supports("atoll-islands") else list(d.islands or (8,))
    pies = [True, False] if supports("atoll-pie") else [True]
    out = []
    for k in islands:
        sizes = d.sizes or (VALID_ATOLL_SIZES if k == 8 else HEX_SIZES)
        for size in sorted(sizes, key=lambda n: (n != MAIN_SIZE, n)):
            for pie in pies:
                try:
                    out.append(Variant(k, size, pie))
                except ValueError:
                    continue  # a declared size this variant does not have
    return out


def tried(variants: list[Variant]) -> str:
    """The variants and sizes a check played, in words, for its summary."""
    parts = []
    for islands, label in ((8, "Atoll"), (4, "Hex")):
        mine = [v for v in variants if v.islands == islands]
        if not mine:
            continue
        sizes = sorted({v.size for v in mine})
        pies = {v.pie for v in mine}
        pie = "pie rule on and off" if len(pies) == 2 else \
            f"pie rule {'on' if True in pies else 'off'}"  # fmt: skip
        parts.append(f"{label} {', '.join(map(str, sizes))} ({pie})")
    return "; ".join(parts)


def probe_variant(variants: list[Variant], islands: int) -> Variant | None:
    """The board the coordinate probes use: the standard size, or the engine's size
    nearest to it (big enough for a position with one winning cell)."""
    mine = [v for v in variants if v.islands == islands and v.size >= 5]
    return min(mine, key=lambda v: (abs(v.size - MAIN_SIZE), not v.pie), default=None)


def _positions(variant: Variant, seed: int, count: int) -> list[Game]:
    """Deterministic open positions of several lengths, spread over the whole board."""
    rng = random.Random(f"{seed}-{variant}")
    positions = []
    for n in range(count):
        plies = (2 + 5 * n) % max(3, variant.geometry.n_cells // 3)
        game = Game(Variant(variant.islands, variant.size, pie=False))
        for _ in range(plies):
            trial = game.copy()
            if trial.play(rng.choice(trial.legal_cells())) is not None:
                break  # that would end the game: keep the position open
            game = trial
        positions.append(game)
    return positions


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


def _board_hint(variant: Variant) -> str:
    """Where cell names are defined, with the convention of this variant: Atoll and Hex
    number their rows from opposite ends, the mistake code shared by both makes."""
    if variant.islands == 4:
        names = ("column letter + row number, rows counted from the top: a1 is the top-left"
                 " corner (PROTOCOL.md section 4.2)")  # fmt: skip
    else:
        names = ("file letter + rank, rank 1 the bottom cell of its file (PROTOCOL.md"
                 " section 4.1)")  # fmt: skip
    return ("its board disagrees with the referee's: honour boardsize and clear_board, and"
            f" read cells as {names}")  # fmt: skip


async def run_checks(
    spec: EngineSpec, *, timeout: float | None = None, seed: int = 1
) -> list[CheckResult]:
    """`timeout`: seconds for each answer, the handshake's included; by default the
    referee's own deadlines, so that what passes here starts in a match too."""
    async with trio.open_nursery() as nursery:
        return await _run_checks(Checker(spec, timeout, nursery), seed)


async def _run_checks(c: Checker, seed: int) -> list[CheckResult]:
    spec = c.spec
    info: dict[str, Any] = {}

    async def handshake(engine: Engine) -> str:
        i = engine.info
        info["supports"] = engine.supports
        if not i.name:
            raise CheckFailed("name answered nothing", "answer the bot's name")
        return f"{text.name(i.name)} {text.name(i.version)}".strip()

    async def required_listed(engine: Engine) -> str:
        missing = [x for x in REQUIRED_COMMANDS if x not in engine.info.commands]
        if missing:
            raise CheckFailed(
                f"list_commands lacks {', '.join(missing)}",
                "list every command the engine implements, one per line",
            )
        return f"{len(engine.info.commands)} commands listed"

    async def known_command(engine: Engine) -> str:
        yes = (await c.ok(engine, "known_command", "genmove")).strip()
        no = (await c.ok(engine, "known_command", "no-such-command")).strip()
        if (yes, no) != ("true", "false"):
            raise CheckFailed(
                f"known_command answered {yes!r} for genmove and {no!r} for no-such-command",
                "answer 'true' or 'false'",
            )
        return "true/false"

    async def errors(engine: Engine) -> str:
        problems = []
        ok, _ = await c.ask(engine, "no-such-command")
        if ok:
            problems.append("an unknown command was answered with '='")
        ok, _ = await c.ask(engine, "boardsize", "27")
        if ok:
            problems.append("boardsize 27 (no variant has it) was accepted")
        first = variants_to_check(spec, engine.supports)[0]
        await c.new_game(engine, first, TimeControl(infinite=True))
        cell = Game(first).move_name(Game(first).legal_cells()[0])
        await c.ok(engine, "play", "b", cell)
        ok, _ = await c.ask(engine, "play", "w", cell)
        if ok:
            problems.append("play on an occupied cell was accepted")
        ok, _ = await c.ask(engine, "play", "w", "z99")
        if ok:
            problems.append("play off the board was accepted")
        if problems:
            raise CheckFailed("; ".join(problems), "answer '?' with a message to bad commands")
        return "bad commands answered with '?'"

    def variant_check(variant: Variant) -> Callable[[Engine], Awaitable[str]]:
        async def body(engine: Engine) -> str:
            answers = []
            count = 3 if variant.size == MAIN_SIZE else 1
            for game in _positions(variant, seed, count if variant.pie else count - 1):
                answers.append(await c.position(engine, variant, game))
            if not variant.pie:
                answers.append(await c.no_swap_without_pie(engine, variant))
            return "answered " + ", ".join(answers)

        return body

    def coordinates(variant: Variant) -> Callable[[Engine], Awaitable[str]]:
        """Does it read cell names right? Legal moves cannot tell (module probes): an
        engine that takes wins shows it in positions with one winning cell."""
        names = variant.geometry.names

        async def took(engine: Engine, probe: Probe) -> bool:
            moves = [names[m] for m in probe.moves]
            answer = await c.position(engine, variant, Game(variant), moves=moves)
            return answer == names[probe.win]

        async def body(engine: Engine) -> str:
            probes = plain_probes(variant, seed, 3)
            if not probes:
                return "no position with one winning cell on this board"
            taken = sum([await took(engine, probe) for probe in probes])
            if taken:
                return (f"took the one winning cell in {taken} of {len(probes)} positions: it"
                        " reads cell names right")  # fmt: skip
            for mistake in MISREADINGS:
                if mistake.key not in mappings(variant):
                    continue
                mirrored = mirror_probes(variant, mistake.key, seed, 4, tries=2000)
                if len(mirrored) >= 3 and all([await took(engine, p) for p in mirrored]):
                    raise CheckFailed(
                        f"took no winning cell in {len(probes)} positions, but took it in all"
                        f" {len(mirrored)} positions that read the same with {mistake.words}:"
                        f" it reads cell names with {mistake.words}",
                        mistake.hint(variant),
                    )
            return (f"took no winning cell in {len(probes)} positions, nor where a misread"
                    " board wins too (it does not look for wins?): its reading of cell names"
                    " is not confirmed by play")  # fmt: skip

        return body

    async def after_swap(engine: Engine) -> str:
        variants = [v for v in variants_to_check(spec, engine.supports) if v.pie]
        if not variants:
            return "no variant with the pie rule"
        variant = variants[0]
        game = Game(variant)
        first = game.move_name(game.legal_cells()[len(game.legal_cells()) // 2])
        game.play(first)
        game.play("swap")
        return await c.position(engine, variant, game, moves=[first, "swap"])

    async def clock(engine: Engine) -> str:
        family = wire.time_family(spec.dialect, engine.supports)
        if family is wire.TimeFamily.NONE:
            return "no clock commands: the engine is not told its time (its clock runs)"
        variant = variants_to_check(spec, engine.supports)[0]
        game = _positions(variant, seed, 2)[1]
        return await c.position(engine, variant, game, clock=TimeControl(1.5, 0.0))

    async def near_full(engine: Engine) -> str:
        variant = variants_to_check(spec, engine.supports)[0]
        game = _near_full_position(variant, seed)
        empty = len(game.legal_cells())
        answer = await c.position(engine, variant, game)
        return f"{empty} empty cell{'s' if empty != 1 else ''}; answered {answer}"

    async def quit_exits(engine: Engine) -> str:
        await c.ok(engine, "quit")
        with trio.move_on_after(EXIT_WAIT):
            await engine.process.wait()
            return "exited after quit"
        raise CheckFailed(f"still running {EXIT_WAIT:g} s after answering quit",
                          "exit after answering quit")  # fmt: skip

    async def eof_exits(engine: Engine) -> str:
        assert engine.process.stdin is not None
        await engine.process.stdin.aclose()
        with trio.move_on_after(EXIT_WAIT):
            await engine.process.wait()
            return "exited when stdin closed"
        raise CheckFailed(
            f"still running {EXIT_WAIT:g} s after its stdin was closed",
            "exit when reading stdin hits EOF",
        )

    try:
        await c.run("start-up handshake", handshake)
        if not c.results[-1].passed:
            return c.results
        variants = variants_to_check(spec, info["supports"])
        if not variants:
            c.results.append(CheckResult(
                "variants", False, True, "the engine lists or declares no playable variant",
                "declare islands and sizes that make a board (Atoll 7-23 odd by 4, Hex 2-26)",
            ))  # fmt: skip
            return c.results
        await c.run("required commands listed", required_listed)
        await c.run("known_command", known_command)
        await c.run("errors for bad commands", errors)
        for variant in variants:
            await c.run(f"positions: {variant}", variant_check(variant))
        for islands in (8, 4):
            board = probe_variant(variants, islands)
            if board is not None:
                await c.run(f"coordinates: {board}", coordinates(board))
        await c.run("genmove after a swap", after_swap)
        await c.run("genmove on a nearly full board", near_full)
        await c.run("within its clock (1.5 s)", clock)
        await c.run("exit on quit", quit_exits, fresh=True)
        await c.run("exit on end of input", eof_exits, fresh=True)
    finally:
        await c.aclose()
    c.results.append(CheckResult("variants and sizes tried", True, True, tried(variants)))
    for label, samples in (("command latency", c.latencies), ("genmove time", c.move_times)):
        if samples:
            worst = max(samples) * 1000
            slow = label == "command latency" and worst >= 1000
            c.results.append(CheckResult(
                label, not slow, False,
                f"median {statistics.median(samples) * 1000:.1f} ms, worst {worst:.1f} ms",
                "answer non-move commands at once" if slow else "",
            ))  # fmt: skip
    c.results.append(CheckResult(
        "stderr volume", c.stderr_bytes < 1_000_000, False, f"{c.stderr_bytes} bytes",
        "" if c.stderr_bytes < 1_000_000 else "log less: the referee keeps only a tail",
    ))  # fmt: skip
    return c.results


def summary_table(results: list[CheckResult]) -> str:
    rows = [
        [
            "PASS" if r.passed else ("FAIL" if r.required else "WARN"),
            r.name if r.required else f"{r.name} (optional)",
            r.detail if r.passed else f"{r.detail}\nhint: {r.hint}" if r.hint else r.detail,
        ]
        for r in results
    ]
    failed = sum(1 for r in results if r.required and not r.passed)
    verdict = "all required checks passed" if not failed else f"{failed} required check(s) failed"
    return tabulate(rows, headers=["", "check", "detail"], tablefmt="simple") + f"\n\n{verdict}"
