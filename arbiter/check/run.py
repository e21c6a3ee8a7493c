"""The order of `arbiter check`'s checks, and what each one asks."""

from __future__ import annotations

import statistics
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import trio

from arbiter import text
from arbiter.check.checker import REQUIRED_COMMANDS, Checker, CheckFailed, CheckResult
from arbiter.check.clocks import CLOCK_FAMILIES
from arbiter.check.consistency import play_wins
from arbiter.check.positions import (
    MAIN_SIZE,
    near_full_position,
    open_positions,
    probe_variant,
    tried,
    variants_to_check,
)
from arbiter.check.probes import (
    MISREADINGS,
    Probe,
    mappings,
    mirror_probes,
    plain_probes,
)
from arbiter.check.wins import WinPosition, unpositioned, win_positions
from arbiter.engines import dialect as wire
from arbiter.engines.process import Deadlines, Engine, EngineSpec
from arbiter.rules import Game, Variant
from arbiter.rules.clock import TimeControl

# As long as the referee waits after `quit` before it signals the group (PROTOCOL.md 7.3).
EXIT_WAIT = Deadlines().quit


async def run_checks(
    spec: EngineSpec,
    *,
    timeout: float | None = None,
    seed: int = 1,
    transcripts: Path | None = None,
    show: bool = False,
) -> list[CheckResult]:
    """`timeout`: seconds for each answer, the handshake's included; by default the
    referee's own deadlines, so that what passes here starts in a match too."""
    async with trio.open_nursery() as nursery:
        return await _run_checks(Checker(spec, timeout, nursery, transcripts, show), seed)


async def _run_checks(c: Checker, seed: int) -> list[CheckResult]:
    spec = c.spec
    info: dict[str, Any] = {}
    positions: list[WinPosition] = []
    generated = trio.Event()

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

    async def params(engine: Engine) -> str | None:
        """`atoll-params` and `atoll-set-param` (PROTOCOL.md 5.4), when listed: every
        parameter listed takes its default and refuses a value past its maximum."""
        if "atoll-params" not in engine.info.commands:
            return None
        listed = (await c.ok(engine, "atoll-params")).splitlines()
        names = []
        for line in listed:
            words = line.split()
            try:
                name, kind, default, low, high = words
                numbers = [float(default), float(low), float(high)]
            except ValueError:
                raise CheckFailed(
                    f"atoll-params answered {text.shorten(line, 60)!r}",
                    "answer one line per parameter: NAME TYPE DEFAULT MIN MAX",
                ) from None
            if kind not in ("int", "float") or not numbers[1] <= numbers[0] <= numbers[2]:
                raise CheckFailed(
                    f"atoll-params: {text.shorten(line, 60)!r} is not TYPE (int or float)"
                    " and DEFAULT within MIN and MAX",
                    "answer one line per parameter: NAME TYPE DEFAULT MIN MAX",
                )
            await c.ok(engine, "atoll-set-param", name, default)
            past = str(int(numbers[2]) + 1) if kind == "int" else repr(numbers[2] * 2 + 1)
            ok, _ = await c.ask(engine, "atoll-set-param", name, past)
            if ok:
                raise CheckFailed(
                    f"atoll-set-param {name} {past} (above its maximum) was accepted",
                    "answer '?' to a value outside the parameter's range",
                )
            names.append(name)
        return f"{len(names)} listed ({', '.join(names)}); out-of-range values refused"

    def variant_check(variant: Variant) -> Callable[[Engine], Awaitable[str]]:
        async def body(engine: Engine) -> str:
            answers = []
            count = 3 if variant.size == MAIN_SIZE else 1
            for game in open_positions(variant, seed, count if variant.pie else count - 1):
                answers.append(await c.position(engine, variant, game))
            if not variant.pie:
                answers.append(await c.no_swap_without_pie(engine, variant))
            return "answered " + ", ".join(answers)

        return body

    def coordinates(variant: Variant) -> Callable[[Engine], Awaitable[str | None]]:
        """Does it read cell names right? Legal moves cannot tell (module probes): an
        engine that takes wins shows it in positions with one winning cell."""
        names = variant.geometry.names

        async def took(engine: Engine, probe: Probe) -> bool:
            moves = [names[m] for m in probe.moves]
            answer = await c.position(engine, variant, Game(variant), moves=moves)
            return answer == names[probe.win]

        async def body(engine: Engine) -> str | None:
            probes = plain_probes(variant, seed, 3)
            if not probes:
                return "no position with one winning cell on this board"
            taken = sum([await took(engine, probe) for probe in probes])
            if taken:
                return (
                    f"took the one winning cell in {taken} of {len(probes)} positions: it"
                    " reads cell names right"
                )
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
            c.notes.append(
                (
                    f"coordinates: {variant}",
                    f"{variant}: cell names not confirmed by play: it took no winning cell in"
                    f" {len(probes)} positions, nor where a misread board wins too",
                )
            )
            return None

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

    def clock(tc: TimeControl, words: str) -> Callable[[Engine], Awaitable[str]]:
        """One clock family with a short budget: a bot that misreads its units (the
        movetime's milliseconds taken as seconds) overruns it."""

        async def body(engine: Engine) -> str:
            family = wire.time_family(spec.dialect, engine.supports)
            if family is wire.TimeFamily.NONE:
                return "no clock commands: the engine is not told its time (its clock runs)"
            variant = variants_to_check(spec, engine.supports)[0]
            game = open_positions(variant, seed, 2)[1]
            try:
                answer = await c.position(engine, variant, game, clock=tc)
            except CheckFailed as exc:
                units = "milliseconds" if family is wire.TimeFamily.ATOLL else "whole seconds"
                raise CheckFailed(
                    f"{words}: {exc.detail}",
                    f"{exc.hint}; with {family.value} clock commands times are in {units}",
                ) from exc
            return f"{words}: answered {answer}"

        return body

    async def wins(engine: Engine) -> str | None:
        await generated.wait()
        report = await play_wins(
            c, engine, positions, variants_to_check(spec, engine.supports), seed
        )
        if report.note:
            c.notes.append(("wins in one", report.note))
            return None  # not a PASS: nothing about its win test was shown
        for board, reason in unpositioned(variants_to_check(spec, engine.supports), positions):
            c.notes.append((f"wins in one on {board}", reason))
        return report.detail

    async def near_full(engine: Engine) -> str:
        variant = variants_to_check(spec, engine.supports)[0]
        game = near_full_position(variant, seed)
        empty = len(game.legal_cells())
        answer = await c.position(engine, variant, game)
        return f"{empty} empty cell{'s' if empty != 1 else ''}; answered {answer}"

    async def quit_exits(engine: Engine) -> str:
        await c.ok(engine, "quit")
        with trio.move_on_after(EXIT_WAIT):
            await engine.process.wait()
            return "exited after quit"
        raise CheckFailed(
            f"still running {EXIT_WAIT:g} s after answering quit", "exit after answering quit"
        )

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
            c.results.append(
                CheckResult(
                    "variants",
                    False,
                    True,
                    "the engine lists or declares no playable variant",
                    "declare islands and sizes that make a board (Atoll 7-23 odd by 4, Hex 2-26)",
                )
            )
            return c.results
        # The win positions take a second or two to find: found in a thread while the
        # engine answers the checks before them.

        async def generate() -> None:
            positions.extend(
                await trio.to_thread.run_sync(win_positions, variants, seed, MAIN_SIZE)
            )
            generated.set()

        c.nursery.start_soon(generate)
        await c.run("required commands listed", required_listed)
        await c.run("known_command", known_command)
        await c.run("errors for bad commands", errors)
        await c.run("parameters", params, required=False)
        for variant in variants:
            await c.run(f"positions: {variant}", variant_check(variant))
        for islands in (8, 4):
            board = probe_variant(variants, islands)
            if board is not None:
                await c.run(f"coordinates: {board}", coordinates(board))
        await c.run("genmove after a swap", after_swap)
        await c.run("genmove on a nearly full board", near_full)
        await c.run("wins in one, everywhere", wins)
        for tc, words in CLOCK_FAMILIES:
            await c.run(f"within its clock: {words}", clock(tc, words))
        await c.run("exit on quit", quit_exits, fresh=True)
        await c.run("exit on end of input", eof_exits, fresh=True)
    finally:
        await c.aclose()
    c.results.append(CheckResult("variants and sizes tried", True, True, tried(variants)))
    c.results.extend(
        CheckResult(f"not checked: {name}", True, False, note, note=True) for name, note in c.notes
    )
    for label, samples in (("command latency", c.latencies), ("genmove time", c.move_times)):
        if samples:
            worst = max(samples) * 1000
            slow = label == "command latency" and worst >= 1000
            c.results.append(
                CheckResult(
                    label,
                    not slow,
                    False,
                    f"median {statistics.median(samples) * 1000:.1f} ms, worst {worst:.1f} ms",
                    "answer non-move commands at once" if slow else "",
                )
            )
    c.results.append(
        CheckResult(
            "stderr volume",
            c.stderr_bytes < 1_000_000,
            False,
            f"{c.stderr_bytes} bytes",
            "" if c.stderr_bytes < 1_000_000 else "log less: the referee keeps only a tail",
        )
    )
    return c.results
