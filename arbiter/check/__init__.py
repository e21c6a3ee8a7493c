"""`arbiter check`: a conformance run for bot authors that finds what loses games.

It talks to the engine the way the referee does (its dialect, set-up batches, moves
written back to back, the clock update right before `genmove`), on every variant the
engine lists or declares, from deterministic positions (`--seed`), and checks every
answer against the referee's own board. One engine process serves the checks while they
pass; after a failure it is restarted, so one failure does not hide the next. Each
failure carries a hint that says what to change in the bot.

Modules, one job each: `checker` (one engine process, one position as the referee
plays it), `positions` (which variants and positions), `probes` (positions that show
misread cell names), `wins` (positions with one winning cell, and what a bot that
takes some wins but not others is likely to get wrong), `clocks` (every clock family
the engine accepts), `run` (the order of the checks), `report` (the table).
"""

from arbiter.check.checker import Checker, CheckFailed, CheckResult
from arbiter.check.report import summary_table
from arbiter.check.run import run_checks

__all__ = ["CheckFailed", "CheckResult", "Checker", "run_checks", "summary_table"]
