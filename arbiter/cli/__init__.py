"""The `arbiter` command line: option parsing, one trio.run per command, exit codes.

One module per command group (`match`, `show`, `check`, `engines`, `new`, `tournament`,
`ratings` and `report`, `arena`); every option two commands share is declared once in
`options`, and `output` turns errors into one line and an exit status. A command parses
its options and calls the layer below (`runs/`, `results/`, `views/`, `arena/`), where
what it decides can be used by every front.

Exit status: 0 success, 1 a check or run that failed, 2 bad usage or configuration,
130 interrupted by Ctrl-C, 143 stopped by SIGTERM.
"""

from __future__ import annotations

import click

from .arena import arena
from .calibrate import calibrate
from .check import check
from .engines import engines_command
from .match import match
from .new import new
from .openings import openings
from .options import examples
from .output import ConfigExit, OneLineUsage, emit, handle_errors, say
from .ratings import ratings, report
from .show import show
from .tournament import tournament

__all__ = ["ConfigExit", "emit", "handle_errors", "main", "run", "say"]


@click.group(
    cls=OneLineUsage,
    context_settings={"help_option_names": ["-h", "--help"]},
    epilog=examples(
        "arbiter tournament run --example demo",
        "arbiter new bot my_bot.py && arbiter check 'python3 my_bot.py'",
    ),
)
@click.version_option(package_name="atoll-arbiter")
def main() -> None:
    """Atoll Arbiter: referee and tournament harness for Atoll and Hex engines."""


for command in (match, show, check, engines_command, new, tournament, ratings, report, arena):
    main.add_command(command)
main.add_command(openings)
main.add_command(calibrate)


def run() -> None:
    """The `arbiter` program: the command line, as the guardian of the engines it starts."""
    from arbiter.engines.reaper import guard, reap_orphans
    from arbiter.running import install_signal_handlers

    install_signal_handlers()
    guard()  # engines die with this process; what they leave behind is adopted and killed
    try:
        main()
    finally:
        reap_orphans()
