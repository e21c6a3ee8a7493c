"""`arbiter calibrate`: this host's speed factor from a fixed reference workload."""

from __future__ import annotations

import json

import click

from . import options
from .options import examples
from .output import handle_errors, say


@click.command(epilog=examples("arbiter calibrate", "arbiter calibrate --moves 16 --json"))
@click.option(
    "--moves",
    type=click.IntRange(1, 100),
    default=8,
    show_default=True,
    help="Moves of the reference workload (more: steadier, slower).",
)
@options.as_json(help="Print the measurement as one JSON object.")
@handle_errors
def calibrate(moves: int, as_json: bool) -> None:
    """Measure this host's speed: the bundled Monte Carlo bot at fixed playouts, and pipe
    round trips. A factor of 1.0 is the reference core; 0.5 is half as fast. The
    measurement replaces the one runs record for this host (kept in the user's cache)."""
    import trio

    from arbiter.engines.calibration import CACHE_FILE, cache_folder, remember
    from arbiter.engines.calibration import calibrate as measure
    from arbiter.executors.jobs import machine

    result = trio.run(measure, moves)
    remember(result, machine())
    say(json.dumps(result.as_dict()) if as_json else result.line())
    if not as_json:
        say(f"Kept as this host's factor in {cache_folder() / CACHE_FILE}", err=True)
