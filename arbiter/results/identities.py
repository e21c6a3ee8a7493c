"""Who an engine is in gathered games, and what each of its games was played under.

Results are tallied by the names the schedule or the records give the seats (the engine's
identity), never by anything an engine answers. Sources combined may hold games of one
name played under different conditions (another time control, board, program version or
command): `Identities` notes what every game was played under and where, so that the
merge is said, and can rate each set of conditions as an engine of its own
(`--split-by`).
"""

from __future__ import annotations

import functools
import json
import shlex
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from arbiter.results.records import GameRecord
from arbiter.results.store import SeatPlayed
from arbiter.rules import Variant
from arbiter.text import shorten

CONDITION_KEYS = ("tc", "board", "version", "command")
"""What an engine's games may differ in: `--split-by` takes these (or all, `conditions`)."""


@dataclass(frozen=True)
class GameConditions:
    """What an engine played one game under, as the game's record says ("" unknown)."""

    tc: str = ""
    board: str = ""
    version: str = ""  # what the engine answered to `version`
    command: str = ""  # its command line, shell-quoted

    def only(self, keys: Iterable[str]) -> GameConditions:
        """These conditions with all but `keys` left blank: what a split compares."""
        keep = set(keys)
        return GameConditions(**{k: getattr(self, k) if k in keep else "" for k in CONDITION_KEYS})

    @classmethod
    def of_record(cls, record: GameRecord, seat: int) -> GameConditions:
        name = record.seat1 if seat == 1 else record.seat2
        v = record.variant
        return _record_conditions(
            record.tc.get(f"seat{seat}", ""),
            (v["islands"], v["size"], v["pie"]),
            record.versions.get(name, ""),
            tuple(record.commands.get(f"seat{seat}", ())),
        )

    @classmethod
    def of_store(cls, name: str, played: SeatPlayed) -> GameConditions:
        return _stored_conditions(name, played.tc, played.variant, played.versions, played.command)


@functools.lru_cache(maxsize=4096)
def _record_conditions(
    tc: str, variant: tuple[int, int, bool], version: str, command: tuple[str, ...]
) -> GameConditions:
    """Conditions of a record's seat (a file's games share a few: made once each)."""
    return GameConditions(tc, str(Variant(*variant)), version, shlex.join(command))


@functools.lru_cache(maxsize=4096)
def _stored_conditions(
    name: str, tc: str | None, variant: str | None, versions: str | None, command: str | None
) -> GameConditions:
    """Conditions from a stored record's JSON fields (the store checked the record when it
    was opened; a field a foreign writer left odd reads as unknown, never as an error)."""

    def parsed(text: str | None) -> Any:
        try:
            return None if text is None else json.loads(text)
        except ValueError:
            return None

    board = ""
    v = parsed(variant)
    if isinstance(v, dict):
        try:
            board = str(Variant(v["islands"], v["size"], v["pie"]))
        except (KeyError, TypeError, ValueError):
            board = ""
    answers = parsed(versions)
    version = answers.get(name, "") if isinstance(answers, dict) else ""
    argv = parsed(command)
    line = (
        shlex.join(argv) if isinstance(argv, list) and all(isinstance(w, str) for w in argv) else ""
    )
    return GameConditions(tc or "", board, version if isinstance(version, str) else "", line)


def split_keys(text: str) -> tuple[str, ...]:
    """`--split-by` as condition keys: "conditions" (all of them) or a comma list of
    tc, board, version, command. ValueError names what is not a key."""
    words = [w.strip().lower() for w in text.split(",") if w.strip()]
    if words == ["conditions"]:
        return CONDITION_KEYS
    unknown = [w for w in words if w not in CONDITION_KEYS]
    if unknown or not words:
        raise ValueError(
            f"--split-by takes 'conditions' or a comma list of"
            f" {', '.join(CONDITION_KEYS)}, not {text!r}"
        )
    return tuple(k for k in CONDITION_KEYS if k in words)


_VALUE_CHARS = 60  # a condition's value shown in a warning (commands can be long)
_LABEL_CHARS = 30  # a version in a split engine's name


def _shown(value: str, limit: int = _VALUE_CHARS) -> str:
    return shorten(value, limit) if value else "(none)"


class Identities:
    """How gathered games name their engines, and what each name's games were played under.

    Without a split, an engine is its name and every set of conditions its games were
    played under is noted, by source, for `mixed`. With `split` (condition keys), each
    name's games are tallied apart per set of those conditions, under provisional keys
    that `labels` turns into the names the leaderboard shows.
    """

    def __init__(self, split: Sequence[str] = ()) -> None:
        self.split = tuple(split)
        self.sets: dict[str, dict[GameConditions, Counter[str]]] = {}  # key: conditions: source
        self._index: dict[str, dict[GameConditions, int]] = {}  # name: split conditions: number

    def key(self, name: str, conditions: GameConditions, source: str, games: int = 1) -> str:
        """The tally key of `name`'s games under `conditions`, noted as met in `source`."""
        key = name
        if self.split:
            numbers = self._index.setdefault(name, {})
            number = numbers.setdefault(conditions.only(self.split), len(numbers))
            key = f"{name}\0{number}"  # a number after the last NUL: never another's key
        self.sets.setdefault(key, {}).setdefault(conditions, Counter())[source] += games
        return key

    def labels(self) -> dict[str, str]:
        """Provisional key: the name shown. A name with one set of the split conditions
        keeps its name; the others get the values that tell their sets apart."""
        taken = {name for name, numbers in self._index.items() if len(numbers) == 1}
        out: dict[str, str] = {}
        for name, numbers in self._index.items():
            if len(numbers) == 1:
                [number] = numbers.values()
                out[f"{name}\0{number}"] = name
                continue
            differing = [k for k in self.split if len({getattr(c, k) for c in numbers}) > 1]
            commands = list(dict.fromkeys(c.command for c in numbers))
            for conditions, number in numbers.items():
                parts = []
                for k in differing:
                    value = getattr(conditions, k)
                    if k == "command":
                        parts.append(f"command {commands.index(value) + 1}")
                    elif k == "version":
                        parts.append(f"version {_shown(value, _LABEL_CHARS)}")
                    else:
                        parts.append(_shown(value))
                label = f"{name} [{', '.join(parts)}]"
                if label in taken:
                    label = f"{name} [#{number + 1}]"
                taken.add(label)
                out[f"{name}\0{number}"] = label
        return out

    def relabel(self, labels: dict[str, str]) -> None:
        """Key the conditions noted by the names shown (after a split)."""
        sets: dict[str, dict[GameConditions, Counter[str]]] = {}
        for key, found in self.sets.items():
            mine = sets.setdefault(labels.get(key, key), {})
            for conditions, sources in found.items():
                mine.setdefault(conditions, Counter()).update(sources)
        self.sets = sets

    def mixed(self) -> list[str]:
        """One line per engine whose games were played under more than one set of
        conditions: what differs, its values, and the sources (with games) of each."""
        lines = []
        for name, found in self.sets.items():
            if len(found) < 2:
                continue
            parts = []
            for k in CONDITION_KEYS:
                values: dict[str, Counter[str]] = {}
                for conditions, sources in found.items():
                    values.setdefault(getattr(conditions, k), Counter()).update(sources)
                if len(values) < 2:
                    continue
                shown = [
                    f"{_shown(value)} ({', '.join(f'{s}: {n} games' for s, n in sources.items())})"
                    for value, sources in values.items()
                ]
                parts.append(f"{k} {', '.join(shown)}")
            lines.append(
                f"{name}: games played under different conditions are rated as one"
                f" engine: {'; '.join(parts)}"
            )
        return lines

    def split_lines(self, labels: dict[str, str]) -> list[str]:
        """One line per name rated apart: the names its sets of conditions got."""
        lines = []
        for name, numbers in self._index.items():
            if len(numbers) < 2:
                continue
            shown = []
            for number in numbers.values():
                label = labels[f"{name}\0{number}"]
                sources: Counter[str] = Counter()
                for found in self.sets.get(label, {}).values():
                    sources.update(found)
                games = ", ".join(f"{s}: {n} games" for s, n in sources.items())
                shown.append(f"{label} ({games})")
            differing = [k for k in self.split if len({getattr(c, k) for c in numbers}) > 1]
            lines.append(f"{name} is rated apart by {' and '.join(differing)}: {'; '.join(shown)}")
        return lines

    def split_names(self, name: str, labels: dict[str, str]) -> list[str]:
        """The names `name` was rated apart as (empty if it was not split)."""
        numbers = self._index.get(name, {})
        return [labels[f"{name}\0{n}"] for n in numbers.values()] if len(numbers) > 1 else []
