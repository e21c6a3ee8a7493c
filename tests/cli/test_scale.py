"""Results at any scale: readers whose memory does not follow the games, a report that
embeds the selection it documents, and `show --game` that finds one game of many.

The games come from bench/scale_bench.py (legal Atoll games replicated from a few random
playouts, with distinct ids, pairs and seats), written as a records file or through the
store's own writer.
"""

from __future__ import annotations

import html
import importlib.util
import json
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from commands import invoke
from paths import BENCH

from arbiter.results.records import GameRecord

SCALE_BENCH = BENCH / "scale_bench.py"


def _bench() -> ModuleType:
    spec = importlib.util.spec_from_file_location("scale_bench", SCALE_BENCH)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("scale_bench", module)
    spec.loader.exec_module(module)
    return module


scale = _bench()


def generated(n: int, **kw: Any) -> Iterator[dict[str, Any]]:
    return scale.games(n, templates_count=20, **kw)  # type: ignore[no-any-return]


def page_data(page: Path) -> dict[str, Any]:
    text = page.read_text(encoding="utf-8")
    found = re.search(
        r'<script type="application/json" id="report-data">(.*?)</script>', text, re.S
    )
    assert found is not None
    return json.loads(found.group(1))  # type: ignore[no-any-return]


def test_the_report_of_a_large_store_embeds_its_selection_and_counts_every_game(
    tmp_path: Path,
) -> None:
    store = tmp_path / "big.sqlite"
    kw = {"engines": 6, "templates_count": 20, "faults": 0.05}
    scale.write_store(store, 400, **kw)
    games = list(scale.games(400, **kw))
    faults = [g for g in games if g["termination"] != "connection"]
    assert 5 < len(faults) < 60
    page = tmp_path / "report.html"
    done = invoke("report", str(store), "-o", str(page), "--games", "30")
    assert done.returncode == 0, done.stderr
    embedded = [g["id"] for g in page_data(page)["games"]]
    # The documented selection: the 30 most recent, every game lost by a fault, the
    # last 2 of each pairing; in schedule (here: stored) order.
    last_of_pairing: dict[tuple[str, ...], list[str]] = {}
    for g in games:
        last_of_pairing.setdefault(tuple(sorted((g["seat1"], g["seat2"]))), []).append(g["game_id"])
    wanted = {g["game_id"] for g in games[-30:]} | {g["game_id"] for g in faults}
    for ids in last_of_pairing.values():
        wanted |= set(ids[-2:])
    order = [g["game_id"] for g in games]
    assert embedded == [i for i in order if i in wanted]
    assert len(last_of_pairing) == 15 and len(embedded) < 120
    text = html.unescape(page.read_text(encoding="utf-8"))
    assert f"This page embeds {len(embedded)} of the 400 games read" in text
    assert f"The other {400 - len(embedded)} are counted" in text
    assert "arbiter show" in text and "arbiter tournament export" in text
    # Every engine, pairing and fault is still in the tables.
    assert "400 rated games" in text
    for i in range(6):
        assert text.count(f"engine-{i:02d}") >= 6  # leaderboard, plot, cross table rows
    cells = re.findall(r'<td class="(?:ahead|behind|even)"', text)
    assert len(cells) == 30  # 15 pairings, both ways round
    verdicts = sorted({g["termination"] for g in faults})
    assert all(f'<th scope="col">faults: {v}</th>' in text for v in verdicts)
    counted = [0] * len(verdicts)
    for row in re.findall(r'<tr data-engine="\d+">(.*?)</tr>', text, re.S):
        cells = re.findall(r"<td>(.*?)</td>", row)[-len(verdicts) :]
        for i, cell in enumerate(cells):
            counted[i] += 0 if cell == "\u2013" else int(cell)
    assert counted == [sum(g["termination"] == v for g in faults) for v in verdicts]
    assert done.stderr.count("not embedded") == 1
    # --all-games embeds every game, and says nothing is left out.
    every = tmp_path / "all.html"
    done = invoke("report", str(store), "-o", str(every), "--all-games")
    assert done.returncode == 0, done.stderr
    assert [g["id"] for g in page_data(every)["games"]] == order
    assert 'id="omitted"' not in every.read_text(encoding="utf-8")


def test_show_game_finds_the_last_game_of_a_large_file_building_only_that_record(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    records = tmp_path / "big.jsonl"
    with open(records, "w", encoding="utf-8") as handle:
        for data in generated(3000):
            handle.write(json.dumps(data, separators=(",", ":")) + "\n")
    built = []
    real = GameRecord.from_json.__func__  # type: ignore[attr-defined]

    def counting(cls: type[GameRecord], data: Any) -> GameRecord:
        built.append(data.get("game_id"))
        return real(cls, data)  # type: ignore[no-any-return]

    monkeypatch.setattr(GameRecord, "from_json", classmethod(counting))
    for wanted in ("scale-3000", "3000", "scale-300"):  # id, match game number, id again
        built.clear()
        shown = invoke("show", str(records), "--game", wanted)
        assert shown.returncode == 0, shown.stderr
        name = wanted if wanted.startswith("scale") else f"scale-{wanted}"
        assert shown.stdout.startswith(f"Game {name}:"), shown.stdout[:200]
        assert built == [name]
    built.clear()
    ambiguous = invoke("show", str(records), "--game", "scale-")
    assert ambiguous.returncode == 2
    assert "more than 1000 games start with 'scale-'" in ambiguous.stderr
    assert built == []
    # The list is whole, one line per game, and same as the table it always was.
    listed = invoke("show", str(records))
    assert listed.returncode == 0
    lines = listed.stdout.splitlines()
    assert len(lines) == 3002 and lines[-1].split()[:2] == ["3000", "scale-3000"]
    assert all(len(line) <= len(lines[1]) for line in lines)


def _peaks(folder: Path, n: int, *, store: bool, engines: int = 50) -> dict[str, float]:
    """Peak RSS (MB) of each reader, run as a child process, over n games."""
    records = folder / f"g{n}.jsonl"
    scale.write_records(records, n, engines=engines, templates_count=50)
    commands = {
        "ratings": ["ratings", str(records)],
        "show": ["show", str(records)],
        "show --game": ["show", str(records), "--game", f"scale-{n}"],
        "report": ["report", str(records), "-o", str(folder / f"r{n}.html")],
    }
    if store:
        sqlite = folder / f"g{n}.sqlite"
        scale.write_store(sqlite, n, engines=engines, templates_count=50)
        commands |= {
            "status (store)": ["tournament", "status", str(sqlite)],
            "ratings (store)": ["ratings", str(sqlite)],
            "export (store)": [
                "tournament",
                "export",
                str(sqlite),
                "--records",
                str(folder / f"e{n}.jsonl"),
            ],
            "report (store)": ["report", str(sqlite), "-o", str(folder / f"s{n}.html")],
        }
    return {label: scale.measure(args)[1] for label, args in commands.items()}


@pytest.mark.slow  # child processes over 5,000 games, written twice (records, store)
@pytest.mark.timeout(3600)
def test_readers_memory_does_not_follow_the_games(tmp_path: Path) -> None:
    """Every reader, on a records file and on a store: 4,000 games take no more memory
    to read than 1,000, within 15 MB (what grows is a few bytes a game: the set that
    tells plays apart; reading them all into memory, as the readers once did, took 6 to
    8 KB a game, 18 MB or more here). Ten engines, so that the report's selection is
    full at the smaller size; 10,000 to 1,000,000 games of fifty engines are measured
    by bench/scale_bench.py."""
    small = _peaks(tmp_path, 1_000, store=True, engines=10)
    large = _peaks(tmp_path, 4_000, store=True, engines=10)
    for label, peak in large.items():
        assert peak - small[label] < 15, (label, small[label], peak)


def test_opening_a_store_checks_only_rows_changed_since_a_run_wrote_them(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A run's rows carry their digest: opening the store does not replay them again,
    but a row changed since (here by hand) is checked in full and left out as damaged."""
    import sqlite3

    from arbiter.results.store import Store
    from arbiter.results.store import integrity as store_module

    path = tmp_path / "s.sqlite"
    scale.write_store(path, 50, engines=4, templates_count=5)
    checked: list[object] = []
    real = store_module._record_problem

    def counting(value: object, void: bool, row: Any) -> str:
        checked.append(row["game_id"])
        return real(value, void, row)

    monkeypatch.setattr(store_module, "_record_problem", counting)
    with Store.open_read(path) as store:
        assert store.games_stored() == 50 and not store.damage
    assert checked == []
    with sqlite3.connect(path) as con:
        con.execute(
            "UPDATE games SET record = json_set(record, '$.moves[0]', 'zz9')"
            " WHERE game_id = 'scale-7'"
        )
        con.execute("UPDATE games SET winner_seat = 3 - winner_seat WHERE game_id = 'scale-9'")
    with Store.open_read(path) as store:
        assert store.games_stored() == 48
        assert [d.label for d in store.damage] == ["game_id 'scale-7'", "game_id 'scale-9'"]
    assert checked == ["scale-7", "scale-9"]


def test_identical_pairings_read_records_only_where_the_plies_agree(tmp_path: Path) -> None:
    from arbiter.results.store import Store

    same, varied = tmp_path / "same.sqlite", tmp_path / "varied.sqlite"
    scale.write_store(same, 8, engines=2, templates_count=1, faults=0.0)
    scale.write_store(varied, 8, engines=2, templates_count=4, faults=0.0, seed=3)
    with Store.open_read(same) as store:
        assert store.identical_pairings() == [("engine-00", "engine-01", 8)]
    with Store.open_read(varied) as store:
        assert store.identical_pairings() == []


def _bypassing_triggers(path: Path, sql: str) -> None:
    """Change a games row as damage to the file would: without the triggers firing
    (they are dropped for the change and made again as they were)."""
    import contextlib
    import sqlite3

    with contextlib.closing(sqlite3.connect(path, isolation_level=None)) as con:
        made = con.execute(
            "SELECT name, sql FROM sqlite_master WHERE type = 'trigger' AND tbl_name = 'games'"
        ).fetchall()
        assert len(made) == 6  # the digests' and counts' three, and the groups' three
        con.execute("BEGIN")
        for name, _ in made:
            con.execute(f"DROP TRIGGER {name}")
        con.execute(sql)
        for _, text in made:
            con.execute(text)
        con.execute("COMMIT")
        con.execute("PRAGMA wal_checkpoint(TRUNCATE)")


def _untouched(path: Path) -> tuple[bytes, int, list[str]]:
    return path.read_bytes(), path.stat().st_mtime_ns, sorted(p.name for p in path.parent.iterdir())


def test_a_reader_trusts_the_digests_and_checks_a_record_when_it_reads_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Opening a store whose triggers keep its digests reads no record; a record damaged
    behind the triggers' back (as a damaged disk would) is found, named and left out by
    the command that reads it, and refused under --strict; no reader changes the file."""
    from arbiter.results.store import Store, integrity, queries

    path = tmp_path / "db" / "s.sqlite"
    scale.write_store(path, 300, engines=5, templates_count=10)
    _bypassing_triggers(
        path,
        "UPDATE games SET record = json_set(record, '$.moves[0]', 'zz9') WHERE game_id = 'scale-7'",
    )
    before = _untouched(path)
    hashed: list[bytes] = []
    real = integrity._row_digest

    def counting(values: tuple[object, ...], record: bytes) -> bytes:
        hashed.append(record)
        return real(values, record)

    for module in (integrity, queries):  # where opening and the readers check rows
        monkeypatch.setattr(module, "_row_digest", counting)
    with Store.open_read(path) as store:
        assert store.games_stored() == 300 and not store.damage
    assert hashed == []  # not a record read at opening
    status = invoke("tournament", "status", str(path), "--json")
    assert status.returncode == 0 and json.loads(status.stdout)["games"] == 300
    assert hashed == [] and _untouched(path) == before
    out = tmp_path / "out" / "e.jsonl"
    out.parent.mkdir()
    done = invoke("tournament", "export", str(path), "--records", str(out))
    assert done.returncode == 0, done.stderr
    [skipped] = [x for x in done.stderr.splitlines() if x.startswith("skipped")]
    assert skipped.startswith(f"skipped {path}: games row 7 (game_id 'scale-7'): record is not")
    ids = [json.loads(line)["game_id"] for line in out.read_text().splitlines()]
    assert len(ids) == 299 and "scale-7" not in ids and len(hashed) == 300
    strict = invoke(
        "tournament", "export", str(path), "--records", str(out.with_name("s.jsonl")), "--strict"
    )
    assert strict.returncode == 2 and "games row 7 (game_id 'scale-7')" in strict.stderr
    assert not out.with_name("s.jsonl").exists() and list(out.parent.iterdir()) == [out]
    report = invoke("report", str(path), "-o", str(tmp_path / "out" / "r.html"), "--all-games")
    assert report.returncode == 0 and "games row 7 (game_id 'scale-7')" in report.stderr
    assert _untouched(path) == before


def test_export_writes_each_record_as_it_always_did(tmp_path: Path) -> None:
    """The records a run wrote go out as stored, the others decoded and written anew:
    byte for byte what decoding every record and writing it compact gives."""
    import contextlib
    import dataclasses
    import sqlite3

    from arbiter.results.store import Store
    from arbiter.runs.schedule import ScheduledGame

    path = tmp_path / "s.sqlite"
    scale.write_store(path, 120, engines=4, templates_count=10, faults=0.1)
    first = GameRecord.from_json(next(generated(1, engines=4)))
    void = dataclasses.replace(
        first,
        game_id="scale-1",
        void=True,
        termination=scale_void(),
        winner=None,
        winner_color=None,
        reason="engine did not start",
        moves=[],
        move_ms=[],
        swapped=False,
        seat1="engine-00 \u00e9",
        black="engine-00 \u00e9",
    )
    with Store.open(path) as writer:
        writer.write(ScheduledGame(1, "scale-1", ("engine-00", "engine-01"), 1, "p"), void)
    with contextlib.closing(sqlite3.connect(path, isolation_level=None)) as con:
        # Hand-written rows: indented JSON, and a name outside ASCII written raw.
        (text,) = con.execute("SELECT record FROM games WHERE game_id = 'scale-5'").fetchone()
        data = json.loads(text)
        con.execute(
            "UPDATE games SET record = ? WHERE game_id = 'scale-5'", (json.dumps(data, indent=1),)
        )
        data = json.loads(
            con.execute("SELECT record FROM games WHERE game_id = 'scale-6'").fetchone()[0]
        )
        data["host"] = "n\u00f8de \u2603"
        con.execute(
            "UPDATE games SET record = ? WHERE game_id = 'scale-6'",
            (json.dumps(data, ensure_ascii=False),),
        )
        stored = [r for (r,) in con.execute("SELECT record FROM games ORDER BY number")]
        stored += [r for (r,) in con.execute("SELECT record FROM voids ORDER BY id")]
    expected = "".join(json.dumps(json.loads(r), separators=(",", ":")) + "\n" for r in stored)
    out = tmp_path / "e.jsonl"
    done = invoke("tournament", "export", str(path), "--records", str(out))
    assert done.returncode == 0, done.stderr
    assert "skipped" not in done.stderr and len(stored) == 121
    assert out.read_bytes() == expected.encode()


def scale_void() -> Any:
    from arbiter.results.records import Termination

    return Termination.SETUP


def test_conditions_played_are_counted_as_games_are_stored_and_changed(tmp_path: Path) -> None:
    """What each engine played under comes from the counts the triggers keep, and says
    what reading every record says: after games stored by a run, edited, deleted and
    damaged by hand, and for an older store (no triggers) that a run then writes to."""
    import contextlib
    import sqlite3

    from arbiter.results.store import Store

    path = tmp_path / "s.sqlite"
    scale.write_store(path, 60, engines=4, templates_count=5)

    def both() -> tuple[list[Any], list[Any]]:
        with Store.open_read(path) as store:
            kept = store._kept
            counted = sorted(store.conditions_played(), key=repr)
            store._kept = False  # read from every record instead
            read = sorted(store.conditions_played(), key=repr)
            store._kept = kept
            return counted, read

    def edit(*sql: str) -> None:
        with contextlib.closing(sqlite3.connect(path, isolation_level=None)) as con:
            for statement in sql:
                con.execute(statement)

    counted, read = both()
    assert counted == read and sum(n for *_, n in counted) == 120
    edit(
        "UPDATE games SET record = json_set(record, '$.tc.seat1', '1+0.5') WHERE rowid <= 5",
        "UPDATE games SET record = json_set(record, '$.versions', json('{\"a\": \"2\"}'))"
        " WHERE rowid = 9",
        "DELETE FROM games WHERE rowid IN (11, 12)",
        "UPDATE games SET record = '{\"schema\": 1' WHERE rowid = 20",
    )
    counted, read = both()
    assert counted == read and sum(n for *_, n in counted) == 2 * (60 - 3)
    assert any(played.tc == "1+0.5" for _, played, _ in counted)
    # An older store: no triggers, no counts; read from the records, until a run writes.
    edit(
        "DROP TRIGGER games_inserted",
        "DROP TRIGGER games_updated",
        "DROP TRIGGER games_deleted",
        "DROP TABLE seats_played",
        "UPDATE games SET record = json_set(record, '$.tc.seat2', '9+0') WHERE rowid = 30",
    )
    with Store.open_read(path) as store:
        assert not store._kept and len(store.damage) == 1
        old = sorted(store.conditions_played(), key=repr)
    assert any(played.tc == "9+0" for _, played, _ in old)
    edit("DELETE FROM games WHERE rowid = 20")  # a run does not build on a damaged row
    with Store.open(path) as writer:
        record = GameRecord.from_json(next(generated(1, engines=4)))
        writer.write(
            scale._Slot({**record.to_json(), "game_id": "more-1"}, 999),
            dataclasses_replace(record, game_id="more-1"),
        )
    counted, read = both()
    assert counted == read and sum(n for *_, n in counted) == 2 * (60 - 3 + 1)
    assert any(played.tc == "9+0" for _, played, _ in counted)
    with Store.open_read(path) as store:
        assert store._kept


def dataclasses_replace(record: GameRecord, **changes: Any) -> GameRecord:
    import dataclasses

    return dataclasses.replace(record, **changes)


def test_a_run_writes_to_a_store_whose_counts_table_was_dropped(tmp_path: Path) -> None:
    """The triggers write to `seats_played`: a store that lost that table (by hand) gets
    it again, counted anew, with the next game a run stores, instead of failing it."""
    import contextlib
    import sqlite3

    from arbiter.results.store import Store

    path = tmp_path / "s.sqlite"
    scale.write_store(path, 20, engines=3, templates_count=3)
    with contextlib.closing(sqlite3.connect(path, isolation_level=None)) as con:
        con.execute("DROP TABLE seats_played")
    with Store.open_read(path) as store:
        assert not store._kept
        read = sorted(store.conditions_played(), key=repr)
    record = GameRecord.from_json(next(generated(1, engines=3)))
    with Store.open(path) as writer:
        writer.write(
            scale._Slot({**record.to_json(), "game_id": "more-1"}, 99),
            dataclasses_replace(record, game_id="more-1"),
        )
    with Store.open_read(path) as store:
        assert store._kept and store.games_stored() == 21
        counted = sorted(store.conditions_played(), key=repr)
    assert sum(n for *_, n in read) == 40 and sum(n for *_, n in counted) == 42


def test_a_match_store_counts_its_games_by_their_ids_in_sql(tmp_path: Path) -> None:
    """Status counts a match's stored games in SQL, as `match_game_number` reads an id:
    NAME-N, N from 1 to the match's games, in digits without a leading zero."""
    from arbiter.results.store import EngineEntry, Store
    from arbiter.runs.schedule import match_game_number

    ids = [
        "m-1",
        "m-2",
        "m-10",
        "m-0",
        "m-01",
        "m-+5",
        "m-5a",
        "m-",
        "mx-5",
        "m-x-3",
        "m-1x",
        "m-99999999999999999999",
        "m-\u0665",
        "m-3-4",
        "n-2",
        "m.-4",
        "m-12",
    ]
    path = tmp_path / "m.sqlite"
    with Store.open(path) as store:
        store.begin(
            "m",
            {"kind": "match"},
            {"name": "m", "games": 12},
            {e: EngineEntry({"command": e}, (e,)) for e in ("engine-00", "engine-01")},
        )
        for number, (data, game_id) in enumerate(
            zip(generated(len(ids), engines=2), ids, strict=True), 1
        ):
            data["game_id"] = game_id
            store.write(scale._Slot(data, number), scale._record(data))
    with Store.open_read(path) as store:
        assert store.games_stored() == len(ids) and not store.damage
        for last in (0, 1, 2, 10, 11, 12, 10**6):
            numbers = [match_game_number("m", g) for g in ids]
            expected = sum(1 for n in numbers if n is not None and n <= last)
            assert store.numbered_stored("m-", last) == expected, last
        assert store.numbered_stored("m-", 12) == 4  # m-1, m-2, m-10, m-12


def test_pairs_counted_are_the_pairs_read_one_by_one(tmp_path: Path) -> None:
    """Status and ratings count a store's seat-swapped pairs by outcome: the same pairs
    as its games counted one by one in the order they were stored, also for keys with
    one game, with three, or with games between other engines (a store edited by hand:
    no pair)."""
    import contextlib
    import sqlite3

    from arbiter.results.pairs import PairTally
    from arbiter.results.store import Store

    path = tmp_path / "s.sqlite"
    scale.write_store(path, 200, engines=5, templates_count=10, faults=0.1)
    with contextlib.closing(sqlite3.connect(path, isolation_level=None)) as con:
        for sql in (
            "UPDATE games SET pair_key = 'p0000001' WHERE game_id = 'scale-5'",  # 3 games
            "UPDATE games SET pair_key = 'lone' WHERE game_id = 'scale-9'",  # 1 game
            "UPDATE games SET pair_key = 'p0000006' WHERE game_id = 'scale-31'",
            "DELETE FROM games WHERE game_id = 'scale-14'",  # (other engines)
        ):
            con.execute(sql)
    with Store.open_read(path) as store:
        counted = PairTally()
        counted.add_stored(store.stored_pairs())
        read = PairTally()
        for pair_key, seat1, seat2, winner_seat in store.stored_rows():
            read.add(pair_key, *((seat1, seat2) if winner_seat == 1 else (seat2, seat1)))
    assert counted.pairs == read.pairs
    # 100 pair keys: three left with one game, one with games between other engines
    assert sum(sum(c) for c in counted.pairs.values()) == 100 - 3 - 1


def test_a_row_replaced_by_hand_is_checked_and_its_counts_are_not_used(tmp_path: Path) -> None:
    """INSERT OR REPLACE fires no delete trigger: the replaced row's digest and seat
    counts stay behind. The totals tell a reader so; it then finds the new row (no
    digest) and checks it, and reads conditions from the records; a run counts anew."""
    import contextlib
    import sqlite3

    from arbiter.results.store import Store

    path = tmp_path / "s.sqlite"
    scale.write_store(path, 30, engines=3, templates_count=3)
    with contextlib.closing(sqlite3.connect(path, isolation_level=None)) as con:
        row = con.execute("SELECT * FROM games WHERE game_id = 'scale-4'").fetchone()
        data = json.loads(row[-1])
        data["tc"]["seat1"] = "3+0"
        marks = ",".join("?" * len(row))
        con.execute(f"INSERT OR REPLACE INTO games VALUES ({marks})", (*row[:-1], json.dumps(data)))
        con.execute("UPDATE games SET record = '{' WHERE game_id = 'scale-5'")
        for _ in range(2):  # ... and a replaced row whose record is damaged
            row = con.execute("SELECT * FROM games WHERE game_id = 'scale-6'").fetchone()
            con.execute(f"INSERT OR REPLACE INTO games VALUES ({marks})", (*row[:-1], "[]"))
    with Store.open_read(path) as store:
        assert not store._kept
        assert [d.label for d in store.damage] == ["game_id 'scale-5'", "game_id 'scale-6'"]
        played = store.conditions_played()
        assert sum(n for *_, n in played) == 2 * 28
        assert any(p.tc == "3+0" for _, p, _ in played)
    with contextlib.closing(sqlite3.connect(path, isolation_level=None)) as con:
        con.execute("DELETE FROM games WHERE game_id IN ('scale-5', 'scale-6')")
    record = GameRecord.from_json(next(generated(1, engines=3)))
    with Store.open(path) as writer:
        writer.write(
            scale._Slot({**record.to_json(), "game_id": "more-1"}, 99),
            dataclasses_replace(record, game_id="more-1"),
        )
    with Store.open_read(path) as store:
        assert store._kept and not store.damage
        counted = sorted(store.conditions_played(), key=repr)
        store._kept = False
        assert counted == sorted(store.conditions_played(), key=repr)
    assert sum(n for *_, n in counted) == 2 * 29


def test_registering_an_engine_costs_the_same_however_many_are_stored(tmp_path: Path) -> None:
    """An arena registers each engine when it first plays: the work of adding one more
    does not follow the engines already stored (it read every stored definition, so a
    ramp of N engines cost N² on the server's event loop). Counted in SQLite's own
    steps, not in time."""
    from arbiter.results.store import EngineEntry, Store

    steps = {}
    count = [0]

    def step() -> int:
        count[0] += 1
        return 0

    for stored in (10, 2000):
        with Store.open(tmp_path / f"{stored}.sqlite") as store:
            conditions, definition = {"kind": "arena"}, {"arena": "a.toml"}
            entries = {f"e{i}": EngineEntry({"remote": True}, ()) for i in range(stored)}
            store.begin("a", conditions, definition, entries)
            count[0] = 0
            store.db.set_progress_handler(step, 100)
            store.begin("a", conditions, definition, {"new": EngineEntry({"remote": True}, ())})
            store.db.set_progress_handler(None, 0)
            steps[stored] = count[0]
            assert "new" in store.engine_definitions()
    assert steps[2000] < 2 * steps[10] + 10, steps


def test_the_arena_fits_its_standings_in_a_process_of_its_own(tmp_path: Path) -> None:
    """The arena's standings come from a child process (in a thread, the fit of a large
    field held the server's event loop): the same object as the fit in this process."""
    import trio

    from arbiter.arena.fit_process import standings_in_process, standings_json

    path = tmp_path / "s.sqlite"
    scale.write_store(path, 60, engines=4, templates_count=5, faults=0.1)
    anchors = {"engine-01": 1500.0}
    here = json.loads(json.dumps(standings_json(path, anchors)))
    child = trio.run(standings_in_process, path, anchors)
    assert child == here and child["games"] == 60
    assert {e["name"] for e in child["engines"]} == {f"engine-{i:02d}" for i in range(4)}


def test_the_fits_process_runs_at_a_lower_priority_than_the_server() -> None:
    """The fit's child lowers its own priority before it reads the store: on a machine
    with few cores its seconds of CPU would otherwise preempt the arena's loop. (The
    child's `main`, with the fit itself replaced by a report of its niceness.)"""
    from arbiter.arena.fit_process import FIT_NICENESS

    probe = (
        "import os, arbiter.arena.fit_process as fit;"
        " fit.standings_json = lambda store, anchors: {'nice': os.nice(0)};"
        " fit.main(['fit', 'store.sqlite', '{}'])"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True, timeout=60
    )
    assert json.loads(done.stdout) == {"nice": min(19, os.nice(0) + FIT_NICENESS)}
