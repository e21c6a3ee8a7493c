"""Agreement on a few dozen positions: the referee would have adjudicated each of them,
and its proof's owner, answering intrusions in their carriers, wins every play-out
against every bundled bot (bench/agreement_bench.py measures a thousand)."""

from __future__ import annotations

import sys

import pytest
from paths import ROOT

from arbiter.rules import Variant

sys.path.insert(0, str(ROOT / "bench"))

import agreement_bench


@pytest.mark.slow
def test_the_owner_of_each_proof_wins_every_play_out_against_each_bundled_bot() -> None:
    boards = (Variant(8, 7), Variant(4, 7))
    positions = agreement_bench.collect(24, seed=7, boards=boards, kinds=("random",))
    assert len(positions) == 24
    for position in positions:  # proven, not yet connected
        assert not position.game().over
    tallies = agreement_bench.run(positions, agreement_bench.BOTS, movetime_ms=5, seed=7)
    for name, tally in tallies.items():
        assert tally.outcomes["won"] == len(positions), (name, tally.outcomes)
