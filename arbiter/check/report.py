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
        if not r.note
    ]
    failed = sum(1 for r in results if r.required and not r.passed)
    verdict = "all required checks passed" if not failed else f"{failed} required check(s) failed"
    notes = "".join(f"\nnot checked: {r.detail}" for r in results if r.note)
    table = tabulate(rows, headers=["", "check", "detail"], tablefmt="simple")
    return f"{table}\n{notes}\n\n{verdict}" if notes else f"{table}\n\n{verdict}"
