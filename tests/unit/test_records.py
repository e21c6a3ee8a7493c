"""Game records: the JSON Lines format round-trips, and bad lines are located."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from arbiter.errors import ConfigError
from arbiter.results.records import Evidence, GameRecord, RecordWriter, Termination, read_records


def sample(**changes: object) -> GameRecord:
    record = GameRecord(
        game_id="m-1",
        variant={"size": 11, "islands": 8, "pie": True},
        seat1="a",
        seat2="b",
        tc={"seat1": "10+0.1", "seat2": "st=1"},
        started="2026-01-01T00:00:00.000Z",
        finished="2026-01-01T00:00:01.000Z",
        swapped=True,
        black="b",
        white="a",
        moves=["f5", "swap", "e5"],
        move_ms=[1.5, 2.0, 3.25],
        winner="a",
        winner_color="white",
        termination=Termination.TIME,
        reason="b: too slow",
        versions={"a": "1", "b": "2"},
        evidence=Evidence("b", "too slow", ["> 3 genmove b"], -9, "tail", "game"),
        seed=7,
    )
    return dataclasses.replace(record, **changes)  # type: ignore[arg-type]


def test_round_trip_through_a_file(tmp_path: Path) -> None:
    path = tmp_path / "r.jsonl"
    writer = RecordWriter(path)
    records = [sample(), sample(game_id="m-2", evidence=None, termination=Termination.RESIGN)]
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


BAD_FIELDS = [
    ("tc", "5+0.05"),
    ("move_ms", [None]),
    ("move_ms", ["x"]),
    ("move_ms", [1e999]),
    ("answers", ["a", "b"]),
    ("swapped", "no"),
    ("winner", 3),
    ("commands", {"seat1": "x"}),
    ("unknown_key", 1),
]


@pytest.mark.parametrize(("key", "value"), BAD_FIELDS, ids=[f"{k}={v!r}" for k, v in BAD_FIELDS])
def test_a_field_of_the_wrong_type_is_a_bad_line_not_a_crash(key: str, value: object) -> None:
    data = json.loads(json.dumps(sample().to_json()))
    data[key] = value
    with pytest.raises(ValueError, match=key):
        GameRecord.from_json(data)


@pytest.mark.parametrize(
    "variant", [{"size": 11, "islands": 8, "pie": "no"}, {"size": 11.0, "islands": 8, "pie": True}]
)
def test_a_variant_of_the_wrong_type_is_refused(variant: dict[str, object]) -> None:
    data = sample().to_json()
    data["variant"] = variant
    with pytest.raises(ValueError, match="variant"):
        GameRecord.from_json(data)


def test_bad_evidence_is_refused() -> None:
    data = sample().to_json()
    data["evidence"] = {"engine": "a", "detail": "d", "stderr_tail": 5}
    with pytest.raises(ValueError, match="stderr_tail"):
        GameRecord.from_json(data)


PROOF = {
    "owner": "white",
    "chain": [{"stones": ["e5"], "islands": [0]}, {"stones": [], "islands": [4]}],
    "links": [{"kind": "edge template II", "carrier": ["d5", "d6"]}],
}


def test_an_adjudicated_record_keeps_its_proof_through_json() -> None:
    evidence = Evidence("referee", "White has a proven connection", proof=PROOF)
    record = sample(termination=Termination.ADJUDICATED, evidence=evidence, reason="proven")
    data = json.loads(record.dumps())
    assert data["termination"] == "adjudicated" and data["evidence"]["proof"] == PROOF
    assert GameRecord.from_json(data) == record
    assert Termination.ADJUDICATED.rated and not Termination.ADJUDICATED.fault
    # Other evidence says nothing of a proof: older records read as before.
    assert "proof" not in sample().to_json()["evidence"]


@pytest.mark.parametrize(
    "proof",
    [
        None,
        {"owner": "red", "chain": [], "links": []},
        {**PROOF, "links": [{"kind": "bridge", "carrier": "d5"}]},
        {**PROOF, "chain": [{"stones": [1], "islands": []}]},
    ],
)
def test_an_adjudicated_record_without_a_sound_proof_is_refused(proof: object) -> None:
    data = sample(termination=Termination.ADJUDICATED).to_json()
    data["evidence"] = {"engine": "referee", "detail": "d", "proof": proof}
    with pytest.raises(ValueError, match="proof"):
        GameRecord.from_json(data)
