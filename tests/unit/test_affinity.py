"""How cores are assigned to slots under `affinity = true` (pure arithmetic)."""

from __future__ import annotations

from arbiter.executors.affinity import assign_cores


def test_slots_get_their_own_cores_and_the_harness_the_one_left() -> None:
    cores = assign_cores(2, 2, range(5))
    assert cores.slots == ((0, 1), (2, 3)) and cores.harness == (4,)
    assert cores.lines() == [
        "affinity: slot 1 on cores 0,1; slot 2 on cores 2,3; the harness on core 4 (5 cores usable)"
    ]


def test_two_slots_on_two_cores_are_disjoint_and_the_harness_unpinned() -> None:
    cores = assign_cores(2, 1, (0, 1))
    assert cores.slots == ((0,), (1,)) and cores.harness == ()
    assert not cores.oversubscribed
    assert "the harness on no core of its own" in cores.lines()[0]


def test_too_few_cores_share_them_and_say_so() -> None:
    cores = assign_cores(3, 1, (0, 1))
    assert cores.slots == ((0,), (1,), (0,)) and cores.oversubscribed
    warning = cores.lines()[1]
    assert warning.startswith("warning: affinity: 3 slots of 1 core(s) each need 3 cores")
    assert "lower concurrency to 2" in warning
