"""The results store of a tournament or a match: one SQLite file in WAL mode, the only
module that knows SQL.

The store is the truth. A game is committed before anyone is told about it, and it is
keyed by its schedule id, so a game that comes back twice is stored once and a resumed
run skips it. Each commit is a single transaction: after `kill -9` at any moment the file
holds every finished game and nothing half-written; in-flight games were never stored and
are replayed. Only the driver writes; games in play never touch the file.

One run at a time: a run holds an exclusive `flock` on the database file itself for as
long as it runs. The kernel releases it when the holder dies however it dies, and unlike a
lock file beside the store it cannot be deleted from under the run (a deleted lock file
let a second run make a new one and play the same games). Because the lock is on the
file, not on its name, a run can also tell when its store is no longer the file at its
path (removed, or replaced by another file): after every write it compares the path's
device and inode with the file it locked, and stops, keeping a copy of what the lost file
held. On Linux `flock` and SQLite's own POSIX record locks are independent, so neither
disturbs the other (on NFS flock is emulated with record locks; SQLite in WAL mode is not
for network filesystems anyway).

Readers (status, ratings, report, export) change nothing: they open the database
read-only and read one snapshot, one read transaction for everything they show. A WAL
database opened read-only still needs its -wal and -shm files, which SQLite would create;
so a reader first takes a shared `flock`, which keeps a run from starting while it reads
(a run waits for readers, and refuses only another run), and when no run holds the store
and there is no write-ahead log to read, it reads the file as immutable. Otherwise (a run
in progress, or the log of a run that died) it reads through the files that are there;
the only file it can then touch is -shm, SQLite's shared-memory index of the log, which
every reader of a live WAL database updates (and which SQLite makes anew if a log has
outlived it: without it the log cannot be read).

Every row a reader or a run relies on is checked before use: a stored record means what a
records line means (`GameRecord.from_json`) and must agree with its row. A row that does
not is a `Damage`: readers report it and leave it out, and a run refuses to build on it.
A run checks every row when it opens a store (a row as the run wrote it, by its digest).
A reader of a store whose triggers are in place reads no record to open it: the triggers
drop the digest of any games row inserted, changed or deleted by anyone, so only the
rows without one are checked then, and each record the reader goes on to read (export,
report, the games of `show`) is checked against its digest as it is read. What a reader
of the columns alone (status, ratings) does not see is damage to the file that changed a
record behind SQLite's back (no trigger ran); the next run's opening does.
"""

from arbiter.results.store.failures import DB_ERRORS, READ_HINT, RUN_HINT
from arbiter.results.store.files import READERS_WAIT, resolved, set_aside, store_files
from arbiter.results.store.opening import Store
from arbiter.results.store.rows import (
    CountRow,
    Damage,
    EngineEntry,
    GameRow,
    ResultRow,
    Scheduled,
    SeatPlayed,
)
from arbiter.results.store.schema import SCHEMA_VERSION, TEXT_CAP

__all__ = [
    "DB_ERRORS",
    "READERS_WAIT",
    "READ_HINT",
    "RUN_HINT",
    "SCHEMA_VERSION",
    "TEXT_CAP",
    "CountRow",
    "Damage",
    "EngineEntry",
    "GameRow",
    "ResultRow",
    "Scheduled",
    "SeatPlayed",
    "Store",
    "resolved",
    "set_aside",
    "store_files",
]
