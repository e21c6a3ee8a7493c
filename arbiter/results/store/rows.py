"""What the store's readers get back: one value type per kind of row, and `Damage`, a
row that cannot be trusted."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Protocol


class Scheduled(Protocol):
    """What a scheduled game tells those who file its result (`engines`: the seats'
    engine keys, seat 1 first)."""

    @property
    def game_id(self) -> str: ...
    @property
    def number(self) -> int: ...
    @property
    def round(self) -> int: ...
    @property
    def pair_key(self) -> str: ...
    @property
    def engines(self) -> tuple[str, str]: ...
    @property
    def opening(self) -> tuple[str, ...]: ...


@dataclass(frozen=True)
class EngineEntry:
    """An engine as a tournament first stores it: its conditions of play, its command,
    and the hashes of what that command runs (`None`: not readable here)."""

    definition: Mapping[str, Any]
    command: tuple[str, ...]
    program_sha256: str | None = None
    script_sha256: str | None = None


@dataclass(frozen=True)
class CountRow:
    """Games between two engines in these seats, from seat 1's point of view."""

    seat1: str
    seat2: str
    seat1_wins: int
    seat2_wins: int


@dataclass(frozen=True)
class GameRow:
    game_id: str
    started: str
    seat1: str
    seat2: str
    winner_seat: int
    termination: str
    pair_key: str


@dataclass(frozen=True)
class SeatPlayed:
    """What one seat's engine played a stored game under, as JSON text from its record
    (None where the record has no such field): the store keeps it, readers judge it."""

    tc: str | None
    variant: str | None
    versions: str | None
    command: str | None


@dataclass(frozen=True)
class ResultRow:
    game_id: str
    round: int
    seat1: str
    seat2: str
    winner_seat: int  # 1 or 2


@dataclass(frozen=True)
class Damage:
    """A stored row that cannot be trusted: where it is and what is wrong with it."""

    store: str
    table: str
    row: int
    label: str  # what names the row: its game id, meta key or engine name
    problem: str

    def __str__(self) -> str:
        return f"{self.store}: {self.table} row {self.row} ({self.label}): {self.problem}"
