"""Fault handling end to end: real engine processes, the real referee, real verdicts.

Every test starts engines as subprocesses (tests/engines/badbot.py, or a few lines of
Python built on arbiter/bots/skeleton.py for faults badbot has no mode for), plays them
through `Referee.play` or `Match.run`, and checks the verdict, the winner, the evidence,
and that no process outlives its engine. Clocks and deadlines are small so that a test
that waits for a hang waits about a second.
"""

from __future__ import annotations

import re
import signal
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import replace
from pathlib import Path

import pytest
import trio
from inline import inline_engine
from paths import BADBOT
from processes import running

from arbiter.engines.player import Player
from arbiter.engines.process import Deadlines, Engine, EngineSpec, open_engine
from arbiter.errors import EngineError, EngineTerminatedError, EngineTimeout
from arbiter.executors.game_worker import GameWorker
from arbiter.executors.jobs import ExecutorSettings, Finished, GameJob
from arbiter.games.referee import GameOutcome, GameSpec, Referee, RefereeConfig
from arbiter.results.records import GameRecord, Termination
from arbiter.rules import SWAP, Color, Game, Variant
from arbiter.rules.clock import TimeControl
from arbiter.runs.match import Match, MatchConfig
from arbiter.runs.run import Unheard
from arbiter.runs.schedule import ScheduledGame

DEADLINES = Deadlines(handshake=5.0, command=1.0, quit=0.5, term=0.5)
FAST = RefereeConfig(margin=0.1, grace=0.3)
ROOMY = TimeControl.parse("20+0.1")  # never runs out in these tests
SHORT = TimeControl.parse("1+0")  # the faulty side's clock, so a hang costs ~1.4 s
ATOLL = Variant()
HEX5 = Variant(islands=4, size=5, pie=False)

GOOD = "good"


def badbot(mode: str, *args: str, name: str | None = None, label: str | None = None) -> EngineSpec:
    """A badbot engine. Its display name is `label` if given, else its `name` answer
    (`name`, default the mode); before it has answered, only its spec's label."""
    argv = (sys.executable, str(BADBOT), mode, *args, "--name", name or mode)
    return EngineSpec(argv, name=label)


def good(name: str = GOOD) -> EngineSpec:
    return badbot("ok", name=name)


# Engines badbot cannot imitate, a few lines on top of the protocol skeleton each.
NO_ISLANDS = """
sk.COMMAND_NAMES = [c for c in sk.COMMAND_NAMES if c != "atoll-islands"]
sys.exit(sk.Bot().run())
"""

REJECTS_BOARDSIZE = """
class Bot(sk.Bot):
    def cmd_boardsize(self, args):
        raise sk.GtpError("unacceptable size")
sys.exit(Bot().run())
"""

# Clears the board once across all its processes (the harness's check before the first
# game, counted in the file named by $CLEARS), then refuses to: a set-up fault in every game.
REJECTS_CLEAR_BOARD = """
class Bot(sk.Bot):
    def cmd_clear_board(self, args):
        with open(os.environ["CLEARS"], "a+") as counter:
            counter.write("x")
            counter.seek(0)
            if len(counter.read()) > 1:
                raise sk.GtpError("cannot clear")
        return super().cmd_clear_board(args)
sys.exit(Bot().run())
"""

# Answers its first two `play` commands, then never answers a `play` again.
STALLS_ON_PLAY = """
class Bot(sk.Bot):
    plays = 0
    def cmd_play(self, args):
        self.plays += 1
        if self.plays > 2:
            time.sleep(60)
        return super().cmd_play(args)
sys.exit(Bot().run())
"""

# In its first batch with a `play`, answers the play and both time updates 0.35 s
# after the previous answer each: every command well within a 0.6 s deadline measured
# the way PROTOCOL.md 7.1 says, but 1.05 s for the three together.
SLOW_BATCH = """
class Bot(sk.Bot):
    slow = None
    def handle_command(self, cmd_id, name, args):
        if name == "play" and self.slow is None:
            self.slow = 3
        if self.slow and name in ("play", "atoll-time_left"):
            self.slow -= 1
            time.sleep(0.35)
        super().handle_command(cmd_id, name, args)
sys.exit(Bot().run())
"""

# Crashes like badbot's `crash` mode, but with 0.1 s between closing its stdout and
# exiting: the referee sees EOF well before the exit status exists.
CRASH_LINGERS = """
class Bot(sk.Bot):
    def cmd_genmove(self, args):
        if len(self.game.history) >= 3:
            sys.stderr.write("boom\\n")
            sys.stderr.flush()
            os.close(1)
            time.sleep(0.1)
            os._exit(1)
        return super().cmd_genmove(args)
sys.exit(Bot().run())
"""


@asynccontextmanager
async def two_engines(
    spec1: EngineSpec, spec2: EngineSpec, deadlines: Deadlines = DEADLINES
) -> AsyncIterator[tuple[Engine, Engine]]:
    async with open_engine(spec1, deadlines) as e1, open_engine(spec2, deadlines) as e2:
        yield e1, e2


async def play(
    engines: tuple[Engine, Engine],
    *,
    variant: Variant = ATOLL,
    tc: tuple[TimeControl, TimeControl] = (ROOMY, ROOMY),
    config: RefereeConfig = FAST,
    command_timeout: float = DEADLINES.command,
) -> GameOutcome:
    spec = GameSpec(game_id="t-1", variant=variant, tc=tc)
    players = [Player(e.session, e, e.dialect, command_timeout) for e in engines]
    with trio.fail_after(30):
        return await Referee(config).play(spec, players)


def replay(record: GameRecord, variant: Variant) -> Game:
    """The record's moves on a fresh board; IllegalMove here means a bad record."""
    game = Game(variant)
    for move in record.moves:
        game.play(move)
    return game


def seat_of_color(record: GameRecord, color: Color) -> str:
    return record.black if color is Color.BLACK else record.white


async def stderr_shows(engine: Engine, text: str) -> None:
    """Wait (up to 2 s) until `text` has come through the engine's stderr."""
    for _ in range(200):
        if text in engine.stderr.tail():
            return
        await trio.sleep(0.01)
    raise AssertionError(f"{text!r} not in stderr: {engine.stderr.tail()!r}")


async def wait_exit(engine: Engine, timeout: float = 2.0) -> int:
    with trio.fail_after(timeout):
        await engine.process.wait()
    code = engine.process.returncode
    assert code is not None
    return code


def assert_forfeit(
    outcome: GameOutcome,
    engines: tuple[Engine, Engine],
    faulty_seat: int,
    termination: Termination,
    variant: Variant = ATOLL,
) -> GameRecord:
    record = outcome.record
    bad, other = engines[faulty_seat].name, engines[1 - faulty_seat].name
    assert record.termination is termination, record.reason
    assert not record.void
    assert record.winner == other
    assert record.loser == bad
    assert outcome.faulty == {faulty_seat}
    assert record.reason.startswith(f"{bad}: ")
    evidence = record.evidence
    assert evidence is not None
    assert evidence.engine == bad
    assert evidence.detail and evidence.detail in record.reason
    assert evidence.transcript
    assert any(line.startswith("> ") for line in evidence.transcript)
    # The moves before the fault are legal and decided nothing.
    game = replay(record, variant)
    assert game.winner is None
    assert len(record.move_ms) == record.plies
    expected_color = "black" if record.winner == record.black else "white"
    assert record.winner_color == expected_color
    assert record.finished >= record.started
    return record


# --------------------------------------------------------------- normal endings


@pytest.mark.parametrize(
    "variant", [ATOLL, Variant(size=7), HEX5], ids=["atoll11", "atoll7", "hex5-nopie"]
)
async def test_connection_win_goes_to_the_side_that_connected(variant: Variant) -> None:
    async with two_engines(good("alpha"), good("beta")) as engines:
        outcome = await play(engines, variant=variant)
    record = outcome.record
    assert record.termination is Termination.CONNECTION, record.reason
    assert not record.void and not outcome.faulty and record.evidence is None
    assert (record.seat1, record.seat2) == ("alpha", "beta")
    assert not record.swapped  # the skeleton never swaps
    assert (record.black, record.white) == ("alpha", "beta")
    game = replay(record, variant)
    assert game.winner is not None
    assert record.winner == seat_of_color(record, game.winner)
    assert record.winner_color == ("black" if game.winner is Color.BLACK else "white")
    # The last move connected: without it nobody had won yet.
    before = Game(variant)
    for move in record.moves[:-1]:
        before.play(move)
    assert before.winner is None
    assert len(record.move_ms) == record.plies
    assert record.versions == {"alpha": "1.0", "beta": "1.0"}


@pytest.mark.parametrize("seat", [0, 1])
async def test_resign_is_a_normal_loss(seat: int) -> None:
    specs = [good(), good()]
    specs[seat] = badbot("resign", "--after", "1")
    async with two_engines(specs[0], specs[1]) as engines:
        outcome = await play(engines)
    record = outcome.record
    assert record.termination is Termination.RESIGN, record.reason
    assert not record.void
    assert not outcome.faulty  # resigning is not a fault: nothing to restart
    assert record.evidence is None
    assert record.winner == GOOD and record.loser == "resign"
    assert record.plies == 2 + seat  # one normal move each before the resignation
    assert replay(record, ATOLL).winner is None


# --------------------------------------------------------------- forfeits


GENMOVE_FAULTS = [
    # mode, verdict, words of the reason
    ("illegal-occupied", Termination.ILLEGAL, "occupied"),
    ("illegal-offboard", Termination.ILLEGAL, "off-board"),
    ("illegal-island", Termination.ILLEGAL, "island"),
    ("unparseable", Termination.ILLEGAL, "unparseable"),
    ("swap-late", Termination.ILLEGAL, "swap not allowed"),
    ("garbage", Termination.PROTOCOL, "expected a response"),
    ("wrong-id", Termination.PROTOCOL, "echo the command id"),
    ("question", Termination.PROTOCOL, "? cannot play"),
    ("huge-line", Termination.PROTOCOL, "without a newline"),
    ("crash", Termination.CRASH, "closed its stdout"),
    ("no-newline-eof", Termination.CRASH, "closed its stdout"),
    ("reject-play", Termination.DESYNC, "rejected the legal move"),
    ("hang", Termination.TIME, "the engine was killed"),
]


@pytest.mark.parametrize(
    ("seat", "after"), [(0, 0), (1, 2)], ids=["seat1-first-move", "seat2-after-2"]
)
@pytest.mark.parametrize(
    ("mode", "termination", "words"), GENMOVE_FAULTS, ids=[m for m, *_ in GENMOVE_FAULTS]
)
async def test_fault_after_the_start_forfeits(
    mode: str, termination: Termination, words: str, seat: int, after: int
) -> None:
    specs = [good(), good()]
    specs[seat] = badbot(mode, "--after", str(after))
    tc = [ROOMY, ROOMY]
    tc[seat] = SHORT
    async with two_engines(specs[0], specs[1]) as engines:
        outcome = await play(engines, tc=(tc[0], tc[1]))
        bad = engines[seat]
        if termination is Termination.TIME:
            # Killed by the referee, not asked to quit.
            assert await wait_exit(bad) == -signal.SIGKILL
        if mode == "crash":
            assert await wait_exit(bad) == 1
            await stderr_shows(bad, "boom")
    record = assert_forfeit(outcome, engines, seat, termination)
    assert words in record.reason
    evidence = record.evidence
    assert evidence is not None
    assert any(line.startswith("> ") and " genmove " in line for line in evidence.transcript)
    # The faulty engine answered `after` genmoves normally before its fault (the
    # occupied-cell and late-swap faults need stones on the board, so they may wait).
    least = 2 * after + seat
    if mode in ("illegal-occupied", "swap-late") and after == 0:
        least += 1 if seat == 1 else 2
    if mode == "reject-play":  # the fault is in the first `play` after `after` genmoves
        least = 2 * max(1, after) if seat == 0 else 2 * after + 1
    assert record.plies >= least
    if mode in ("reject-play", "hang", "crash", "garbage", "question"):
        assert record.plies == least
    if mode in ("crash", "no-newline-eof"):
        status = 1 if mode == "crash" else 0
        assert evidence.returncode == status
        assert f"exit status {status}" in record.reason
        assert evidence.stderr_tail.startswith("badbot pid")
        if mode == "crash":
            assert evidence.stderr_tail.endswith("boom\n")
    if mode == "wrong-id":
        last_genmove = [line for line in evidence.transcript if " genmove " in line][-1]
        wrong = int(last_genmove.split()[1]) + 1000
        assert f"< ={wrong} " in "\n".join(evidence.transcript)


async def test_hang_loses_on_time_at_clock_plus_margin_plus_grace() -> None:
    config = RefereeConfig(margin=0.1, grace=0.3)
    timeout = 10.0
    clock = TimeControl.parse("0.5+0")
    budget = 0.5 + 0.1 + 0.3
    async with two_engines(good(), badbot("hang")) as engines:
        start = trio.current_time()
        outcome = await play(engines, tc=(ROOMY, clock), config=config, command_timeout=timeout)
        took = trio.current_time() - start
        assert await wait_exit(engines[1]) == -signal.SIGKILL
    assert_forfeit(outcome, engines, 1, Termination.TIME)
    assert outcome.record.plies == 1
    assert budget <= took < budget + 2.0  # nowhere near the 10 s command deadline
    assert "(clock 0.50 s + margin 0.1 s + grace 0.3 s)" in outcome.record.reason


async def test_answer_after_the_clock_ran_out_loses_on_time() -> None:
    config = RefereeConfig(margin=0.1, grace=1.0)
    timeout = 1.0
    async with two_engines(good(), badbot("slow", "--ms", "400")) as engines:
        outcome = await play(
            engines, tc=(ROOMY, TimeControl.parse("st=0.1")), config=config, command_timeout=timeout
        )
    record = assert_forfeit(outcome, engines, 1, Termination.TIME)
    assert record.plies == 1
    # It answered (after 400 ms, within the 1.2 s the referee waits): judged, not killed.
    assert "used" in record.reason and "a fixed 100 ms per move" in record.reason
    assert "killed" not in record.reason


async def test_crash_after_some_moves_keeps_its_evidence() -> None:
    async with two_engines(badbot("crash", "--after", "3"), good()) as engines:
        outcome = await play(engines)
        assert await wait_exit(engines[0]) == 1
        await stderr_shows(engines[0], "boom")
    record = assert_forfeit(outcome, engines, 0, Termination.CRASH)
    assert record.plies == 6
    evidence = record.evidence
    assert evidence is not None
    assert "closed its stdout" in evidence.detail and "exit status 1" in evidence.detail
    assert evidence.returncode == 1
    assert evidence.stderr_tail.startswith("badbot pid") and "boom" in evidence.stderr_tail
    # The last thing sent was the genmove it died on, and that was never answered.
    sent = [line for line in evidence.transcript if line.startswith("> ")]
    genmove_id = sent[-1].split()[1]
    assert sent[-1] == f"> {genmove_id} genmove b"
    assert not any(line.startswith(f"< ={genmove_id}") for line in evidence.transcript)


async def test_crash_evidence_waits_for_the_exit_status() -> None:
    async with two_engines(inline_engine("lingers", CRASH_LINGERS), good()) as engines:
        outcome = await play(engines)
    record = assert_forfeit(outcome, engines, 0, Termination.CRASH)
    assert record.plies == 4
    evidence = record.evidence
    assert evidence is not None
    assert evidence.returncode == 1
    assert "exit status 1" in record.reason
    assert "boom" in evidence.stderr_tail  # written 0.1 s before stdout closed


async def test_crash_evidence_keeps_the_last_words_on_stderr() -> None:
    # Written just before the exit, so a referee that does not read stderr to the end
    # before taking the evidence often misses it (once in a few games).
    missing = 0
    for _ in range(5):
        async with two_engines(badbot("crash"), good()) as engines:
            outcome = await play(engines)
        evidence = outcome.record.evidence
        assert evidence is not None and evidence.returncode == 1
        missing += "boom" not in evidence.stderr_tail
    assert missing == 0


async def test_play_answer_later_than_the_command_deadline_is_a_stall() -> None:
    config = RefereeConfig(margin=0.1, grace=0.3)
    timeout = 0.5
    async with two_engines(good(), inline_engine("staller", STALLS_ON_PLAY)) as engines:
        start = trio.current_time()
        # 20 s on the move clock
        outcome = await play(engines, config=config, command_timeout=timeout)
        took = trio.current_time() - start
        assert await wait_exit(engines[1]) == -signal.SIGKILL
    record = assert_forfeit(outcome, engines, 1, Termination.STALL)
    assert record.plies == 5  # it answered two plays and genmoves, then stalled
    assert "within 0.5 s" in record.reason and "play b" in record.reason
    assert took < 5.0


async def test_command_deadline_runs_from_the_previous_answer() -> None:
    config = RefereeConfig(margin=0.1, grace=0.3)
    timeout = 0.6
    async with two_engines(good(), inline_engine("slowbatch", SLOW_BATCH)) as engines:
        outcome = await play(engines, config=config, command_timeout=timeout)
    record = outcome.record
    assert record.termination is Termination.CONNECTION, record.reason
    # Its first ply took over 1 s in all (over the 0.6 s command deadline), yet no
    # single answer came more than 0.35 s after the one before it.
    assert record.move_ms[1] > 1000


# --------------------------------------------------------------- the pie rule


async def test_swap_through_the_referee() -> None:
    async with two_engines(good("first"), badbot("swapper")) as engines:
        outcome = await play(engines)
        first = engines[0]
    record = outcome.record
    assert record.termination is Termination.CONNECTION, record.reason
    assert not outcome.faulty
    assert record.swapped
    assert record.moves[1] == SWAP
    assert (record.black, record.white) == ("swapper", "first")
    game = replay(record, ATOLL)
    assert game.swapped and game.winner is not None
    assert record.winner == seat_of_color(record, game.winner)
    assert record.winner_color == ("black" if game.winner is Color.BLACK else "white")
    # After the swap the first player moves on as White.
    genmoves = [
        line
        for line in first.session.transcript.tail()
        if line.startswith("> ") and " genmove " in line
    ]
    assert genmoves and all(line.endswith("genmove w") for line in genmoves)
    assert record.plies > 3


async def test_swap_with_the_pie_rule_off_is_illegal() -> None:
    variant = Variant(pie=False)
    async with two_engines(good(), badbot("swapper")) as engines:
        outcome = await play(engines, variant=variant)
    record = assert_forfeit(outcome, engines, 1, Termination.ILLEGAL, variant)
    assert record.plies == 1
    assert "swap not allowed" in record.reason and "pie rule is off" in record.reason
    assert not record.swapped
    assert (record.black, record.white) == (GOOD, "swapper")


# --------------------------------------------------------------- void games


async def test_handshake_hang_raises_within_the_handshake_deadline() -> None:
    deadlines = Deadlines(handshake=1.0, command=1.0, quit=0.3, term=0.3)
    start = trio.current_time()
    with pytest.raises(EngineTimeout) as info:
        async with open_engine(badbot("hang-handshake"), deadlines):
            pytest.fail("the handshake cannot have succeeded")
    took = trio.current_time() - start
    assert isinstance(info.value, EngineError)
    assert "within 1 s" in info.value.detail
    # The handshake deadline, then the shutdown (stdin closed, SIGTERM) of the process.
    assert 1.0 <= took < 1.0 + 0.3 + 0.3 + 1.0


async def test_engine_that_exits_at_start_raises() -> None:
    with trio.fail_after(10), pytest.raises(EngineTerminatedError):
        async with open_engine(badbot("crash-start"), DEADLINES):
            pytest.fail("the handshake cannot have succeeded")


async def test_what_an_engine_wrote_before_dying_at_start_is_always_in_its_error() -> None:
    # Its last words and its exit reach the harness together, in either order: the
    # error is built only once stderr has been read to its end, every time.
    spec = EngineSpec(("sh", "-c", "echo dying >&2; exit 1"), name="dies")
    for _ in range(12):
        with trio.fail_after(10), pytest.raises(EngineTerminatedError) as info:
            async with open_engine(spec, DEADLINES):
                pytest.fail("the handshake cannot have succeeded")
        assert info.value.stderr_tail.splitlines()[-1:] == ["dying"]


@pytest.mark.parametrize("seat", [0, 1])
async def test_variant_the_engine_cannot_play_is_void(seat: int) -> None:
    specs = [good(), good()]
    specs[seat] = inline_engine("atoll-only", NO_ISLANDS)
    async with two_engines(specs[0], specs[1]) as engines:
        assert not engines[seat].supports("atoll-islands")
        outcome = await play(engines, variant=HEX5)
    record = outcome.record
    assert record.void
    assert record.termination is Termination.SETUP
    assert record.winner is None and record.loser is None and record.winner_color is None
    assert record.moves == []
    assert outcome.faulty == {seat}
    assert "atoll-islands" in record.reason
    assert record.evidence is not None and record.evidence.engine == "atoll-only"


@pytest.mark.parametrize("seat", [0, 1])
async def test_setup_failure_is_void(seat: int) -> None:
    specs = [good(), good()]
    specs[seat] = inline_engine("nosize", REJECTS_BOARDSIZE)
    async with two_engines(specs[0], specs[1]) as engines:
        outcome = await play(engines)
        # Nothing was asked of anyone with a genmove.
        for engine in engines:
            sent = [line for line in engine.session.transcript.tail() if line.startswith(">")]
            assert sent and not any(" genmove " in line for line in sent)
    record = outcome.record
    assert record.void
    assert record.termination is Termination.SETUP
    assert record.winner is None and record.moves == []
    assert outcome.faulty == {seat}
    assert "boardsize 11" in record.reason and "unacceptable size" in record.reason
    evidence = record.evidence
    assert evidence is not None and evidence.engine == "nosize"
    assert any("boardsize" in line for line in evidence.transcript)


class Told(Unheard):
    """A match's reporter that keeps every finished game it is told of."""

    def __init__(self, finished: list[GameRecord]) -> None:
        self.finished = finished

    def game_finished(self, game: ScheduledGame, record: GameRecord, note: str) -> None:
        self.finished.append(record)


@pytest.mark.parametrize(
    ("max_attempts", "max_voids", "aborted", "unplayed"),
    [(2, 4, True, [1, 2]), (2, 10, False, [1, 2])],
    ids=["too-many-voids-in-a-row", "attempts-used-up"],
)
async def test_match_never_rates_void_games_and_gives_up(
    max_attempts: int, max_voids: int, aborted: bool, unplayed: list[int], tmp_path: Path
) -> None:
    config = MatchConfig(
        games=2,
        tc=(ROOMY, ROOMY),
        referee=FAST,
        deadlines=DEADLINES,
        max_attempts=max_attempts,
        max_consecutive_voids=max_voids,
    )
    finished: list[GameRecord] = []
    # It starts fine but refuses every game's set-up: void after void, never rated.
    noclear = replace(
        inline_engine("noclear", REJECTS_CLEAR_BOARD), env={"CLEARS": str(tmp_path / "clears")}
    )
    specs = (noclear, badbot("ok", label=GOOD))
    match = Match(specs, config)
    with trio.fail_after(30):
        result = await match.run(Told(finished))
    assert result.records == []
    assert result.stats().games == 0
    assert len(result.voids) == 4 == len(finished)
    for record in result.voids:
        assert record.void and record.termination is Termination.SETUP
        assert record.winner is None
        assert "clear_board" in record.reason
        assert record.evidence is not None and record.evidence.engine == "noclear"
    assert {(r.seat1, r.seat2) for r in result.voids} == {("noclear", GOOD), (GOOD, "noclear")}
    assert bool(result.aborted) is aborted
    assert result.unplayed == unplayed


async def test_a_board_an_engine_refuses_is_a_configuration_error_before_any_game() -> None:
    config = MatchConfig(games=4, tc=(ROOMY, ROOMY), referee=FAST, deadlines=DEADLINES)
    finished: list[GameRecord] = []
    specs = (inline_engine("nosize", REJECTS_BOARDSIZE), badbot("ok", label=GOOD))
    match = Match(specs, config)
    with trio.fail_after(30):
        result = await match.run(Told(finished))
    assert result.config_error and finished == []
    assert "nosize cannot play" in result.aborted and "boardsize 11" in result.aborted


async def test_an_engine_that_never_starts_stops_the_match_at_once() -> None:
    config = MatchConfig(games=4, tc=(ROOMY, ROOMY), referee=FAST, deadlines=DEADLINES)
    specs = (badbot("crash-start", label="crash-start"), badbot("ok", label=GOOD))
    with trio.fail_after(30):
        result = await Match(specs, config).run()
    # Found before any game: nothing played, nothing voided, the evidence in the message.
    assert result.records == [] and result.voids == [] and not result.config_error
    assert "crash-start could not be started" in result.aborted
    assert "exit status 3" in result.aborted and "mode crash-start" in result.aborted


async def test_void_record_of_a_start_failure_tells_the_engines_apart() -> None:
    # An engine that fails to (re)start in the middle of a run: the executor's record.
    settings = ExecutorSettings(
        engines={"0": badbot("crash-start"), "1": good()}, referee=FAST, deadlines=DEADLINES
    )
    spec = GameSpec("g-1", Variant(), (ROOMY, ROOMY))
    events: list[object] = []
    with trio.fail_after(30):
        async with trio.open_nursery() as nursery:
            worker = GameWorker(settings, nursery, events.append)
            await worker.play(GameJob(1, spec, ("0", "1")))
            await worker.aclose()
    [finished] = [e for e in events if isinstance(e, Finished)]
    record = finished.record
    assert record.void and record.termination is Termination.SETUP
    assert record.seat1 != record.seat2
    assert record.evidence is not None and record.evidence.engine == record.seat1
    assert record.evidence.stage == "start" and record.evidence.returncode == 3


async def test_match_with_a_variant_an_engine_cannot_play_stops_at_once() -> None:
    config = MatchConfig(games=4, variant=HEX5, referee=FAST, deadlines=DEADLINES)
    specs = (badbot("ok", label=GOOD), inline_engine("atoll-only", NO_ISLANDS))
    with trio.fail_after(30):
        result = await Match(specs, config).run()
    assert result.config_error
    assert "atoll-islands" in result.aborted and "atoll-only" in result.aborted
    assert result.records == [] and result.voids == []


async def test_match_restarts_a_crashed_engine_and_rates_the_forfeits() -> None:
    config = MatchConfig(games=2, tc=(ROOMY, ROOMY), referee=FAST, deadlines=DEADLINES)
    match = Match((badbot("crash", "--after", "1"), good()), config)
    with trio.fail_after(30):
        result = await match.run()
    assert not result.voids and not result.aborted and not result.unplayed
    assert len(result.records) == 2
    assert {(r.seat1, r.seat2) for r in result.records} == {("crash", GOOD), (GOOD, "crash")}
    for record in result.records:
        assert record.termination is Termination.CRASH
        assert record.winner == GOOD
        assert record.evidence is not None and record.evidence.engine == "crash"
        assert record.evidence.returncode == 1
        assert "boom" in record.evidence.stderr_tail


# --------------------------------------------------------------- processes


async def _stderr_pids(engine: Engine, wanted: int) -> list[int]:
    """The pids the engine reports on stderr at start-up, waiting up to 2 s for them."""
    pids: list[int] = []
    for _ in range(200):
        pids = [int(p) for p in re.findall(r"(?:badbot|child) pid (\d+)", engine.stderr.tail())]
        if len(pids) >= wanted:
            return pids
        await trio.sleep(0.01)
    raise AssertionError(f"expected {wanted} pids on stderr, got {engine.stderr.tail()!r}")


@pytest.mark.parametrize(
    ("mode", "wanted", "ended_by"),
    [
        ("ignore-quit", 1, -signal.SIGTERM),
        ("ignore-sigterm", 1, -signal.SIGKILL),
        ("fork-child", 2, 0),
    ],
)
async def test_no_process_survives_its_engine(mode: str, wanted: int, ended_by: int) -> None:
    deadlines = Deadlines(handshake=5.0, command=1.0, quit=0.3, term=0.3)
    async with open_engine(badbot(mode), deadlines) as engine:
        pids = await _stderr_pids(engine, wanted)
        assert pids[0] == engine.process.pid
        assert all(running(pid) for pid in pids)
    # In order: `quit` (answered by all three), then SIGTERM, then SIGKILL; each engine
    # ends at the step it cannot ignore.
    assert re.search(r"^> \d+ quit$", "\n".join(engine.session.transcript.tail()), re.M)
    assert engine.process.returncode == ended_by
    assert not running(pids[0])  # the leader is reaped by the time the block exits
    for _ in range(200):  # a SIGKILLed grandchild dies moments after the signal
        if not any(running(pid) for pid in pids):
            break
        await trio.sleep(0.01)
    assert not any(running(pid) for pid in pids), pids


async def test_no_process_survives_a_game() -> None:
    async with two_engines(badbot("fork-child", name="forker"), good()) as engines:
        pids = await _stderr_pids(engines[0], 2)
        outcome = await play(engines, variant=HEX5)
        assert outcome.record.termination is Termination.CONNECTION, outcome.record.reason
        assert all(running(pid) for pid in pids)  # the helper lives as long as its engine
    for _ in range(200):
        if not any(running(pid) for pid in pids):
            break
        await trio.sleep(0.01)
    assert not any(running(pid) for pid in pids), pids


async def test_untidy_but_tolerated_answers_are_not_a_fault() -> None:
    # CR LF line ends, "= " for empty results, stray blank lines: all accepted.
    async with two_engines(badbot("crlf"), good()) as engines:
        outcome = await play(engines, variant=HEX5)
    record = outcome.record
    assert record.termination is Termination.CONNECTION, record.reason
    assert not outcome.faulty and not record.void
    assert replay(record, HEX5).winner is not None


async def test_stderr_flood_is_capped_and_harmless() -> None:
    async with two_engines(badbot("stderr-flood", name="flood"), good()) as engines:
        outcome = await play(engines, variant=HEX5)
        log = engines[0].stderr
        kept = log.tail(limit=1 << 30)
    record = outcome.record
    assert record.termination is Termination.CONNECTION, record.reason
    assert not record.void and not outcome.faulty
    assert log.total >= 10 * (1 << 20)  # about 1 MiB for each of 10+ commands
    assert 0 < len(kept) <= log.cap
    assert kept.endswith("\n") and "stderr flood" in kept[-100:]
