"""`arbiter check`: does an engine play by the protocol, the way matches run it."""

from __future__ import annotations

import functools
import json
import sys

import click

from arbiter.engines.config import resolve_engine
from arbiter.running import run_trio

from . import options
from .options import FiniteFloat, examples
from .output import emit, handle_errors, say


@click.command(
    "check",
    epilog=examples(
        "arbiter check heuristic",
        "arbiter check --sandbox 'mine=python3 my_bot.py' --json",
    ),
)
@click.argument("engine")
@options.engines_file()
@options.as_json(help="Print the results as JSON.")
@click.option(
    "--timeout",
    type=FiniteFloat(0, 3600, min_open=True),
    default=None,
    help="Seconds allowed for each answer, the start-up handshake included.  [default: as"
    " the referee allows: 10, and 30 for the handshake]",
)
@options.seed(
    default=1,
    show_default=True,
    help="Chooses the test positions (the same seed, the same positions).",
)
@options.sandbox(help="Check it under bubblewrap, as a sandboxed tournament runs it.")
@options.transcripts(
    callback=None,
    help="Write each position's exchange with the engine to a file of its own in this"
    " folder (made if missing); -v shows them on stderr.",
)
@options.log_options
@handle_errors
def check(
    engine: str,
    engines_file: str | None,
    as_json: bool,
    timeout: float | None,
    seed: int,
    sandbox: bool,
    transcripts_dir: str | None,
) -> None:
    """Check that an engine plays by the protocol, the way matches will run it.

    Every variant it lists or declares, its engine definition's keys honoured (options,
    islands, sizes, swap, time); for bot authors.
    """
    from arbiter.check import run_checks, summary_table
    from arbiter.runs.match_plan import confined

    spec = confined(
        resolve_engine(engine, options.known_engines(engines_file)),
        sandbox,
        (),
        f"engine {engine!r}",
    )
    folder = None if transcripts_dir is None else options.transcript_folder(transcripts_dir).path
    show = click.get_current_context().params.get("verbose", 0) > 0
    results = run_trio(
        functools.partial(
            run_checks, spec, timeout=timeout, seed=seed, transcripts=folder, show=show
        )
    )
    if as_json:
        emit(json.dumps([r.to_json() for r in results], indent=2))
    else:
        say(summary_table(results))
    if not all(r.passed for r in results if r.required):
        sys.exit(1)
