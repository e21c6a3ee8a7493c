"""CPU clocks (`clock = "cpu"`) on real engine processes: the charge is the CPU the
engine's process tree used, measured by its own cgroup where the host gives one and from
/proc otherwise (both meters are tested where the host allows), whatever the wall clock
says; a move that waits without computing still meets the wall-time ceiling."""

from __future__ import annotations

import pytest
import trio
from inline import inline_engine

from arbiter.engines import cputime
from arbiter.engines.player import Player
from arbiter.engines.process import Deadlines, EngineSpec, open_engine
from arbiter.games.referee import GameOutcome, GameSpec, Referee, RefereeConfig
from arbiter.results.records import GameRecord, Termination
from arbiter.rules import Variant
from arbiter.rules.clock import ClockMode, TimeControl

DEADLINES = Deadlines(handshake=5.0, command=2.0, quit=0.5, term=0.5)
CONFIG = RefereeConfig(margin=0.1, grace=0.3)
HEX5 = Variant(islands=4, size=5, pie=False)
CPU = (ClockMode.CPU, ClockMode.CPU)

# Seat 1 works for its first moves, then resigns: a game of a few plies.
BUSY = """
class Bot(sk.Bot):
    moves = 0
    def cmd_genmove(self, args):
        self.moves += 1
        if self.moves > 2:
            return "resign"
        end = time.process_time() + 0.15
        while time.process_time() < end:
            pass
        return super().cmd_genmove(args)
sys.exit(Bot().run())
"""

# Sleeps 0.3 s a move, more than its 0.2 s per move of wall time, then sleeps for good.
SLEEPER = """
class Bot(sk.Bot):
    moves = 0
    def cmd_genmove(self, args):
        self.moves += 1
        time.sleep(0.3 if self.moves < 3 else 30)
        return super().cmd_genmove(args)
sys.exit(Bot().run())
"""

# Each move's work is done by two workers, 0.15 s of CPU each: one it waits for, one
# that leaves the engine's session (setsid) and is still unreaped when the answer goes
# out (it is waited for at the next move).
FORKER = """
def work(seconds):
    end = time.process_time() + seconds
    while time.process_time() < end:
        pass

class Bot(sk.Bot):
    moves = 0
    left = None
    def cmd_genmove(self, args):
        if self.left is not None:
            os.waitpid(self.left, 0)
        self.moves += 1
        if self.moves > 2:
            return "resign"
        pid = os.fork()
        if pid == 0:
            work(0.15)
            os._exit(0)
        os.waitpid(pid, 0)
        r, w = os.pipe()
        pid = os.fork()
        if pid == 0:
            os.setsid()
            work(0.15)
            os.write(w, b"x")
            os._exit(0)
        os.read(r, 1)
        self.left = pid
        return super().cmd_genmove(args)
sys.exit(Bot().run())
"""

QUICK = "sys.exit(sk.Bot().run())"


METERS = ["cgroup", "proc"] if cputime.cgroup_available() else ["proc"]


def use_meter(which: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Engines started from now on get their own cgroup (where the host gives one), or
    are read from /proc."""
    monkeypatch.undo()
    if which == "proc":
        monkeypatch.setattr(cputime, "make_cgroup_meter", lambda: None)


async def play(body: str, tc: str, clocks: tuple[ClockMode, ClockMode] = CPU) -> GameOutcome:
    specs = [
        EngineSpec(inline_engine(name, code).argv, name=name, clock=mode)
        for name, code, mode in (("tested", body, clocks[0]), ("quick", QUICK, clocks[1]))
    ]
    spec = GameSpec("t-1", HEX5, (TimeControl.parse(tc), TimeControl.parse("20+0")), clocks=clocks)
    with trio.fail_after(30):
        async with open_engine(specs[0], DEADLINES) as e1, open_engine(specs[1], DEADLINES) as e2:
            return await Referee(CONFIG).play(spec, [Player.of(e1), Player.of(e2)])


def seat1_moves(record: GameRecord) -> tuple[list[float], list[float]]:
    """The tested engine's (seat 1's, Black's) charged and wall milliseconds per move."""
    return record.move_ms[0::2], record.wall_ms[0::2]


async def test_a_busy_engine_is_charged_its_cpu() -> None:
    record = (await play(BUSY, "20+0")).record
    assert record.termination is Termination.RESIGN
    assert record.clock == {"seat1": "cpu", "seat2": "cpu"}
    charged, wall = seat1_moves(record)
    assert len(charged) == 2
    for cpu_ms, wall_ms in zip(charged, wall, strict=True):
        assert 140 <= cpu_ms <= 260, charged  # 150 ms of its own, and reading a move
        assert wall_ms >= 140


@pytest.mark.slow
async def test_no_cheating_by_forking_workers_or_sleeping(monkeypatch: pytest.MonkeyPatch) -> None:
    for which in METERS:
        use_meter(which, monkeypatch)
        record = (await play(FORKER, "20+0")).record
        assert record.termination is Termination.RESIGN
        charged, _ = seat1_moves(record)
        assert len(charged) == 2
        for cpu_ms in charged:
            # Both workers' 300 ms, and nothing counted twice when the one that escaped
            # its session is reaped at the next move. /proc counts whole 10 ms ticks per
            # process, so its readings may fall a few ticks short; the leader alone
            # would be charged about 150 ms.
            low = 290 if which == "cgroup" else 250
            assert low <= cpu_ms <= 420, (which, charged)
    # A sleeping engine is charged little, and a long sleep meets the wall ceiling.
    record = (await play(SLEEPER, "st=0.2")).record
    charged, wall = seat1_moves(record)
    assert len(charged) == 2  # two sleeps within the ceiling, then the third ends the game
    assert max(charged) < 100, charged
    assert min(wall) >= 250, wall  # more than the 0.2 s a move that a wall clock gives
    assert record.termination is Termination.TIME
    assert record.winner == "quick"
    assert "wall-time ceiling of a CPU clock: 3 x 0.20 s left" in record.reason
