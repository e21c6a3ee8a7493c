"""The report's plots, as numbers its template draws: each engine's Elo with its interval
on one scale, and an SPSA run's parameter trajectories. Kept apart from the page's
assembly (arbiter.views.html) because they are geometry, not records."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from arbiter.results.standings import Standings
from arbiter.text import escape, name, shorten
from arbiter.views.standings_text import UNBOUNDED

MINUS = "\u2212"  # typographic minus, for numbers and scores on the page


def signed(x: float) -> str:
    """An Elo figure as the page shows it: signed unless zero, with a typographic minus."""
    if math.isinf(x):
        return "+∞" if x > 0 else f"{MINUS}∞"
    text = f"{x:+.0f}"
    return "0" if text in ("+0", "-0") else text.replace("-", MINUS)


def error_text(x: float) -> str:
    """An interval's half-width as the page shows it (∞ where unbounded)."""
    return "∞" if math.isinf(x) or math.isnan(x) else f"{x:.0f}"


@dataclass(frozen=True)
class PlotRow:
    name: str
    y: float
    elo: float | None  # None: unbounded, no point to plot
    lo: float
    hi: float
    open_lo: bool  # the interval runs off the plot (unbounded)
    open_hi: bool
    label: str


@dataclass(frozen=True)
class Plot:
    width: float
    height: float
    left: float
    right: float
    rows: list[PlotRow]
    ticks: list[tuple[float, str]]
    zero: float | None


def _nice_step(span: float) -> float:
    raw = span / 6
    magnitude = 10 ** math.floor(math.log10(raw)) if raw > 0 else 1
    for k in (1, 2, 2.5, 5, 10):
        if raw <= k * magnitude:
            return k * magnitude
    return 10 * magnitude


def elo_plot(board: Standings) -> Plot:
    """Each engine's Elo with its 95% interval on one scale; an unbounded rating is an
    open bar across the whole scale, without a point."""
    width, left, right, row_h = 640.0, 150.0, 620.0, 26.0
    finite = [
        (r.elo - r.error, r.elo + r.error)
        for r in board.rows
        if r.elo is not None and r.error is not None
    ]
    points = [r.elo for r in board.rows if r.elo is not None] or [0.0]
    low = min([p[0] for p in finite] + points)
    high = max([p[1] for p in finite] + points)
    if high - low < 100:
        middle = (high + low) / 2
        low, high = middle - 50, middle + 50
    step = _nice_step(high - low)
    low = math.floor(low / step) * step
    high = math.ceil(high / step) * step

    def x(elo: float) -> float:
        return round(left + (elo - low) / (high - low) * (right - left), 1)

    rows = []
    for i, r in enumerate(board.rows):
        y = 30.0 + i * row_h
        if r.elo is None or r.error is None:
            rows.append(
                PlotRow(
                    name=name(r.name),
                    y=y,
                    elo=None,
                    lo=x(low),
                    hi=x(high),
                    open_lo=True,
                    open_hi=True,
                    label=UNBOUNDED,
                )
            )
            continue
        lo, hi = r.elo - r.error, r.elo + r.error
        rows.append(
            PlotRow(
                name=name(r.name),
                y=y,
                elo=x(min(max(r.elo, low), high)),
                lo=x(max(lo, low)),
                hi=x(min(hi, high)),
                open_lo=lo < low,
                open_hi=hi > high,
                label=f"{signed(r.elo)} ± {error_text(r.error)}",
            )
        )
    ticks = []
    k = low
    while k <= high + step / 2:
        ticks.append((x(k), signed(k)))
        k += step
    return Plot(
        width,
        40.0 + len(rows) * row_h,
        left,
        right,
        rows,
        ticks,
        x(0.0) if low <= 0 <= high else None,
    )


PLOT_WIDTH = 480.0  # an SPSA trajectory's strip, in SVG units
PLOT_HEIGHT = 60.0
PLOT_POINTS = 240  # at most this many points a strip: the batches are thinned evenly


def trajectory_plot(tune: Any) -> list[dict[str, Any]]:
    """An SPSA run's trajectories (its `tune` status object) as one strip per parameter:
    the value after each batch, from its range's bottom (the strip's foot) to its top."""
    if not isinstance(tune, dict) or not isinstance(tune.get("trajectory"), dict):
        return []
    strips = []
    for key, values in tune["trajectory"].items():
        low, high = tune["ranges"][key]
        step = max(1, math.ceil(len(values) / PLOT_POINTS))
        kept = (
            values[::step] if values[-1:] == values[::step][-1:] else [*values[::step], values[-1]]
        )
        span = max(len(kept) - 1, 1)
        points = " ".join(
            f"{PLOT_WIDTH * i / span:.1f},{PLOT_HEIGHT * (1 - (v - low) / (high - low)):.1f}"
            for i, v in enumerate(kept)
        )
        strips.append(
            {
                "name": shorten(escape(str(key)), 40),
                "low": f"{low:g}",
                "high": f"{high:g}",
                "start": f"{values[0]:.4g}",
                "now": f"{values[-1]:.4g}",
                "points": points,
            }
        )
    return strips
