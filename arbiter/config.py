"""Engine definitions from TOML files and engine arguments from the command line.

An engines file names engines so that commands stay short:

    [engines.mc]
    command = ["{python}", "mc_bot.py", "--playouts", "1024"]
    # cwd defaults to this file's folder; {python} is the interpreter running arbiter
    name = "mc-1k"          # display name; defaults to the table key
    env = { OMP_NUM_THREADS = "1" }
"""

from __future__ import annotations

import os
import shlex
import shutil
import sys
import tomllib
from pathlib import Path
from typing import Any

from arbiter.errors import ConfigError
from arbiter.process import EngineSpec

_ENGINE_KEYS = {"command", "cwd", "name", "env"}


def _expand(word: str, here: Path) -> str:
    return word.replace("{python}", sys.executable).replace("{here}", str(here))


def load_engines(path: str | os.PathLike[str]) -> dict[str, EngineSpec]:
    """Read an engines file; every problem names the file and the key."""
    file = Path(path)
    try:
        data = tomllib.loads(file.read_text(encoding="utf-8"))
    except OSError as exc:
        raise ConfigError(
            f"cannot read engines file: {exc.strerror}", where=str(file),
            hint="check the path given with --engines",
        ) from exc  # fmt: skip
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"not valid TOML: {exc}", where=str(file)) from exc
    engines = data.get("engines")
    if not isinstance(engines, dict) or not engines:
        raise ConfigError(
            "no [engines.NAME] tables", where=str(file),
            hint='define engines like [engines.mc] with command = ["{python}", "mc_bot.py"]',
        )  # fmt: skip
    here = file.resolve().parent
    return {key: _engine(file, here, key, table) for key, table in engines.items()}


def _engine(file: Path, here: Path, key: str, table: Any) -> EngineSpec:
    where = f"{file}: engines.{key}"
    if not isinstance(table, dict):
        raise ConfigError("must be a table", where=where)
    unknown = set(table) - _ENGINE_KEYS
    if unknown:
        raise ConfigError(
            f"unknown key(s) {', '.join(sorted(unknown))}", where=where,
            hint=f"allowed keys: {', '.join(sorted(_ENGINE_KEYS))}",
        )  # fmt: skip
    command = table.get("command")
    if isinstance(command, str):
        argv = shlex.split(command)
    elif isinstance(command, list) and all(isinstance(w, str) for w in command):
        argv = list(command)
    else:
        raise ConfigError(
            "command is missing or not a string or list of strings", where=where,
            hint='e.g. command = ["{python}", "my_bot.py"]',
        )  # fmt: skip
    if not argv:
        raise ConfigError("command is empty", where=where)
    cwd_value = table.get("cwd", ".")
    if not isinstance(cwd_value, str):
        raise ConfigError("cwd must be a string", where=where)
    cwd = (here / _expand(cwd_value, here)).resolve()
    if not cwd.is_dir():
        raise ConfigError(f"cwd {str(cwd)!r} is not a folder", where=where)
    env = table.get("env", {})
    if not isinstance(env, dict) or not all(isinstance(v, str) for v in env.values()):
        raise ConfigError("env must be a table of strings", where=where)
    name = table.get("name", key)
    if not isinstance(name, str) or not name.strip():
        raise ConfigError("name must be a non-empty string", where=where)
    spec = EngineSpec(
        argv=tuple(_expand(w, here) for w in argv), name=name, cwd=str(cwd), env=env or None
    )
    check_executable(spec, where)
    return spec


def check_executable(spec: EngineSpec, where: str) -> None:
    """Fail early, as a usage error, when the engine's program does not exist."""
    program = spec.argv[0]
    if os.sep in program or (os.altsep and os.altsep in program):
        path = Path(spec.cwd or ".") / program
        if not path.exists():
            raise ConfigError(
                f"engine program {program!r} does not exist"
                + (f" (looked in {spec.cwd})" if spec.cwd else ""),
                where=where,
                hint="fix the path, or put the interpreter first, e.g. 'python3 bot.py'",
            )
        if not os.access(path, os.X_OK):
            raise ConfigError(
                f"engine program {program!r} is not executable", where=where,
                hint=f"run 'chmod +x {program}' or put the interpreter first",
            )  # fmt: skip
    elif shutil.which(program) is None:
        raise ConfigError(
            f"engine program {program!r} is not on PATH", where=where,
            hint="give a path to it, or install it",
        )  # fmt: skip


def resolve_engine(
    text: str, engines: dict[str, EngineSpec], engines_file: str | None
) -> EngineSpec:
    """An ENGINE argument: a name from the engines file, or a command line."""
    if text in engines:
        return engines[text]
    try:
        argv = shlex.split(text)
    except ValueError as exc:
        raise ConfigError(f"cannot split engine command {text!r}: {exc}") from exc
    if not argv:
        raise ConfigError("empty engine command", hint="give a command line or an engine name")
    if len(argv) == 1 and os.sep not in text and shutil.which(text) is None:
        known = ", ".join(sorted(engines)) if engines else "none: no --engines file given"
        raise ConfigError(
            f"unknown engine {text!r}",
            hint=f"known engine names: {known}; or give a command line such as"
            " 'python3 my_bot.py'",
        )
    spec = EngineSpec(argv=tuple(argv))
    check_executable(spec, f"engine {text!r}")
    return spec
