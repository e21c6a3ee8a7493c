"""The leaderboard, the head-to-head table and a host's standings as text and JSON.

The standings are computed in `arbiter.results.standings`; this module only writes them:
the plain table, Markdown, CSV (numbers only), the JSON objects, the notes under a
table, and the one way each number is written wherever it is shown (the leaderboard,
the head-to-head table and a match's summary).
"""

from __future__ import annotations

import csv
import io
import math
import textwrap
from collections.abc import Iterable, Sequence
from typing import Any

from tabulate import tabulate

from arbiter.results.elo import Difference
from arbiter.results.ratings import DEFAULT_PRIOR
from arbiter.results.standings import HostStandings, Standings, head_to_head, seat_advantage

# ------------------------------------------------------------------ numbers as text
# One way to write each number, wherever it is shown: the leaderboard, the head-to-head
# table and a match's summary.

UNBOUNDED = "unbounded"
_WIDTH = 100  # notes under a table are wrapped to this


def rounded(x: float | None, digits: int = 1) -> float | None:
    """A number for JSON or CSV: None where it is unbounded (or not a number)."""
    if x is None or math.isinf(x) or math.isnan(x):
        return None
    return round(x, digits) + 0.0  # no -0.0


def signed(x: float) -> str:
    text = f"{x:+.0f}"
    return "0" if text in ("+0", "-0") else text


def difference_text(d: Difference) -> str:
    """ "+162 ± 351", or "unbounded" where the games do not bound it."""
    if d.elo is None or d.error is None:
        return UNBOUNDED
    return f"{signed(d.elo)} ± {d.error:.0f}"


def los_text(los: float | None) -> str:
    """A likelihood of superiority as a percentage; "undefined" where there is none."""
    return "undefined" if los is None else f"{100 * los:.1f}%"


def _faults_text(faults: dict[str, int]) -> str:
    return ", ".join(f"{k} {v}" for k, v in faults.items()) or "-"


def _csv(headers: list[str], rows: Iterable[Sequence[Any]]) -> str:
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(headers)
    writer.writerows(["" if v is None else v for v in row] for row in rows)
    return out.getvalue().rstrip("\n")


def with_column(text: str, header: str, value: str) -> str:
    """A CSV table of `_csv` with a first column `header` holding `value` on every row:
    the tables of several rooms, each still read whole by a CSV reader."""
    rows = list(csv.reader(io.StringIO(text)))
    return _csv([header, *rows[0]], ([value, *row] for row in rows[1:]))


# ---------------------------------------------------------------------- leaderboard


def to_json(s: Standings, *, matrix: bool = False) -> dict[str, Any]:
    """The leaderboard as one JSON object; with `matrix`, the head-to-head table too."""
    f = s.fit
    seat = seat_advantage(f)
    out = {
        "engines": [
            {
                "rank": r.rank,
                "name": r.name,
                "elo": rounded(r.elo),
                "error": rounded(r.error),
                "games": r.games,
                "wins": r.wins,
                "losses": r.losses,
                "score": round(r.score, 4),
                "faults": r.faults,
                "los_next": rounded(r.los_next, 4),
            }
            for r in s.rows
        ],
        "seat_advantage": {"elo": rounded(seat.elo), "error": rounded(seat.error)},
        "games": s.games,
        "prior": s.prior,
        "connected": f.connected,
        "components": [list(c) for c in f.components] if not f.connected else None,
        "unbounded": list(f.unbounded) or None,
        "anchors": [{"name": a, "elo": rounded(v)} for a, v in f.anchors] or None,
        "floating": [list(g) for g in f.floating] or None,
    }
    if matrix:
        out["matrix"] = matrix_json(s)
    return out


def table(s: Standings, fmt: str = "table") -> str:
    """The leaderboard as text: `table` (plain), `markdown` or `csv` (numbers only: Elo
    and its error in Elo, score and LOS as fractions, empty where unbounded)."""
    if fmt == "csv":
        verdicts = sorted({v for r in s.rows for v in r.faults})
        headers = [
            "rank",
            "engine",
            "elo",
            "error",
            "games",
            "wins",
            "losses",
            "score",
            "los_next",
            "faults",
            *(f"faults_{v}" for v in verdicts),
        ]
        return _csv(
            headers,
            (
                [
                    r.rank,
                    r.name,
                    rounded(r.elo),
                    rounded(r.error),
                    r.games,
                    r.wins,
                    r.losses,
                    round(r.score, 4),
                    rounded(r.los_next, 4),
                    sum(r.faults.values()),
                    *(r.faults.get(v, 0) for v in verdicts),
                ]
                for r in s.rows
            ),
        )
    headers = ["rank", "engine", "Elo", "±95%", "games", "score %", "W-L", "LOS next", "faults"]
    rows = [
        [
            r.rank,
            r.name,
            UNBOUNDED if r.elo is None else signed(r.elo),
            "" if r.error is None else f"{r.error:.0f}",
            r.games,
            f"{100 * r.score:.1f}",
            f"{r.wins}-{r.losses}",
            "" if r.los_next is None else f"{100 * r.los_next:.1f}%",
            _faults_text(r.faults),
        ]
        for r in s.rows
    ]
    text = tabulate(
        rows,
        headers,
        tablefmt="github" if fmt == "markdown" else "simple",
        disable_numparse=True,
        colalign=("right", "left") + ("right",) * 7,
    )
    # Markdown: a line right under a table would be read as one more row.
    return text + ("\n\n" if fmt == "markdown" else "\n") + "\n".join(footer(s))


def footer(s: Standings) -> list[str]:
    f = s.fit
    seat = seat_advantage(f)
    lines = [
        f"Seat 1 advantage: {difference_text(seat)} Elo over {s.games} games (prior"
        f" {s.prior:g} virtual games per engine)"
        if seat.bounded
        else f"Seat 1 advantage: {UNBOUNDED} over {s.games} games (prior {s.prior:g} virtual games"
        " per engine)"
    ]
    if f.unbounded:
        lines += textwrap.wrap(
            f"Unbounded: {'; '.join(f.unbounded)}. The games do not bound the ratings, so no"
            " Elo is shown (a number would only say where the fit stopped)"
            + (
                f"; a prior keeps them finite (--prior {DEFAULT_PRIOR:g}, the default)."
                if s.prior == 0
                else "."
            ),
            _WIDTH,
        )
    if f.anchors:
        lines.append(
            "Anchored (held at these ratings, the others fitted against them): "
            + ", ".join(f"{a} {signed(v)}" for a, v in f.anchors)
            + "."
        )
    if f.floating:
        groups = "; ".join(", ".join(g) for g in f.floating)
        lines += textwrap.wrap(
            f"Warning: {groups} never played an anchored engine, even through others: their"
            " ratings are not on the anchors' scale"
            + (" (the prior alone places them against the pool mean)." if s.prior else "."),
            _WIDTH,
        )
    if not f.connected:
        groups = "; ".join(", ".join(c) for c in f.components)
        lines.append(
            f"Warning: the engines fall into {len(f.components)} groups that never played"
            f" each other ({groups}); ratings across groups are not comparable."
            if not f.anchors or f.floating
            else f"Note: the engines fall into {len(f.components)} groups that never played each"
            f" other ({groups}); each group is placed by its own anchors, so ratings across"
            " groups are as comparable as the anchors' values."
        )
    return lines


OWN_ELO = "Elo, head-to-head"
POOL_ELO = "Elo diff, pool fit"
MATRIX_NOTE = (
    f"{OWN_ELO}: fitted from the pairing's games alone, as `arbiter match` reports them."
    f" {POOL_ELO}: the difference of the two engines' leaderboard ratings, which every game"
    " in the pool informs; it can differ from the pairing's own result, even in sign."
)


def matrix(s: Standings, fmt: str = "table") -> str:
    """Head-to-head, one row per pairing and side: W-L, score, the pairing's own Elo
    estimate beside the pool fit's difference, and seat-swapped pairs won twice / split /
    lost twice. `fmt` as for `table`; CSV holds numbers only."""
    rows = head_to_head(s)
    if fmt == "csv":
        headers = [
            "engine",
            "opponent",
            "games",
            "wins",
            "losses",
            "score",
            "h2h_elo",
            "h2h_error",
            "h2h_los",
            "pool_elo_diff",
            "pool_error",
            "pool_los",
            "pairs_won_twice",
            "pairs_split",
            "pairs_lost_twice",
        ]
        return _csv(
            headers,
            (
                [
                    h.engine,
                    h.opponent,
                    h.games,
                    h.wins,
                    h.losses,
                    round(h.score, 4),
                    rounded(h.own.elo),
                    rounded(h.own.error),
                    rounded(h.own.los, 4),
                    rounded(h.pool.elo),
                    rounded(h.pool.error),
                    rounded(h.pool.los, 4),
                    *(h.pairs[::-1] if h.pairs is not None else (None, None, None)),
                ]
                for h in rows
            ),
        )
    body = [
        [
            h.engine,
            h.opponent,
            f"{h.wins}-{h.losses}",
            f"{100 * h.score:.1f}",
            difference_text(h.own),
            difference_text(h.pool),
            "" if h.pairs is None else "/".join(map(str, h.pairs[::-1])),
        ]
        for h in rows
    ]
    text = tabulate(
        body,
        ["engine", "opponent", "W-L", "score %", OWN_ELO, POOL_ELO, "pairs 2/1/0"],
        tablefmt="github" if fmt == "markdown" else "simple",
        disable_numparse=True,
    )
    return (
        text
        + ("\n\n" if fmt == "markdown" else "\n")
        + "\n".join(textwrap.wrap(MATRIX_NOTE, _WIDTH))
    )


def matrix_json(s: Standings) -> list[dict[str, Any]]:
    """The head-to-head table as JSON: one object per pairing and side."""

    def estimate(d: Difference) -> dict[str, float | None]:
        return {"elo": rounded(d.elo), "error": rounded(d.error), "los": rounded(d.los, 4)}

    return [
        {
            "engine": h.engine,
            "opponent": h.opponent,
            "games": h.games,
            "wins": h.wins,
            "losses": h.losses,
            "score": round(h.score, 4),
            "head_to_head": estimate(h.own),
            "pool": estimate(h.pool),
            "pairs": None
            if h.pairs is None
            else dict(zip(("won_twice", "split", "lost_twice"), h.pairs[::-1], strict=True)),
        }
        for h in head_to_head(s)
    ]


def host_heading(h: HostStandings) -> str:
    mean = f"{h.mean_move_ms:.1f} ms" if h.mean_move_ms is not None else "n/a"
    speed = f"{h.speed:g}" if h.speed is not None else "not measured"
    flag = "FLAGGED " if h.deviation.flagged else ""
    return (
        f"{flag}Host {h.host or '(unknown)'} ({h.cpu or 'unknown CPU'}): {h.games} games,"
        f" {h.time_losses} lost on time, mean move time {mean}, speed factor {speed};"
        f" {h.deviation.line()}"
    )


def host_json(h: HostStandings) -> dict[str, Any]:
    d = h.deviation
    return {
        "host": h.host,
        "cpu": h.cpu,
        "games": h.games,
        "time_losses": h.time_losses,
        "mean_move_ms": rounded(h.mean_move_ms),
        "speed": h.speed,
        "deviation": {
            "chi2": round(d.chi2, 4),
            "df": d.df,
            "p": None if d.p is None else float(f"{d.p:.4g}"),
            "flagged": d.flagged,
        },
        **to_json(h.board),
    }
