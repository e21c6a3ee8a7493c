"""The arena's standings fit, in a process of its own.

The joint fit grows with the field: at a thousand engines and more it takes seconds of
CPU at each refresh, much of it in Python, which in a thread of the server holds the
interpreter's lock and slows every game the server's event loop relays (a 2,000-engine
arena spent 40% of its samples in the fit's thread). In a process of its own the fit
takes another core where the machine has one, and the loop none of its time. The
child is this module run with `python -m`, which prints `standings_json` as one line of
JSON; its linear algebra runs on one thread, so that it never takes every core from
the games, and at a lower priority (`FIT_NICENESS`), so that on a machine with few
cores it takes what CPU the games leave.
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import trio

from arbiter.errors import ArbiterError

if TYPE_CHECKING:
    from arbiter.results.standings import Games, Standings

# Thread pools of the linear-algebra libraries numpy may be built with: one thread each.
_ONE_THREAD = ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS")


def arena_standings(
    store_path: Path, anchors: Mapping[str, float], keep: Games | None = None
) -> Standings | None:
    """The joint fit over the arena's store, the anchors that have games held at their
    ratings (None: no rated game yet). Read-only, so it runs beside the server."""
    from arbiter.results.ratings import DEFAULT_PRIOR
    from arbiter.results.standings import gather, standings

    tally, _, _ = gather([str(store_path)], keep)
    if not tally.games:
        return None
    pinned = {n: e for n, e in anchors.items() if n in tally.names}
    return standings(tally, prior=DEFAULT_PRIOR, anchors=pinned or None)


def standings_json(store_path: Path, anchors: Mapping[str, float]) -> dict[str, Any]:
    """The object `arbiter ratings --json` prints, for the arena's store (what this
    module's child process prints)."""
    from arbiter.views.standings_text import to_json

    board = arena_standings(store_path, anchors)
    return {"engines": [], "games": 0} if board is None else to_json(board)


async def standings_in_process(store: Path, anchors: Mapping[str, float]) -> dict[str, Any]:
    """`standings_json(store, anchors)`, computed in a child process; cancelling the
    wait stops the child (trio kills it)."""
    env = dict(os.environ)
    for name in _ONE_THREAD:
        env.setdefault(name, "1")
    done = await trio.run_process(
        [sys.executable, "-m", __name__, str(store), json.dumps(dict(anchors))],
        capture_stdout=True,
        capture_stderr=True,
        check=False,
        env=env,
    )
    if done.returncode != 0:
        tail = done.stderr.decode("utf-8", "replace").strip().splitlines()[-1:]
        raise ArbiterError(
            f"the standings fit's process exited with status {done.returncode}"
            f" ({tail[0][:300] if tail else 'no output'})"
        )
    data: dict[str, Any] = json.loads(done.stdout)
    return data


FIT_NICENESS = 10  # added to the child's: the fit takes what CPU the games leave


def lower_priority() -> None:
    """The fit is background work: on a machine with few cores its seconds of CPU would
    otherwise preempt the server's loop and the engines, and every move in flight would
    wait. At a lower priority it runs on what they leave (where the system allows)."""
    with contextlib.suppress(AttributeError, OSError):  # not POSIX, or not permitted
        os.nice(FIT_NICENESS)


def main(argv: list[str]) -> None:
    lower_priority()
    store, anchors = Path(argv[1]), json.loads(argv[2])
    sys.stdout.write(json.dumps(standings_json(store, anchors)) + "\n")


if __name__ == "__main__":
    main(sys.argv)
