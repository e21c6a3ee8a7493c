"""Reading a definition file whole: a bounded text file, then TOML."""

from __future__ import annotations

import os
import stat
import tomllib
from pathlib import Path
from typing import Any

from arbiter.errors import ConfigError

MAX_TEXT_FILE = 16 << 20  # a definition or openings file larger than this is a mistake


def read_small(file: Path, what: str) -> str:
    """A text file that is read whole, refused when it is a device or too large: a
    definition named /dev/zero must be one line, not the machine's memory."""
    info = os.stat(file)
    if not stat.S_ISREG(info.st_mode) or info.st_size > MAX_TEXT_FILE:
        kind = (
            "not a regular file"
            if not stat.S_ISREG(info.st_mode)
            else f"{info.st_size} bytes, more than {MAX_TEXT_FILE >> 20} MB"
        )
        raise ConfigError(
            f"cannot read {what}: {kind}", where=str(file), hint=f"give the path of the {what}"
        )
    with open(file, encoding="utf-8") as handle:
        return handle.read(MAX_TEXT_FILE + 1)


def read_toml(file: Path, what: str, hint: str) -> dict[str, Any]:
    """A TOML file as a dict; unreadable or malformed files are a ConfigError naming it."""
    try:
        return tomllib.loads(read_small(file, what))
    except OSError as exc:
        raise ConfigError(
            f"cannot read {what}: {exc.strerror}", where=str(file), hint=hint
        ) from exc
    except UnicodeDecodeError as exc:
        raise ConfigError(f"{what} is not UTF-8 text", where=str(file)) from exc
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(
            f"not valid TOML: {exc}",
            where=str(file),
            hint="fix the syntax at the line and column given",
        ) from exc
