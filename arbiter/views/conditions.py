"""The conditions of play, source by source, as the report states them.

Each source is a column: what its store kept when the competition started (format,
rounds, board, pie rule, time control, openings, seed, each engine's command, sandbox
and limits), and what its records show (boards, time controls, commands, versions,
hosts, dates). What neither says is stated as not recorded. A row whose known values
differ between sources is marked, since games played under different conditions are
rated together.
"""

from __future__ import annotations

import json
import shlex
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from arbiter.engines.sandbox import SANDBOX_DEFAULTS
from arbiter.results.conditions import SourceConditions
from arbiter.runs.schedule import Format, tournament_size
from arbiter.text import escape, shorten

UNKNOWN = "not recorded"
TEXT_CHARS = 300  # a command line or a version shown, at most
# Rows compared between sources; the others (games, dates, hosts) differ by nature.
COMPARED = (
    "Format",
    "Board",
    "Pie rule",
    "Adjudication",
    "Time control",
    "Openings",
    "Seed",
    "Sandbox and limits",
)
LIMIT_NAMES = {
    "memory_mb": ("memory", "MB"),
    "cpu_s": ("CPU", "s"),
    "processes": ("processes", ""),
    "disk_mb": ("disk", "MB"),
}


@dataclass(frozen=True)
class TableCell:
    text: str
    known: bool = True


@dataclass(frozen=True)
class ConditionRow:
    label: str
    cells: list[TableCell]
    differs: bool


@dataclass(frozen=True)
class EngineRow:
    name: str
    command: str
    version: str
    answers: str
    tc: str
    confinement: str
    setup: str = UNKNOWN  # its options and dialect: what the referee tells it, and how


@dataclass(frozen=True)
class EngineTable:
    source: str
    rows: list[EngineRow]
    known: bool  # whether the store kept the engines' definitions (else: from records)


@dataclass(frozen=True)
class ConditionsTable:
    sources: list[str]
    rows: list[ConditionRow]
    engines: list[EngineTable]
    differences: list[str]  # labels of the rows that differ


def _text(value: object, limit: int = TEXT_CHARS) -> str:
    return shorten(escape(str(value)), limit)


def _argv(argv: Iterable[Any]) -> str:
    """A command as a shell would read it; a stored value that is no list (a damaged
    row) is shown as it is, never trusted to be one."""
    if not isinstance(argv, list | tuple):
        return _text(argv)
    return _text(shlex.join(str(word) for word in argv))


def _counted(counter: Counter[str], what: str = "") -> str:
    """One value, or each value with its count when there are several."""
    if not counter:
        return UNKNOWN
    if len(counter) == 1:
        return next(iter(counter))
    return "; ".join(f"{value} ({n}{what})" for value, n in counter.most_common())


def _date(stamp: str) -> str:
    """An ISO 8601 UTC time as people read it: to the second."""
    return _text(stamp.replace("T", " ").split(".")[0].removesuffix("Z") + " UTC", 40)


def board_name(islands: object, size: object) -> str:
    kind = "Hex" if islands == 4 else "Atoll" if islands == 8 else f"{islands} islands,"
    return f"{kind} {size}"


def _limit(key: str, value: object) -> str:
    label, unit = LIMIT_NAMES.get(key, (key, ""))
    return f"{label} {value}{' ' + unit if unit else ''}"


def _limits(definition: dict[str, Any]) -> str:
    """The limits that applied: those set, and in a sandbox its defaults for the others
    (the disk always; memory and processes where the host's cgroups enforce them)."""
    limits = definition.get("limits") or {}
    if not isinstance(limits, dict):
        limits = {}
    parts = [_limit(key, value) for key, value in limits.items() if value is not None]
    if not definition.get("sandbox"):
        return _text("no sandbox" + (", limits: " + ", ".join(parts) if parts else ", no limits"))
    if limits.get("disk_mb") is None:
        parts.append(_limit("disk_mb", SANDBOX_DEFAULTS["disk_mb"]) + " (the sandbox's default)")
    host = [
        _limit(k, SANDBOX_DEFAULTS[k]) for k in ("memory_mb", "processes") if limits.get(k) is None
    ]
    text = "sandboxed, limits: " + ", ".join(parts)
    if host:
        text += f"; by default {' and '.join(host)} where the host's cgroups enforce them"
    return _text(text)


_CLOCKS = {
    "atoll": "told its clock by atoll-time_* commands",
    "gtp": "told its clock by time_settings and time_left",
    "none": "never told its clock",
}


def _setup(definition: dict[str, Any]) -> str:
    """An engine's options (commands sent before its games) and declared dialect: how it
    is spoken to, which changes how it plays (a clock it is never told, say)."""
    parts = []
    options = definition.get("options")
    if isinstance(options, list) and options:
        parts.append("options: " + "; ".join(str(o) for o in options))
    dialect = definition.get("dialect")
    if isinstance(dialect, dict):
        if dialect.get("swap") is not None:
            parts.append(f"swap spelled {json.dumps(str(dialect['swap']), ensure_ascii=False)}")
        clock = dialect.get("time")
        if clock is not None:
            parts.append(_CLOCKS.get(str(clock), f"clock: {clock}"))
        for key in ("islands", "sizes"):
            if isinstance(dialect.get(key), list):
                parts.append(f"{key} {', '.join(map(str, dialect[key]))}")
    return _text("; ".join(parts) if parts else "none declared (the protocol's defaults)")


def _engine_tc(source: SourceConditions, definition: dict[str, Any]) -> str:
    default = (source.stored or {}).get("tc")
    return _text(definition.get("tc") or default or UNKNOWN, 60)


def _per_engine(values: dict[str, str]) -> tuple[str, str]:
    """(text, key): one value for every engine, or each engine's."""
    distinct = sorted(set(values.values()))
    if not values:
        return UNKNOWN, ""
    if len(distinct) == 1:
        return distinct[0], distinct[0]
    return "; ".join(f"{name}: {v}" for name, v in values.items()), " | ".join(distinct)


class _Column:
    """One source's cells, each with the key it is compared by."""

    def __init__(self, source: SourceConditions) -> None:
        self.s = source
        self.stored = source.stored or {}
        self.definitions = source.definitions

    def cells(self) -> dict[str, tuple[TableCell, str]]:
        s = self.s
        if s.kind == "repeat":
            same = TableCell(f"as {_text(Path(s.store).name, 80)}", known=False)
            return {label: (same, "") for label in ("Source", "Games", *COMPARED, "Dates", "Hosts")}
        out: dict[str, tuple[TableCell, str]] = {}

        def put(label: str, text: str, key: str | None = None, known: bool = True) -> None:
            out[label] = (TableCell(text, known), text if key is None else key)

        put("Source", self._what())
        swaps = f", {s.swaps} with a swap" if s.swaps else ""
        voids = f", {s.voids} void attempts (replayed, not rated)" if s.voids else ""
        put("Games", f"{s.games} rated{swaps}{voids}")
        put("Format", *self._format())
        put("Board", *self._board())
        put("Pie rule", *self._pie())
        put("Adjudication", *self._adjudication())
        put("Time control", *self._tc())
        put("Openings", *self._openings())
        put("Seed", *self._seed())
        put("Sandbox and limits", *self._confinement())
        put("Dates", *self._dates())
        put("Hosts", *self._hosts())
        return out

    def _what(self) -> str:
        s = self.s
        if s.kind == "tournament":
            return f"tournament \u201c{_text(s.name, 80)}\u201d, store {_text(s.store, 80)}"
        if s.kind == "match":
            return f"match {_text(s.name, 80)}, store {_text(s.store, 80)}"
        if s.kind == "store":
            return f"store {_text(s.store, 80)} (its conditions were not stored)"
        return "records file"

    def _format(self) -> tuple[str, str, bool]:
        d = self.s.definition or {}
        if self.s.kind == "tournament":
            fmt, rounds, engines = self.stored.get("format"), d.get("rounds"), d.get("engines")
            if fmt == Format.ADAPTIVE.value:
                text = _adaptive(d)
                return text, text, True
            text = _text(fmt or UNKNOWN, 40)
            if fmt == Format.GAUNTLET.value and self.stored.get("challenger"):
                text += f" (challenger {_text(self.stored['challenger'], 80)})"
            if type(rounds) is int:
                text += f", {rounds} round{'s' if rounds != 1 else ''}"
                if isinstance(engines, dict) and fmt in {f.value for f in Format}:
                    total = tournament_size(len(engines), Format(str(fmt)), rounds)
                    text += f": {total} games for {len(engines)} engines"
            text += ", each pairing as a seat-swapped pair"
            sprt = self.stored.get("sprt")
            if isinstance(sprt, dict):
                text += _text(
                    f"; a sequential test (SPRT) per pairing: Elo {sprt.get('elo0')}"
                    f" against {sprt.get('elo1')}, alpha {sprt.get('alpha')}, beta"
                    f" {sprt.get('beta')}, model {sprt.get('model')}"
                )
            return text, text, True
        if self.s.kind == "match":
            games = d.get("games")
            text = f"match of {games} games" if type(games) is int else "match"
            return text + ", engines alternating seats", "match", True
        return UNKNOWN + " (records keep games, not their schedule)", "", False

    def _board(self) -> tuple[str, str, bool]:
        if "size" in self.stored and "islands" in self.stored:
            text = board_name(self.stored["islands"], self.stored["size"])
            return text, text, True
        boards = Counter[str]()
        for (islands, size, _), n in self.s.variants.items():
            boards[board_name(islands, size)] += n
        text = _counted(boards, " games")
        return text, " | ".join(sorted(boards)), bool(boards)

    def _pie(self) -> tuple[str, str, bool]:
        if "pie" in self.stored:
            pies = Counter({bool(self.stored["pie"]): 1})
        else:
            pies = Counter[bool]()
            for (_, _, pie), n in self.s.variants.items():
                pies[bool(pie)] += n
        if not pies:
            return UNKNOWN, "", False
        words = {
            True: "on: seat 2 may swap (take seat 1's first stone) instead of its first move",
            False: "off",
        }
        if len(pies) == 1:
            text = words[next(iter(pies))]
            return text, text, True
        return "on in some games, off in others", "mixed", True

    def _saved(self) -> str:
        """What the adjudicated games saved, as `Saving` estimates it."""
        saving = self.s.saving
        if not saving.games:
            return ""
        seconds = sum(saving.engine_seconds().values())
        return (
            f", {saving.cells_left} cells left empty, about {seconds:.1f} s of engine time"
            " saved at most"
        )

    def _adjudication(self) -> tuple[str, str, bool]:
        ended = self.s.adjudicated
        if self.s.kind in ("tournament", "match"):
            # A store started before the condition existed played every game out.
            if self.stored.get("adjudicate", "off") == "proven":
                text = (
                    "proven: a game ends when one side has a proven connection"
                    f" ({ended} games ended so{self._saved()})"
                )
                return text, "proven", True
            return "off: every game played to a connection or a fault", "off", True
        if ended:
            text = f"{ended} games ended by a proven connection{self._saved()} (from the records)"
            return text, "proven", True
        return "no game ended by a proven connection (from the records)", "", False

    def _tc(self) -> tuple[str, str, bool]:
        if self.definitions:
            per = {name: _engine_tc(self.s, d) for name, d in self.definitions.items()}
            return (*_per_engine(per), True)
        per = {name: _counted(e.tcs, " games") for name, e in self.s.seen.items() if e.tcs}
        if not per:
            return UNKNOWN, "", False
        text, key = _per_engine(per)
        return text + " (from the records)", key, True

    def _openings(self) -> tuple[str, str, bool]:
        if self.s.kind not in ("tournament", "match"):
            return self._recorded_openings()
        digest, plies = self.stored.get("openings"), self.stored.get("random_openings")
        if digest:
            listed = (self.s.definition or {}).get("openings_file")
            where = f" from {_text(listed, 120)}" if listed else ""
            text = (
                f"a list of openings{where} (digest {_text(digest, 20)}), one per"
                " seat-swapped pair, both games from the same position"
            )
            return text, f"list {digest}", True
        if type(plies) is int and plies > 0:
            # Under the pie rule the engine on move decides the swap: the opening places
            # one stone (stores started before that rule say nothing of it).
            engine_swaps = self.stored.get("swap_decision") == "engine"
            stones = min(plies, 1) if engine_swaps else plies
            text = (
                f"{stones} random {'stone' if stones == 1 else 'stones'} per seat-swapped"
                " pair, both games from the same position"
            )
            if stones < plies:
                text += f" ({plies} asked; the engine on move decides the swap)"
            return text, f"random {stones}", True
        return "none: every game starts on the empty board", "none", True

    def _recorded_openings(self) -> tuple[str, str, bool]:
        """What records say: how many first moves came from an opening, when not none
        (a record says nothing of an opening of 0 plies, nor do records written before
        openings were recorded)."""
        if not self.s.openings:
            return UNKNOWN, "", False
        lengths = ", ".join(
            f"{n} {'ply' if n == 1 else 'plies'}"
            + (f" ({k} games)" if len(self.s.openings) > 1 else "")
            for n, k in sorted(self.s.openings.items())
        )
        played = sum(self.s.openings.values())
        text = (
            f"openings of {lengths} in {played} of {self.s.games + self.s.voids} games"
            " (from the records)"
        )
        return text, "", True

    def _seed(self) -> tuple[str, str, bool]:
        if self.s.kind in ("tournament", "match") and "seed" in self.stored:
            seed = self.stored["seed"]
            text = "none" if seed is None else _text(seed, 40)
            return text, text, True
        return UNKNOWN, "", False

    def _confinement(self) -> tuple[str, str, bool]:
        if not self.definitions:
            return UNKNOWN, "", False
        text, key = _per_engine({n: _limits(d) for n, d in self.definitions.items()})
        if self.stored.get("confine_per") == "pairing":
            text += "; a confined engine runs once per pairing"
        return text, key, True

    def _dates(self) -> tuple[str, str, bool]:
        s = self.s
        parts = [f"store started {_date(s.created)}"] if s.created else []
        if s.first_started:
            parts.append(
                f"games from {_date(s.first_started)} to"
                f" {_date(s.last_finished or s.first_started)}"
            )
        return ("; ".join(parts) or UNKNOWN), "", bool(parts)

    def _hosts(self) -> tuple[str, str, bool]:
        hosts = [(host, cpu, n) for (host, cpu), n in self.s.hosts.most_common()]
        if not hosts or all(not host and not cpu for host, cpu, _ in hosts):
            return UNKNOWN, "", False
        text = "; ".join(
            f"{_text(host or 'unknown host', 80)}"
            + (f" ({_text(cpu, 80)})" if cpu else "")
            + f": {n} game{'s' if n != 1 else ''}"
            for host, cpu, n in hosts[:20]
        )
        if len(hosts) > 20:
            text += f"; and {len(hosts) - 20} more"
        return text, "", True

    def engines(self) -> EngineTable:
        s = self.s
        rows = []
        stored = {str(r["name"]): r for r in s.engines}
        names = list(dict.fromkeys([*stored, *s.seen]))
        for name in names:
            row, seen, definition = stored.get(name), s.seen.get(name), self.definitions.get(name)
            if row is not None:
                command = _argv(_loads(row.get("command")) or ())
                version = _text(row.get("reply_version") or "", 80)
                answers = _text(row.get("reply_name") or "", 80)
            else:
                command = version = answers = ""
            if seen is not None:
                if not command and seen.commands:
                    command = "; ".join(_argv(c) for c in seen.commands)
                if not version and seen.versions:
                    version = _counted(Counter({_text(v, 80): n for v, n in seen.versions.items()}))
                if not answers and seen.answers:
                    answers = "; ".join(_text(a, 80) for a in seen.answers)
            setup = UNKNOWN
            if definition is not None:
                tc, confinement = _engine_tc(s, definition), _limits(definition)
                setup = _setup(definition)
            else:
                tc = _counted(seen.tcs, " games") if seen and seen.tcs else UNKNOWN
                confinement = UNKNOWN
            rows.append(
                EngineRow(
                    _text(name, 80),
                    command or UNKNOWN,
                    version or UNKNOWN,
                    answers or UNKNOWN,
                    tc,
                    confinement,
                    setup,
                )
            )
        return EngineTable(_label(s), rows, bool(self.definitions))


def _adaptive(d: dict[str, Any]) -> str:
    """An adaptive run's conditions: its budget and its stop rule (it has no rounds)."""
    games, until, confidence = d.get("games"), d.get("until"), d.get("confidence")
    text = "adaptive"
    if type(games) is int:
        text += f": a budget of {games} games, in batches of seat-swapped pairs chosen"
        text += " where the ranking is least sure"
    if until is None:
        return text + "; no stop rule: the whole budget is played"
    text += f"; stop rule until = {_text(until, 40)}"
    if isinstance(confidence, int | float) and not isinstance(confidence, bool):
        text += f" at {100 * confidence:g}% confidence"
    if type(d.get("min_games")) is int:
        text += f"; a Swiss warm-up until every engine has {d['min_games']} games"
    return _text(text)


def _label(source: SourceConditions) -> str:
    """A source as the page names it: its file's name (the page is for others to read)."""
    return _text(Path(source.label).name, 120)


def _loads(text: object) -> Any:
    try:
        return json.loads(str(text)) if text is not None else None
    except ValueError:
        return None


def conditions(sources: Sequence[SourceConditions]) -> ConditionsTable:
    """The conditions table of a report: one column per source."""
    columns = [_Column(s) for s in sources]
    cells = [c.cells() for c in columns]
    rows = []
    differences = []
    for label in ("Source", "Games", *COMPARED, "Dates", "Hosts"):
        keys = {k for column in cells for cell, k in [column[label]] if cell.known and k}
        differs = label in COMPARED and len(keys) > 1
        if differs:
            differences.append(label.lower())
        rows.append(ConditionRow(label, [column[label][0] for column in cells], differs))
    engines = [c.engines() for c in columns if c.s.kind != "repeat"]
    return ConditionsTable([_label(s) for s in sources], rows, engines, differences)
