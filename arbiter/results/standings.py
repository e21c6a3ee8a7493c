"""The leaderboard's numbers: tally results by engine identity, fit the ratings.

Results are tallied by the names the schedule or the records give the seats (the engine's
identity, see `arbiter.results.identities`), never by anything an engine answers. The
tally keeps only counts, so a leaderboard over a million games costs the same to fit as
one over a hundred. The tables, CSV and JSON made of these numbers are written by
`arbiter.views.standings_text`.
"""

from __future__ import annotations

import hashlib
import math
import os
import statistics
from collections import Counter, deque
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from arbiter._numpy import np
from arbiter.errors import ConfigError
from arbiter.results.conditions import SourceConditions
from arbiter.results.deviation import Deviation, deviations
from arbiter.results.elo import Difference
from arbiter.results.identities import GameConditions
from arbiter.results.identities import Identities as Identities
from arbiter.results.identities import split_keys as split_keys
from arbiter.results.pairs import PairTally
from arbiter.results.ratings import DEFAULT_PRIOR, RatingFit, estimate_difference, fit
from arbiter.results.records import FAULTS, BadLine, Termination, read_records
from arbiter.results.sprt import paired
from arbiter.results.store import Damage, Store, resolved


@dataclass
class Tally:
    """Counts of rated games: per ordered seat pairing, per engine faults, and the
    seat-swapped pairs and games of each pairing (`PairTally`, which head-to-head asks)."""

    names: dict[str, None] = field(default_factory=dict)  # insertion-ordered set
    seat_wins: Counter[tuple[str, str]] = field(default_factory=Counter)  # (s1, s2): s1 won
    seat_losses: Counter[tuple[str, str]] = field(default_factory=Counter)  # (s1, s2): s2 won
    faults: dict[str, Counter[str]] = field(default_factory=dict)
    pairs: PairTally = field(default_factory=PairTally)
    seen: set[int] = field(default_factory=set)  # play_key of each game counted
    duplicates: int = 0  # games met again through another source, not counted twice

    def add_game(
        self, seat1: str, seat2: str, seat1_won: bool, termination: str, pair: str = ""
    ) -> None:
        self.names.setdefault(seat1)
        self.names.setdefault(seat2)
        if seat1_won:
            self.seat_wins[seat1, seat2] += 1
        else:
            self.seat_losses[seat1, seat2] += 1
        if termination in FAULTS:
            loser = seat2 if seat1_won else seat1
            self.faults.setdefault(loser, Counter())[termination] += 1
        self.pairs.add(pair, *((seat1, seat2) if seat1_won else (seat2, seat1)))

    @property
    def games(self) -> int:
        return sum(self.seat_wins.values()) + sum(self.seat_losses.values())

    def merge(self, other: Tally) -> None:
        """Add another source's counts (several stores and records files combine)."""
        for name in other.names:
            self.names.setdefault(name)
        self.seat_wins.update(other.seat_wins)
        self.seat_losses.update(other.seat_losses)
        for engine, counts in other.faults.items():
            self.faults.setdefault(engine, Counter()).update(counts)
        self.pairs.merge(other.pairs)

    def renamed(self, names: dict[str, str]) -> Tally:
        """The same counts under other engine names (a key missing from `names` keeps
        its own); engines given one name are counted as one."""

        def new(name: str) -> str:
            return names.get(name, name)

        out = Tally(seen=self.seen, duplicates=self.duplicates)
        for name in self.names:
            out.names.setdefault(new(name))
        for (a, b), k in self.seat_wins.items():
            out.seat_wins[new(a), new(b)] += k
        for (a, b), k in self.seat_losses.items():
            out.seat_losses[new(a), new(b)] += k
        for engine, counts in self.faults.items():
            out.faults.setdefault(new(engine), Counter()).update(counts)
        out.pairs = self.pairs.renamed(names)
        return out

    def add_store(
        self,
        store: Store,
        keep: Games | None = None,
        identities: Identities | None = None,
        source: str = "",
        *,
        alone: bool = False,
    ) -> None:
        """Add a store's games, aggregated in SQL unless some were already counted
        (the same games through a copy of the store or an export of it) or `identities`
        split engines by conditions; with `keep`, the records of the games counted (and
        of the void attempts) are kept there. `identities` notes what the games were
        played under, as met in `source`. A store read `alone` (no other source) is
        not told apart from others: its games' keys are not made."""
        keys = (
            set()
            if alone
            else {play_key(game_id, started) for game_id, started in store.game_keys()}
        )
        if keep is not None and not self.seen and keep.add_store(store):
            pass  # the first source, taken in from the store's groups and a few records
        elif keep is not None:
            fresh = keys - self.seen if self.seen else keys  # (no copy for the first source)
            conditions = keep.current
            for number, data, void in store.numbered_records():
                if conditions is not None:
                    conditions.observe(data, void=void)
                game_id = str(data.get("game_id"))
                key = play_key(game_id, str(data.get("started")))
                if void or alone or key in fresh:
                    keep.add(game_id, key, data, void=void, number=number)
            del fresh
        if not keys.isdisjoint(self.seen) or (identities is not None and identities.split):
            for row, played1, played2 in store.played_rows():
                key = play_key(row.game_id, row.started)
                if key in self.seen:
                    self.duplicates += 1
                    continue
                self.seen.add(key)
                seat1, seat2 = row.seat1, row.seat2
                if identities is not None:
                    seat1 = identities.key(seat1, GameConditions.of_store(seat1, played1), source)
                    seat2 = identities.key(seat2, GameConditions.of_store(seat2, played2), source)
                self.add_game(seat1, seat2, row.winner_seat == 1, row.termination, row.pair_key)
            return
        if self.seen:
            self.seen |= keys
        else:
            self.seen = keys
        self.merge(Tally.from_store(store))
        if identities is not None:
            for name, played, games in store.conditions_played():
                identities.key(name, GameConditions.of_store(name, played), source, games)

    @classmethod
    def from_store(cls, store: Store) -> Tally:
        tally = cls()
        for row in store.counts():
            tally.names.setdefault(row.seat1)
            tally.names.setdefault(row.seat2)
            tally.seat_wins[row.seat1, row.seat2] += row.seat1_wins
            tally.seat_losses[row.seat1, row.seat2] += row.seat2_wins
            tally.pairs.add_games(row.seat1, row.seat2, row.seat1_wins, row.seat2_wins)
        for engine, termination, n in store.faults():
            tally.faults.setdefault(engine, Counter())[termination] += n
        tally.pairs.add_stored(store.stored_pairs())
        return tally


def play_key(game_id: str, started: str) -> int:
    """One play of a game (its id and start time) as a 64-bit number: what tells plays
    apart when sources are combined, in a few bytes a game however many games are read
    (two plays would be taken for one with a chance of about n²/2⁶⁵: one in 37 million at
    a million games)."""
    digest = hashlib.blake2b(f"{game_id}\0{started}".encode(errors="replace"), digest_size=8)
    return int.from_bytes(digest.digest(), "little")


@dataclass(frozen=True)
class Selection:
    """Which games a report embeds (every game is counted whatever it embeds): the
    `recent` most recently read (None: every game), the most recent `faults` games lost
    by a fault or voided, and the most recent `per_pairing` games of each pairing."""

    recent: int | None = 1000
    faults: int = 500
    per_pairing: int = 2

    @property
    def everything(self) -> bool:
        return self.recent is None


_Kept = tuple[tuple[int, int, int, int, int], dict[str, Any]]


@dataclass
class Games:
    """The records behind a tally that a report shows game by game (each play of a game
    once), the conditions of each source, and counts of every game read. Void attempts
    are kept apart from the rated games.

    Only the games of `selection` are kept, so that memory stays bounded by the engines
    and pairings however many games are read.

    `records` are in schedule order: source by source in the order given, and within a
    source in the order of its schedule (`schedules`: a game id's position, by source
    index, for tournament files), else of the store's game numbers, else of the file; a
    void attempt comes just before the rated play of its game, and void attempts of a
    game never rated in a store come after that store's games."""

    schedules: dict[int, Mapping[str, int]] = field(default_factory=dict)
    selection: Selection = field(default_factory=Selection)
    read: int = 0  # every game offered: rated games counted and void attempts
    voids: int = 0
    _sources: list[tuple[int, SourceConditions]] = field(default_factory=list)
    _all: list[_Kept] = field(default_factory=list)
    _recent: deque[_Kept] = field(default_factory=deque)
    _faults: deque[_Kept] = field(default_factory=deque)
    _pairings: dict[tuple[str, str], deque[_Kept]] = field(default_factory=dict)
    _void_seen: set[int] = field(default_factory=set)
    _index: int = 0

    def __post_init__(self) -> None:
        self._recent = deque(maxlen=self.selection.recent)
        self._faults = deque(maxlen=self.selection.faults)

    def begin(self, index: int, source: SourceConditions) -> None:
        """The games that follow come from SOURCE argument `index`."""
        self._index = index
        self._sources.append((index, source))

    @property
    def current(self) -> SourceConditions | None:
        return self._sources[-1][1] if self._sources else None

    @property
    def sources(self) -> list[SourceConditions]:
        """The conditions of each source, in the order the sources were given."""
        return [source for _, source in sorted(self._sources, key=lambda s: s[0])]

    def add(
        self, game_id: str, key: int, data: dict[str, Any], *, void: bool, number: int | None = None
    ) -> None:
        """Offer a record (`key`: its `play_key`); `number` is its game's number in the
        store that held it. It is counted, and kept if the selection takes it."""
        if void:
            if key in self._void_seen:
                return
            self._void_seen.add(key)
            self.voids += 1
        self.read += 1
        schedule = self.schedules.get(self._index, {})
        if game_id in schedule:
            group, position = 0, schedule[game_id]
        elif self.current is not None and self.current.kind == "records":
            group, position = 0, self.read  # the file's order
        elif number is not None:  # a store's number (a game no longer in its schedule)
            group, position = 1, number
        else:  # a void attempt of a game its store never rated
            group, position = 2, 0
        kept = ((self._index, group, position, 0 if void else 1, self.read), data)
        if self.selection.everything:
            self._all.append(kept)
            return
        self._recent.append(kept)
        if void or data.get("termination") in FAULTS:
            self._faults.append(kept)
        if not void and self.selection.per_pairing:
            a, b = str(data.get("seat1")), str(data.get("seat2"))
            seats = (a, b) if a <= b else (b, a)
            mine = self._pairings.get(seats)
            if mine is None:
                mine = self._pairings[seats] = deque(maxlen=self.selection.per_pairing)
            mine.append(kept)

    def add_store(self, store: Store) -> bool:
        """Offer every game of a store whose games are the first counted, as `add` would
        one by one in the order `Store.numbered_records` gives them, but reading only the
        records the selection keeps: the conditions from the groups the store keeps
        (`SourceConditions.observe_store`), the selection by game number in SQL. False
        (nothing offered) where the store keeps no groups or every game is kept."""
        conditions = self.current
        if self.selection.everything or conditions is None or not conditions.observe_store(store):
            return False
        stored = store.games_stored()
        before = self.read
        self.read += stored
        chosen = self.selection
        recent = store.last_numbers(chosen.recent) if chosen.recent else []
        faults = store.fault_numbers(FAULTS, chosen.faults) if chosen.faults else []
        pairings = store.pairing_numbers(chosen.per_pairing) if chosen.per_pairing else []
        records = dict(store.numbered({*recent, *faults, *pairings}))
        # The order they were offered in, as `add` counts it: the games kept are the
        # last of the `stored` (their counts among all are not needed, only their order).
        order = {n: before + stored - len(records) + i for i, n in enumerate(records, 1)}

        def kept(number: int) -> _Kept:
            data = records[number]
            read = order[number]
            schedule = self.schedules.get(self._index, {})
            game_id = str(data.get("game_id"))
            group, position = (0, schedule[game_id]) if game_id in schedule else (1, number)
            return ((self._index, group, position, 1, read), data)

        # (a record found damaged as it is read is left out, and said so by the store)
        self._recent.extend(kept(n) for n in recent if n in records)
        self._faults.extend(kept(n) for n in faults if n in records)
        for number in [n for n in pairings if n in records]:
            entry = kept(number)
            a, b = str(entry[1].get("seat1")), str(entry[1].get("seat2"))
            seats = (a, b) if a <= b else (b, a)
            mine = self._pairings.get(seats)
            if mine is None:
                mine = self._pairings[seats] = deque(maxlen=chosen.per_pairing)
            mine.append(entry)
        for void_number, data in store.numbered_voids():
            conditions.observe(data, void=True)
            game_id = str(data.get("game_id"))
            self.add(
                game_id,
                play_key(game_id, str(data.get("started"))),
                data,
                void=True,
                number=void_number,
            )
        return True

    @property
    def records(self) -> list[dict[str, Any]]:
        """The records kept, in schedule order."""
        if self.selection.everything:
            kept = self._all
        else:
            chosen = {k[0][-1]: k for k in self._recent}
            chosen.update((k[0][-1], k) for k in self._faults)
            for games in self._pairings.values():
                chosen.update((k[0][-1], k) for k in games)
            kept = list(chosen.values())
        return [data for _, data in sorted(kept, key=lambda k: k[0])]


def tally_records(
    paths: Iterable[str | os.PathLike[str]],
    tally: Tally | None = None,
    keep: Games | None = None,
    identities: Identities | None = None,
    sources: Sequence[str] = (),
) -> tuple[Tally, list[BadLine], int]:
    """Add records files to a tally: (tally, bad lines, void records skipped).

    Lines go through the records module's one reader, so a line that `show` or `report`
    would reject is never counted here either. With `keep`, the records counted (and the
    void ones, each attempt once) are kept there too. `identities` names the engines and
    notes what their games were played under, the files shown as `sources` (by default
    their paths).
    """
    tally = tally or Tally()
    bad: list[BadLine] = []
    voids = 0
    source_conditions = keep.current if keep is not None else None
    for number, path in enumerate(paths):
        source = sources[number] if number < len(sources) else str(path)
        for record in read_records(path, bad):
            key = play_key(record.game_id, record.started)
            data = record.to_json() if keep is not None else {}
            if source_conditions is not None:
                source_conditions.observe(data, void=record.void)
            if record.void:
                voids += 1
                if keep is not None:
                    keep.add(record.game_id, key, data, void=True)
                continue
            if key in tally.seen:
                tally.duplicates += 1
                continue
            tally.seen.add(key)
            if keep is not None:
                keep.add(record.game_id, key, data, void=False)
            seat1, seat2 = record.seat1, record.seat2
            if identities is not None:
                seat1 = identities.key(seat1, GameConditions.of_record(record, 1), source)
                seat2 = identities.key(seat2, GameConditions.of_record(record, 2), source)
            tally.add_game(
                seat1, seat2, record.winner == record.seat1, record.termination.value, record.pair
            )
    return tally, bad, voids


STORE_SUFFIXES = (".sqlite", ".sqlite3", ".db")  # the names stores are given


def source_kind(path: str) -> str:
    """What a SOURCE argument is: "store" or "records" (by the file's first bytes).

    A file named as a store (`.sqlite`) that is not one is refused here, in one line:
    read as records or TOML it would be reported as a pile of bad lines."""
    try:
        with open(path, "rb") as handle:
            head = handle.read(16)
    except OSError as exc:
        raise ConfigError(
            f"cannot read: {exc.strerror}",
            where=path,
            hint="give a tournament file, a store or a records file",
        ) from exc
    if head == b"SQLite format 3\x00":
        return "store"
    if path.lower().endswith(STORE_SUFFIXES):
        raise ConfigError(
            "not a SQLite store (its first bytes are not SQLite's)"
            + (": the file is empty" if not head else ""),
            where=path,
            hint="give the store a run wrote (a tournament file's output), or rename a"
            " records file to .jsonl",
        )
    return "records"


def gather(
    sources: Iterable[str],
    keep: Games | None = None,
    identities: Identities | None = None,
    labels: Sequence[str] = (),
) -> tuple[Tally, list[BadLine | Damage], list[str]]:
    """Tally stores and records files together, each game once: (tally, bad records
    lines and damaged store rows, tournament names met). With `keep`, the records counted
    are kept there as well, deduplicated the same way. `identities` names the engines
    (split by conditions, if it says so) and notes what their games were played under,
    each source shown by its label in `labels` (by default its path); a split tally is
    returned under the names shown.

    Stores are read read-only, one snapshot each; their damaged rows are left out and
    returned with the bad lines, as the records files' are."""
    tally = Tally()
    sources = list(sources)
    files: list[tuple[int, str]] = []
    stores: dict[Path, str] = {}
    damaged: list[Damage] = []
    names: list[str] = []
    for index, source in enumerate(sources):
        label = labels[index] if index < len(labels) else source
        kind = source_kind(source)
        if kind == "records":
            files.append((index, source))
            continue
        path = Path(source)
        real = resolved(path)
        if real in stores:  # the same store twice (by its file and by its tournament's)
            if keep is not None:
                keep.begin(index, SourceConditions(label, "repeat", store=stores[real]))
            continue
        stores[real] = label
        with Store.open_read(path) as store:
            if keep is not None:
                keep.begin(index, SourceConditions.of_store(label, store))
            name = store.meta("tournament")
            if name and name not in names:
                names.append(name)
            tally.add_store(store, keep, identities, label, alone=len(sources) == 1)
            damaged.extend(store.damage)  # those found opening it, and reading its records
    bad: list[BadLine] = []
    for index, source in files:  # after the stores, so that a store's copy is the one kept
        label = labels[index] if index < len(labels) else source
        if keep is not None:
            keep.begin(index, SourceConditions(label, "records"))
        tally, more, _ = tally_records([source], tally, keep, identities, [label])
        bad += more
    if identities is not None and identities.split:
        shown = identities.labels()
        tally = tally.renamed(shown)
        identities.relabel(shown)
    return tally, [*damaged, *bad], names


@dataclass(frozen=True)
class StandingRow:
    rank: int
    name: str
    elo: float | None  # None: unbounded (the games do not bound it; see RatingFit)
    error: float | None  # 95% half-width; None with elo
    games: int
    wins: int
    losses: int
    score: float
    los_next: float | None  # None for the last engine, and where it is undefined
    faults: dict[str, int]


@dataclass(frozen=True)
class Standings:
    rows: list[StandingRow]
    fit: RatingFit
    tally: Tally
    prior: float

    @property
    def games(self) -> int:
        return self.tally.games


def standings(
    tally: Tally, *, prior: float = DEFAULT_PRIOR, anchors: Mapping[str, float] | None = None
) -> Standings:
    """The leaderboard of `tally`, centred on the pool mean or with `anchors` (engine name:
    Elo) held at their ratings and the others fitted against them (see ratings.fit)."""
    names = list(tally.names)
    index = {name: i for i, name in enumerate(names)}
    n = len(names)
    wins = np.zeros((n, n))
    losses = np.zeros((n, n))
    for (a, b), k in tally.seat_wins.items():
        wins[index[a], index[b]] += k
    for (a, b), k in tally.seat_losses.items():
        losses[index[a], index[b]] += k
    result = fit(names, wins, losses, prior=prior, anchors=anchors)
    order = result.order()
    rows = []
    for rank, i in enumerate(order, 1):
        nxt = order[rank] if rank < len(order) else None
        bounded = result.bounded(i)
        rows.append(
            StandingRow(
                rank=rank,
                name=names[i],
                elo=float(result.elo[i]) if bounded else None,
                error=float(result.error[i]) if bounded else None,
                games=int(result.games[i]),
                wins=int(result.wins[i]),
                losses=int(result.losses[i]),
                score=result.score(i),
                los_next=None if nxt is None else result.los(i, nxt),
                faults=dict(sorted(tally.faults.get(names[i], Counter()).items())),
            )
        )
    return Standings(rows, result, tally, prior)


def seat_advantage(f: RatingFit) -> Difference:
    """The fitted seat-1 advantage as a difference (None where unbounded; no LOS)."""
    if not math.isfinite(f.seat_error):
        return Difference(None, None, None)
    return Difference(f.seat_advantage, f.seat_error, None)


# --------------------------------------------------------------------- head to head


@dataclass(frozen=True)
class HeadToHead:
    """One engine against one opponent, from the engine's side.

    Two estimates of their difference, which answer different questions: `own` is the
    pairing's result, fitted from its games alone (what `arbiter match` prints for those
    games); `pool` is the difference of the two engines' ratings in the whole pool's fit,
    which every other game informs too, and may even have the opposite sign.
    """

    engine: str
    opponent: str
    wins: int
    losses: int
    own: Difference  # from the pairing's games alone
    pool: Difference  # the difference of the pool fit's ratings
    # Seat-swapped pairs lost twice, split, won twice (`PairTally`'s order; the tables
    # show them won twice first); None where the two completed no pair.
    pairs: tuple[int, int, int] | None

    @property
    def games(self) -> int:
        return self.wins + self.losses

    @property
    def score(self) -> float:
        return self.wins / self.games if self.games else 0.5


def _turned(d: Difference) -> Difference:
    """The same difference from the other engine's side."""
    if d.elo is None:
        return d
    return Difference(-d.elo, d.error, None if d.los is None else 1.0 - d.los)


def head_to_head(s: Standings) -> list[HeadToHead]:
    """Every pairing that met, both ways round, engines in leaderboard order."""
    names = [r.name for r in s.rows]
    index = {name: i for i, name in enumerate(s.fit.names)}
    t = s.tally
    own: dict[tuple[str, str], Difference] = {}
    out = []
    for a in names:
        for b in names:
            if a == b:
                continue
            _, w, l_ = t.pairs.counts(a, b)
            if not w + l_:
                continue
            pairs = t.pairs.classes(a, b)
            if (b, a) in own:
                own[a, b] = _turned(own[b, a])
            else:  # as a match's summary makes it: the fit, the pairs' own variance
                fitted = estimate_difference(
                    (t.seat_wins[a, b], t.seat_losses[a, b]),
                    (t.seat_wins[b, a], t.seat_losses[b, a]),
                    prior=s.prior,
                )
                own[a, b] = paired(fitted, pairs or [])
            pool = s.fit.difference(index[a], index[b])
            out.append(HeadToHead(a, b, w, l_, own[a, b], pool, pairs))
    return out


@dataclass(frozen=True)
class HostStandings:
    """The games one machine played: a slow node shows in its time losses and move times."""

    host: str
    cpu: str
    games: int
    time_losses: int
    mean_move_ms: float | None
    board: Standings
    speed: float | None  # the host's speed factor its games recorded (their median)
    deviation: Deviation  # how far its results are from the other hosts'


def by_host(store: Store, *, prior: float = DEFAULT_PRIOR) -> list[HostStandings]:
    """The standings of each host's games alone (hosts in the order they first played),
    with its speed factor and its results' deviation from the other hosts'."""
    tallies: dict[str, Tally] = {}
    cpus: dict[str, str] = {}
    times: dict[str, list[float]] = {}
    speeds: dict[str, list[float]] = {}
    results: list[tuple[str, str, str, bool]] = []
    for host, cpu, row, move_ms, speed in store.host_rows():
        tally = tallies.setdefault(host, Tally())
        cpus.setdefault(host, cpu)
        times.setdefault(host, []).extend(t for t in move_ms if isinstance(t, int | float))
        if speed is not None:
            speeds.setdefault(host, []).append(speed)
        tally.add_game(row.seat1, row.seat2, row.winner_seat == 1, row.termination, row.pair_key)
        results.append((host, row.seat1, row.seat2, row.winner_seat == 1))
    deviation = deviations(results)
    out = []
    for host, tally in tallies.items():
        spent = times[host]
        time_losses = sum(c[Termination.TIME.value] for c in tally.faults.values())
        out.append(
            HostStandings(
                host,
                cpus[host],
                tally.games,
                time_losses,
                sum(spent) / len(spent) if spent else None,
                standings(tally, prior=prior),
                statistics.median(speeds[host]) if host in speeds else None,
                deviation[host],
            )
        )
    return out
