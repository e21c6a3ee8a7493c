"""The docs' code blocks as tests: every shell block is run, every complete file is loaded.

A page's fenced blocks are read with the HTML comments just above them (blank lines may
stand between), which say what the block is; a comment renders as nothing on the site:

- a shell block (```` ```sh ````, ```` ```bash ````, ```` ```console ````) is run, unless
  `<!-- not-run: REASON -->` stands above it (the reason is required). `<!-- slow: REASON -->`
  runs it only in the slow tests. `<!-- setup: COMMAND -->` runs COMMAND first, unseen on
  the page (a file the block's commands expect, say); several may stand above one block.
- a `sh` or `bash` block is run as one bash script that stops at the first failing
  command. A `console` block is a session: each `$ COMMAND` line runs, and the lines after
  it up to the next `$` line are its expected output (stdout and stderr together); `...`
  in them stands for any text (a token, a timing, a rating), and two spaces then `# `
  start a note for the reader that is not compared. A command shown without output only
  has to succeed.
- a `toml` block is a complete file where `<!-- file: NAME -->` stands above it: it is
  loaded by the loader of its kind (`[tournament]`, `[arena]` or `[engines.*]`), and
  written as NAME into the folder of every later block of its page (a `setup` above it runs
  before it is loaded). Any other `toml` block must say `<!-- fragment: REASON -->` and is
  only parsed as TOML. A `file` above a block of another kind (an openings file) only
  writes it.

Each block runs in a scratch folder of its own holding copies of the repository's
`tournaments/` and `protocol/` folders and the page's earlier file blocks, with HOME inside
it (so a block that edits `~/.bashrc` edits the scratch one) and `arbiter` taken from this
checkout.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

from paths import ROOT

SHELLS = frozenset({"sh", "bash", "console"})
DIRECTIVES = frozenset({"not-run", "slow", "setup", "file", "fragment"})
COPIED = ("tournaments", "protocol")  # the repository folders the docs' commands name


def pages() -> list[Path]:
    """The Markdown whose blocks are checked: the README, the docs and the protocol."""
    found = [ROOT / "README.md", ROOT / "protocol" / "PROTOCOL.md"]
    return found + sorted((ROOT / "docs").rglob("*.md"))


class DocError(AssertionError):
    """A doc block that is broken or badly marked; the message names its file and line."""


@dataclass(frozen=True)
class Block:
    """One fenced block of a page and the directives above it."""

    path: Path
    line: int  # of the opening fence, counted from 1
    lang: str
    text: str
    directives: tuple[tuple[str, str], ...] = ()
    files: tuple[tuple[str, str], ...] = field(default=())  # the page's earlier file blocks

    @property
    def where(self) -> str:
        try:
            name = self.path.relative_to(ROOT)
        except ValueError:
            name = self.path
        return f"{name}:{self.line}"

    def get(self, key: str) -> list[str]:
        return [value for k, value in self.directives if k == key]

    @property
    def runnable(self) -> bool:
        return self.lang in SHELLS and not self.get("not-run")

    @property
    def slow(self) -> bool:
        return bool(self.get("slow"))


_FENCE = re.compile(r"^(\s*)(`{3,}|~{3,})\s*([\w+-]*)")
_COMMENT = re.compile(r"^\s*<!--\s*([\w-]+)\s*:(.*?)-->\s*$")


def read_blocks(path: Path, text: str | None = None) -> list[Block]:
    """The page's fenced blocks, each with the directive comments just above it.

    Raises DocError for an unknown directive or one without its reason or value, so that a
    typo cannot silently turn a check off.
    """
    lines = (path.read_text(encoding="utf-8") if text is None else text).splitlines()
    blocks: list[Block] = []
    files: list[tuple[str, str]] = []
    i = 0
    while i < len(lines):
        m = _FENCE.match(lines[i])
        if not m:
            i += 1
            continue
        indent, fence, lang = len(m[1]), m[2], m[3].lower()
        j = i + 1
        while j < len(lines) and not lines[j].strip().startswith(fence):
            j += 1
        body = "\n".join(
            line[indent:] if line[:indent].isspace() else line.lstrip() for line in lines[i + 1 : j]
        )
        directives: list[tuple[str, str]] = []
        k = i - 1
        while k >= 0 and (not lines[k].strip() or _COMMENT.match(lines[k])):
            c = _COMMENT.match(lines[k])
            if c:
                key, value = c[1], c[2].strip()
                where = f"{path}:{k + 1}"
                if key not in DIRECTIVES:
                    raise DocError(
                        f"{where}: unknown doc directive {key!r} (one of "
                        f"{', '.join(sorted(DIRECTIVES))})"
                    )
                if not value:
                    raise DocError(
                        f"{where}: `<!-- {key}: ... -->` needs its reason or value after the colon"
                    )
                directives.insert(0, (key, value))
            k -= 1
        block = Block(path, i + 1, lang, body + "\n", tuple(directives), tuple(files))
        blocks.append(block)
        for name in block.get("file"):
            files.append((name, block.text))
        i = j + 1
    return blocks


def check_marks(block: Block) -> None:
    """A block's directives make sense for its kind; a TOML block says what it is."""
    if block.lang == "toml":
        if not (block.get("file") or block.get("fragment")):
            raise DocError(
                f"{block.where}: a TOML block is either a complete file, marked "
                "`<!-- file: NAME -->` above it, or `<!-- fragment: REASON -->`"
            )
        try:
            tomllib.loads(block.text)
        except tomllib.TOMLDecodeError as e:
            raise DocError(f"{block.where}: the TOML block does not parse: {e}") from e
    elif block.lang not in SHELLS and (
        block.get("not-run") or block.get("slow") or block.get("setup")
    ):
        raise DocError(
            f"{block.where}: run directives above a {block.lang or 'plain'} "
            "block, which is never run; remove them"
        )


def scratch(block: Block, folder: Path) -> dict[str, str]:
    """Fill `folder` as the block expects its current folder; the environment to run in."""
    for name in COPIED:
        shutil.copytree(ROOT / name, folder / name, ignore=shutil.ignore_patterns("*.sqlite*"))
    for name, text in block.files:
        target = folder / name
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text, encoding="utf-8")
    home = folder / ".home"
    home.mkdir()
    env = {key: value for key, value in os.environ.items() if not key.startswith("ARBITER_")}
    bindir = str(Path(sys.executable).parent)
    env.update(
        HOME=str(home),
        PYTHONPATH=str(ROOT),
        PATH=bindir + os.pathsep + env["PATH"],
        COLUMNS="100",
        NO_COLOR="1",
    )
    return env


def _bash(
    script: str, folder: Path, env: dict[str, str], timeout: float
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["bash", "-e", "-o", "pipefail", "-c", script],
        cwd=folder,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
        stdin=subprocess.DEVNULL,
    )


def session(text: str) -> list[tuple[str, str | None]]:
    """A console block as (command, expected output or None where none is shown)."""
    steps: list[tuple[str, list[str]]] = []
    for line in text.splitlines():
        if line.startswith("$ "):
            steps.append((line[2:], []))
        elif not steps:
            raise DocError(f"a console block starts with output, not a `$ ` command: {line!r}")
        else:
            steps[-1][1].append(line)
    return [(cmd, "\n".join(out) if any(s.strip() for s in out) else None) for cmd, out in steps]


_NOTE = re.compile(r"\s{2,}# .*$")


def matches(expected: str, actual: str) -> bool:
    """The output as the block shows it: `...` is any text, notes and trailing blanks aside."""
    want = "\n".join(_NOTE.sub("", line).rstrip() for line in expected.strip("\n").splitlines())
    got = "\n".join(line.rstrip() for line in actual.strip("\n").splitlines())
    pattern = ".*?".join(re.escape(part) for part in want.split("..."))
    return re.fullmatch(pattern, got, re.DOTALL) is not None


def run_block(block: Block, folder: Path, timeout: float = 120) -> None:
    """Run a shell block in `folder` as the page shows it; DocError names the block on failure."""
    env = scratch(block, folder)
    for command in block.get("setup"):
        done = _bash(command, folder, env, timeout)
        if done.returncode:
            raise DocError(
                f"{block.where}: its setup `{command}` failed (exit "
                f"{done.returncode}):\n{done.stdout}{done.stderr}"
            )
    if block.lang != "console":
        done = _bash(block.text, folder, env, timeout)
        if done.returncode:
            raise DocError(
                f"{block.where}: the block failed (exit {done.returncode}); mark "
                "it `<!-- not-run: REASON -->` if it cannot run here:\n"
                f"{done.stdout}{done.stderr}"
            )
        return
    try:
        steps = session(block.text)
    except DocError as e:
        raise DocError(f"{block.where}: {e}") from None
    for command, expected in steps:
        done = _bash(command, folder, env, timeout)
        output = done.stdout + done.stderr
        if done.returncode:
            raise DocError(
                f"{block.where}: `$ {command}` failed (exit {done.returncode}):\n{output}"
            )
        if expected is not None and not matches(expected, output):
            raise DocError(
                f"{block.where}: `$ {command}` printed\n{output}\nwhere the page "
                f"shows\n{expected}\n(`...` stands for any text)"
            )


def load_file_block(block: Block, folder: Path) -> object:
    """Load a complete-file TOML block with the real loader of its kind, from `folder`."""
    env = scratch(block, folder)
    (name,) = block.get("file")
    path = folder / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(block.text, encoding="utf-8")
    for command in block.get("setup"):
        done = _bash(command, folder, env, 60)
        if done.returncode:
            raise DocError(
                f"{block.where}: its setup `{command}` failed (exit "
                f"{done.returncode}):\n{done.stdout}{done.stderr}"
            )
    table = tomllib.loads(block.text)
    try:
        if "tournament" in table:
            from arbiter.runs.tournament import load_tournament

            return load_tournament(path)
        if "arena" in table:
            from arbiter.arena.config import load_arena

            return load_arena(path)
        if "engines" in table:
            from arbiter.engines.config import load_engines

            return load_engines(path)
    except Exception as e:
        raise DocError(f"{block.where}: the file {name} is refused by its loader: {e}") from e
    raise DocError(
        f"{block.where}: {name} is neither a tournament, an arena nor an engines "
        "file; mark it `<!-- fragment: REASON -->` if it is part of one"
    )
