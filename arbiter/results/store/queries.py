"""The store's reads: some forty queries, each over the sound rows only, most row by row
so that a reader's memory does not follow the number of games."""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from typing import Any, TypeVar

from arbiter.results.records import FAULTS, GameRecord
from arbiter.results.store.failures import _text
from arbiter.results.store.integrity import (
    CheckedStore,
    _json,
    _label,
    _record_problem,
    _row_digest,
)
from arbiter.results.store.rows import CountRow, GameRow, ResultRow, SeatPlayed
from arbiter.results.store.schema import _SCANNED, _played

_T = TypeVar("_T")


class StoreQueries(CheckedStore):
    """What the readers (status, ratings, report, export, resume) ask a store: each
    query leaves out the rows found damaged."""

    def conditions(self) -> dict[str, Any] | None:
        text = self.meta("conditions")
        data = None if text is None else _json(text, "")[0]
        return dict(data) if isinstance(data, dict) else None

    def definition(self) -> dict[str, Any] | None:
        """The whole definition the last run was given (a tournament's, a match's)."""
        text = self.meta("definition")
        data = None if text is None else _json(text, "")[0]
        return dict(data) if isinstance(data, dict) else None

    def engine_definitions(self) -> dict[str, dict[str, Any]]:
        out = {}
        for name, definition in self._q("SELECT name, definition FROM engines"):
            data = _json(definition, "")[0]
            if isinstance(data, dict):
                out[str(name)] = data
        return out

    def last_number(self) -> int:
        """The highest game number stored (0 if none): an arena numbers its games on."""
        rows = self._q("SELECT MAX(number) FROM games")
        return int(rows[0][0] or 0) if rows else 0

    def recent_games(self, limit: int, before: int | None = None) -> list[tuple[int, GameRecord]]:
        """The last `limit` games stored (number and record), newest first, those
        numbered below `before` if given: a page of a long history, read by the number
        index. A damaged row is left out (the readers that name damage report it)."""
        sql = (
            "SELECT number, record FROM {games} WHERE number < ? ORDER BY number DESC LIMIT ?"
            if before is not None
            else "SELECT number, record FROM {games} ORDER BY number DESC LIMIT ?"
        )
        params: tuple[Any, ...] = (before, limit) if before is not None else (limit,)
        out = []
        for number, text in self._games(sql, params):
            try:
                out.append((int(number), GameRecord.from_json(json.loads(text))))
            except (TypeError, ValueError):
                continue
        return out

    def game_keys(self) -> Iterator[tuple[str, str]]:
        """(game id, start time) of every stored game, row by row: what tells one play
        of a game from another when sources are combined."""
        for a, b in self._games_iter("SELECT game_id, started FROM {games}"):
            yield str(a), str(b)

    def stored_rows(self) -> Iterator[tuple[str, str, str, int]]:
        """(pair key, seat 1, seat 2, winning seat) of every stored game in the order it
        was stored, which is the order the run counted it in: a sequential test read
        again from the store decides where it decided during the run. Row by row."""
        rows = self._rows(
            self._cursor(
                "SELECT pair_key, seat1, seat2, winner_seat FROM games WHERE rowid NOT IN"
                " (SELECT value FROM json_each(?)) ORDER BY rowid",  # damaged rows skipped
                (self._skip_games,),
            )
        )
        for pair_key, seat1, seat2, winner_seat in rows:
            yield str(pair_key), str(seat1), str(seat2), int(winner_seat)

    def game_rows(self) -> Iterator[GameRow]:
        rows = self._games_iter(
            "SELECT game_id, started, seat1, seat2, winner_seat, termination, pair_key FROM {games}"
        )
        for row in rows:
            yield GameRow(*row)

    # What a seat's engine played under, as its record says: its time control, the
    # board, the versions the engines answered and its command (JSON text, or NULL).
    _SEAT_PLAYED = (
        "json_extract(record, '$.tc.seat{n}'), json_extract(record, '$.variant'),"
        " json_extract(record, '$.versions'),"
        " json_extract(record, '$.commands.seat{n}')"
    )

    def played_rows(self) -> Iterator[tuple[GameRow, SeatPlayed, SeatPlayed]]:
        """Every stored game with what each seat played under (`SeatPlayed`), for readers
        that tell an engine's games under different conditions apart."""
        rows = self._games_iter(
            "SELECT game_id, started, seat1, seat2, winner_seat, termination, pair_key, "
            + self._SEAT_PLAYED.format(n=1)
            + ", "
            + self._SEAT_PLAYED.format(n=2)
            + " FROM {games}"
        )
        for row in rows:
            yield GameRow(*row[:7]), SeatPlayed(*row[7:11]), SeatPlayed(*row[11:15])

    def conditions_played(self) -> list[tuple[str, SeatPlayed, int]]:
        """(engine, what it played under, games) for every distinct set of conditions an
        engine's stored games were played under (aggregated in SQL)."""
        if self._kept:
            # Counted by the triggers as games were stored: read, less the damaged rows.
            counts = {
                (str(name), SeatPlayed(*played)): int(n)
                for name, *played, n in self._q(
                    "SELECT engine, tc, variant, versions, command, games FROM seats_played"
                    " ORDER BY engine, tc, variant, versions, command"
                )
            }
            seats = " UNION ALL ".join(
                f"SELECT seat{n} AS engine, {_played('record', n)} FROM games WHERE rowid IN"
                " (SELECT value FROM json_each(?1))"
                for n in (1, 2)
            )
            for name, *played in self._q(seats, (self._skip_games,)):
                key = (str(name), SeatPlayed(*played))
                counts[key] = counts.get(key, 0) - 1
            return [(name, played, n) for (name, played), n in counts.items() if n > 0]
        rows = self._games(
            "WITH g AS (SELECT seat1, seat2, record FROM {games})"
            " SELECT *, COUNT(*) FROM ("
            f"SELECT seat1, {self._SEAT_PLAYED.format(n=1)} FROM g UNION ALL"
            f" SELECT seat2, {self._SEAT_PLAYED.format(n=2)} FROM g) GROUP BY 1, 2, 3, 4, 5"
        )
        return [(str(name), SeatPlayed(*played), int(n)) for name, *played, n in rows]

    def seen_records(self) -> list[tuple[str, str, list[Any], int, int, str, str]] | None:
        """(seat 1, seat 2, facts, first game number, games) of each group of stored
        games whose records show the same conditions (`records_seen`: board, swap,
        opening, time controls, commands, versions, answers, host, CPU), in the order
        their first games were stored, with the earliest start ('' if none) and the
        latest finish; None where the store does not keep the groups or has damaged rows
        (a reader then reads the records themselves)."""
        return self._seen(
            "SELECT seat1, seat2, facts, first, games, started, finished FROM records_seen", 2
        )

    def seen_pies(self) -> list[tuple[str, list[Any], int, int]] | None:
        """(seat 2, facts, first game number, games) of each group of stored games with
        the same board, first stone, second move ("swap", "other" or null), opening and
        winner's colour (`pies_seen`), as `seen_records` orders them, or None."""
        return self._seen("SELECT seat2, facts, first, games FROM pies_seen", 1)

    def _seen(self, sql: str, seats: int) -> list[Any] | None:
        if not self._summed or self._skip_games != "[]":
            return None
        out = []
        for row in self._q(sql + " WHERE games > 0 ORDER BY first, key"):
            facts = row[seats]
            decoded = _json(facts, "")[0] if facts is not None else None
            if not isinstance(decoded, list):
                return None  # a record that was not JSON: read the records instead
            named = tuple(str(v) for v in row[:seats])
            out.append(
                (*named, decoded, int(row[seats + 1]), int(row[seats + 2]), *row[seats + 3 :])
            )
        return out

    def adjudicated_count(self) -> int:
        """Stored games a proof ended (read from the seats index)."""
        rows = self._games("SELECT COUNT(*) FROM {games} WHERE termination = 'adjudicated'")
        return int(rows[0][0])

    def last_numbers(self, limit: int) -> list[int]:
        """The numbers of the last `limit` sound stored games, ascending (by the number
        index)."""
        rows = self._games("SELECT number FROM {games} ORDER BY number DESC LIMIT ?", (limit,))
        return sorted(int(n) for (n,) in rows)

    def fault_numbers(self, faults: Iterable[str], limit: int) -> list[int]:
        """The numbers of the last `limit` games lost by one of `faults`, ascending (the
        terminations read from the seats index, the numbers of those games only)."""
        marks = ", ".join("?" for _ in faults)
        rows = self._q(
            "SELECT number FROM games WHERE rowid IN (SELECT rowid FROM games"
            f" WHERE termination IN ({marks})) AND rowid NOT IN (SELECT value FROM json_each(?))"
            " ORDER BY number DESC LIMIT ?",
            (*faults, self._skip_games, limit),
        )
        return sorted(int(n) for (n,) in rows)

    def pairing_numbers(self, per: int) -> list[int]:
        """The numbers of the last `per` games of each pairing (whichever seats), ascending:
        through the pairing index, a few rows a pairing, where the store has it."""
        if "games_by_pairing" not in {
            str(n) for (n,) in self._q("SELECT name FROM sqlite_master WHERE type = 'index'")
        }:
            rows = self._games(
                "SELECT number FROM (SELECT number, ROW_NUMBER() OVER (PARTITION BY"
                " MIN(seat1, seat2), MAX(seat1, seat2) ORDER BY number DESC) AS r FROM {games})"
                " WHERE r <= ?",
                (per,),
            )
            return sorted(int(n) for (n,) in rows)
        last: dict[tuple[str, str], list[int]] = {}
        seatings = "records_seen" if self._summed else "games"  # (its groups: a few rows)
        for seat1, seat2 in self._q(f"SELECT DISTINCT seat1, seat2 FROM {seatings}"):
            if not (isinstance(seat1, str) and isinstance(seat2, str)):
                continue  # a damaged row's seats (its games are left out as damaged)
            numbers = self._q(
                "SELECT number FROM games WHERE seat1 = ? AND seat2 = ? AND rowid NOT IN"
                " (SELECT value FROM json_each(?)) ORDER BY number DESC LIMIT ?",
                (seat1, seat2, self._skip_games, per),
            )
            pairing = (seat1, seat2) if seat1 <= seat2 else (seat2, seat1)
            last.setdefault(pairing, []).extend(int(n) for (n,) in numbers)
        return sorted(n for numbers in last.values() for n in sorted(numbers)[-per:])

    def numbered(self, numbers: Iterable[int]) -> Iterator[tuple[int, dict[str, Any]]]:
        """(number, record) of the stored games of these numbers, by number: a few games
        of a large store, read by the number index."""
        wanted = json.dumps(sorted(set(numbers)))
        for number, text, _, _ in self.record_texts(voids=False, numbers=wanted):
            assert number is not None  # (a games row's)
            yield number, json.loads(text)

    def host_rows(self) -> Iterator[tuple[str, str, GameRow, list[float], float | None]]:
        """Every stored game with the host and CPU that played it, its move times and the
        host's speed factor it recorded (None: not measured)."""
        rows = self._games_iter(
            "SELECT json_extract(record, '$.host'), json_extract(record, '$.cpu'), game_id,"
            " started, seat1, seat2, winner_seat, termination, pair_key,"
            " json_extract(record, '$.move_ms'), json_extract(record, '$.speed')"
            " FROM {games} ORDER BY number"
        )
        for host, cpu, *row, move_ms, speed in rows:
            times = json.loads(move_ms) if move_ms else []
            factor = float(speed) if isinstance(speed, int | float) else None
            yield str(host or ""), str(cpu or ""), GameRow(*row), times, factor

    def results(self) -> list[ResultRow]:
        """Every rated game's id, round and winning seat, in play order: what a schedule
        made from results (Swiss, adaptive) is rebuilt from."""
        rows = self._games(
            "SELECT game_id, round, seat1, seat2, winner_seat FROM {games} ORDER BY number, game_id"
        )
        return [ResultRow(str(g), int(r), str(a), str(b), int(w)) for g, r, a, b, w in rows]

    def done_ids(self) -> set[str]:
        return set(self.game_ids())

    def game_ids(self) -> Iterator[str]:
        """The id of every stored game, row by row (`done_ids` without holding them)."""
        for (game_id,) in self._games_iter("SELECT game_id FROM {games}"):
            yield str(game_id)

    def stored_of(self, items: Iterable[_T], key: Callable[[_T], str]) -> Iterator[tuple[_T, bool]]:
        """Each item with whether the game whose id `key` gives is stored, looked up a few
        hundred at a time in the index of ids: a schedule is checked against the store
        without holding either."""
        chunk: list[_T] = []
        for item in items:
            chunk.append(item)
            if len(chunk) == 512:
                yield from self._stored_chunk(chunk, key)
                chunk = []
        yield from self._stored_chunk(chunk, key)

    def _stored_chunk(self, chunk: list[_T], key: Callable[[_T], str]) -> Iterator[tuple[_T, bool]]:
        if not chunk:
            return
        ids = [key(item) for item in chunk]
        found = {
            str(g)
            for (g,) in self._games(
                "SELECT game_id FROM {games} WHERE game_id IN (SELECT value FROM json_each(?))",
                (json.dumps(ids),),
            )
        }
        for item, game_id in zip(chunk, ids, strict=True):
            yield item, game_id in found

    def games_stored(self) -> int:
        return int(self._games("SELECT COUNT(*) FROM {games}")[0][0])

    def counts(self) -> list[CountRow]:
        """Per ordered seat pairing: games won by each seat (aggregated in SQL)."""
        rows = self._games(
            "SELECT seat1, seat2, SUM(winner_seat = 1), SUM(winner_seat = 2) FROM {games}"
            " GROUP BY seat1, seat2"
        )
        return [CountRow(a, b, int(w), int(lost)) for a, b, w, lost in rows]

    def faults(self) -> list[tuple[str, str, int]]:
        """(engine at fault, termination, count) for every forfeit."""
        marks = ",".join("?" * len(FAULTS))
        rows = self._games(
            "SELECT CASE winner_seat WHEN 1 THEN seat2 ELSE seat1 END, termination, COUNT(*)"
            f" FROM {{games}} WHERE termination IN ({marks}) GROUP BY 1, 2",
            FAULTS,
        )
        return [(str(e), str(t), int(n)) for e, t, n in rows]

    def numbered_stored(self, prefix: str, last: int) -> int:
        """How many stored games have the id PREFIX + N, N a whole number from 1 to
        `last` written without leading zeros (a match's games: `match_game_number`; N
        beyond SQLite's integers is not counted), counted in SQL over the range of ids
        that start with PREFIX."""
        if not prefix:
            return 0
        above = prefix[:-1] + chr(ord(prefix[-1]) + 1)  # the first id past the range
        rows = self._games(
            "SELECT COUNT(*) FROM {games} AS g, (SELECT ? AS head, ? AS above, ? AS last) AS r"
            " WHERE g.game_id >= r.head AND g.game_id < r.above"
            " AND g.game_id = r.head || CAST(substr(g.game_id, length(r.head) + 1) AS INTEGER)"
            " AND CAST(substr(g.game_id, length(r.head) + 1) AS INTEGER) BETWEEN 1 AND r.last",
            (prefix, above, min(last, 2**63 - 1)),
        )
        return int(rows[0][0])

    def stored_pairs(self) -> list[tuple[tuple[str, str], tuple[str, str], int]]:
        """The results (winner, loser) of the two games of each stored pair, with how many
        pairs ended so, for `PairTally.add_stored`, which decides what is a pair and
        counts it: a pair key's games are taken two by two in the order they were
        numbered. Read from the index on pair keys as bytes, and decoded once per
        distinct outcome: a million games read in a few seconds."""
        rows = self._games_iter(
            "SELECT CAST(pair_key AS BLOB), CAST(seat1 AS BLOB), CAST(seat2 AS BLOB),"
            " CAST(winner AS BLOB) FROM {games} WHERE pair_key <> '' ORDER BY pair_key, number"
        )
        seen: Counter[tuple[tuple[bytes, bytes, bytes], tuple[bytes, bytes, bytes]]] = Counter()
        key: bytes | None = None
        opened: tuple[bytes, bytes, bytes] | None = None  # a pair's first game, while open
        for pair_key, seat1, seat2, winner in rows:  # one loop, no groups: a million rows
            if pair_key != key:
                key, opened = pair_key, (seat1, seat2, winner)
            elif opened is None:
                opened = (seat1, seat2, winner)
            else:
                seen[opened, (seat1, seat2, winner)] += 1
                opened = None
        pairs = []
        for outcome, n in seen.items():
            first, second = (
                (_text(winner), _text(seat2 if winner == seat1 else seat1))
                for seat1, seat2, winner in outcome
            )
            pairs.append((first, second, n))
        return pairs

    def identical_pairings(self) -> list[tuple[str, str, int]]:
        """Pairings whose games (per seat order) are all the same move sequence."""
        # Games of the same moves have as many plies: the index tells which seat orders
        # could be all one game, and only their records are read.
        groups = self._games(
            "SELECT seat1, seat2, COUNT(*), MIN(plies) = MAX(plies) FROM {games}"
            " GROUP BY seat1, seat2 HAVING COUNT(*) > 1"
        )
        rows = []
        for seat1, seat2, n, same_length in groups:
            distinct = 2  # not all one game
            if same_length:
                distinct = self._games(
                    "SELECT COUNT(DISTINCT json_extract(record, '$.moves')) FROM {games}"
                    " WHERE seat1 = ? AND seat2 = ?",
                    (seat1, seat2),
                )[0][0]
            rows.append((seat1, seat2, n, distinct))
        per_pairing: dict[tuple[str, str], list[tuple[int, int]]] = {}
        for a, b, n, distinct in rows:
            per_pairing.setdefault(tuple(sorted((a, b))), []).append((int(n), int(distinct)))
        return [
            (a, b, sum(n for n, _ in parts))
            for (a, b), parts in per_pairing.items()
            if all(distinct == 1 for _, distinct in parts)
        ]

    def adjudicated_games(self) -> list[tuple[str, str, list[str], list[float], int]]:
        """Seat 1, seat 2, the moves, the move times and the opening's plies of every
        rated game a proof ended (adjudicated), in play order: what adjudication saved is
        counted from them (`arbiter.results.score.Saving`)."""
        rows = self._games(
            "SELECT seat1, seat2, json_extract(record, '$.moves'),"
            " json_extract(record, '$.move_ms'), json_extract(record, '$.opening')"
            " FROM {games} WHERE rowid IN"
            " (SELECT rowid FROM games WHERE termination = 'adjudicated') ORDER BY number"
        )
        return [
            (str(a), str(b), list(json.loads(moves)), list(json.loads(ms or "[]")), int(op or 0))
            for a, b, moves, ms, op in rows
        ]

    def void_summary(self) -> list[tuple[str, str, int]]:
        """(termination, reason, count) of void attempts whose game was never rated."""
        rows = self._q(
            f"SELECT termination, reason, COUNT(*) FROM {self._VOIDS}"
            f" WHERE game_id NOT IN (SELECT game_id FROM {self._GAMES})"
            " GROUP BY termination, reason ORDER BY COUNT(*) DESC",
            (self._skip_voids, self._skip_games),
        )
        return [(str(t), str(r), int(n)) for t, r, n in rows]

    def void_count(self) -> int:
        return int(self._q(f"SELECT COUNT(*) FROM {self._VOIDS}", (self._skip_voids,))[0][0])

    def records(self, *, voids: bool = True) -> Iterator[tuple[dict[str, Any], bool]]:
        """Every sound stored record (JSON object) in play order, void attempts flagged."""
        for _, data, void in self.numbered_records(voids=voids):
            yield data, void

    def numbered_records(
        self, *, voids: bool = True
    ) -> Iterator[tuple[int | None, dict[str, Any], bool]]:
        """`records()` with each game's number in its schedule: a void attempt has the
        number of its game once that game is rated, else None (the voids table keeps
        no number)."""
        for number, text, _, void in self.record_texts(voids=voids):
            yield number, json.loads(text), void

    def record_lines(self, *, voids: bool = True) -> Iterator[str]:
        """Every sound stored record as a records line (compact JSON, as `GameRecord.dumps`
        writes it), in play order: a record stored as a run wrote it is that text already
        and is not decoded; any other is decoded and written anew."""
        for _, text, as_written, _ in self.record_texts(voids=voids):
            yield (
                text if as_written else json.dumps(json.loads(text), separators=(",", ":"))
            ) + "\n"

    def record_texts(
        self, *, voids: bool = True, numbers: str | None = None
    ) -> Iterator[tuple[int | None, str, bool, bool]]:
        """(number, record text, as a run wrote it, void) of every sound stored record, as
        `numbered_records` orders them. A games row is as a run wrote it when its digest
        says so; a row whose digest does not, and that opening did not read (a reader
        trusts the digests the triggers keep), is checked now, and left out if damaged.
        `numbers` (a JSON array) reads only the games of those numbers."""
        columns = ", ".join(f"g.{c}" for c in _SCANNED)
        cursor = self._cursor(
            f"SELECT g.rowid, g.number, CAST(g.record AS BLOB), {columns}, "
            + (
                "c.digest FROM games AS g LEFT JOIN games_checked AS c ON c.game_rowid = g.rowid"
                if self._digests
                else "NULL FROM games AS g"
            )
            + " WHERE g.rowid NOT IN (SELECT value FROM json_each(?))"
            + (" AND g.number IN (SELECT value FROM json_each(?))" if numbers is not None else "")
            + " ORDER BY g.number",
            (self._skip_games,) if numbers is None else (self._skip_games, numbers),
        )
        for rowid, number, record, *values, digest in self._rows(cursor):
            as_written = (
                digest is not None
                and isinstance(record, bytes)
                and digest == _row_digest(tuple(values), record)
            )
            if not as_written and digest is not None and self._trusted:
                problem = _record_problem(record, False, dict(zip(_SCANNED, values, strict=True)))
                if problem:
                    self._damaged("games", int(rowid), _label("game_id", values[0]), problem)
                    continue
            yield (
                int(number),
                _text(record) if isinstance(record, bytes) else str(record),
                as_written,
                False,
            )
        if voids:
            yield from self._void_texts()

    def _void_texts(self) -> Iterator[tuple[int | None, str, bool, bool]]:
        """`record_texts` of the sound void attempts."""
        cursor = self._cursor(
            f"SELECT (SELECT number FROM {self._GAMES} AS g WHERE g.game_id = v.game_id),"
            f" v.record FROM {self._VOIDS} AS v ORDER BY v.id",
            (self._skip_games, self._skip_voids),
        )
        for number, data in self._rows(cursor):
            yield None if number is None else int(number), str(data), False, True

    def numbered_voids(self) -> Iterator[tuple[int | None, dict[str, Any]]]:
        """The void attempts of `numbered_records`, in the same order, with the same
        numbers."""
        for number, text, _, _ in self._void_texts():
            yield number, json.loads(text)

    def engine_starts(self) -> tuple[int, float]:
        """Engine starts so far and the seconds they took (0, 0.0 if none were counted)."""
        try:
            data = json.loads(self.meta("engine_starts") or "{}")
            return int(data.get("count", 0)), float(data.get("seconds", 0.0))
        except (ValueError, TypeError, AttributeError):
            return 0, 0.0  # a damaged counter starts again: it is a cost, not a result

    def engines(self) -> list[dict[str, Any]]:
        rows = self._q(
            "SELECT name, command, program_sha256, script_sha256, reply_name, reply_version"
            " FROM engines ORDER BY rowid"
        )
        keys = ("name", "command", "program_sha256", "script_sha256", "reply_name", "reply_version")
        return [dict(zip(keys, row, strict=True)) for row in rows]
