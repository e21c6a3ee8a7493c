"""`arbiter check`: a conformance run for bot authors.

Each check starts the engine afresh, so one failure does not hide the next, and each
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

from arbiter.errors import (
    EngineError,
    EngineStartError,
    EngineTerminatedError,
    EngineTimeout,
    ProtocolError,
)
from arbiter.process import Deadlines, Engine, EngineSpec, open_engine
from arbiter.rules import Color, Game, IllegalMove, Variant

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
    def __init__(self, spec: EngineSpec, timeout: float) -> None:
        self.spec = spec
        self.timeout = timeout
        # Short shutdown waits: "exit on quit" and "exit on end of input" measure exits
        # themselves, and an engine that ignores quit should not slow every other check.
        self.deadlines = Deadlines(handshake=timeout, command=timeout, quit=0.5, term=0.5)
        self.latencies: list[float] = []
        self.stderr_bytes = 0
        self.results: list[CheckResult] = []
        self._last_stderr = ""

    async def ask(self, engine: Engine, *command: str) -> tuple[bool, str]:
        start = time.perf_counter()
        [response] = await engine.session.pipeline_responses([command], timeout=self.timeout)
        self.latencies.append(time.perf_counter() - start)
        return response.ok, response.text

    async def ok(self, engine: Engine, *command: str) -> str:
        ok, text = await self.ask(engine, *command)
        if not ok:
            hint = "the engine must accept this command as the protocol describes it"
            if command[0] == "genmove":
                hint = (
                    "genmove must answer a move; if the bot raised an exception or chose an"
                    " illegal move, its stderr shows why"
                )
            raise CheckFailed(f"{' '.join(command)!r} was refused: ? {text}", hint)
        return text

    async def legal_genmove(self, engine: Engine, game: Game, color: Color) -> str:
        answer = (await self.ok(engine, "genmove", color.letter)).strip().lower()
        if answer == "resign":
            return answer
        try:
            game.play(game.parse_move(answer), color)
        except IllegalMove as exc:
            raise CheckFailed(
                f"genmove {color.letter} answered {answer!r}: {exc}",
                "genmove must answer an empty cell (or swap as move 2) for the given colour",
            ) from exc
        return answer

    async def run(
        self, name: str, body: Callable[[Engine], Awaitable[str]], *, required: bool = True
    ) -> None:
        try:
            async with open_engine(self.spec, self.deadlines) as engine:
                try:
                    detail = await body(engine)
                finally:
                    self.stderr_bytes += engine.stderr.total
                    await engine.settle_stderr(0.5)
                    lines = engine.stderr.tail().strip().splitlines()
                    self._last_stderr = lines[-1][:200] if lines else ""
            self.results.append(CheckResult(name, True, required, detail))
        except CheckFailed as exc:
            detail = exc.detail
            if self._last_stderr:
                detail += f"\nlast stderr line: {self._last_stderr}"
            self.results.append(CheckResult(name, False, required, detail, exc.hint))
        except EngineError as exc:
            detail = str(exc)
            tail = getattr(exc, "stderr_tail", "").strip()
            if tail:
                detail += f"\nlast stderr line: {tail.splitlines()[-1][:200]}"
            self.results.append(CheckResult(name, False, required, detail, _hint_for(exc)))


def _hint_for(exc: EngineError) -> str:
    """What to change in the bot, chosen by the kind of error it caused."""
    if isinstance(exc, EngineStartError):
        return "check the command line; try running it in a terminal"
    if isinstance(exc, EngineTimeout):
        return "flush stdout after each response, and end each response with an empty line"
    if isinstance(exc, EngineTerminatedError):
        return "the engine exited: run it by hand and read its stderr (traceback?)"
    if isinstance(exc, ProtocolError):
        if "echo the command id" in exc.detail:
            return "start every response with '=' or '?' followed by the command's id"
        return "write only responses to stdout; send logs to stderr"
    return "see protocol/PROTOCOL.md"


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


async def run_checks(spec: EngineSpec, *, timeout: float = 10.0) -> list[CheckResult]:
    c = Checker(spec, timeout)
    info: dict[str, Any] = {}

    async def handshake(engine: Engine) -> str:
        i = engine.info
        info["commands"] = i.commands
        if i.protocol_version != "2":
            raise CheckFailed(
                f"protocol_version answered {i.protocol_version!r}", "answer 2"
            )
        if not i.name:
            raise CheckFailed("name answered nothing", "answer the bot's name")
        return f"{i.name} {i.version}".strip()

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
        ok, _ = await c.ask(engine, "boardsize", "12")
        if ok:
            problems.append("boardsize 12 (not a valid Atoll size) was accepted")
        await c.ok(engine, "boardsize", "11")
        await c.ok(engine, "clear_board")
        await c.ok(engine, "play", "b", "f5")
        ok, _ = await c.ask(engine, "play", "w", "f5")
        if ok:
            problems.append("play on an occupied cell was accepted")
        ok, _ = await c.ask(engine, "play", "w", "z99")
        if ok:
            problems.append("play off the board was accepted")
        if problems:
            raise CheckFailed("; ".join(problems), "answer '?' with a message to bad commands")
        return "bad commands answered with '?'"

    async def genmove_both_colours(engine: Engine) -> str:
        game = Game()
        await c.ok(engine, "boardsize", "11")
        await c.ok(engine, "clear_board")
        moves = []
        for _ in range(3):
            moves.append(await c.legal_genmove(engine, game, game.to_move))
            if moves[-1] == "resign" or game.over:
                break
            # Play a reply for the other side so both colours get asked.
            reply = game.move_name(random.Random(len(game.moves)).choice(game.legal_cells()))
            await c.ok(engine, "play", game.to_move.letter, reply)
            game.play(reply)
        return "answered " + " ".join(moves)

    async def swap_offered(engine: Engine) -> str:
        game = Game()
        await c.ok(engine, "boardsize", "11")
        await c.ok(engine, "clear_board")
        await c.ok(engine, "play", "b", "f5")
        game.play("f5")
        answer = await c.legal_genmove(engine, game, Color.WHITE)
        return f"move 2 answered {answer}"

    async def after_swap(engine: Engine) -> str:
        game = Game()
        await c.ok(engine, "boardsize", "11")
        await c.ok(engine, "clear_board")
        for move in ("f5", "swap"):
            await c.ok(engine, "play", game.to_move.letter, move)
            game.play(move)
        answer = await c.legal_genmove(engine, game, Color.WHITE)
        return f"White to move again after the swap; answered {answer}"

    async def near_full(engine: Engine) -> str:
        game = _near_full_position(Variant(), seed=7)
        await c.ok(engine, "boardsize", "11")
        await c.ok(engine, "clear_board")
        replay = Game(Variant(pie=False))
        for move in game.moves:
            name = replay.move_name(move)
            await c.ok(engine, "play", replay.to_move.letter, name)
            replay.play(move)
        empty = replay.legal_cells()
        answer = await c.legal_genmove(engine, replay, replay.to_move)
        return f"{len(empty)} empty cell{'s' if len(empty) != 1 else ''}; answered {answer}"

    async def clear_between_games(engine: Engine) -> str:
        for _ in range(2):
            await c.ok(engine, "boardsize", "11")
            await c.ok(engine, "clear_board")
            await c.ok(engine, "play", "b", "f5")
        return "f5 playable again after clear_board"

    async def time_commands(engine: Engine) -> str:
        done = []
        if engine.supports("atoll-time_settings"):
            await c.ok(engine, "atoll-time_settings", "fischer", "10000", "100")
            await c.ok(engine, "atoll-time_left", "b", "9000")
            done.append("atoll-time_settings/atoll-time_left")
        if engine.supports("time_settings"):
            await c.ok(engine, "time_settings", "10", "0", "0")
            if engine.supports("time_left"):
                await c.ok(engine, "time_left", "b", "9", "0")
            done.append("time_settings/time_left")
        if not done:
            return "no time commands listed (the engine will not be told its clock)"
        game = Game()
        await c.ok(engine, "clear_board")
        await c.legal_genmove(engine, game, Color.BLACK)
        return ", ".join(done)

    async def hex_variant(engine: Engine) -> str:
        if not engine.supports("atoll-islands"):
            return "atoll-islands not listed: 8-island Atoll only"
        await c.ok(engine, "atoll-islands", "4")
        await c.ok(engine, "boardsize", "5")
        await c.ok(engine, "clear_board")
        game = Game(Variant(4, 5))
        answer = await c.legal_genmove(engine, game, Color.BLACK)
        return f"Hex 5x5 answered {answer}"

    async def quit_exits(engine: Engine) -> str:
        await c.ok(engine, "quit")
        with trio.move_on_after(2.0):
            await engine.process.wait()
            return "exited after quit"
        raise CheckFailed("still running 2 s after answering quit", "exit after answering quit")

    async def eof_exits(engine: Engine) -> str:
        assert engine.process.stdin is not None
        await engine.process.stdin.aclose()
        with trio.move_on_after(2.0):
            await engine.process.wait()
            return "exited when stdin closed"
        raise CheckFailed(
            "still running 2 s after its stdin was closed", "exit when reading stdin hits EOF"
        )

    await c.run("start-up handshake", handshake)
    if not c.results[-1].passed:
        return c.results
    await c.run("required commands listed", required_listed)
    await c.run("known_command", known_command)
    await c.run("errors for bad commands", errors)
    await c.run("genmove for both colours", genmove_both_colours)
    await c.run("genmove on move 2 (swap offered)", swap_offered)
    await c.run("genmove after a swap", after_swap)
    await c.run("genmove on a nearly full board", near_full)
    await c.run("clear_board between games", clear_between_games)
    await c.run("time commands", time_commands, required="atoll-time_settings" in info["commands"])
    await c.run("Hex (atoll-islands 4)", hex_variant, required="atoll-islands" in info["commands"])
    await c.run("exit on quit", quit_exits)
    await c.run("exit on end of input", eof_exits)
    if c.latencies:
        worst = max(c.latencies) * 1000
        c.results.append(CheckResult(
            "response latency", worst < 1000, False,
            f"median {statistics.median(c.latencies) * 1000:.1f} ms, worst {worst:.1f} ms",
            "" if worst < 1000 else "answer non-move commands quickly",
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
