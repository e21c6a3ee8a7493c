"""Game records: one JSON object per game, one game per line (JSON Lines).

The format is documented in docs/records.md. Records are the evidence: a faulty game
keeps the last exchanges with the engine at fault, its exit status and its stderr tail.
"""

from __future__ import annotations

import contextlib
import datetime as _dt
import json
import math
import os
import re
import stat
import traceback as _traceback
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field, fields
from enum import StrEnum
from pathlib import Path
from typing import Any

from arbiter.errors import ConfigError, StoreError
from arbiter.rules import Color, Game, IllegalMove, Variant, replay_winner

SCHEMA = 1


def timestamp() -> str:
    """Now, as records write it: UTC, ISO 8601 with milliseconds."""
    return _dt.datetime.now(_dt.UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


class Termination(StrEnum):
    """How a game ended. All but CONNECTION, RESIGN and ADJUDICATED are engine faults."""

    CONNECTION = "connection"
    RESIGN = "resign"
    # The referee proved a connection for the winner (`adjudicate = "proven"`), or the
    # tournament's outside judge (`solver`) named the winner: the record's evidence holds
    # the proof, or the solver's answer. Rated as a connection.
    ADJUDICATED = "adjudicated"
    TIME = "time"
    ILLEGAL = "illegal"
    PROTOCOL = "protocol"
    CRASH = "crash"
    STALL = "stall"
    DESYNC = "desync"
    # A remote engine's connection dropped mid-game and did not come back in time.
    DISCONNECT = "disconnect"
    # A resource limit of the engine's definition (see arbiter.engines.sandbox.Limits), named
    # where the kernel tells which one; otherwise the fault keeps its own name.
    MEMORY = "memory"
    CPU = "cpu"
    PROCESSES = "processes"
    DISK = "disk"
    SETUP = "setup"  # only on void games: a fault before the first genmove
    HARNESS = "harness"  # only on void games: the harness itself failed

    def __str__(self) -> str:
        return self.value

    @property
    def rated(self) -> bool:
        """Whether a game that ended this way counts: all but the void ones."""
        return self not in _VOID_ONLY

    @property
    def fault(self) -> bool:
        """Whether the loser lost by a fault of its own (a forfeit)."""
        return self not in _NOT_FAULTS


_VOID_ONLY = frozenset({Termination.SETUP, Termination.HARNESS})
_NOT_FAULTS = frozenset(
    {Termination.CONNECTION, Termination.RESIGN, Termination.ADJUDICATED, *_VOID_ONLY}
)
RATED = frozenset(t.value for t in Termination if t.rated)
FAULTS = tuple(t.value for t in Termination if t.fault)


class Stage(StrEnum):
    """Where a fault happened: an engine that never came up stops a run at once."""

    START = "start"  # the engine could not be started at all
    GAME = "game"
    HARNESS = "harness"  # the harness's own fault (the engine named is "harness")


class StoneColor(StrEnum):
    BLACK = "black"
    WHITE = "white"


TRACEBACK_LIMIT = 20_000  # characters of a harness fault's traceback kept in its record


@dataclass
class Evidence:
    """What the referee saw of the engine at fault."""

    engine: str
    detail: str
    transcript: list[str] = field(default_factory=list)
    returncode: int | None = None
    stderr_tail: str = ""
    stage: Stage = Stage.GAME
    limit: dict[str, Any] | None = None  # the limit broken and the kernel's counters
    traceback: str = ""  # a harness fault's own traceback (engine "harness")
    # An adjudicated game's proof (engine "referee"): its owner, its chain of groups and
    # each link's kind and carrier, as cell names (see arbiter.games.adjudication).
    proof: dict[str, Any] | None = None
    # An outside judge's answer that ended the game (engine: the solver): the solver,
    # the command asked, its answer (capped, escaped) and its budget in seconds; trusted,
    # not proven (see arbiter.games.solver).
    solver: dict[str, Any] | None = None

    @classmethod
    def of_harness(
        cls, detail: str, exc: BaseException | None = None, transcript: list[str] | None = None
    ) -> Evidence:
        """The evidence of a fault of the harness's own: no engine is at fault, and the
        traceback (its end, if long) is the story a one-line reason cannot tell."""
        story = "".join(_traceback.format_exception(exc))[-TRACEBACK_LIMIT:] if exc else ""
        return cls(
            engine="harness",
            detail=detail,
            transcript=transcript or [],
            stage=Stage.HARNESS,
            traceback=story,
        )


@dataclass(frozen=True)
class GameRecord:
    game_id: str
    variant: dict[str, Any]
    seat1: str
    seat2: str
    tc: dict[str, str]
    started: str
    termination: Termination  # no default: every path that makes a record says how it ended
    finished: str = ""
    swapped: bool = False
    black: str = ""
    white: str = ""
    moves: list[str] = field(default_factory=list)
    move_ms: list[float] = field(default_factory=list)
    # How many of the first moves came from the opening, not from the engines (written
    # only when not 0; records written before it was kept say nothing of their openings).
    opening: int = 0
    winner: str | None = None
    winner_color: StoneColor | None = None
    void: bool = False
    reason: str = ""
    versions: dict[str, str] = field(default_factory=dict)
    evidence: Evidence | None = None
    seed: int | None = None
    pair: str = ""  # the same for both games of a seat-swapped pair (empty if unknown)
    commands: dict[str, list[str]] = field(default_factory=dict)  # seat1/seat2: argv
    # seat1/seat2: the values of the command's `{NAME}` placeholders this game was played
    # at (a tuned engine's; written only when some seat has them).
    params: dict[str, dict[str, float]] = field(default_factory=dict)
    answers: dict[str, str] = field(default_factory=dict)  # seat1/seat2: its `name` answer
    host: str = ""  # the machine that played the game (empty if unknown)
    cpu: str = ""  # that machine's CPU model: a slow node shows up in the standings by host
    # That machine's speed factor (`arbiter calibrate`): from the CPU time of the
    # reference work where a seat's clock charged CPU time, else from its wall time.
    # Written only when measured.
    speed: float | None = None
    # Milliseconds of the engines' waits during which the harness itself was stalled
    # (paused, suspended, starved): never charged to an engine (written only when not 0).
    stalled_ms: float = 0.0
    # Engines over the network (the arena): per ply, the network time not charged to the
    # mover's clock, and the time the mover's client said its engine took (-1: nothing
    # said, or not a remote engine). Recorded, never trusted; written only when kept.
    allowance_ms: list[float] = field(default_factory=list)
    reported_ms: list[float] = field(default_factory=list)
    # Seats whose clock charged CPU time (`clock = "cpu"`): seat1/seat2 to "cpu" or
    # "wall", and per ply the wall time the move took besides the charged `move_ms`.
    # Written only when some seat's clock charged CPU time.
    clock: dict[str, str] = field(default_factory=dict)
    wall_ms: list[float] = field(default_factory=list)
    schema: int = SCHEMA

    @property
    def plies(self) -> int:
        return len(self.moves)

    @property
    def rules(self) -> Variant:
        """The variant as the rules take it (the record keeps it as plain JSON)."""
        v = self.variant
        return Variant(v["islands"], v["size"], v["pie"])

    def replay(self, ply: int | None = None) -> Game:
        """The position after `ply` plies (all of them by default), replayed with the
        rules; IllegalMove where a record's moves do not replay."""
        game = Game(self.rules)
        for move in self.moves if ply is None else self.moves[:ply]:
            game.play(move)
        return game

    @property
    def loser(self) -> str | None:
        if self.winner is None:
            return None
        return self.seat2 if self.winner == self.seat1 else self.seat1

    def to_json(self) -> dict[str, Any]:
        # Shallow copies: `asdict` would deep-copy every move name, a millisecond a game.
        data = {f.name: getattr(self, f.name) for f in fields(self)}
        for key, value in data.items():
            if isinstance(value, list | dict):
                data[key] = value.copy()
        data["evidence"] = None if self.evidence is None else asdict(self.evidence)
        data["termination"] = self.termination.value
        data["plies"] = self.plies
        if not self.stalled_ms:
            del data["stalled_ms"]
        if self.speed is None:
            del data["speed"]
        if not self.params:
            del data["params"]
        if not self.opening:
            del data["opening"]
        if not self.allowance_ms:
            del data["allowance_ms"]
        if not self.reported_ms:
            del data["reported_ms"]
        if not self.clock:
            del data["clock"]
        if not self.wall_ms:
            del data["wall_ms"]
        if self.evidence is None:
            del data["evidence"]
        else:
            if self.evidence.limit is None:
                del data["evidence"]["limit"]
            if not self.evidence.traceback:
                del data["evidence"]["traceback"]
            if self.evidence.proof is None:
                del data["evidence"]["proof"]
            if self.evidence.solver is None:
                del data["evidence"]["solver"]
        # Field order: identity first, then outcome, then details.
        order = [
            "schema",
            "game_id",
            "variant",
            "seat1",
            "seat2",
            "swapped",
            "black",
            "white",
            "winner",
            "winner_color",
            "termination",
            "void",
            "reason",
            "plies",
            "moves",
            "move_ms",
            "opening",
            "tc",
            "started",
            "finished",
            "versions",
            "seed",
            "pair",
            "commands",
            "params",
            "answers",
            "host",
            "cpu",
            "speed",
            "stalled_ms",
            "allowance_ms",
            "reported_ms",
            "clock",
            "wall_ms",
            "evidence",
        ]
        return {k: data[k] for k in order if k in data}

    def dumps(self) -> str:
        return json.dumps(self.to_json(), separators=(",", ":"))

    @classmethod
    def from_json(cls, data: Any) -> GameRecord:
        """A record from its JSON object; ValueError says what is wrong with it."""
        if not isinstance(data, dict):
            raise ValueError(f"a JSON {type(data).__name__}, not an object")
        if data.get("schema") != SCHEMA:
            raise ValueError(f"unsupported record schema {data.get('schema')!r}")
        variant = data.get("variant")
        if not (isinstance(variant, dict) and set(variant) == {"size", "islands", "pie"}):
            raise ValueError("variant must be an object with size, islands and pie")
        if not all(type(variant[k]) is int for k in ("size", "islands")) or not isinstance(
            variant["pie"], bool
        ):
            raise ValueError("variant size and islands must be integers, pie true or false")
        rules = Variant(variant["islands"], variant["size"], variant["pie"])  # ValueError
        _check_fields(data, _RECORD_FIELDS, "record")
        _check_meaning(data, rules)
        fields = dict(data)
        fields.pop("plies", None)
        evidence = fields.pop("evidence", None)
        fields["termination"] = Termination(fields["termination"])
        if fields.get("winner_color") is not None:
            fields["winner_color"] = StoneColor(fields["winner_color"])
        if evidence is not None:
            if not isinstance(evidence, dict):
                raise ValueError("evidence must be an object")
            _check_fields(evidence, _EVIDENCE_FIELDS, "evidence")
            fields["evidence"] = Evidence(
                **{**evidence, "stage": Stage(evidence.get("stage", "game"))}
            )
        if fields["termination"] is Termination.ADJUDICATED and (
            evidence is None
            or (
                not isinstance(evidence.get("proof"), dict)
                and not isinstance(evidence.get("solver"), dict)
            )
        ):
            raise ValueError("an adjudicated game without its proof or solver in the evidence")
        return cls(**fields)


def _check_meaning(data: dict[str, Any], variant: Variant) -> None:
    """What the field types cannot say: a record that loads can be rated (two seats, a
    winner among them, a termination a rated game can have), and shown and replayed:
    the rules replay its moves (cells of its board, none played twice, a swap only as
    move 2 under the pie rule), a connection is claimed exactly when they make one, and
    for the side recorded as the winner."""
    seat1, seat2, winner = data["seat1"], data["seat2"], data.get("winner")
    if seat1 == seat2:
        raise ValueError("both seats have the same name")
    if winner is not None and winner not in (seat1, seat2):
        raise ValueError("winner is neither seat")
    if not data.get("void", False):
        if data["termination"] not in RATED:
            raise ValueError(f"termination {data['termination']!r} on a rated game")
        if winner is None:
            raise ValueError("a rated game without a winner")
    moves = data.get("moves", ())
    if "plies" in data and data["plies"] != len(moves):
        raise ValueError(f"plies is {data['plies']} but there are {len(moves)} moves")
    if data.get("opening", 0) > len(moves):
        raise ValueError(f"opening is {data['opening']} plies but there are {len(moves)} moves")
    try:
        winner_is = replay_winner(variant, moves)
    except IllegalMove:
        game = Game(variant)
        for ply, move in enumerate(moves, 1):
            try:
                game.play(move)
            except IllegalMove as exc:
                raise ValueError(f"the moves do not replay at ply {ply}: {exc}") from None
        raise  # pragma: no cover - the replay above refuses the same move
    termination = data["termination"]
    if winner_is is None:
        if termination == Termination.CONNECTION.value:
            raise ValueError("it ended by connection, but its moves connect no islands")
        return
    color = "black" if winner_is is Color.BLACK else "white"
    if termination != Termination.CONNECTION.value:
        raise ValueError(f"its moves connect for {color}, but it ended by {termination}")
    if data.get("winner_color") not in (None, color):
        raise ValueError(f"its moves connect for {color}, not for the recorded winner")
    holder = data.get(color)
    if winner is not None and holder and holder != winner:
        raise ValueError(f"its moves connect for {color} ({holder}), not for {winner}")


def _is_text_map(value: Any) -> bool:
    return isinstance(value, dict) and all(isinstance(v, str) for v in value.values())


def _is_number(value: Any) -> bool:
    return type(value) in (int, float) and math.isfinite(value)


_NUMBER_TYPES = frozenset({int, float})


def _are_numbers(value: Any) -> bool:
    """A list of finite numbers (no booleans), checked in C loops: a record's move times
    are read for every record."""
    return (
        isinstance(value, list)
        and set(map(type, value)) <= _NUMBER_TYPES
        and all(map(math.isfinite, value))
    )


def _are_texts(value: Any) -> bool:
    return isinstance(value, list) and set(map(type, value)) <= {str}


# What each field of a record may hold: every reader (standings, show, the report) can
# then trust a record that loaded, whoever wrote the file.
_RECORD_FIELDS: dict[str, Any] = {
    "schema": lambda v: v == SCHEMA,
    "game_id": str,
    "variant": dict,
    "seat1": str,
    "seat2": str,
    "started": str,
    "finished": str,
    "swapped": bool,
    "black": str,
    "white": str,
    "reason": str,
    "pair": str,
    "host": str,
    "cpu": str,
    "void": bool,
    "plies": lambda v: type(v) is int,
    "termination": lambda v: v in {t.value for t in Termination},
    "winner": (str, type(None)),
    "winner_color": lambda v: v is None or v in {c.value for c in StoneColor},
    "seed": lambda v: v is None or type(v) is int,
    "moves": _are_texts,
    "move_ms": _are_numbers,
    "opening": lambda v: type(v) is int and v >= 0,
    "tc": lambda v: _is_text_map(v) and {"seat1", "seat2"} <= set(v),
    "versions": _is_text_map,
    "answers": _is_text_map,
    "commands": lambda v: (
        isinstance(v, dict)
        and all(isinstance(a, list) and all(isinstance(w, str) for w in a) for a in v.values())
    ),
    "params": lambda v: (
        isinstance(v, dict)
        and all(
            isinstance(p, dict) and all(isinstance(k, str) and _is_number(x) for k, x in p.items())
            for p in v.values()
        )
    ),
    "evidence": (dict, type(None)),
    "stalled_ms": lambda v: _is_number(v) and v >= 0,
    "speed": lambda v: v is None or (_is_number(v) and v > 0),
    "allowance_ms": _are_numbers,
    "reported_ms": _are_numbers,
    "clock": lambda v: _is_text_map(v) and set(v.values()) <= {"cpu", "wall"},
    "wall_ms": _are_numbers,
}
_EVIDENCE_FIELDS: dict[str, Any] = {
    "engine": str,
    "detail": str,
    "stderr_tail": str,
    "stage": lambda v: v in {s.value for s in Stage},
    "transcript": lambda v: isinstance(v, list) and all(isinstance(x, str) for x in v),
    "returncode": lambda v: v is None or type(v) is int,
    "limit": (dict, type(None)),
    "traceback": str,
    "proof": lambda v: v is None or _is_proof(v),
    "solver": lambda v: v is None or _is_solver(v),
}


def _is_solver(value: Any) -> bool:
    """The shape of an outside judge's answer (arbiter.games.solver.Judgement)."""
    return (
        isinstance(value, dict)
        and set(value) == {"engine", "command", "answer", "budget"}
        and _are_texts([value["engine"], value["command"], value["answer"]])
        and type(value["budget"]) in (int, float)
    )


def _is_proof(value: Any) -> bool:
    """The shape of an adjudicated game's proof (arbiter.games.adjudication.proof_json):
    every reader may then print it without checking it again."""
    return (
        isinstance(value, dict)
        and set(value) - {"key"} == {"owner", "chain", "links"}
        and isinstance(value.get("key", ""), str)
        and value["owner"] in ("black", "white")
        and isinstance(value["chain"], list)
        and all(
            isinstance(g, dict)
            and set(g) == {"stones", "islands"}
            and _are_texts(g["stones"])
            and isinstance(g["islands"], list)
            and all(type(i) is int for i in g["islands"])
            for g in value["chain"]
        )
        and isinstance(value["links"], list)
        and all(
            isinstance(link, dict)
            and set(link) == {"kind", "carrier"}
            and isinstance(link["kind"], str)
            and _are_texts(link["carrier"])
            for link in value["links"]
        )
    )


_REQUIRED = ("game_id", "variant", "seat1", "seat2", "tc", "started", "termination")


def _check_fields(data: dict[str, Any], shapes: dict[str, Any], what: str) -> None:
    unknown = set(data) - set(shapes)
    if unknown:
        raise ValueError(f"unknown {what} field(s) {', '.join(sorted(map(str, unknown)))[:200]}")
    if what == "record":
        missing = [k for k in _REQUIRED if k not in data]
        if missing:
            raise ValueError(f"missing record field(s) {', '.join(missing)}")
    elif not {"engine", "detail"} <= set(data):
        raise ValueError("evidence needs engine and detail")
    for key, value in data.items():
        shape = shapes[key]
        ok = isinstance(value, shape) if isinstance(shape, type | tuple) else shape(value)
        if not ok or (shape is str and not isinstance(value, str)):
            raise ValueError(f"{what} field {key!r} has the wrong type or value")


class RecordWriter:
    """Appends records to a JSON Lines file, one complete line per write.

    Each record is written with a single os.write on a file opened in append mode, so
    an interrupted run leaves whole lines only, and other writers' lines are not torn.
    """

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)
        _check_appendable(self.path)
        try:
            self._fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        except OSError as exc:
            raise ConfigError(
                f"cannot open records file for appending: {exc.strerror}",
                where=str(self.path),
                hint="choose a writable path with --records",
            ) from exc

    def write(self, record: GameRecord) -> None:
        """Append one whole line, or nothing: a write that fails part-way (disk full,
        quota, file size limit) is cut back to the last complete line before the error
        is raised, so the file stays readable and the next run appends cleanly."""
        data = memoryview((record.dumps() + "\n").encode())
        start = None
        try:
            start = os.fstat(self._fd).st_size
            while data:
                data = data[os.write(self._fd, data) :]
        except OSError as exc:
            if start is not None:
                with contextlib.suppress(OSError):
                    os.ftruncate(self._fd, start)
            raise StoreError(
                f"cannot append to {self.path}: {exc.strerror}; the records written so far"
                " are intact, free some space or choose another --records file"
            ) from exc

    def close(self) -> None:
        os.close(self._fd)


def _check_appendable(path: Path) -> None:
    """Refuse to append records to a file that holds something else (a tournament file,
    a results store, any text): the lines would damage it and be lost in it. A new or
    empty file, a records file, a device or a pipe is fine."""
    hint = "give a new .jsonl path, or a records file written by --records"
    if path.suffix.lower() == ".toml":
        raise ConfigError(
            "is a tournament or engines file name, not a records file", where=str(path), hint=hint
        )
    try:
        if not stat.S_ISREG(os.stat(path).st_mode):
            return
        with open(path, "rb") as handle:
            first = handle.readline(1 << 24)
    except OSError:
        return  # opening it for appending says what is wrong
    if not first:
        return
    if first.startswith(b"SQLite format 3\x00"):
        raise ConfigError(
            "is an SQLite database (a results store?), not a records file",
            where=str(path),
            hint=hint,
        )
    try:
        data = json.loads(first)
    except (ValueError, RecursionError):
        data = None
    if not isinstance(data, dict):
        raise ConfigError(
            "is not a records file (its first line is not a JSON object)",
            where=str(path),
            hint=hint,
        )


@dataclass(frozen=True)
class BadLine:
    """A line of a records file that is not a game record: every reader reports it the
    same way (and skips it, or stops at it under --strict)."""

    path: str
    line: int
    problem: str

    def __str__(self) -> str:
        return f"{self.path}:{self.line}: not a game record ({self.problem})"


def parse_line(line: str | bytes) -> GameRecord:
    """One records line as a game record; ValueError says why it is not one."""
    try:
        data = json.loads(line)
    except RecursionError as exc:
        raise ValueError("nested too deeply") from exc
    except ValueError as exc:
        raise ValueError(f"invalid JSON: {str(exc)[:200]}") from exc
    try:
        return GameRecord.from_json(data)
    except (TypeError, KeyError, AttributeError, RecursionError) as exc:
        raise ValueError(f"{type(exc).__name__}: {str(exc)[:200]}") from exc


MAX_LINE = 16 << 20  # characters: a record is a few KB; a longer line is not one
_TOO_LONG = "\0too long\0"


def _lines(handle: Any) -> Iterator[str]:
    """The lines of a text file, each at most MAX_LINE characters: a longer one is read
    through (in bounded pieces) and stands as _TOO_LONG, so memory never follows it."""
    while line := handle.readline(MAX_LINE):
        if len(line) == MAX_LINE and not line.endswith("\n"):
            while (rest := handle.readline(MAX_LINE)) and not rest.endswith("\n"):
                pass
            yield _TOO_LONG
            continue
        yield line


def read_records(
    path: str | os.PathLike[str], bad: list[BadLine] | None = None
) -> Iterator[GameRecord]:
    """The records of a file, in file order: the one reader every command uses.

    Without `bad` the first line that is not a game record raises ConfigError naming
    the file and line; with it, each such line is described there and reading goes on.
    """
    try:
        mode = os.stat(path).st_mode
        if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
            raise ConfigError(
                "cannot read records: a device, not a records file",
                where=str(path),
                hint="give a records file, a store or a tournament file (a pipe is fine)",
            )
        handle = open(path, encoding="utf-8", errors="replace")  # noqa: SIM115 - closed below
    except OSError as exc:
        raise ConfigError(
            f"cannot read records: {exc.strerror}",
            where=str(path),
            hint="give a records file, a store or a tournament file",
        ) from exc
    with handle:
        for number, line in enumerate(_lines(handle), 1):
            if not line.strip():
                continue
            try:
                if line is _TOO_LONG:
                    raise ValueError(f"a line longer than {MAX_LINE >> 20} MB")
                record = parse_line(line)
            except ValueError as exc:
                problem = BadLine(str(path), number, str(exc))
                if bad is not None:
                    bad.append(problem)
                    continue
                raise ConfigError(
                    f"not a game record ({exc})",
                    where=f"{path}:{number}",
                    hint="records files are written by 'arbiter match --records'",
                ) from exc
            yield record


# A records line's game id, read without parsing the line: the key as the writer puts it
# (a nested object holding a "game_id" key would need an engine of that name; a line
# this finds nothing in is parsed).
_GAME_ID = re.compile(r'"game_id"\s*:\s*"((?:[^"\\]|\\.)*)"')


def scan_ids(path: str | os.PathLike[str]) -> Iterator[tuple[int, str | None, str]]:
    """(line number, game id, line) for every non-blank line of a records file, the id
    read without building or checking the record (None if the line has none): what finds
    one game in a large file. The line found is then read with `parse_line`, which checks
    it as every reader does."""
    try:
        handle = open(path, encoding="utf-8", errors="replace")  # noqa: SIM115 - closed below
    except OSError as exc:
        raise ConfigError(
            f"cannot read records: {exc.strerror}", where=str(path), hint="give a records file"
        ) from exc
    with handle:
        for number, line in enumerate(_lines(handle), 1):
            if line is _TOO_LONG or not line.strip():
                continue
            match = _GAME_ID.search(line)
            found: str | None = None
            if match is not None:
                text = match.group(1)
                try:
                    found = json.loads(f'"{text}"') if "\\" in text else text
                except ValueError:
                    found = None
            else:
                try:
                    data = json.loads(line)
                except (ValueError, RecursionError):
                    data = None
                if isinstance(data, dict) and isinstance(data.get("game_id"), str):
                    found = data["game_id"]
            yield number, found, line
