"""Game records: the JSON Lines format round-trips, and bad lines are located."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from arbiter.errors import ConfigError
from arbiter.records import Evidence, GameRecord, RecordWriter, Termination, read_records


def sample(**changes: object) -> GameRecord:
    record = GameRecord(
        game_id="m-1", variant={"size": 11, "islands": 8, "pie": True}, seat1="a", seat2="b",
        tc={"seat1": "10+0.1", "seat2": "st=1"}, started="2026-01-01T00:00:00.000Z",
        finished="2026-01-01T00:00:01.000Z", swapped=True, black="b", white="a",
        moves=["f5", "swap", "e5"], move_ms=[1.5, 2.0, 3.25], winner="a", winner_color="white",
        termination=Termination.TIME, reason="b: too slow", versions={"a": "1", "b": "2"},
        evidence=Evidence("b", "too slow", ["> 3 genmove b"], -9, "tail", "game"), seed=7,
    )  # fmt: skip
    for key, value in changes.items():
        setattr(record, key, value)
    return record


def test_round_trip_through_a_file(tmp_path: Path) -> None:
    path = tmp_path / "r.jsonl"
    writer = RecordWriter(path)
    records = [sample(), sample(game_id="m-2", evidence=None, termination=Termination.CONNECTION)]
    for record in records:
        writer.write(record)
    writer.close()
    lines = path.read_text().splitlines()
    assert len(lines) == 2
    first = json.loads(lines[0])
    assert first["schema"] == 1 and first["plies"] == 3 and first["termination"] == "time"
    assert "evidence" not in json.loads(lines[1])
    assert list(read_records(path)) == records


def test_bad_lines_name_the_file_and_line(tmp_path: Path) -> None:
    path = tmp_path / "r.jsonl"
    path.write_text(sample().dumps() + "\n\n{not json\n")
    with pytest.raises(ConfigError, match=r"r\.jsonl:3: not a game record"):
        list(read_records(path))
    path.write_text(json.dumps({**sample().to_json(), "schema": 2}) + "\n")
    with pytest.raises(ConfigError, match="unsupported record schema 2"):
        list(read_records(path))
