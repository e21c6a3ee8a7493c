"""Untrusted text made safe for a terminal.

Engines are other people's programs: their names, versions, stderr and answers may hold
escape sequences that recolour or clear a terminal, bidi overrides that make a line read
differently from what it says, or newlines that forge output lines. Everything an engine
said goes through here before it is printed; records keep the raw text (JSON escapes it).
"""

from __future__ import annotations

import unicodedata

NAME_LIMIT = 40  # characters of an engine's name shown in tables and progress lines
LINE_LIMIT = 1000  # characters of one printed line
_KEEP = {"\n", "\t"}
_EXTRA = {"\u061c", "\u200e", "\u200f", "\u2028", "\u2029"}


def _unsafe(ch: str) -> bool:
    if ch in _EXTRA:
        return True
    # Cc: C0 and C1 controls and DEL; Cf: format controls (bidi overrides and isolates,
    # zero-width joiners); Zl/Zp: line and paragraph separators.
    return unicodedata.category(ch) in ("Cc", "Cf", "Cs", "Zl", "Zp")  # Cs: lone surrogates


def _escape_char(ch: str) -> str:
    code = ord(ch)
    if code < 0x100:
        return f"\\x{code:02x}"
    return f"\\u{code:04x}" if code < 0x10000 else f"\\U{code:08x}"


def escape(text: str, *, newlines: bool = False) -> str:
    """`text` with every control and format character written as an escape.

    With `newlines`, newline and tab pass through (multi-line evidence); otherwise they
    are escaped too, so the text can never start a new output line.
    """
    if text.isascii() and text.isprintable():
        return text
    keep = _KEEP if newlines else set()
    return "".join(_escape_char(ch) if ch not in keep and _unsafe(ch) else ch for ch in text)


def shorten(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def name(text: str, limit: int = NAME_LIMIT) -> str:
    """An engine-chosen name for display: one line, escaped, at most `limit` characters
    (an escape is never cut in half)."""
    safe = escape(text)
    if len(safe) <= limit:
        return safe
    out: list[str] = []
    size = 0
    for ch in text:
        piece = _escape_char(ch) if _unsafe(ch) or ch in _KEEP else ch
        if size + len(piece) > limit - 1:
            break
        out.append(piece)
        size += len(piece)
    return "".join(out) + "…"


def terminal(text: str) -> str:
    """Any text bound for a terminal: escaped line by line, each line at most LINE_LIMIT."""
    return "\n".join(shorten(escape(line, newlines=True), LINE_LIMIT) for line in text.split("\n"))


def one_line(text: str) -> str:
    """A message that must stay one line (errors): escaped, newlines too, and capped."""
    return shorten(escape(text), LINE_LIMIT)


TOML_QUOTE_LIMIT = 200  # characters of a quoted value in an error message


def toml_value(value: object) -> str:
    """A value as it is written in a TOML file, for the messages that quote what a user
    wrote: `true`, `"round"`, `{ elo0 = 0 }`, never Python's `True`, `'round'` or a dict.
    Long values are cut (a message is one line)."""
    text = _toml(value)
    return text if len(text) <= TOML_QUOTE_LIMIT else text[: TOML_QUOTE_LIMIT - 3] + "..."


def _toml(value: object) -> str:
    import datetime
    import json
    import math

    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)  # TOML's basic strings escape as JSON
    if isinstance(value, float) and not math.isfinite(value):
        return "nan" if math.isnan(value) else ("inf" if value > 0 else "-inf")
    if isinstance(value, int | float):
        return repr(value)
    if isinstance(value, list | tuple):
        return "[" + ", ".join(_toml(item) for item in value) + "]"
    if isinstance(value, dict):
        items = ", ".join(f"{toml_key(str(k))} = {_toml(v)}" for k, v in value.items())
        return "{ " + items + " }" if items else "{}"
    if isinstance(value, datetime.date | datetime.time):
        return value.isoformat()
    if value is None:
        return "nothing"  # no TOML value: a key left out
    return repr(value)


def toml_key(key: str) -> str:
    """A key as TOML writes it: bare when it can be, quoted otherwise."""
    import json
    import re

    return key if re.fullmatch(r"[A-Za-z0-9_-]+", key) else json.dumps(key, ensure_ascii=False)
