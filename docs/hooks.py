"""MkDocs hooks: the protocol specification in the site, from where engine authors find it.

`protocol/PROTOCOL.md` stays where it is (GitHub readers and engine authors expect it
there), so the site takes it, its golden transcripts and the bot skeleton from `protocol/`
instead of keeping copies that would drift:

- `protocol/PROTOCOL.md` becomes the page `protocol/index.md`;
- each `protocol/transcripts/NAME.txt` becomes a page `protocol/transcripts/NAME.md` (its
  text in a code block, with the line from the specification's table that says what it
  shows) and is also published as it is, beside that page; `protocol/transcripts/index.md`
  lists them;
- `protocol/bot_skeleton.py` is published as a file.

The reference tables of the definition files' keys are made from the declarations in
the code (`arbiter.definitions`): a page holds each between `<!-- begin keys KIND -->`
and `<!-- end keys -->`, and the site shows the table the declarations give, whatever
the page holds. `python docs/hooks.py` rewrites the pages' tables in place, and a test
fails while a page's table differs from the declarations, so GitHub readers see the same.

Links are written as repository paths, relative to the file that holds them, so that they
work when the Markdown is read on GitHub. On the site a page may live elsewhere than its
source (the specification), and a target may be a generated page or no page at all
(`arbiter/rules/`). Each relative link is therefore resolved against its source file: a
repository file the site publishes becomes a link to that page or file, a transcript
becomes a link to its page, and any other file or folder of the repository becomes a link
to the code layout page. A link to nothing that exists is left alone, so that
`mkdocs build --strict` reports it.
"""

from __future__ import annotations

import os
import posixpath
import re
from pathlib import Path
from typing import Any

from mkdocs.structure.files import File, Files

ROOT = Path(__file__).resolve().parent.parent
PROTOCOL = ROOT / "protocol"
TRANSCRIPTS = PROTOCOL / "transcripts"
LAYOUT_PAGE = "reference/layout.md"  # where the site describes the repository's folders

# A Markdown link or image, `[text](target)` or `[text](target "title")`.
_LINK = re.compile(r'(!?\[[^\]\n]*\]\()([^)\s]+)((?:\s+"[^"\n]*")?\))')
# A row of the specification's transcript table: | [`NAME.txt`](transcripts/NAME.txt) | what |
_ROW = re.compile(r"^\|\s*\[`([\w.-]+\.txt)`\]\([^)]*\)\s*\|\s*(.*?)\s*\|\s*$", re.MULTILINE)

# A generated table of keys: its kind, then the table the declarations give.
_KEYS = re.compile(r"(<!-- begin keys (\w+) -->\n)(.*?)(<!-- end keys -->)", re.DOTALL)
KEY_PAGES = ("reference/tournament-file.md", "reference/engines-file.md", "guide/arena.md")

# Repository path (resolved, as a string) -> the site's src_uri for links to it.
_targets: dict[str, str] = {}


def _transcripts() -> list[Path]:
    """The transcripts in the order the specification's table lists them, then the rest."""
    spec = PROTOCOL.joinpath("PROTOCOL.md").read_text(encoding="utf-8")
    listed = [name for name, _ in _ROW.findall(spec)]
    found = sorted(TRANSCRIPTS.glob("*.txt"))
    order = {name: i for i, name in enumerate(listed)}
    return sorted(found, key=lambda p: (order.get(p.name, len(order)), p.name))


def _descriptions() -> dict[str, str]:
    spec = PROTOCOL.joinpath("PROTOCOL.md").read_text(encoding="utf-8")
    return dict(_ROW.findall(spec))


def _transcript_page(path: Path, what: str) -> str:
    text = path.read_text(encoding="utf-8")
    fence = "```"
    while fence in text:
        fence += "`"
    intro = f"{what[:1].upper()}{what[1:]}.\n\n" if what else ""
    return (
        f"# {path.name}\n\n{intro}The format is described in [Example transcripts]"
        f"(../index.md#example-transcripts); the referee's tests replay this file. "
        f"[The file as it is]({path.name}).\n\n{fence}text\n{text}{fence}\n"
    )


def _transcript_index(paths: list[Path], descriptions: dict[str, str]) -> str:
    rows = "\n".join(f"| [{p.name}]({p.stem}.md) | {descriptions.get(p.name, '')} |" for p in paths)
    return (
        "# Transcripts\n\nGolden transcripts of complete conversations between the referee "
        "and one engine, kept in `protocol/transcripts/`. The referee's tests replay them, "
        "so they follow the [transcript format](../index.md#example-transcripts) exactly.\n\n"
        f"| File | Shows |\n|---|---|\n{rows}\n"
    )


def key_tables() -> dict[str, Any]:
    """The declared keys of each file kind, by the name a page's marker gives."""
    from arbiter.arena.config import ARENA, PLAYER, ROOM
    from arbiter.engines.config import ENGINE
    from arbiter.runs.tournament import TOURNAMENT
    from arbiter.runs.tune import PARAM, TUNE

    return {
        "tournament": TOURNAMENT,
        "engine": ENGINE,
        "arena": ARENA,
        "player": PLAYER,
        "room": ROOM,
        "tune": TUNE,
        "tune-param": PARAM,
    }


def fill_key_tables(markdown: str) -> str:
    """The page with each marked table made from the declarations."""
    tables = key_tables()

    def table(m: re.Match[str]) -> str:
        if m[2] not in tables:
            raise ValueError(f"no declared keys {m[2]!r}; one of {', '.join(tables)}")
        return m[1] + tables[m[2]].reference() + m[4]

    return _KEYS.sub(table, markdown)


def on_files(files: Files, config: Any) -> Files:
    _targets.clear()
    spec = File.generated(config, "protocol/index.md", abs_src_path=str(PROTOCOL / "PROTOCOL.md"))
    files.append(spec)
    files.append(
        File.generated(
            config, "protocol/bot_skeleton.py", abs_src_path=str(PROTOCOL / "bot_skeleton.py")
        )
    )
    descriptions = _descriptions()
    paths = _transcripts()
    for path in paths:
        files.append(
            File.generated(config, f"protocol/transcripts/{path.name}", abs_src_path=str(path))
        )
        page = f"protocol/transcripts/{path.stem}.md"
        content = _transcript_page(path, descriptions.get(path.name, ""))
        files.append(File.generated(config, page, content=content))
    files.append(
        File.generated(
            config, "protocol/transcripts/index.md", content=_transcript_index(paths, descriptions)
        )
    )
    for file in files:
        if file.abs_src_path:
            _targets[os.path.normpath(file.abs_src_path)] = file.src_uri
    for path in paths:  # a transcript's link leads to its page, which links the raw file
        _targets[str(path)] = f"protocol/transcripts/{path.stem}.md"
    _targets[str(TRANSCRIPTS)] = "protocol/transcripts/index.md"
    return files


def _rewrite(target: str, source: Path, page_uri: str) -> str:
    if re.match(r"^[a-zA-Z][a-zA-Z0-9+.-]*:", target) or target.startswith(("#", "/")):
        return target  # a URL, an anchor on this page, or a site-absolute path
    path, hash_, anchor = target.partition("#")
    if not path:
        return target
    resolved = os.path.normpath(source.parent / path)
    site = _targets.get(resolved)
    if site is None:
        inside = resolved == str(ROOT) or resolved.startswith(str(ROOT) + os.sep)
        if not (inside and os.path.exists(resolved)):
            return target  # broken: left for MkDocs to report
        site, hash_, anchor = LAYOUT_PAGE, "", ""
    relative = posixpath.relpath(site, posixpath.dirname(page_uri) or ".")
    return relative + hash_ + anchor


def on_page_markdown(markdown: str, page: Any, config: Any, files: Files) -> str:
    source = page.file.abs_src_path
    if not source:
        return markdown  # generated here, with links already in site terms
    markdown = fill_key_tables(markdown)
    out, fenced = [], False
    for line in markdown.splitlines(keepends=True):
        if line.lstrip().startswith(("```", "~~~")):
            fenced = not fenced
        if not fenced:
            line = _LINK.sub(
                lambda m: m[1] + _rewrite(m[2], Path(source), page.file.src_uri) + m[3], line
            )
        out.append(line)
    return "".join(out)


if __name__ == "__main__":  # rewrite the pages' tables of keys from the declarations
    for name in KEY_PAGES:
        path = ROOT / "docs" / name
        text = path.read_text(encoding="utf-8")
        if (new := fill_key_tables(text)) != text:
            path.write_text(new, encoding="utf-8")
            print(f"rewrote {path.relative_to(ROOT)}")
