"""`tournament status --by-host` on a store whose hosts disagree: each host's speed
factor and its chi-square residual against the other hosts, the deviant one flagged."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from commands import invoke

from arbiter.results.records import GameRecord, StoneColor, Termination
from arbiter.results.store import EngineEntry, Store


@dataclass(frozen=True)
class Slot:
    """A scheduled game as the store files it."""

    game_id: str
    number: int
    engines: tuple[str, str]
    round: int = 1
    pair_key: str = ""
    opening: tuple[str, ...] = ()


def write_hosts(path: Path, hosts: dict[str, tuple[int, int, float]]) -> None:
    """A match store of alpha against beta: per host (games, alpha's wins, speed),
    seats alternating, alpha's wins first."""
    with Store.open(path) as store:
        store.begin(
            "m",
            {"kind": "match"},
            {"name": "m", "games": sum(games for games, _, _ in hosts.values())},
            {n: EngineEntry({"command": n}, (n,)) for n in ("alpha", "beta")},
        )
        number = 0
        for host, (games, wins, speed) in hosts.items():
            for i in range(games):
                number += 1
                seats = ("alpha", "beta") if i % 2 == 0 else ("beta", "alpha")
                winner = "alpha" if i < wins else "beta"
                record = GameRecord(
                    game_id=f"g{number}",
                    variant={"size": 5, "islands": 4, "pie": False},
                    seat1=seats[0],
                    seat2=seats[1],
                    black=seats[0],
                    white=seats[1],
                    tc={"seat1": "10+0.1", "seat2": "10+0.1"},
                    started="2026-11-27T04:00:00.000Z",
                    termination=Termination.RESIGN,
                    winner=winner,
                    winner_color=StoneColor.BLACK if winner == seats[0] else StoneColor.WHITE,
                    host=host,
                    cpu="Test CPU",
                    speed=speed,
                )
                store.write(Slot(record.game_id, number, seats), record)


def test_status_by_host_flags_the_host_whose_results_differ(tmp_path: Path) -> None:
    path = tmp_path / "m.sqlite"
    # Two honest hosts near 50%, one where alpha wins 36 of 40.
    write_hosts(path, {"one": (40, 20, 1.2), "two": (40, 22, 1.25), "odd": (40, 36, 0.6)})
    done = invoke("tournament", "status", str(path), "--by-host", "--json", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    hosts = {h["host"]: h for h in json.loads(done.stdout)["hosts"]}
    assert {h: hosts[h]["speed"] for h in hosts} == {"one": 1.2, "two": 1.25, "odd": 0.6}
    flagged = {h for h in hosts if hosts[h]["deviation"]["flagged"]}
    assert flagged == {"odd"}, hosts
    assert all(hosts[h]["deviation"]["df"] == 1 for h in hosts)
    # odd: 36/40 against 42/80, pooled 78/120: z = 0.375 / sqrt(0.65 * 0.35 * 3 / 80).
    assert abs(hosts["odd"]["deviation"]["chi2"] - 0.375**2 / (0.65 * 0.35 * 3 / 80)) < 1e-3
    assert hosts["odd"]["deviation"]["p"] < 0.001 < hosts["one"]["deviation"]["p"]

    text = invoke("tournament", "status", str(path), "--by-host", cwd=tmp_path).stdout
    odd = next(line for line in text.splitlines() if "Host odd" in line)
    assert odd.startswith("FLAGGED Host odd (Test CPU): 40 games,"), odd
    assert "speed factor 0.6; chi-square 16.48 on 1 degree of freedom" in odd
    assert "its results differ from the others' (p < 0.001), check this host" in odd
    one = next(line for line in text.splitlines() if "Host one" in line)
    assert one.startswith("Host one") and "speed factor 1.2;" in one and "differ" not in one
