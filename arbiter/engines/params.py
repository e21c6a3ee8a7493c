"""Engine parameters in a command line: `{NAME}` placeholders filled per game (pure).

An engine can always be configured by its command line, so a tuned parameter is a word
of its `command` such as `--exploration={C}`. The engine's definition keeps the
placeholders (its template); each game starts the engine with its own values filled in,
and the record keeps the template and the values apart, so that the engine stays one
player whose games differ in a condition, not a new player per value. `{python}` and
`{here}` are filled when the file is read and never reach this module.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence

PLACEHOLDER = re.compile(r"\{([A-Za-z_][A-Za-z0-9_]*)\}")

ParamValues = Mapping[str, float]


def placeholders(argv: Iterable[str]) -> list[str]:
    """The placeholder names of a command, each once, in order of appearance."""
    names: dict[str, None] = {}
    for word in argv:
        for match in PLACEHOLDER.finditer(word):
            names.setdefault(match.group(1), None)
    return list(names)


def shown(value: float) -> str:
    """A value as a command line gets it: an integer without a point, else up to 6
    significant digits (what the record keeps is the value so written)."""
    if float(value).is_integer():
        return str(int(value))
    return f"{value:.6g}"


def fill(argv: Sequence[str], values: ParamValues) -> tuple[str, ...]:
    """The command with every placeholder replaced by its value; KeyError names a
    placeholder without one (the tournament file's check refuses that case first)."""

    def one(match: re.Match[str]) -> str:
        return shown(values[match.group(1)])

    return tuple(PLACEHOLDER.sub(one, word) for word in argv)


def as_pairs(values: ParamValues) -> tuple[tuple[str, float], ...]:
    """Values as a hashable, ordered tuple (what a scheduled game carries)."""
    return tuple(sorted((name, float(value)) for name, value in values.items()))
