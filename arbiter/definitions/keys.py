"""A key of a definition file, declared once, and the reader that checks a table by them."""

from __future__ import annotations

import difflib
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from arbiter.errors import ConfigError
from arbiter.text import toml_key, toml_value

_TYPE_NAMES: dict[type, str] = {
    str: "string",
    int: "integer",
    bool: "boolean",
    list: "list",
    float: "number",
    dict: "table",
}


def type_name(kind: type) -> str:
    """The name of a TOML type as messages and the reference say it."""
    return _TYPE_NAMES.get(kind, "value")


def _number(value: float) -> str:
    return str(value) if isinstance(value, int) else f"{value:g}"


@dataclass(frozen=True)
class Key:
    """One key of a definition file: what it takes, what it means, what it defaults to.

    `kind` is the TOML type the reader checks (`object`: the loader parses the value
    itself, as a command that is a string or a list). `low` and `high` bound a number
    (`above`: `low` itself is out; `unit` follows the bounds in the message);
    `choices` are the strings it may be, named `noun` in the message about another
    ("unknown format"). `hint` says how to
    fix a value out of range or not among the choices, `type_hint` one of the wrong
    type (else the key set to its default is the example). `shown` is the default as the
    reference writes it when it is not a plain value (it depends on other keys, say),
    and `type_text` the type when the reference says more than `kind`.
    """

    name: str
    kind: type
    help: str
    default: Any = None
    low: float | None = None
    high: float | None = None
    above: bool = False
    unit: str = ""
    choices: tuple[str, ...] = ()
    noun: str = "value"
    hint: str | None = None
    shown: str | None = None
    type_text: str | None = None
    type_hint: str | None = None

    def check(self, value: Any, where: str) -> Any:
        """The value, checked (an integer given for a number becomes a float), or a
        ConfigError naming `where.name`."""
        spot = f"{where}.{self.name}"
        if self.choices:
            if not isinstance(value, str) or value not in self.choices:
                listed = ", ".join(f'"{c}"' for c in self.choices)
                raise ConfigError(
                    f"unknown {self.noun} {toml_value(value)}",
                    where=spot,
                    hint=self.hint or f"use one of {listed}",
                )
            return value
        if self.kind is not object and not _is(value, self.kind):
            article = "an" if self.kind is int else "a"
            what = "boolean (true or false)" if self.kind is bool else type_name(self.kind)
            raise ConfigError(
                f"must be {article} {what}, not {toml_value(value)}",
                where=spot,
                hint=self.type_hint or self.example(),
            )
        number = float(value) if self.kind is float else value
        if (
            self.low is not None and not (number > self.low if self.above else number >= self.low)
        ) or (self.high is not None and not number <= self.high):  # nan is never in range
            raise ConfigError(
                f"must be {self.bounds()}{self.unit}, not {toml_value(value)}",
                where=spot,
                hint=self.hint,
            )
        return number

    def example(self) -> str | None:
        """The key set to its default, as a hint for a value of the wrong type."""
        if self.default is None:
            return None
        return f"e.g. {self.name} = {toml_value(self.default)}"

    def bounds(self) -> str:
        """The range a number must be in, as a message says it."""
        low = f"above {_number(self.low)}" if self.above and self.low is not None else None
        if self.low is not None and self.high is not None:
            if low:
                return f"{low} and at most {_number(self.high)}"
            return f"between {_number(self.low)} and {_number(self.high)}"
        if self.low is not None:
            return low or f"{_number(self.low)} or more"
        return f"{_number(self.high or 0)} or less"

    def default_text(self) -> str:
        """The default as the reference writes it."""
        if self.shown is not None:
            return self.shown
        value = self.default
        if value is None:
            return "none"
        if isinstance(value, bool):
            return "true" if value else "false"
        if isinstance(value, str):
            return f'`"{value}"`'
        if isinstance(value, int | float):
            return _number(value)
        return f"`{toml_value(value)}`"

    def type_label(self) -> str:
        return self.type_text or type_name(self.kind)


def _is(value: Any, kind: type) -> bool:
    """Whether a TOML value is of `kind`: an integer passes as a number, a boolean never
    as an integer or a number."""
    if isinstance(value, bool):
        return kind is bool
    if kind is float:
        return isinstance(value, int | float)
    return isinstance(value, kind)


class Keys:
    """The keys of one table of a file kind (`[tournament]`, `[[player]]`...), in the
    order the reference lists them, and the reader of such a table."""

    def __init__(self, *keys: Key, sort: bool = True) -> None:
        """`sort`: the allowed keys are listed in alphabetical order (else in this one)."""
        self.keys = {key.name: key for key in keys}
        if len(self.keys) != len(keys):
            raise ValueError("a key is declared twice")
        self.sort = sort

    def __contains__(self, name: object) -> bool:
        return name in self.keys

    def __iter__(self) -> Iterator[str]:
        return iter(self.keys)

    def __getitem__(self, name: str) -> Key:
        return self.keys[name]

    def names(self) -> tuple[str, ...]:
        return tuple(self.keys)

    def refuse_unknown(self, table: Mapping[str, Any], where: str, hint: str = "") -> None:
        """A ConfigError for the keys of `table` not declared here, suggesting the
        declared key nearest to a misspelt one, then listing the allowed keys (or `hint`)."""
        unknown = sorted(set(table) - set(self.keys))
        if not unknown:
            return
        near = difflib.get_close_matches(unknown[0], list(self.keys), n=1)
        allowed = sorted(self.keys) if self.sort else list(self.keys)
        advice = hint or f"allowed keys: {', '.join(allowed)}"
        raise ConfigError(
            f"unknown key(s) {', '.join(toml_key(k) for k in unknown)}",
            where=where,
            hint=(f"did you mean {near[0]}? " if near else "") + advice,
        )

    def get(self, table: Mapping[str, Any], name: str, where: str, default: Any = ...) -> Any:
        """`table[name]` checked by its declaration, or the default (the declared one
        unless given: some defaults depend on other keys) when the key is absent."""
        key = self.keys[name]
        if name not in table:
            return key.default if default is ... else default
        return key.check(table[name], where)

    def reference(self) -> str:
        """The reference table of these keys, in Markdown."""
        rows = ["| key | type | default | meaning |", "|---|---|---|---|"]
        rows += [
            f"| `{k.name}` | {k.type_label()} | {k.default_text()} | {k.help} |"
            for k in self.keys.values()
        ]
        return "\n".join(rows) + "\n"
