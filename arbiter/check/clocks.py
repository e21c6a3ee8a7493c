"""The clock families `arbiter check` tries, each with a short budget.

A bot that reads one family right and another wrong (the movetime's milliseconds taken as
seconds, while the Fischer clock is read right) loses every game under the family it
misreads, so each family is tried on its own.
"""

from __future__ import annotations

from arbiter.rules.clock import TimeControl

CLOCK_FAMILIES: tuple[tuple[TimeControl, str], ...] = (
    (TimeControl(1.5, 0.0), "fischer 1.5 s + 0"),
    (TimeControl(per_move=0.5), "movetime 0.5 s"),
    (TimeControl(1.5, 0.0, moves=20), "moves: 1.5 s for 20 moves"),
)
