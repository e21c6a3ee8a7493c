"""Pair statistics: how correlated the two games of a seat-swapped pair are, and how many
games a pair SPRT saves against the binomial one at equal error rates.

1. The correlation: matches of two bundled bots through the real CLI (`arbiter match
   --records`), with and without random openings and the pie rule, on Atoll 11 and Hex
   11. For each condition: the share of pairs split, the correlation of the first engine's
   results in a pair's two games, and the design effect (the variance of a pair's score
   against that of two independent games at the same score: below 1, pairs carry more
   information than independent games).
2. The saving: simulated tests on pairs drawn with a given correlation (the measured
   ones, and a range), the pair GSPRT (arbiter.results.sprt) against the binomial SPRT on
   the same games, at the same alpha and beta: games to a decision and error rates, at
   the true difference elo0, elo1 and halfway.
3. Real matches: `arbiter match --sprt` with model=pairs and model=games, the games each
   took to decide.

All ratios come from this one run. Run: python bench/sprt_bench.py [--games N]
[--runs N] [--quick]
"""

from __future__ import annotations

import argparse
import json
import math
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from arbiter.results.elo import expected_score  # noqa: E402
from arbiter.results.records import read_records  # noqa: E402
from arbiter.results.sprt import PAIR_SCORES, Sprt  # noqa: E402


def arbiter(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "arbiter", *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
    )


def correlation(
    engines: tuple[str, str], games: int, islands: str, pie: bool, openings: int, tc: str
) -> dict[str, float]:
    """The first engine's results within pairs of a real match."""
    with tempfile.TemporaryDirectory() as folder:
        records = Path(folder) / "r.jsonl"
        done = arbiter(
            "match",
            *engines,
            "--games",
            str(games),
            "--islands",
            islands,
            "--size",
            "11",
            "--pie" if pie else "--no-pie",
            "--tc",
            tc,
            "--random-openings",
            str(openings),
            "--records",
            str(records),
            "-q",
            "-c",
            "2",
            "--seed",
            "1",
        )
        if done.returncode != 0:
            raise SystemExit(done.stderr)
        by_pair: dict[str, list[float]] = {}
        first = None
        for record in read_records(records):
            if record.void:
                continue
            first = first or record.seat1
            by_pair.setdefault(record.pair, []).append(float(record.winner == first))
    pairs = np.array([p for p in by_pair.values() if len(p) == 2])
    x1, x2 = pairs[:, 0], pairs[:, 1]
    score = float(pairs.mean())
    var_pair = float(pairs.mean(axis=1).var(ddof=1))
    independent = score * (1 - score) / 2
    rho = float(np.corrcoef(x1, x2)[0, 1]) if x1.std() and x2.std() else float("nan")
    return {
        "pairs": len(pairs),
        "score": score,
        "split": float((x1 != x2).mean()),
        "rho": rho,
        "design": var_pair / independent if independent else float("nan"),
    }


def pair_probabilities(elo: float, rho: float) -> np.ndarray:
    """[lost twice, split, won twice] for a mean score and a within-pair correlation."""
    s = expected_score(elo)
    cov = max(rho * s * (1 - s), -(min(s, 1 - s) ** 2))  # as negative as the score allows
    return np.array([(1 - s) ** 2 + cov, 2 * s * (1 - s) - 2 * cov, s * s + cov])


def llr_pairs(counts: np.ndarray, test: Sprt) -> np.ndarray:
    """The pair GSPRT's LLR for many count vectors at once (rows of [n0, n1/2, n1]),
    as arbiter.results.sprt.pair_llr computes it for one."""
    n = np.where(counts > 0, counts, 1e-3).astype(float)
    q = n / n.sum(axis=1, keepdims=True)
    x = np.asarray(PAIR_SCORES)
    out = np.zeros(len(counts))
    logs = []
    for elo in (test.elo0, test.elo1):
        d = x - expected_score(elo)
        low = np.full(len(counts), -1 / d.max())
        high = np.full(len(counts), -1 / d.min())
        lam = np.zeros(len(counts))
        for _ in range(60):
            ratio = d / (1 + lam[:, None] * d)
            slope = (q * ratio).sum(axis=1)
            low = np.where(slope > 0, lam, low)
            high = np.where(slope > 0, high, lam)
            step = lam + slope / (q * ratio * ratio).sum(axis=1)
            lam = np.where((step > low) & (step < high), step, (low + high) / 2)
        p = q / (1 + lam[:, None] * d)
        logs.append(np.log(p / p.sum(axis=1, keepdims=True)))
    out = (n * (logs[1] - logs[0])).sum(axis=1)
    return np.asarray(out)


def simulate(
    test: Sprt, elo: float, rho: float, runs: int, cap: int, rng: np.random.Generator
) -> dict[str, dict[str, float]]:
    """Both tests on the same simulated pairs: games to a decision and how often H1."""
    probs = pair_probabilities(elo, rho)
    draws = rng.choice(3, size=(runs, cap), p=probs)
    out = {}
    for model in ("pairs", "games"):
        games = np.zeros(runs)
        h1 = np.zeros(runs, dtype=bool)
        counts = np.zeros((runs, 3))
        alive = np.ones(runs, dtype=bool)
        p0, p1 = expected_score(test.elo0), expected_score(test.elo1)
        for t in range(cap):
            counts[np.arange(runs), draws[:, t]] += 1
            if model == "pairs":
                llr = llr_pairs(counts[alive], test)
            else:
                c = counts[alive]
                wins, losses = c[:, 1] + 2 * c[:, 2], c[:, 1] + 2 * c[:, 0]
                llr = wins * math.log(p1 / p0) + losses * math.log((1 - p1) / (1 - p0))
            index = np.flatnonzero(alive)
            up, down = llr >= test.upper, llr <= test.lower
            games[index[up | down]] = 2 * (t + 1)
            h1[index[up]] = True
            alive[index[up | down]] = False
            if not alive.any():
                break
        games[alive] = 2 * cap
        out[model] = {
            "games": float(games.mean()),
            "h1": float(h1.mean()),
            "undecided": float(alive.mean()),
        }
    return out


def real_tests(engines: tuple[str, str], test: str, reps: int) -> dict[str, list[int]]:
    taken: dict[str, list[int]] = {"pairs": [], "games": []}
    for rep in range(reps):
        for model in ("pairs", "games"):
            done = arbiter(
                "match",
                *engines,
                "--size",
                "11",
                "--tc",
                "2+0.02",
                "-c",
                "2",
                "--seed",
                str(rep + 1),
                "-q",
                "--json",
                "--sprt",
                f"{test},model={model}",
            )
            if done.returncode != 0:
                raise SystemExit(done.stderr)
            taken[model].append(json.loads(done.stdout)["games"])
    return taken


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--games", type=int, default=60, help="games per measured condition")
    parser.add_argument("--runs", type=int, default=400, help="simulated tests per case")
    parser.add_argument("--engines", default="mc-fast,heuristic")
    parser.add_argument("--real", type=int, default=2, help="real tests per model")
    parser.add_argument("--quick", action="store_true", help="tiny sizes, for a smoke test")
    args = parser.parse_args()
    if args.quick:
        args.games, args.runs, args.real = 4, 20, 0
        if args.engines == parser.get_default("engines"):
            args.engines = "random,random"  # instant players: the smoke test checks the run
    engines = tuple(args.engines.split(","))
    assert len(engines) == 2
    print(f"1. Pairs of {engines[0]} against {engines[1]}, {args.games} games each, tc 2+0.02")
    print(" board    pie  openings | pairs  score  split   rho  design effect")
    measured = []
    conditions = [
        (islands, board, pie, openings)
        for islands, board in (("8", "Atoll 11"), ("4", "Hex 11"))
        for pie in (True, False)
        for openings in (1, 0)
    ]
    for islands, board, pie, openings in conditions[:1] if args.quick else conditions:
        r = correlation(engines, args.games, islands, pie, openings, "2+0.02")
        measured.append(r["rho"])
        print(
            f" {board:8} {'on ' if pie else 'off'}  {openings:8} | {r['pairs']:5d}"
            f"  {r['score']:.2f}   {r['split']:.2f}  {r['rho']:+.2f}"
            f"  {r['design']:.2f}"
        )
    gap = 100.0 if args.quick else 20.0
    test = Sprt(0.0, gap)
    rng = np.random.default_rng(1)
    print(
        f"\n2. Simulated SPRT elo0=0 elo1={gap:.0f} alpha=beta=0.05, {args.runs} tests each:"
        " mean games to a decision (share accepting H1)"
    )
    print("   rho   true Elo |   pairs GSPRT        binomial SPRT    games saved")
    finite = [r for r in measured if math.isfinite(r)]
    mean = round(sum(finite) / len(finite), 2) if finite else 0.0
    print(f"   (rho {mean:+.2f} is the mean of the measured conditions)")
    rhos = [0.0] if args.quick else sorted({mean, 0.2, 0.0, -0.2, -0.4}, reverse=True)
    for rho in rhos:
        for elo in (0.0, gap / 2, gap):
            out = simulate(test, elo, rho, args.runs, 300 if args.quick else 4000, rng)
            p, g = out["pairs"], out["games"]
            saved = 1 - p["games"] / g["games"]
            print(
                f" {rho:+.2f}   {elo:5.0f}    | {p['games']:7.0f} ({p['h1']:.2f})"
                f"   {g['games']:7.0f} ({g['h1']:.2f})   {saved:+.0%}"
            )
    if args.real:
        print(
            f"\n3. Real matches, {engines[0]} vs {engines[1]}, --sprt elo0=0,elo1=100:"
            " games to a decision"
        )
        taken = real_tests(engines, "elo0=0,elo1=100", args.real)
        for model, games in taken.items():
            print(f"   {model:5}: {games}  mean {sum(games) / len(games):.0f}")


if __name__ == "__main__":
    main()
