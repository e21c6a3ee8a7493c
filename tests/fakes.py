"""Fakes in one place: scripted bots over in-memory streams, for the real referee and
players on virtual time."""

from __future__ import annotations

import random

import trio
import trio.testing

from arbiter.bot import Bot
from arbiter.engines.dialect import Dialect
from arbiter.engines.player import Player
from arbiter.engines.process import EngineInfo, StderrLog
from arbiter.games.referee import GameSpec, Referee, RefereeConfig
from arbiter.protocol import EngineSession, parse_command
from arbiter.rules import Color, Game, Variant
from arbiter.rules.clock import TimeControl


class ScriptedBot(Bot):
    """A bot that thinks for `delay` seconds of (virtual) time per move."""

    name = "scripted"

    def __init__(self, delay: float, seed: int, hang_after: int | None = None) -> None:
        super().__init__()
        self.delay = delay
        self.rng = random.Random(seed)
        self.hang_after = hang_after
        self.moves = 0
        self.time_lefts: list[int] = []
        self.received: list[str] = []  # every command, as "name arg ..."
        self.hang_on_play = False
        self.raw_genmove: str | None = None  # answer this text to genmove, unchecked
        self.close_before_genmove = False
        self.late_by: float | None = None  # answer the first genmove, then jump the clock

    def choose_move(self, game: Game, color: Color) -> str:
        return game.move_name(self.rng.choice(game.legal_cells()))


class FakeHost:
    """What keeps an engine running, for an engine that is a task of the test: it is
    never really killed, only marked."""

    def __init__(self, name: str, commands: frozenset[str] | None = None) -> None:
        self.stderr = StderrLog()
        self.info = EngineInfo(name=name, version="1", protocol_version="2", commands=commands or
            frozenset(["play", "genmove", "boardsize", "clear_board", "atoll-islands",
                       "atoll-pie", "atoll-time_settings", "atoll-time_left"]))  # fmt: skip
        self.killed = False
        self.returncode: int | None = None

    def kill(self) -> None:
        self.killed = True

    async def wait_exit(self, timeout: float) -> int | None:
        return None

    async def settle_stderr(self, timeout: float) -> None:
        return None

    def exit_words(self, code: int) -> str:
        return f"exit status {code}"

    def breach(self) -> None:
        return None


async def serve(bot: ScriptedBot, stream: trio.StapledStream) -> None:  # type: ignore[type-arg]
    buffer = b""
    while True:
        while b"\n" not in buffer:
            data = await stream.receive_some()
            if not data:
                return
            buffer += data
        line, buffer = buffer.split(b"\n", 1)
        command = parse_command(line.decode())
        if command is None:
            continue
        bot.received.append(" ".join([command.name, *command.args]))
        if command.name == "genmove" and bot.raw_genmove is not None:
            await trio.sleep(bot.delay)
            sign, text = ("?", bot.raw_genmove[1:]) if bot.raw_genmove.startswith("?") else (
                "=", bot.raw_genmove)  # fmt: skip
            await stream.send_all(f"{sign}{command.id} {text}\n\n".encode())
            continue
        if command.name == "genmove":
            if bot.hang_after is not None and bot.moves >= bot.hang_after:
                await trio.sleep_forever()
            await trio.sleep(bot.delay)
            bot.moves += 1
        if command.name == "clear_board" and bot.close_before_genmove:
            await stream.send_all(bot.handle(command).encode())
            await stream.aclose()
            return
        if command.name == "play" and bot.hang_on_play:
            await trio.sleep_forever()
        if command.name == "atoll-time_left":
            bot.time_lefts.append(int(command.args[1]))
        await stream.send_all(bot.handle(command).encode())
        if command.name == "genmove" and bot.late_by is not None:
            # The answer is delivered, then time passes before the referee runs again:
            # its deadline expires while its task is ready to run, not while it waits.
            trio.lowlevel.current_clock().jump(bot.late_by)  # type: ignore[attr-defined]
            bot.late_by = None


def scripted_player(bot: ScriptedBot, name: str, nursery: trio.Nursery, *,
                    commands: frozenset[str] | None = None, dialect: Dialect | None = None,
                    command_timeout: float = 10.0) -> Player:  # fmt: skip
    """The real player over an in-memory stream to a scripted bot served by a task."""
    referee_end, engine_end = trio.testing.memory_stream_pair()
    nursery.start_soon(serve, bot, engine_end)
    session = EngineSession(referee_end, referee_end, name)
    return Player(session, FakeHost(name, commands), dialect or Dialect(), command_timeout)


async def play_virtual(
    bots: tuple[ScriptedBot, ScriptedBot], tc: str, config: RefereeConfig | None = None,
    *, variant: Variant | None = None, opening: tuple[str, ...] = (),
    speak: tuple[tuple[frozenset[str] | None, Dialect | None], ...] = ((None, None),) * 2,
    command_timeout: float = 10.0,
) -> tuple[object, list[FakeHost], float]:
    """A game between scripted bots on the real referee and players; the outcome, the
    fake hosts (to see which engines were killed) and the game's length in trio time."""
    players = []
    async with trio.open_nursery() as nursery:
        for i, bot in enumerate(bots):
            commands, dialect = speak[i]
            players.append(scripted_player(bot, f"p{i + 1}", nursery, commands=commands,
                                           dialect=dialect, command_timeout=command_timeout))
        spec = GameSpec("g1", variant or Variant(), (TimeControl.parse(tc), TimeControl.parse(tc)),
                        opening=opening)  # fmt: skip
        start = trio.current_time()
        outcome = await Referee(config).play(spec, players)
        elapsed = trio.current_time() - start
        nursery.cancel_scope.cancel()
    return outcome, [p.host for p in players], elapsed  # type: ignore[misc]
