#!/usr/bin/env python3
"""SPSA on the bundled `mcts`, tuned back from a bad exploration constant, with the
confirming SPRT: how far the tune gets in a budget, and what it costs.

The bot plays with a fixed number of playouts (so the machine's load changes its speed,
never its games) on a small Hex board; its `--explore` starts at a value far above its
own default (0.05), where it loses nearly every game against the default. The tune file
is written into a scratch folder and run to the end with `arbiter tournament run`, the
tuned values then tested against the start values (`confirm`). Printed: the start and
final value, the trajectory by tenths, the confirming test's verdict and its pairs, the
games and the wall time.

Run: python bench/tune_bench.py [--games N] [--start X] [--playouts N] [--size N]
[--concurrency K] [--batch B] [--quick]. `--quick` is a smoke run of a few games.
Numbers go to stdout; compare runs made on the same machine only.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def tune_file(args: argparse.Namespace) -> str:
    command = json.dumps(
        [
            sys.executable,
            "-m",
            "arbiter.bots.mcts_bot",
            "--playouts",
            str(args.playouts),
            "--no-resign",
            "--explore",
            "{EXPLORE}",
        ]
    )
    return (
        f'[tournament]\nname = "tune-mcts"\nformat = "spsa"\ngames = {args.games}\n'
        f'islands = 4\nsize = {args.size}\ntc = "inf"\nseed = {args.seed}\n'
        f"concurrency = {args.concurrency}\n\n"
        f'[tune]\nengine = "mcts"\nbatch = {args.batch}\n'
        "confirm = { elo0 = 0, elo1 = 10 }\n\n"
        f"[tune.params.EXPLORE]\nmin = 0.0\nmax = 2.0\nstart = {args.start}\n"
        f"step = {args.step}\nrate = {args.rate}\n\n"
        f'[[engine]]\nname = "mcts"\ncommand = {command}\n'
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--games", type=int, default=200, help="the tune's budget")
    parser.add_argument("--start", type=float, default=1.5, help="the bad start")
    parser.add_argument("--step", type=float, default=0.2, help="c_end")
    parser.add_argument("--rate", type=float, default=0.1, help="r_end")
    parser.add_argument("--playouts", type=int, default=200)
    parser.add_argument("--size", type=int, default=7)
    parser.add_argument("--concurrency", type=int, default=2)
    parser.add_argument("--batch", type=int, default=2)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--quick", action="store_true", help="a smoke run: 8 games")
    args = parser.parse_args()
    if args.quick:
        args.games, args.playouts, args.size = 8, 20, 4
    with tempfile.TemporaryDirectory() as scratch:
        path = Path(scratch) / "tune.toml"
        path.write_text(tune_file(args), encoding="utf-8")
        began = time.monotonic()
        ran = subprocess.run(
            [sys.executable, "-m", "arbiter", "tournament", "run", str(path)],
            cwd=ROOT,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )
        if ran.returncode:
            sys.exit(f"the tune stopped (exit {ran.returncode}): {ran.stderr[-2000:]}")
        wall = time.monotonic() - began
        status = subprocess.run(
            [sys.executable, "-m", "arbiter", "tournament", "status", str(path), "--json"],
            cwd=ROOT,
            check=True,
            capture_output=True,
            text=True,
        )
    tune = json.loads(status.stdout)["tune"]
    path_values = tune["trajectory"]["EXPLORE"]
    tenths = [path_values[round(i * (len(path_values) - 1) / 10)] for i in range(11)]
    confirm = tune["confirm"] or {}
    verdict = confirm.get("verdict") or {}
    print(f"budget {tune['budget']} games, {tune['iterations']} iterations, batch {args.batch}")
    print(f"EXPLORE: start {args.start:g}, tuned {tune['params']['EXPLORE']:.4g}")
    print("trajectory by tenths: " + " ".join(f"{v:.3g}" for v in tenths))
    print(
        f"confirming SPRT (elo0 0, elo1 10): {confirm.get('state')}, pairs"
        f" {verdict.get('pairs')} (lost twice, split, won twice), LLR {verdict.get('llr')}"
    )
    print(f"games stored {tune['games']} (the tune's and the test's), wall {wall:.1f} s")


if __name__ == "__main__":
    main()
