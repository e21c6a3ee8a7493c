"""The kept speed factor: read for this host only, and an unusable entry is no entry."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from arbiter.engines import calibration
from arbiter.engines.calibration import HostSpeed, cached, host_key, this_host

HERE = ("node-1", "Test CPU")


def keep(folder: Path, entries: dict[str, object]) -> None:
    (folder / "atoll-arbiter").mkdir(parents=True, exist_ok=True)
    (folder / "atoll-arbiter" / "speed.json").write_text(json.dumps(entries))


def test_the_cache_is_read_by_host_and_an_unusable_entry_is_none(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert cached(HERE) is None  # no file
    keep(tmp_path, {host_key(HERE): {"factor": 0.8, "cpu_factor": 1.3}})
    assert cached(HERE) == HostSpeed(0.8, 1.3)
    assert cached(("node-2", "Test CPU")) is None  # another host's
    assert cached(HERE).under(cpu_clock=True) == 1.3  # type: ignore[union-attr]
    for bad in (0, -1, "fast", None, float("inf")):
        keep(tmp_path, {host_key(HERE): {"factor": bad, "cpu_factor": 1.3}})
        assert cached(HERE) is None, bad
    (tmp_path / "atoll-arbiter" / "speed.json").write_text("{not json")
    assert cached(HERE) is None


def test_a_run_told_not_to_measures_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    monkeypatch.setenv("ARBITER_CALIBRATE", "0")
    keep(tmp_path, {host_key(HERE): {"factor": 0.8, "cpu_factor": 1.3}})
    assert this_host(HERE) is None
    monkeypatch.setenv("ARBITER_CALIBRATE", "1")
    monkeypatch.setattr(calibration, "_known", None)
    assert this_host(HERE) == HostSpeed(0.8, 1.3)  # kept: nothing measured
