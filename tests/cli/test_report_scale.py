"""The report of a large store: read from the groups the store keeps and a few records,
it says what reading every record says, and what it reads follows the engines and the
selection, not the games.

The games come from bench/scale_bench.py, written through the store's own writer.
"""

from __future__ import annotations

import contextlib
import dataclasses
import sqlite3
from pathlib import Path
from typing import Any

import pytest
from commands import invoke
from test_scale import generated, scale

from arbiter.results.records import GameRecord
from arbiter.results.store import Store


def _report(path: Path, out: Path) -> bytes:
    done = invoke("report", str(path), "-o", str(out), "--games", "20")
    assert done.returncode == 0, done.stderr
    return out.read_bytes()


def _record_by_record(monkeypatch: pytest.MonkeyPatch) -> None:
    """The readers as they were before the store kept its groups: every record read."""
    monkeypatch.setattr(Store, "seen_records", lambda self: None)
    monkeypatch.setattr(Store, "seen_pies", lambda self: None)


def _edit(path: Path, *sql: str) -> None:
    with contextlib.closing(sqlite3.connect(path, isolation_level=None)) as con:
        for statement in sql:
            con.execute(statement)


def _both(path: Path, tmp_path: Path) -> tuple[bytes, bytes]:
    fast = _report(path, tmp_path / "page.html")
    with pytest.MonkeyPatch.context() as patch:
        _record_by_record(patch)
        slow = _report(path, tmp_path / "page.html")
    return fast, slow


def _write(path: Path, record: GameRecord, number: int, **changes: Any) -> None:
    with Store.open(path) as writer:
        changed = dataclasses.replace(record, **changes)
        writer.write(scale._Slot(changed.to_json(), number), changed)


@pytest.mark.slow  # six reports of one store
def test_the_report_from_the_stores_groups_is_the_report_of_every_record(
    tmp_path: Path,
) -> None:
    """Byte for byte: for a run's store with faults and a void attempt, after games
    edited and deleted by hand, and for an older store (no groups) once a run writes."""
    path = tmp_path / "s.sqlite"
    scale.write_store(path, 40, engines=4, templates_count=6, faults=0.1)
    record = GameRecord.from_json(next(generated(1, engines=4)))
    _write(path, record, 41, game_id="void-1", void=True, reason="engine failed to start")
    with Store.open_read(path) as store:
        assert store.seen_records() is not None and store.seen_pies() is not None
    fast, slow = _both(path, tmp_path)
    assert fast == slow and b"Pie rule" in fast
    _edit(
        path,
        "UPDATE games SET record = json_set(record, '$.tc.seat1', '1+0.5',"
        " '$.host', 'other') WHERE rowid IN (3, 30)",
        "DELETE FROM games WHERE rowid = 25",
    )
    fast, slow = _both(path, tmp_path)
    assert fast == slow and b"1+0.5" in fast
    # An older store: no groups, so every record is read, until a run writes to it.
    _edit(
        path,
        "DROP TRIGGER games_summed_inserted",
        "DROP TRIGGER games_summed_updated",
        "DROP TRIGGER games_summed_deleted",
        "DROP TABLE records_seen",
        "DROP TABLE pies_seen",
    )
    with Store.open_read(path) as store:
        assert store.seen_records() is None
    older = _report(path, tmp_path / "page.html")
    assert older == slow
    _write(path, record, 99, game_id="more-1")
    with Store.open_read(path) as store:
        assert store.seen_records() is not None
    fast, slow = _both(path, tmp_path)
    assert fast == slow and fast != older


def test_what_the_report_reads_follows_the_pairings_not_the_games(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Twice the games, the same records read and the same groups: no record is read
    but those the page embeds, and the groups are the store's pairings and conditions."""
    read: list[int] = []
    numbered = Store.numbered

    def counted(self: Store, numbers: Any) -> Any:
        out = list(numbered(self, numbers))
        read.append(len(out))
        return iter(out)

    def refused(self: Store, **kw: Any) -> Any:
        raise AssertionError("every record read")

    monkeypatch.setattr(Store, "numbered", counted)
    monkeypatch.setattr(Store, "numbered_records", refused)
    groups = []
    for n in (40, 160):
        path = tmp_path / f"s{n}.sqlite"
        scale.write_store(path, n, engines=4, templates_count=6, faults=0.0)
        _report(path, tmp_path / "page.html")
        with Store.open_read(path) as store:
            seen, pies = store.seen_records(), store.seen_pies()
            assert seen is not None and pies is not None
            groups.append((len(seen), len(pies)))
    # 20 recent games and the last 2 of each of the 6 pairings, some of them the same.
    assert read == [read[0], read[0]] and read[0] <= 20 + 12
    # At most 12 seatings, each on 4 hosts swapped or not; 4 engines at seat 2, 6 first
    # stones (the bench's playouts), swapped or not, won by either colour: not the games.
    assert all(seen <= 12 * 4 * 2 and pies <= 4 * 6 * 2 * 2 for seen, pies in groups)


def test_the_arenas_report_made_again_replays_only_the_games_stored_since(
    tmp_path: Path,
) -> None:
    """The arena's page after more games is the page made afresh from the same store,
    and only the games it had not embedded before are replayed."""
    from arbiter.arena.web import report_page
    from arbiter.views.html import ViewCache

    path = tmp_path / "arena.sqlite"
    scale.write_store(path, 24, engines=4, templates_count=6, faults=0.1)
    cache = ViewCache()
    first = report_page(path, "Arena", {}, cache)
    assert first == report_page(path, "Arena", {}) and cache.replayed == 24
    more = [GameRecord.from_json(g) for g in generated(7, engines=5)]
    for n, record in enumerate(more, 1):
        _write(path, record, 100 + n, game_id=f"more-{n}")
    again = report_page(path, "Arena", {}, cache)
    assert again == report_page(path, "Arena", {}) and again != first
    assert cache.replayed == 24 + 7
