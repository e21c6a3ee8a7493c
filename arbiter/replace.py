"""A small file written whole or not at all.

Files the harness keeps for itself (the arena's players file, this host's speed factor)
are read while they are written: by a running server, by another run on the same host. A
reader must see the old text or the new, never half of either, and a failure must leave
no stray file beside it.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from pathlib import Path


def replace_whole(path: Path, text: str) -> None:
    """Write `text` to a new file beside `path`, flushed to the disk, then rename it over
    `path` (a rename within a folder is atomic); on any failure the new file is removed
    and `path` is as it was."""
    fd, temporary = tempfile.mkstemp(dir=path.parent, prefix=path.name, suffix=".new")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            out.write(text)
            out.flush()
            os.fsync(out.fileno())
        os.replace(temporary, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        raise
