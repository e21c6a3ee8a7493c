"""`arbiter check`'s results as a table for the terminal."""

from __future__ import annotations

from tabulate import tabulate

from arbiter.check.checker import CheckResult


def summary_table(results: list[CheckResult]) -> str:
    rows = [
        [
            "PASS" if r.passed else ("FAIL" if r.required else "WARN"),
            r.name if r.required else f"{r.name} (optional)",
            r.detail if r.passed else f"{r.detail}\nhint: {r.hint}" if r.hint else r.detail,
        ]
        for r in results
    ]
    failed = sum(1 for r in results if r.required and not r.passed)
    verdict = "all required checks passed" if not failed else f"{failed} required check(s) failed"
    return tabulate(rows, headers=["", "check", "detail"], tablefmt="simple") + f"\n\n{verdict}"
