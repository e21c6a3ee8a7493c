"""The store's tables, its readers' indexes and the triggers that keep digests and
counts honest, in SQL: what a store file holds, declared once."""

from __future__ import annotations

import contextlib
import sqlite3

SCHEMA_VERSION = 1
TEXT_CAP = 4096  # engine-originated labels (name, version) are stored up to this length

_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (
    key TEXT PRIMARY KEY,
    value TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS engines (
    name TEXT PRIMARY KEY,          -- the identity from the tournament file
    definition TEXT NOT NULL,       -- the engine's conditions of play, as JSON
    command TEXT NOT NULL,          -- argv as started, as JSON
    program_sha256 TEXT,
    script_sha256 TEXT,
    reply_name TEXT,                -- what it answered to `name`: a label only
    reply_version TEXT,
    first_seen TEXT
);
CREATE TABLE IF NOT EXISTS games (
    game_id TEXT PRIMARY KEY,
    number INTEGER NOT NULL,
    round INTEGER NOT NULL,
    pair_key TEXT NOT NULL,
    seat1 TEXT NOT NULL,
    seat2 TEXT NOT NULL,
    opening TEXT NOT NULL,          -- space-separated plies
    winner TEXT NOT NULL,
    winner_seat INTEGER NOT NULL,   -- 1 or 2
    termination TEXT NOT NULL,
    plies INTEGER NOT NULL,
    started TEXT NOT NULL,
    finished TEXT NOT NULL,
    record TEXT NOT NULL            -- the full JSON record
);
CREATE TABLE IF NOT EXISTS voids (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    game_id TEXT NOT NULL,
    seat1 TEXT NOT NULL,
    seat2 TEXT NOT NULL,
    termination TEXT NOT NULL,
    reason TEXT NOT NULL,
    finished TEXT NOT NULL,
    record TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS games_by_number ON games (number);
"""

# What the readers' queries read instead of the games table, whose rows carry whole
# records: each index holds the columns of its queries, so that status, ratings, report
# and resume read a few bytes a game, not its record; and the digest of each games row a
# run wrote, so that opening a store does not replay every stored game again (a new
# store has them; a run adds them to an older one with its first write).
_READ_AIDS = """
CREATE INDEX IF NOT EXISTS games_by_seats ON games (seat1, seat2, winner_seat, termination,
                                                 plies);
CREATE INDEX IF NOT EXISTS games_by_pair ON games (pair_key, number, seat1, seat2, winner);
CREATE INDEX IF NOT EXISTS games_by_start ON games (game_id, started);
CREATE INDEX IF NOT EXISTS games_by_pairing ON games (seat1, seat2, number);
CREATE INDEX IF NOT EXISTS voids_by_game ON voids (game_id);
CREATE TABLE IF NOT EXISTS games_checked (
    game_rowid INTEGER PRIMARY KEY, -- a games row written by a run
    digest BLOB NOT NULL            -- _row_digest of its columns and record, as written
);
"""

# What a seat's engine played under, as its record says: its time control, the board,
# the versions the engines answered and its command (JSON text, or NULL); a record that
# is not JSON gives NULLs (it is damaged: readers leave it out, writes do not fail on it).
_PLAYED_FIELDS = {
    "tc": "$.tc.seat{n}",
    "variant": "$.variant",
    "versions": "$.versions",
    "command": "$.commands.seat{n}",
}


def _played(record: str, n: int) -> str:
    """The SQL of `SeatPlayed`'s four values for seat `n` of `record` (a column)."""
    return ", ".join(
        f"CASE WHEN json_valid({record}) THEN json_extract({record}, '{path.format(n=n)}')"
        f" END AS {name}"
        for name, path in _PLAYED_FIELDS.items()
    )


# Kept by the database itself, whoever writes the games table (a run, another program,
# a hand with the sqlite3 shell): a games row inserted, changed or deleted loses its
# digest, so a reader can trust the digests it finds and check in full only the rows
# without one; and `seats_played` counts each engine's games by what it played under,
# so that no reader decodes every record to tell conditions apart. A reader relies on
# them only when all the triggers are there (`_TRIGGERS`): a store made before them, or
# one whose triggers were dropped, is checked row by row as before.
_TRIGGERS = ("games_inserted", "games_updated", "games_deleted")
_PLAYED_KEY = (
    "quote(engine) || ',' || quote(tc) || ',' || quote(variant) || ',' ||"
    " quote(versions) || ',' || quote(command)"
)


def _count_seats(row: str, step: str) -> str:
    """SQL that adds `step` to the `seats_played` count of both seats of `row`."""
    seats = " UNION ALL ".join(
        f"SELECT {row}.seat{n} AS engine, {_played(f'{row}.record', n)}" for n in (1, 2)
    )
    return (
        "INSERT INTO seats_played (key, engine, tc, variant, versions, command, games)"
        f" SELECT {_PLAYED_KEY}, engine, tc, variant, versions, command, {step}"
        f" FROM ({seats}) WHERE true ON CONFLICT (key) DO UPDATE SET games = games + {step};"
    )


_KEPT = f"""
CREATE TABLE IF NOT EXISTS seats_played (
    key TEXT PRIMARY KEY,           -- the five below, quoted, comma-separated
    engine TEXT NOT NULL,
    tc, variant, versions, command, -- as SeatPlayed reads them from the records
    games INTEGER NOT NULL          -- stored games of this engine under them
);
CREATE TRIGGER IF NOT EXISTS games_inserted AFTER INSERT ON games BEGIN
    DELETE FROM games_checked WHERE game_rowid = NEW.rowid;
    {_count_seats("NEW", "1")}
END;
CREATE TRIGGER IF NOT EXISTS games_updated AFTER UPDATE ON games BEGIN
    DELETE FROM games_checked WHERE game_rowid IN (OLD.rowid, NEW.rowid);
    {_count_seats("OLD", "-1")}
    {_count_seats("NEW", "1")}
END;
CREATE TRIGGER IF NOT EXISTS games_deleted AFTER DELETE ON games BEGIN
    DELETE FROM games_checked WHERE game_rowid = OLD.rowid;
    {_count_seats("OLD", "-1")}
END;
"""
# What the report reads of each game's record beyond its columns, counted by the
# database as games are stored (as `seats_played` is): the conditions a record shows
# (board, swap, opening, time controls, commands, versions, answers, host) by pair of
# seats, and the first two moves and the winner's colour (the "Pie rule" section) by
# seat 2, each group with its games and the lowest game number in it (the order the
# records are met in). So a report over a million games reads some thousands of rows.
_SUMMED_TRIGGERS = ("games_summed_inserted", "games_summed_updated", "games_summed_deleted")
_SUMMED_FACTS = {
    "records_seen": (
        "seat1, seat2",
        "'$.variant', '$.swapped', '$.opening', '$.tc', '$.commands', '$.versions',"
        " '$.answers', '$.host', '$.cpu'",
    ),
    "pies_seen": (
        "seat2",
        "'$.variant', '$.moves[0]', '$.moves[1]', '$.opening', '$.winner_color'",
    ),
}
# The facts kept of each: for the pie rule, the second move only as "swap" or "other"
# (null where there is none), so that its groups follow the first stones, not the games.
_SUMMED_KEPT = {
    "records_seen": "{f}",
    "pies_seen": "json_replace({f}, '$[2]', CASE WHEN json_extract({f}, '$[2]') IS NULL THEN NULL"
    " WHEN lower(trim(json_extract({f}, '$[2]'))) = 'swap' THEN 'swap' ELSE 'other' END)",
}


def _sum_facts(table: str, row: str, step: str) -> str:
    """SQL that adds `step` games of `row` (a games row: NEW, OLD, or the table itself
    with `row` "games") to its group in `table`."""
    seats, paths = _SUMMED_FACTS[table]
    columns = [c.strip() for c in seats.split(",")]
    times = table == "records_seen"  # it keeps the first start and the last finish too
    picked = ", ".join(f"{row}.{c} AS {c}" for c in [*columns, *(["started", "finished"] * times)])
    key = " || ',' || ".join(f"quote({c})" for c in [*columns, "facts"])
    source = f"FROM {row}" if row == "games" else ""
    grouped = " GROUP BY key" if row == "games" else ""
    whole = row == "games"
    first = "MIN(number)" if whole else "number"
    # The earliest start that is not empty ('' where none is), and the latest finish.
    started = "IFNULL(MIN(NULLIF(started, '')), '')" if whole else "started"
    finished = "MAX(finished)" if whole else "finished"
    kept = ", started, finished" if times else ""
    values = f", {started}, {finished}" if times else ""
    update = (
        ", started = CASE WHEN started = '' OR (excluded.started != ''"
        " AND excluded.started < started) THEN excluded.started ELSE started END,"
        " finished = MAX(finished, excluded.finished)"
        if times
        else ""
    )
    return (
        f"INSERT INTO {table} (key, {seats}, facts, first, games{kept})"
        f" SELECT {key} AS key, {seats}, facts, {first}, {step}{values} FROM (SELECT {seats}"
        f"{kept}, {_SUMMED_KEPT[table].format(f='f')} AS facts, number FROM (SELECT {picked},"
        f" CASE WHEN json_valid({row}.record) THEN json_extract({row}.record, {paths}) END"
        f" AS f, {row}.number AS number {source})) WHERE true{grouped}"
        " ON CONFLICT (key) DO UPDATE SET games = games + excluded.games,"
        f" first = MIN(first, excluded.first){update};"
    )


def _facts(table: str, record: str) -> str:
    """SQL of the facts `table` keeps of `record` (a column)."""
    f = f"CASE WHEN json_valid({record}) THEN json_extract({record}, {_SUMMED_FACTS[table][1]}) END"
    return _SUMMED_KEPT[table].format(f=f)


def _recount(table: str) -> str:
    """SQL that sets the first game, start and finish of OLD's group in `table` anew
    from the games still in it, after OLD left it (a games row changed or deleted by
    hand: runs only add games). A group that OLD was not the first game of keeps its
    first; `records_seen` reads the games of one seating, `pies_seen` those of seat 2."""
    seats = [c.strip() for c in _SUMMED_FACTS[table][0].split(",")]
    same = " AND ".join(f"g.{c} = {table}.{c}" for c in seats)
    mine = " AND ".join(f"{c} = OLD.{c}" for c in seats)
    facts = f"{_facts(table, 'g.record')} IS {table}.facts"
    first = f"IFNULL((SELECT MIN(g.number) FROM games AS g WHERE {same} AND {facts}), first)"
    if table != "records_seen":
        return f"UPDATE {table} SET first = {first} WHERE {mine} AND first = OLD.number;"
    started = (
        f"IFNULL((SELECT MIN(NULLIF(g.started, '')) FROM games AS g WHERE {same} AND {facts}), '')"
    )
    finished = f"IFNULL((SELECT MAX(g.finished) FROM games AS g WHERE {same} AND {facts}), '')"
    return (
        f"UPDATE {table} SET first = {first}, started = {started}, finished = {finished}"
        f" WHERE {mine} AND facts IS {_facts(table, 'OLD.record')};"
    )


_SUMMED = f"""
CREATE TABLE IF NOT EXISTS records_seen (
    key TEXT PRIMARY KEY,           -- seat1, seat2 and facts, quoted, comma-separated
    seat1 TEXT NOT NULL,
    seat2 TEXT NOT NULL,
    facts TEXT,                     -- the record's values at _SUMMED_FACTS' paths, as JSON
    first INTEGER NOT NULL,         -- the lowest game number counted here
    games INTEGER NOT NULL,
    started TEXT NOT NULL,          -- the earliest start that is not empty ('' if none)
    finished TEXT NOT NULL          -- the latest finish
);
CREATE TABLE IF NOT EXISTS pies_seen (
    key TEXT PRIMARY KEY,
    seat2 TEXT NOT NULL,
    facts TEXT,
    first INTEGER NOT NULL,
    games INTEGER NOT NULL
);
CREATE TRIGGER IF NOT EXISTS games_summed_inserted AFTER INSERT ON games BEGIN
    {_sum_facts("records_seen", "NEW", "1")}
    {_sum_facts("pies_seen", "NEW", "1")}
END;
CREATE TRIGGER IF NOT EXISTS games_summed_updated AFTER UPDATE ON games BEGIN
    {_sum_facts("records_seen", "OLD", "-1")}
    {_sum_facts("pies_seen", "OLD", "-1")}
    {_sum_facts("records_seen", "NEW", "1")}
    {_sum_facts("pies_seen", "NEW", "1")}
    {_recount("records_seen")}
    {_recount("pies_seen")}
END;
CREATE TRIGGER IF NOT EXISTS games_summed_deleted AFTER DELETE ON games BEGIN
    {_sum_facts("records_seen", "OLD", "-1")}
    {_sum_facts("pies_seen", "OLD", "-1")}
    {_recount("records_seen")}
    {_recount("pies_seen")}
END;
"""
# An older store's games counted into the tables above (a run's first write does it).
_SUMMED_FILL = (
    "DELETE FROM records_seen; DELETE FROM pies_seen;"
    + _sum_facts("records_seen", "games", "COUNT(*)")
    + _sum_facts("pies_seen", "games", "COUNT(*)")
)


_SCANNED = (
    "game_id",
    "seat1",
    "seat2",
    "winner",
    "winner_seat",
    "termination",
    "started",
    "pair_key",
    "number",
)  # the games columns a reader checks against the record


_TABLES = ("meta", "engines", "games", "voids")


_COLUMNS: dict[str, list[str]] = {}


def _columns() -> dict[str, list[str]]:
    """Each table's columns, as the schema above makes them."""
    if not _COLUMNS:
        with contextlib.closing(sqlite3.connect(":memory:")) as db:
            db.executescript(_SCHEMA)
            for table in _TABLES:
                _COLUMNS[table] = [str(r[1]) for r in db.execute(f"PRAGMA table_info({table})")]
    return _COLUMNS
