"""A run's status from its store: games done and left, the standings, void games and
why, the engines' start-up cost, and each tested pairing's verdict.

`read_status` takes one snapshot of the store (every number from the same moment, also
while a run writes); `Status.as_json` and `Status.lines` give it as `tournament status
--json` and `tournament status` print it. The header lines and notes a finished run
prints are here too, so that a run and its status say the same thing.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from arbiter.results.ratings import DEFAULT_PRIOR
from arbiter.results.score import Saving
from arbiter.results.standings import Standings, Tally, by_host, standings
from arbiter.results.store import Store
from arbiter.rules import Variant
from arbiter.views.standings_text import host_heading, host_json, table, to_json


def unneeded(t: Any, games: int) -> str:
    """The games a tournament will not play after all, and why, for its header lines."""
    if games <= 0:
        return ""
    why = "their pairings' tests decided" if t.sprt is not None else "the stop rule settled"
    return f", {games} not needed ({why})"


def store_standings(store: Store) -> str:
    """The Elo table of every rated game stored, or a line saying there is none yet."""
    tally = Tally.from_store(store)
    return table(standings(tally)) if tally.games else "No rated games yet."


def tournament_notes(store: Store, outside: int = 0) -> list[str]:
    """What a run's table leaves unsaid: games outside the schedule, pairings that
    replayed one game, void games not yet replayed."""
    lines = []
    speeds = store.meta("speed")
    if speeds:  # measured by runs with scale_tc or min_speed (`arbiter calibrate`)
        listed = ", ".join(f"{host} {factor:g}" for host, factor in json.loads(speeds).items())
        lines.append(f"Speed factor by host: {listed}")
    affinity = store.meta("affinity")
    if affinity:  # how the last run on this machine pinned its engines
        lines += [f"Last run's {line}" for line in affinity.splitlines()[:1]]
    if outside:
        lines.append(
            f"Note: {outside} stored games are outside this schedule (played with more"
            " rounds or other engines); the table rates them with the rest."
        )
    for a, b, n in store.identical_pairings():
        lines.append(
            f"Note: all {n} games between {a} and {b} were identical (per seat order):"
            " deterministic engines replay one game; use openings or random_openings."
        )
    voids = store.void_summary()
    if voids:
        lines.append("Void games not yet replayed:")
        lines += [f"  {n} x {term}: {reason[:200]}" for term, reason, n in voids[:10]]
    return lines


def outside_schedule(t: Any, store: Store, schedule: Any = None) -> tuple[int, int]:
    """(games of this schedule stored, stored games outside it): status and the table
    count the same games, the second number says which the schedule does not hold."""
    done = t.stored(store) if schedule is None else t.stored(store, schedule)
    return done, store.games_stored() - done


def run_tables(t: Any, games: Any, store: Store, tests: Any, full: bool = False) -> str:
    """The standings a tournament run prints: its format's summary, the Elo table and,
    with tests (the run's `PairingTests`), every pairing's at the end (`full`) or, in a
    progress block, those that changed since the last one."""
    parts = [*t.summary(games), store_standings(store)]
    if tests is not None:
        lines = (
            [f"{a} vs {b}: {v.line(t.rounds)}" for (a, b), v in tests.verdicts()]
            if full
            else tests.progress(t.rounds)
        )
        parts.append("\n".join(lines))
    return "\n\n".join(parts)


def run_end(t: Any, games: Any, store: Store, tests: Any, outcome: Any) -> list[str]:
    """What a tournament run prints when it ends: the tables, the notes, the games given
    up and why it stopped early."""
    _, outside = outside_schedule(t, store, games)
    lines = [run_tables(t, games, store, tests, full=True)]
    lines += tournament_notes(store, outside) + outcome.notes
    if outcome.unplayed:
        lines.append(
            f"Given up after repeated voids: {len(outcome.unplayed)} games"
            " (run again to retry them)."
        )
    if outcome.aborted:
        lines.append(f"Tournament stopped: {outcome.aborted}")
    return lines


@dataclass
class Status:
    """One snapshot of a tournament's or a match's store, as `tournament status` shows it."""

    t: Any  # the Tournament, or the StoredMatch a match's store holds
    kind: str  # "Tournament" or "Match"
    done: int = 0
    left: int = 0
    outside: int = 0
    voids: list[tuple[str, str, int]] = field(default_factory=list)
    board: Standings | None = None
    notes: list[str] = field(default_factory=list)
    starts: int = 0
    start_seconds: float = 0.0
    attempts: int = 0
    summary: list[str] = field(default_factory=list)  # what the format shows beside the table
    extra: dict[str, Any] = field(default_factory=dict)
    hosts: list[Any] | None = None  # each host's standings, when asked for
    verdicts: list[Any] = field(default_factory=list)
    saving: Saving = field(default_factory=Saving)  # games ended by adjudication

    @property
    def tested(self) -> bool:
        return self.kind == "Tournament" and self.t.sprt is not None

    def as_json(self) -> dict[str, Any]:
        t = self.t
        data: dict[str, Any] = {
            "tournament": t.name,
            "kind": self.kind.lower(),
            "store": str(t.output),
            "scheduled": t.total,
            "done": self.done,
            "left": self.left,
            "outside_schedule": self.outside,
            "voids": [{"termination": a, "reason": b, "count": n} for a, b, n in self.voids],
            # Games a proof ended, and the cells they left empty (at most the plies saved).
            "adjudicated": self.saving.as_json(),
            "engine_starts": {
                "count": self.starts,
                "seconds": self.start_seconds,
                "per_game": round(self.starts / self.attempts, 3) if self.attempts else None,
            },
        }
        data.update(
            to_json(self.board)
            if self.board is not None
            else {
                "engines": [],
                "seat_advantage": {"elo": None, "error": None},
                "games": 0,
                "prior": DEFAULT_PRIOR,
                "connected": True,
                "components": None,
            }
        )
        data.update(self.extra)
        if self.hosts is not None:
            data["hosts"] = [host_json(h) for h in self.hosts]
        if self.tested:
            data["sprt"] = [{"engines": list(pair), **v.as_json()} for pair, v in self.verdicts]
        return data

    def lines(self) -> list[str]:
        """The text, one printed piece a line (a table is one piece)."""
        t = self.t
        more = unneeded(t, t.total - self.done - self.left) if self.kind == "Tournament" else ""
        out = [
            f"{self.kind} {t.name}: {self.done} of {t.total} games played, {self.left} left"
            f"{more} ({t.output})"
        ]
        for text in self.summary:
            out += [text, ""]
        out.append(table(self.board) if self.board is not None else "No rated games yet.")
        saved = self.saving.line()
        if saved:
            out.append(saved)
        if self.starts:
            attempts = self.attempts
            per_game = f", {self.starts / attempts:.2f} per game played" if attempts else ""
            out.append(
                f"Engines were started {self.starts} times{per_game},"
                f" taking {self.start_seconds:.1f} s in all."
            )
        out += [f"{a} vs {b}: {verdict.line(t.rounds)}" for (a, b), verdict in self.verdicts]
        out += self.notes
        for h in self.hosts or []:
            out += ["", host_heading(h), table(h.board)]
        return out


def saving(store: Store) -> Saving:
    """What adjudication saved in a store: its games all have the store's board."""
    conditions = store.conditions() or {}
    found = Saving()
    if "size" not in conditions:
        return found
    cells = Variant(conditions["islands"], conditions["size"]).geometry.n_cells
    found.take_stored(store.adjudicated_games(), cells)
    return found


def read_status(
    t: Any,
    kind: str,
    store: Store | None,
    *,
    hosts: bool,
    damaged: Callable[[Store], None],
) -> Status:
    """The status of `t` (a Tournament, or a match's StoredMatch) from its store, opened
    for reading (None: the store does not exist yet, nothing is stored). `damaged` is
    called first with the store, to say or refuse its damaged rows."""
    status = Status(t, kind, hosts=[] if hosts else None)
    left = None  # games still to play: the schedule's not stored, but for decided tests
    tests = None
    if store is not None:
        with store:
            damaged(store)
            schedule = None if kind == "Match" else t.schedule(store)
            status.done, status.outside = outside_schedule(t, store, schedule)
            if schedule is not None:
                status.summary, status.extra = t.summary(schedule), t.summary_json(schedule)
                left = t.left(schedule, status.done)
            status.voids = store.void_summary()
            status.saving = saving(store)
            tally = Tally.from_store(store)
            status.board = standings(tally, prior=DEFAULT_PRIOR) if tally.games else None
            status.notes = tournament_notes(store, status.outside)
            status.starts, status.start_seconds = store.engine_starts()
            status.attempts = store.games_stored() + store.void_count()
            if hosts:
                status.hosts = by_host(store)
            if status.tested:
                tests = t.tests(store)
                left = t.left_undecided(store, tests)
    status.left = t.total - status.done if left is None else left
    status.verdicts = [] if tests is None else tests.verdicts()
    return status
