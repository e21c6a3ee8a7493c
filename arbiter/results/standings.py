"""The leaderboard: tally results by engine identity, fit the ratings, format the table.

Results are tallied by the names the schedule or the records give the seats (the engine's
identity), never by anything an engine answers. The tally keeps only counts, so a
leaderboard over a million games costs the same to fit as one over a hundred.
"""

from __future__ import annotations

import csv
import io
import math
import os
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tabulate import tabulate

from arbiter._numpy import np
from arbiter.errors import ConfigError
from arbiter.results.ratings import DEFAULT_PRIOR, RatingFit, fit
from arbiter.results.records import FAULTS, BadLine, Termination, read_records
from arbiter.results.store import Damage, Store, resolved


@dataclass
class Tally:
    """Counts of rated games: per ordered seat pairing, per engine faults, per pair."""

    names: dict[str, None] = field(default_factory=dict)  # insertion-ordered set
    seat_wins: Counter[tuple[str, str]] = field(default_factory=Counter)  # (s1, s2): s1 won
    seat_losses: Counter[tuple[str, str]] = field(default_factory=Counter)  # (s1, s2): s2 won
    faults: dict[str, Counter[str]] = field(default_factory=dict)
    pairs: dict[tuple[str, str], list[int]] = field(default_factory=dict)  # a<b: [2, 1, 0]
    _open_pairs: dict[str, tuple[str, str, str]] = field(default_factory=dict)
    seen: set[tuple[str, str]] = field(default_factory=set)  # (game id, start) counted
    duplicates: int = 0  # games met again through another source, not counted twice

    def add_game(self, seat1: str, seat2: str, seat1_won: bool, termination: str,
                 pair: str = "") -> None:  # fmt: skip
        self.names.setdefault(seat1)
        self.names.setdefault(seat2)
        if seat1_won:
            self.seat_wins[seat1, seat2] += 1
        else:
            self.seat_losses[seat1, seat2] += 1
        if termination in FAULTS:
            loser = seat2 if seat1_won else seat1
            self.faults.setdefault(loser, Counter())[termination] += 1
        if pair:
            winner = seat1 if seat1_won else seat2
            first = self._open_pairs.pop(pair, None)
            if first is None:
                self._open_pairs[pair] = (seat1, seat2, winner)
            elif {first[0], first[1]} == {seat1, seat2}:
                a = min(seat1, seat2)
                self.add_pair(seat1, seat2, (first[2] == a) + (winner == a))

    def add_pair(self, x: str, y: str, wins_of_first_sorted: int) -> None:
        a, b = sorted((x, y))
        self.pairs.setdefault((a, b), [0, 0, 0])[2 - wins_of_first_sorted] += 1

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
        for key, split in other.pairs.items():
            outcome = self.pairs.setdefault(key, [0, 0, 0])
            for i in range(3):
                outcome[i] += split[i]

    def add_store(self, store: Store, keep: Games | None = None) -> None:
        """Add a store's games, aggregated in SQL unless some were already counted
        (the same games through a copy of the store or an export of it); with `keep`,
        the records of the games counted (and of the void attempts) are kept there."""
        keys = store.game_keys()
        if keep is not None:
            fresh = keys - self.seen
            for data, void in store.records():
                key = (str(data.get("game_id")), str(data.get("started")))
                if void or key in fresh:
                    keep.add(key, data, void=void)
        if keys & self.seen:
            for row in store.game_rows():
                key = (row.game_id, row.started)
                if key in self.seen:
                    self.duplicates += 1
                    continue
                self.seen.add(key)
                self.add_game(row.seat1, row.seat2, row.winner_seat == 1, row.termination,
                              row.pair_key)  # fmt: skip
            return
        self.seen |= keys
        self.merge(Tally.from_store(store))

    @classmethod
    def from_store(cls, store: Store) -> Tally:
        tally = cls()
        for row in store.counts():
            tally.names.setdefault(row.seat1)
            tally.names.setdefault(row.seat2)
            tally.seat_wins[row.seat1, row.seat2] += row.seat1_wins
            tally.seat_losses[row.seat1, row.seat2] += row.seat2_wins
        for engine, termination, n in store.faults():
            tally.faults.setdefault(engine, Counter())[termination] += n
        for a, b, wins in store.pair_results():
            tally.add_pair(a, b, int(wins))
        return tally


@dataclass
class Games:
    """The records behind a tally, in source order, each play of a game once: what a
    report shows game by game. Void attempts are kept apart from the rated games."""

    records: list[dict[str, Any]] = field(default_factory=list)
    _void_seen: set[tuple[str, str]] = field(default_factory=set)

    def add(self, key: tuple[str, str], data: dict[str, Any], *, void: bool) -> None:
        if void:
            if key in self._void_seen:
                return
            self._void_seen.add(key)
        self.records.append(data)


def tally_records(paths: Iterable[str | os.PathLike[str]], tally: Tally | None = None,
                  keep: Games | None = None) -> tuple[Tally, list[BadLine], int]:  # fmt: skip
    """Add records files to a tally: (tally, bad lines, void records skipped).

    Lines go through the records module's one reader, so a line that `show` or `report`
    would reject is never counted here either. With `keep`, the records counted (and the
    void ones, each attempt once) are kept there too.
    """
    tally = tally or Tally()
    bad: list[BadLine] = []
    voids = 0
    for path in paths:
        for record in read_records(path, bad):
            key = (record.game_id, record.started)
            if record.void:
                voids += 1
                if keep is not None:
                    keep.add(key, record.to_json(), void=True)
                continue
            if key in tally.seen:
                tally.duplicates += 1
                continue
            tally.seen.add(key)
            if keep is not None:
                keep.add(key, record.to_json(), void=False)
            tally.add_game(record.seat1, record.seat2, record.winner == record.seat1,
                           record.termination.value, record.pair)  # fmt: skip
    return tally, bad, voids


def source_kind(path: str) -> str:
    """What a SOURCE argument is: "store" or "records" (by the file's first bytes)."""
    try:
        with open(path, "rb") as handle:
            head = handle.read(16)
    except OSError as exc:
        raise ConfigError(
            f"cannot read: {exc.strerror}",
            where=path,
            hint="give a tournament file, a store or a records file",
        ) from exc
    return "store" if head == b"SQLite format 3\x00" else "records"


def gather(sources: Iterable[str], keep: Games | None = None,
           ) -> tuple[Tally, list[BadLine | Damage], list[str]]:  # fmt: skip
    """Tally stores and records files together, each game once: (tally, bad records
    lines and damaged store rows, tournament names met). With `keep`, the records counted
    are kept there as well, deduplicated the same way.

    Stores are read read-only, one snapshot each; their damaged rows are left out and
    returned with the bad lines, as the records files' are."""
    tally = Tally()
    files: list[str] = []
    stores: set[Path] = set()
    damaged: list[Damage] = []
    names: list[str] = []
    for source in sources:
        kind = source_kind(source)
        if kind == "records":
            files.append(source)
            continue
        path = Path(source)
        real = resolved(path)
        if real in stores:
            continue  # the same store twice (by its file and by its tournament's)
        stores.add(real)
        with Store.open_read(path) as store:
            damaged.extend(store.damage)
            name = store.meta("tournament")
            if name and name not in names:
                names.append(name)
            tally.add_store(store, keep)
    tally, bad, _ = tally_records(files, tally, keep)
    return tally, [*damaged, *bad], names


@dataclass(frozen=True)
class Row:
    rank: int
    name: str
    elo: float
    error: float
    games: int
    wins: int
    losses: int
    score: float
    los_next: float | None
    faults: dict[str, int]


@dataclass(frozen=True)
class Standings:
    rows: list[Row]
    fit: RatingFit
    tally: Tally
    prior: float

    @property
    def games(self) -> int:
        return self.tally.games


def standings(tally: Tally, *, prior: float = DEFAULT_PRIOR,
              anchor: tuple[str, float] | None = None) -> Standings:  # fmt: skip
    names = list(tally.names)
    index = {name: i for i, name in enumerate(names)}
    n = len(names)
    wins = np.zeros((n, n))
    losses = np.zeros((n, n))
    for (a, b), k in tally.seat_wins.items():
        wins[index[a], index[b]] += k
    for (a, b), k in tally.seat_losses.items():
        losses[index[a], index[b]] += k
    result = fit(names, wins, losses, prior=prior, anchor=anchor)
    order = result.order()
    rows = []
    for rank, i in enumerate(order, 1):
        nxt = order[rank] if rank < len(order) else None
        rows.append(Row(
            rank=rank,
            name=names[i],
            elo=float(result.elo[i]),
            error=float(result.error[i]),
            games=int(result.games[i]),
            wins=int(result.wins[i]),
            losses=int(result.losses[i]),
            score=result.score(i),
            los_next=None if nxt is None else result.los(i, nxt),
            faults=dict(sorted(tally.faults.get(names[i], Counter()).items())),
        ))  # fmt: skip
    return Standings(rows, result, tally, prior)


def _num(x: float, digits: int = 1) -> float | None:
    return None if math.isinf(x) or math.isnan(x) else round(x, digits) + 0.0  # no -0.0


def to_json(s: Standings) -> dict[str, Any]:
    f = s.fit
    return {
        "engines": [
            {
                "rank": r.rank, "name": r.name, "elo": _num(r.elo), "error": _num(r.error),
                "games": r.games, "wins": r.wins, "losses": r.losses,
                "score": round(r.score, 4), "faults": r.faults,
                "los_next": None if r.los_next is None else round(r.los_next, 4),
            }
            for r in s.rows
        ],
        "seat_advantage": {"elo": _num(f.seat_advantage), "error": _num(f.seat_error)},
        "games": s.games,
        "prior": s.prior,
        "connected": f.connected,
        "components": [list(c) for c in f.components] if not f.connected else None,
    }  # fmt: skip


def _signed(x: float) -> str:
    text = f"{x:+.0f}"
    return "0" if text in ("+0", "-0") else text


def _faults_text(faults: dict[str, int]) -> str:
    return ", ".join(f"{k} {v}" for k, v in faults.items()) or "-"


def table(s: Standings, fmt: str = "table") -> str:
    """The leaderboard as text: `table` (plain), `markdown` or `csv`."""
    headers = ["rank", "engine", "Elo", "±95%", "games", "score %", "W-L", "LOS next", "faults"]
    rows = [
        [r.rank, r.name, _signed(r.elo), f"{r.error:.0f}", r.games, f"{100 * r.score:.1f}",
         f"{r.wins}-{r.losses}", "" if r.los_next is None else f"{100 * r.los_next:.1f}%",
         _faults_text(r.faults)]
        for r in s.rows
    ]  # fmt: skip
    if fmt == "csv":
        out = io.StringIO()
        writer = csv.writer(out, lineterminator="\n")
        writer.writerow(headers)
        writer.writerows(rows)
        return out.getvalue().rstrip("\n")
    text = tabulate(
        rows,
        headers,
        tablefmt="github" if fmt == "markdown" else "simple",
        disable_numparse=True,
        colalign=("right", "left") + ("right",) * 7,
    )
    return text + "\n" + "\n".join(footer(s))


def footer(s: Standings) -> list[str]:
    f = s.fit
    lines = [
        f"Seat 1 advantage: {_signed(f.seat_advantage)} ± {f.seat_error:.0f} Elo over {s.games}"
        f" games (prior {s.prior:g} virtual games per engine)",
    ]
    if not f.connected:
        groups = "; ".join(", ".join(c) for c in f.components)
        lines.append(
            f"Warning: the engines fall into {len(f.components)} groups that never played"
            f" each other ({groups}); ratings across groups are not comparable."
        )
    return lines


@dataclass(frozen=True)
class HeadToHead:
    """One engine against one opponent, from the engine's side."""

    engine: str
    opponent: str
    wins: int
    losses: int
    diff: float  # the fitted Elo difference, engine minus opponent
    error: float  # its 95% half-width
    pairs: tuple[int, int, int] | None  # seat-swapped pairs won twice, split, lost twice

    @property
    def games(self) -> int:
        return self.wins + self.losses


def head_to_head(s: Standings) -> list[HeadToHead]:
    """Every pairing that met, both ways round, engines in leaderboard order."""
    names = [r.name for r in s.rows]
    index = {name: i for i, name in enumerate(s.fit.names)}
    t = s.tally
    out = []
    for a in names:
        for b in names:
            if a == b:
                continue
            w = t.seat_wins[a, b] + t.seat_losses[b, a]
            l_ = t.seat_losses[a, b] + t.seat_wins[b, a]
            if not w + l_:
                continue
            diff, err = s.fit.diff(index[a], index[b])
            x, y = sorted((a, b))
            counts = t.pairs.get((x, y))
            pairs = None
            if counts:
                two, split, zero = counts if a == x else counts[::-1]
                pairs = (two, split, zero)
            out.append(HeadToHead(a, b, w, l_, diff, err, pairs))
    return out


def matrix(s: Standings) -> str:
    """Head-to-head: W-L, the fitted Elo difference, and pairs won twice/split/lost twice."""
    body = [
        [h.engine, h.opponent, f"{h.wins}-{h.losses}", f"{_signed(h.diff)} ± {h.error:.0f}",
         "" if h.pairs is None else "/".join(map(str, h.pairs))]
        for h in head_to_head(s)
    ]  # fmt: skip
    return tabulate(
        body,
        ["engine", "opponent", "W-L", "Elo diff", "pairs 2/1/0"],
        tablefmt="simple",
        disable_numparse=True,
    )


@dataclass(frozen=True)
class HostStandings:
    """The games one machine played: a slow node shows in its time losses and move times."""

    host: str
    cpu: str
    games: int
    time_losses: int
    mean_move_ms: float | None
    board: Standings


def by_host(store: Store, *, prior: float = DEFAULT_PRIOR) -> list[HostStandings]:
    """The standings of each host's games alone (hosts in the order they first played)."""
    tallies: dict[str, Tally] = {}
    cpus: dict[str, str] = {}
    times: dict[str, list[float]] = {}
    for host, cpu, row, move_ms in store.host_rows():
        tally = tallies.setdefault(host, Tally())
        cpus.setdefault(host, cpu)
        times.setdefault(host, []).extend(t for t in move_ms if isinstance(t, int | float))
        tally.add_game(row.seat1, row.seat2, row.winner_seat == 1, row.termination,
                       row.pair_key)  # fmt: skip
    out = []
    for host, tally in tallies.items():
        spent = times[host]
        time_losses = sum(c[Termination.TIME.value] for c in tally.faults.values())
        out.append(HostStandings(
            host, cpus[host], tally.games, time_losses,
            sum(spent) / len(spent) if spent else None, standings(tally, prior=prior),
        ))  # fmt: skip
    return out


def host_heading(h: HostStandings) -> str:
    mean = f"{h.mean_move_ms:.1f} ms" if h.mean_move_ms is not None else "n/a"
    return (f"Host {h.host or '(unknown)'} ({h.cpu or 'unknown CPU'}): {h.games} games,"
            f" {h.time_losses} lost on time, mean move time {mean}")  # fmt: skip


def host_json(h: HostStandings) -> dict[str, Any]:
    return {"host": h.host, "cpu": h.cpu, "games": h.games, "time_losses": h.time_losses,
            "mean_move_ms": _num(h.mean_move_ms) if h.mean_move_ms is not None else None,
            **to_json(h.board)}  # fmt: skip
