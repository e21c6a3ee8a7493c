"""`arbiter openings swapmap` on a real store and records file: text, JSON and the SVG."""

from __future__ import annotations

import json
import random
import re
from pathlib import Path

from commands import invoke

from arbiter.results.records import GameRecord, RecordWriter, StoneColor, Termination
from arbiter.results.store import Store
from arbiter.rules import SWAP, Game, Variant
from arbiter.runs.schedule import ScheduledGame

BOARD = Variant(4, 5)
DECIDERS = {"swapper": lambda cell: True, "keeper": lambda cell: False}


def _games(
    count: int, seed: int, names: tuple[str, str] = ("keeper", "swapper")
) -> list[GameRecord]:
    """Random games on Hex 5, seat 2 deciding at move 2 by its planted rule (the first
    of `names` keeps, the second swaps)."""
    rng = random.Random(seed)
    out = []
    for number in range(count):
        decider = names[number % 2]
        game = Game(BOARD)
        game.play(rng.choice(game.legal_cells()))
        first = game.move_name(game.moves[0])
        if DECIDERS["swapper" if number % 2 else "keeper"](first):
            game.play(SWAP)
        while not game.over:
            game.play(rng.choice(game.legal_cells()))
        seats = ("opener", decider)
        black = seats[1] if game.swapped else seats[0]
        winner_black = game.winner is not None and game.winner.name == "BLACK"
        winner = black if winner_black else (seats[0] if game.swapped else seats[1])
        out.append(
            GameRecord(
                game_id=f"g-{seed}-{number}",
                variant={"size": BOARD.size, "islands": BOARD.islands, "pie": True},
                seat1=seats[0],
                seat2=seats[1],
                tc={"seat1": "10", "seat2": "10"},
                started=f"2026-01-01T00:00:{number % 60:02d}.000Z",
                termination=Termination.CONNECTION,
                swapped=game.swapped,
                black=black,
                white=seats[0] if game.swapped else seats[1],
                moves=[game.move_name(m) for m in game.moves],
                move_ms=[0.0] * len(game.moves),
                opening=1,
                winner=winner,
                winner_color=StoneColor.BLACK if winner_black else StoneColor.WHITE,
            )
        )
    return out


def _store(path: Path, records: list[GameRecord]) -> None:
    with Store.open(path) as store:
        store.begin("pie", {"format": "round-robin"}, {"name": "pie"}, {})
        for n, record in enumerate(records, 1):
            store.write(
                ScheduledGame(n, record.game_id, (record.seat1, record.seat2), 1, ""), record
            )


def test_swapmap_of_a_store_and_a_records_file(tmp_path: Path) -> None:
    stored = _games(60, 1)
    filed = _games(30, 2)
    store = tmp_path / "pie.sqlite"
    _store(store, stored)
    records = tmp_path / "more.jsonl"
    writer = RecordWriter(records)
    for record in [*filed, stored[0]]:  # one game in both: counted once
        writer.write(record)
    writer.close()
    before = store.read_bytes()

    as_json = invoke("openings", "swapmap", str(store), str(records), "--json")
    assert as_json.returncode == 0, as_json.stderr
    assert "1 games appeared in more than one source" in as_json.stderr
    data = json.loads(as_json.stdout)
    (board,) = data["maps"]
    games = stored + filed
    assert board["variant"] == "hex/5" and board["games"] == len(games)
    assert sum(c["owner_wins"] for c in board["cells"]) == sum(
        r.winner_color is StoneColor.BLACK for r in games
    )
    by_cell = {name: c for c in board["cells"] for name in c["cells"]}
    for record in games:  # every first stone is in the map, with its turn
        assert record.moves[0] in by_cell
    assert {"a1", "e5"} <= set(by_cell["a1"]["cells"])
    regret = {r["engine"]: r for r in data["regret"]}
    assert set(regret) == {"swapper", "keeper"}
    assert regret["swapper"]["decisions"] == 45 and regret["keeper"]["decisions"] == 45
    for r in regret.values():
        assert 0 <= r["low"] <= r["regret"] <= r["high"]

    svg = tmp_path / "map.svg"
    text = invoke("openings", "swapmap", str(store), str(records), "--svg", str(svg))
    assert text.returncode == 0, text.stderr
    assert "hex/5: 90 games, first stones pooled with their 180-degree turn" in text.stdout
    assert re.search(r"^swapper +45 +\d+ +\d\.\d{3}", text.stdout, re.M)
    assert re.search(r"^a1 e5 +\d+ +\d+\.\d%", text.stdout, re.M)
    drawn = svg.read_text()
    assert drawn.startswith("<?xml") and drawn.count('class="cell ') == BOARD.geometry.n_cells
    assert store.read_bytes() == before  # a reading command changes nothing it reads


def test_swapmap_refusals_are_one_line(tmp_path: Path) -> None:
    store = tmp_path / "pie.sqlite"
    _store(store, _games(4, 3))
    wrong = invoke("openings", "swapmap", str(store), "--variant", "hex/11")
    assert wrong.returncode == 2
    assert "no games on hex/11" in wrong.stderr and "hex/5" in wrong.stderr
    assert len(wrong.stderr.strip().splitlines()) == 1
    empty = tmp_path / "none.jsonl"
    empty.write_text("")
    nothing = invoke("openings", "swapmap", str(empty))
    assert nothing.returncode == 2 and "no game under the pie rule" in nothing.stderr


def test_balanced_writes_an_openings_file_a_tournament_accepts(tmp_path: Path) -> None:
    from arbiter.runs.tournament import load_tournament

    store = tmp_path / "pie.jsonl"  # a records file: 300 games written in one go
    writer = RecordWriter(store)
    for record in _games(300, 4):
        writer.write(record)
    writer.close()
    suite = tmp_path / "even.txt"
    wrote = invoke("openings", "balanced", str(store), "--band", "0.2..0.8", "-o", str(suite))
    assert wrote.returncode == 0, wrote.stderr
    data = json.loads(invoke("openings", "swapmap", str(store), "--json").stdout)
    fits = [c for c in data["maps"][0]["cells"] if c["low"] >= 0.2 and c["high"] <= 0.8]
    assert 0 < len(fits) < len(data["maps"][0]["cells"])  # a real choice
    stones = [line.split("#")[0].strip() for line in suite.read_text().splitlines()]
    stones = [s for s in stones if s]
    assert stones == [name for c in fits for name in c["cells"]]
    league = tmp_path / "league.toml"
    league.write_text(
        '[tournament]\nname = "even"\nsize = 5\nislands = 4\npie = true\n'
        'openings = "even.txt"\nengines = ["random", "mc"]\n'
    )
    t = load_tournament(str(league), engines_here=False)
    assert [" ".join(line) for line in t.openings.lines] == stones

    too_narrow = invoke("openings", "balanced", str(store), "-o", str(tmp_path / "x.txt"))
    assert too_narrow.returncode == 2
    assert "no first stone's 95% interval on hex/5 lies within 45% to 55%" in too_narrow.stderr
    assert "only from about 385 games" in too_narrow.stderr
    assert len(too_narrow.stderr.strip().splitlines()) == 1
    assert not (tmp_path / "x.txt").exists()
    bad = invoke("openings", "balanced", str(store), "--band", "0.6..0.4", "-o", str(suite))
    assert bad.returncode == 2 and "--band" in bad.stderr
    over = invoke("openings", "balanced", str(store), "-o", str(store))
    assert over.returncode == 2 and "overwrite one of its sources" in over.stderr


def test_bad_lines_and_hostile_names(tmp_path: Path) -> None:
    records = tmp_path / "games.jsonl"
    hostile = "evil\x1b[2J\u202e"
    games = _games(6, 5, names=("keeper", hostile))
    writer = RecordWriter(records)
    for record in games:
        writer.write(record)
    writer.close()
    with records.open("a") as handle:
        handle.write("not a record\n")
    read = invoke("openings", "swapmap", str(records))
    assert read.returncode == 0, read.stderr
    assert f"skipped {records}:7" in read.stderr
    assert "\x1b" not in read.stdout and "\u202e" not in read.stdout
    assert "evil\\x1b[2J\\u202e" in read.stdout
    strict = invoke("openings", "swapmap", str(records), "--strict")
    assert strict.returncode == 2 and f"{records}:7" in strict.stderr
