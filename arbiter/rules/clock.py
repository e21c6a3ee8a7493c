"""Time controls and game clocks, in the syntax cutechess-cli and fastchess users know.

Pure arithmetic: the referee measures elapsed time and feeds it in, so the clock can be
tested exhaustively without waiting for anything.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from enum import Enum

from arbiter.errors import ConfigError

TC_HELP = (
    "use BASE+INC in seconds (10+0.1), MOVES/BASE+INC (40/60+0.5), st=SECONDS (st=0.5) or inf;"
    " BASE may be M:SS"
)

MAX_SECONDS = 1e6  # about 11 days: more is a typo, and would overflow engines' integers
MAX_MOVES = 10_000
_TC = re.compile(r"(?:(\d+)/)?((?:\d+:)?\d+(?:\.\d+)?)(?:\+(\d+(?:\.\d+)?))?")


def _seconds(text: str) -> float:
    if ":" in text:
        minutes, secs = text.split(":", 1)
        return int(minutes) * 60 + float(secs)
    return float(text)


def _fmt(x: float) -> str:
    return f"{x:g}"


@dataclass(frozen=True)
class TimeControl:
    """A time control. `base` and `increment` are seconds; `moves` > 0 means `base` is
    added again every `moves` moves; `per_move` > 0 means a fixed time per move; all
    zero (and `infinite`) means no clock."""

    base: float = 0.0
    increment: float = 0.0
    moves: int = 0
    per_move: float = 0.0
    infinite: bool = False

    @classmethod
    def parse(cls, text: str) -> TimeControl:
        word = text.strip().lower()
        text = text if len(text) <= 40 else text[:39] + "…"  # as messages quote it
        if word in ("inf", "infinite"):
            return cls(infinite=True)
        if word.startswith("st="):
            try:
                value = float(word[3:])
            except ValueError:
                value = -1.0
            if not 0 < value <= MAX_SECONDS:
                raise ConfigError(f"bad fixed time per move {text!r}", hint=TC_HELP)
            return cls(per_move=value)
        match = _TC.fullmatch(word)
        if match is None:
            raise ConfigError(f"cannot read time control {text!r}", hint=TC_HELP)
        moves, base, inc = match.groups()
        try:
            tc = cls(
                base=_seconds(base),
                increment=float(inc) if inc else 0.0,
                moves=int(moves) if moves else 0,
            )
        except ValueError:  # more digits than Python converts
            tc = cls(base=math.inf)
        if not max(tc.base, tc.increment) <= MAX_SECONDS or tc.moves > MAX_MOVES:
            raise ConfigError(
                f"time control {text!r} is out of range",
                hint=f"BASE and INC at most {MAX_SECONDS:g} seconds, MOVES at most"
                f" {MAX_MOVES}; for no clock at all use inf",
            )
        if tc.base <= 0 and tc.increment <= 0:
            raise ConfigError(f"time control {text!r} gives no time at all", hint=TC_HELP)
        if moves is not None and tc.moves <= 0:
            raise ConfigError(f"time control {text!r}: MOVES must be at least 1", hint=TC_HELP)
        return tc

    def __str__(self) -> str:
        if self.infinite:
            return "inf"
        if self.per_move:
            return f"st={_fmt(self.per_move)}"
        text = _fmt(self.base)
        if self.moves:
            text = f"{self.moves}/{text}"
        return f"{text}+{_fmt(self.increment)}"  # `1+0` stays `1+0`: the increment is explicit

    @property
    def clocked(self) -> bool:
        return not self.infinite

    def scaled(self, factor: float) -> TimeControl:
        """This time control for a host `factor` times as fast as the reference: its
        times divided by the factor (a host half as fast gets twice the time)."""
        if self.infinite or factor <= 0:
            return self
        return TimeControl(
            base=self.base / factor,
            increment=self.increment / factor,
            moves=self.moves,
            per_move=self.per_move / factor,
        )


class ClockMode(Enum):
    """What a clock charges: the wall time from the question to the answer, or the CPU
    time the engine's own processes used meanwhile (see arbiter.engines.cputime)."""

    WALL = "wall"
    CPU = "cpu"


# Under `clock = "cpu"`, a move still ends after this many times the time it had left
# (plus margin and grace) of wall time: an engine that waits without computing (sleep,
# a GPU, the network) would otherwise never run out of CPU time.
WALL_CEILING = 3.0


DEFAULT_TC = TimeControl(10, 0.1)  # a match's or tournament's when none is given


@dataclass
class GameClock:
    """One player's clock, updated the way cutechess and fastchess do it.

    The clock starts at BASE + INC. After each move the elapsed time is subtracted; a
    remainder below -margin loses on time; otherwise it is clamped at zero (an engine
    is never told a negative time) and INC is added. With MOVES/BASE, BASE is added
    again after every MOVES moves.
    """

    tc: TimeControl
    margin: float = 0.1
    remaining: float = 0.0
    moves_left: int = 0
    flagged: bool = False

    def __post_init__(self) -> None:
        if self.tc.per_move:
            self.remaining = self.tc.per_move
        else:
            self.remaining = self.tc.base + self.tc.increment
        self.moves_left = self.tc.moves

    def budget(self, infinite_move_limit: float) -> float:
        """Seconds this player may use for its next move before it loses on time."""
        if self.tc.infinite:
            return infinite_move_limit
        return self.remaining

    def deadline(self, grace: float, infinite_move_limit: float) -> float:
        """Seconds after which the referee stops waiting and kills the engine."""
        if self.tc.infinite:
            return infinite_move_limit
        return self.remaining + self.margin + grace

    def remaining_ms(self) -> int:
        return max(0, round(self.remaining * 1000))

    def stop(self, elapsed: float) -> bool:
        """Charge a move that took `elapsed` seconds; returns False if it lost on time."""
        tc = self.tc
        if tc.infinite:
            return True
        if tc.per_move:
            if elapsed > tc.per_move + self.margin:
                self.flagged = True
                return False
            return True
        self.remaining -= elapsed
        if self.remaining < -self.margin:
            self.flagged = True
            return False
        self.remaining = max(0.0, self.remaining)
        if tc.moves:
            if self.moves_left <= 1:
                self.moves_left = tc.moves
                self.remaining += tc.base
            else:
                self.moves_left -= 1
        self.remaining += tc.increment
        return True
