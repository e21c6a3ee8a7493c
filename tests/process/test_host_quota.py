"""Two simulated hosts of different speed (CPU cgroups with quotas, from
bench/host_speed_bench.py): calibration gives their factors in the ratio of their
shares of a core, and `scale_tc` gives a fixed-work engine on each the time it needs."""

from __future__ import annotations

import contextlib
import sys

import pytest
import trio
from paths import BENCH

from arbiter.rules.clock import TimeControl

sys.path.insert(0, str(BENCH))
import host_speed_bench as bench

FAST, SLOW = 0.5, 0.2  # shares of one core
PLAYOUTS = 8192  # the fixed work per move: about 30 ms of CPU at the reference speed


@pytest.mark.slow
def test_a_host_slowed_by_a_cpu_quota_calibrates_slower_and_scale_tc_gives_it_time() -> None:
    with contextlib.ExitStack() as stack:
        try:
            fast, slow = stack.enter_context(bench.hosts(FAST, SLOW))
        except OSError as exc:
            pytest.skip(f"no CPU quota can be applied here: {exc}")
        f, s = trio.run(bench.calibrate_both, fast, slow, 8)
        assert fast.throttled() and slow.throttled(), "the quotas never bound"
        ratio, shares = f.factor / s.factor, FAST / SLOW
        if f.cpu_s and s.cpu_s:
            # Each host got its share of a core: its wall factor is its share of its
            # CPU factor (the cores' own speed, which the machine's load moves).
            for measured, group in ((f, fast), (s, slow)):
                got = measured.factor / measured.cpu_factor
                assert abs(got / group.share - 1) < 0.15, (got, group.share)
            shares *= f.cpu_factor / s.cpu_factor
        assert abs(ratio / shares - 1) < 0.15, (f.as_dict(), s.as_dict())

        # A per-move time of twice the work's at the reference speed: the slow host's
        # engine runs out of it; scaled by each host's factor, neither does, and the
        # fixed-work engine wins on both as it does with all the time it needs.
        tc = TimeControl.parse("st=0.06")
        lost = trio.run(bench.match, slow, 1, PLAYOUTS, tc)
        assert lost.time_losses == 1, lost
        for measured, group in ((f, fast), (s, slow)):
            scaled = trio.run(bench.match, group, 1, PLAYOUTS, tc.scaled(measured.factor))
            assert scaled.wins == 1 and scaled.time_losses == 0, (group, scaled)
