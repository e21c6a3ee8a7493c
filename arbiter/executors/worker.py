"""`python -m arbiter.executors.worker`: a worker process, driven over its stdin and stdout."""

import contextlib

from arbiter.executors.pool import worker_main
from arbiter.running import run_trio

if __name__ == "__main__":
    # On Ctrl-C the parent reports the interruption; engines are shut down on the way out.
    with contextlib.suppress(KeyboardInterrupt):
        run_trio(worker_main)
