#!/usr/bin/env python3
"""What `adjudicate = "proven"` saves on a tournament: plies and wall time, with and
without it, in one run of this script.

The tournament file given (the demo by default) is copied twice into a scratch folder,
once as it is and once with `adjudicate = "proven"`, with `rounds` and `tc` replaced
when asked; each copy is run to the end with `arbiter tournament run`, one after the
other. Printed per copy: games, plies played, wall time; for the adjudicated copy, the
games a proof ended, the cells they left empty, and the links of their proofs by kind
(each proof counted under every kind it uses; a proof of one kind alone is counted
apart, which says what the cheaper levels would have ended by themselves), and the
proofs that needed a key move of the side to move. Each run prints its own ratings.

Run: python bench/adjudication_bench.py [--file tournaments/demo.toml] [--rounds N]
[--tc TC]. Numbers go to stdout; compare runs made on the same machine only.
"""

from __future__ import annotations

import argparse
import json
import re
import sqlite3
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

from arbiter.results.score import empty_cells
from arbiter.rules import Variant

ROOT = Path(__file__).resolve().parents[1]


def variant_file(source: str, adjudicate: bool, rounds: int | None, tc: str | None) -> str:
    text = source
    if rounds is not None:
        text = re.sub(r"(?m)^rounds\s*=\s*\d+", f"rounds = {rounds}", text)
    if tc is not None:
        text = re.sub(r'(?m)^tc\s*=\s*"[^"]*"', f'tc = "{tc}"', text)
    text = re.sub(r'(?m)^output\s*=\s*"[^"]*"', 'output = "t.sqlite"', text)
    if adjudicate:
        text = text.replace("[tournament]\n", '[tournament]\nadjudicate = "proven"\n', 1)
    return text


def run(folder: Path, text: str) -> tuple[float, list[dict[str, object]]]:
    folder.mkdir()
    (folder / "t.toml").write_text(text, encoding="utf-8")
    start = time.perf_counter()
    subprocess.run(
        [sys.executable, "-m", "arbiter", "tournament", "run", "t.toml", "-q"],
        cwd=folder,
        check=True,
        stdin=subprocess.DEVNULL,
    )
    wall = time.perf_counter() - start
    with sqlite3.connect(folder / "t.sqlite") as db:
        records = [json.loads(r) for (r,) in db.execute("SELECT record FROM games")]
    return wall, records


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--file", default=str(ROOT / "tournaments" / "demo.toml"))
    parser.add_argument("--rounds", type=int, default=None)
    parser.add_argument("--tc", default=None)
    args = parser.parse_args()
    source = Path(args.file).read_text(encoding="utf-8")
    with tempfile.TemporaryDirectory() as scratch:
        results = {}
        for adjudicate in (False, True):
            text = variant_file(source, adjudicate, args.rounds, args.tc)
            label = "proven" if adjudicate else "off"
            results[label] = run(Path(scratch) / label, text)
    for label, (wall, records) in results.items():
        plies = sum(len(r["moves"]) for r in records)  # type: ignore[arg-type]
        print(f"adjudicate {label}: {len(records)} games, {plies} plies, {wall:.1f} s")
    off_wall, off_records = results["off"]
    on_wall, on_records = results["proven"]
    off_plies = sum(len(r["moves"]) for r in off_records)  # type: ignore[arg-type]
    on_plies = sum(len(r["moves"]) for r in on_records)  # type: ignore[arg-type]
    print(f"plies: {100 * (1 - on_plies / off_plies):.1f}% fewer with adjudication")
    print(f"wall time: {100 * (1 - on_wall / off_wall):.1f}% less with adjudication")
    ended = [r for r in on_records if r["termination"] == "adjudicated"]
    empty = 0
    kinds: Counter[str] = Counter()
    alone: Counter[str] = Counter()
    keyed = 0
    for r in ended:
        proof = r["evidence"]["proof"]  # type: ignore[index]
        keyed += "key" in proof
        used = {link["kind"] for link in proof["links"]}
        kinds.update(used)
        if len(used) == 1:
            alone.update(used)
        v = r["variant"]
        cells = Variant(v["islands"], v["size"]).geometry.n_cells  # type: ignore[index]
        empty += empty_cells(cells, r["moves"])  # type: ignore[arg-type]
    print(f"adjudicated: {len(ended)} of {len(on_records)} games, {empty} cells left empty")
    for kind, n in kinds.most_common():
        print(f"  {kind}: in {n} proofs, the only kind in {alone[kind]}")
    print(f"  a key move of the side to move first: {keyed} proofs")


if __name__ == "__main__":
    main()
