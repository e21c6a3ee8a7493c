"""What people read: progress lines, the live bar and the match summary.

The progress printers are a run's reporters (`arbiter.runs.driver.Reporter`, implemented
structurally: views know runs only through the values they are handed).
"""

from __future__ import annotations

import json
import logging
import math
import os
import tempfile
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import TYPE_CHECKING, Any, TextIO

from wcwidth import wcswidth

from arbiter.engines.process import exit_status
from arbiter.results.ratings import DEFAULT_PRIOR
from arbiter.results.records import GameRecord, Termination
from arbiter.results.score import MatchResult
from arbiter.text import escape, shorten, terminal
from arbiter.views.standings_text import difference_text, los_text, rounded

if TYPE_CHECKING:  # what a run hands its reporter; `show` and `report` need no run
    from arbiter.runs.driver import RunOutcome
    from arbiter.runs.schedule import ScheduledGame

log = logging.getLogger(__name__)


LEGENDS = {
    8: "X black stone, O white stone, . empty; islands: N E S W Black's, n e s w White's",
    4: "X black stone, O white stone, . empty; B Black's edges (top, bottom), W White's",
}


def describe_game(record: GameRecord, ply: int | None = None) -> list[str]:
    """A recorded game for people: players, result, evidence of a fault, and the board.

    Raises IllegalMove if the record's moves do not replay (a damaged record).
    """
    game = record.replay(ply)
    moves = record.moves if ply is None else record.moves[:ply]
    tc = record.tc["seat1"]
    if record.tc["seat2"] != tc:
        tc = f"{tc} (seat 1), {record.tc['seat2']} (seat 2)"
    lines = [
        f"Game {record.game_id}: {record.seat1} (seat 1) vs {record.seat2} (seat 2),"
        f" {game.variant}, tc {tc}",
        f"Result: {describe_result(record)}",
    ]
    evidence = record.evidence
    if evidence is not None and evidence.proof is not None:
        lines += proof_lines(evidence.proof)
    elif evidence is not None and evidence.solver is not None:
        said = evidence.solver
        lines.append(
            f"Judged by the solver {said['engine']} (its word, not a proof): asked"
            f" {said['command']!r} with {said['budget']:g} s, it answered {said['answer']!r}"
        )
        lines += ["  | " + line for line in evidence.transcript[-4:]]
    elif evidence is not None:
        status = ""
        if evidence.returncode is not None:
            status = f" ({exit_status(evidence.returncode)})"
        lines.append(f"Evidence against {evidence.engine}{status}:")
        lines += ["  | " + line for line in evidence.transcript[-8:]]
        tail = evidence.stderr_tail.strip().splitlines()[-5:]
        lines += ["  stderr: " + line for line in tail] or ["  stderr: (nothing)"]
    if not record.moves:
        lines.append("No moves were played.")
        return lines
    swapped = "   (swapped)" if record.swapped else ""
    lines.append(f"Black: {record.black}   White: {record.white}{swapped}")
    lines.append(
        f"Position after {len(moves)} of {len(record.moves)} plies"
        + (f", {game.to_move} to move" if not game.over else "")
    )
    lines.append(game.render(marked=True))
    legend = LEGENDS.get(game.variant.islands, "")
    lines.append(legend + "; x/o the last stone" + ("; * the winning chain" if game.over else ""))
    lines += move_list(record.moves, len(moves))
    return lines


def proof_lines(proof: dict[str, Any]) -> list[str]:
    """An adjudicated game's proof, as the record keeps it: the owner's chain of groups
    and, between each two, the link's kind and its carrier (the empty cells it needs,
    pairwise disjoint). The owner answers an intrusion into a carrier inside it."""
    chain, links = proof["chain"], proof["links"]
    lines = [f"Proof ({escape(proof['owner'])}): {len(links)} links, carriers disjoint"]
    if "key" in proof:  # a win for the side to move: the proof holds once it plays there
        lines.append(f"  key move: {escape(proof['key'])}, played first by the side to move")
    for i, group in enumerate(chain):
        stones = " ".join(escape(c) for c in group["stones"]) or "(an island alone)"
        islands = f"; islands {', '.join(map(str, group['islands']))}" if group["islands"] else ""
        lines.append(f"  group {i + 1}: {shorten(stones, 200)}{islands}")
        if i < len(links):
            link = links[i]
            carrier = " ".join(escape(c) for c in link["carrier"])
            lines.append(f"    link {escape(link['kind'])}: carrier {shorten(carrier, 200)}")
    return lines


def move_list(moves: list[str], upto: int, width: int = 78) -> list[str]:
    """Numbered moves, wrapped; the position shown is after move `upto`."""
    words = [
        f"{n}.{m}" + ("<" if n == upto and upto < len(moves) else "")
        for n, m in enumerate(moves, 1)
    ]
    lines, line = ["Moves:"], ""
    for word in words:
        if len(line) + len(word) + 1 > width:
            lines.append(line)
            line = ""
        line = f"{line} {word}" if line else word
    if line:
        lines.append(line)
    return lines


LIST_HEADERS = ("#", "id", "seats", "result", "plies")


def list_games(records: Iterable[GameRecord]) -> Iterator[str]:
    """One line per game: id, players, result, plies (for `show` without --game), as a
    plain table whose columns fit every row. The rows are spooled to a temporary file as
    they are read, so that memory does not follow the number of games; the lines come
    once the records are read."""
    widths = [_width(h) + 2 for h in LIST_HEADERS]  # as tabulate's "simple" pads headers
    with tempfile.TemporaryFile("w+", encoding="utf-8") as spool:
        for n, r in enumerate(records, 1):
            row = [
                str(n),
                r.game_id,
                f"{r.seat1} vs {r.seat2}",
                describe_result(r, brief=True),
                str(r.plies),
            ]
            row = [escape(cell, newlines=True) for cell in row]
            for i, cell in enumerate(row):
                widths[i] = max(widths[i], _width(cell))
            spool.write(json.dumps(row) + "\n")
        if not spool.tell():
            return
        yield _row(LIST_HEADERS, widths)
        yield _row(["-" * w for w in widths], widths)
        spool.seek(0)
        for line in spool:
            yield _row(json.loads(line), widths)


def _width(text: str) -> int:
    """Columns a cell takes on a terminal (wide characters count two), measured as
    tabulate measures them (it uses wcwidth too), so the columns line up."""
    width = wcswidth(text)
    return len(text) if width < 0 else int(width)


def _row(cells: Sequence[str], widths: list[int]) -> str:
    return "  ".join(c + " " * (w - _width(c)) for c, w in zip(cells, widths, strict=True)).rstrip()


def describe_result(record: GameRecord, *, brief: bool = False) -> str:
    """The result in words; `brief` leaves a fault's evidence to `show --game`, so that a
    list's result column says who won and how, whole, on every line."""
    if record.void:
        reason = shorten(record.reason, 40) if brief else record.reason
        return f"void, not rated ({reason})"
    if record.termination is Termination.CONNECTION:
        return f"{record.winner} wins by connection"
    if record.termination is Termination.RESIGN:
        return f"{record.winner} wins: {record.loser} resigns"
    if record.termination is Termination.ADJUDICATED:
        said = record.evidence.solver if record.evidence else None
        if said is not None:  # an outside judge's word, not a proof
            judge = f"adjudicated by the solver {said['engine']}"
            return (
                f"{record.winner} wins ({judge})"
                if brief
                else f"{record.winner} wins ({judge}: {record.reason})"
            )
        if brief:
            return f"{record.winner} wins by a proven connection (adjudicated)"
        return f"{record.winner} wins by a proven connection (adjudicated: {record.reason})"
    if brief:
        return f"{record.winner} wins: {record.loser} forfeits ({record.termination})"
    detail = record.evidence.detail if record.evidence else record.reason
    return f"{record.winner} wins: {record.loser} forfeits ({record.termination}: {detail})"


class Progress:
    """Progress on stderr: one line per event, and a bar kept at the bottom on a terminal.

    `done` games of the `total` were played before this run (a resumed store)."""

    def __init__(
        self,
        stream: TextIO,
        total: int,
        *,
        done: int = 0,
        quiet: bool = False,
        status: Callable[[], str] | None = None,
    ) -> None:
        self.status = status  # said after each rated game (a sequential test's state)
        if stream is None:  # started with its stderr closed: nothing to show progress on
            stream, quiet = open(os.devnull, "w"), True  # noqa: SIM115 - lives with it
        self.stream = stream
        self.total = total
        self.quiet = quiet
        self.tty = stream.isatty()
        self.finished = done
        self.score: dict[str, int] = {}

    def _line(self, text: str) -> None:
        if self.quiet:
            return
        try:
            if self.tty:
                self.stream.write("\r\x1b[K")
            self.stream.write(terminal(text) + "\n")
            if self.tty:
                self.stream.write(self._bar())
            self.stream.flush()
        except (OSError, ValueError) as exc:  # a closed pipe, a closed file, a full disk
            self._lost(exc)

    def _lost(self, exc: Exception) -> None:
        """Progress that cannot be written is given up, never the run: its results are
        stored before anything is reported."""
        self.quiet = True
        log.warning("progress output stopped: %s", exc)
        discard(self.stream)

    def _bar(self) -> str:
        width = 30
        done = min(self.finished, self.total)
        filled = width * done // max(1, self.total)
        score = "  ".join(f"{k} {v}" for k, v in self.score.items())
        return f"[{'#' * filled}{'.' * (width - filled)}] {done}/{self.total}  {score}"

    # The reporter's events (arbiter.runs.driver.Reporter).

    def engine_seen(self, name: str, reply_name: str, reply_version: str) -> None:
        log.info(
            "engine %s answers name %r, version %r", name, reply_name[:100], reply_version[:100]
        )

    def game_started(self, game: ScheduledGame, seat1: str, seat2: str) -> None:
        self._line(f"Started game {game.number} of {self.total} ({seat1} vs {seat2})")

    def game_finished(self, game: ScheduledGame, record: GameRecord, note: str) -> None:
        if not record.void:
            self.finished += 1
            for name in (record.seat1, record.seat2):
                self.score.setdefault(name, 0)
            if record.winner is not None:
                self.score[record.winner] += 1
        result = describe_result(record) + (f"; {note}" if note else "")
        self._line(f"Finished game {game.number} ({record.seat1} vs {record.seat2}): {result}")
        if self.status is not None and not record.void:
            self._line(self.status())

    def run_finished(self, outcome: RunOutcome) -> None:
        self.close()

    def close(self) -> None:
        if self.tty and not self.quiet:
            try:
                self.stream.write("\r\x1b[K")
                self.stream.flush()
            except (OSError, ValueError) as exc:
                self._lost(exc)


def discard(stream: TextIO) -> None:
    """Send what is still written to a broken stream to /dev/null, so that neither a
    later write nor the interpreter's flush at exit fails on it again."""
    try:
        fd = stream.fileno()
    except (OSError, ValueError):
        return
    null = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(null, fd)
    finally:
        os.close(null)


def summary_lines(result: MatchResult) -> list[str]:
    a, b = result.names
    stats = result.stats()
    if not stats.games:
        lines = [f"No rated games between {a} and {b}."]
        if result.void_count:
            lines.append(f"Void games (replayed, not rated): {result.void_count}")
        if result.aborted:
            lines.append(f"Match stopped: {result.aborted}")
        return lines + result.notes
    elo = result.estimate()
    lines = [
        f"Score of {a} vs {b}: {stats.wins} - {stats.losses} (wins - losses),"
        f" score {stats.score:.3f} over {stats.games} games",
        f"Elo difference: {difference_text(elo)} (95%), LOS: {los_text(elo.los)} (fitted as"
        f" `arbiter ratings` fits these games: seat term, prior {DEFAULT_PRIOR:g})",
        f"Seat 1 wins: {result.seat1_wins()} of {stats.games}",
    ]
    terms = result.terminations()
    if terms:
        lines.append("Terminations: " + ", ".join(f"{k} {v}" for k, v in sorted(terms.items())))
    saved = result.saving.line()
    if saved:
        lines.append(saved)
    if result.void_count:
        lines.append(f"Void games (replayed, not rated): {result.void_count}")
    if result.resumed:
        lines.append(f"Resumed: {result.resumed} of these games were in the store already")
    if result.unplayed:
        lines.append(
            "Game numbers given up after repeated voids: " + ", ".join(map(str, result.unplayed))
        )
    if result.sprt is not None:
        lines.append(result.sprt.line() + f"; {result.sprt.games} games counted")
        after = result.stopped_estimate()
        if after is not None:
            lines.append(
                f"Elo after the sequential stop, median-unbiased: {elo_text(after.elo)}"
                f" [{elo_text(after.lower)}, {elo_text(after.upper)}] (95%; the"
                " difference above is biased by the stop)"
            )
    if result.aborted:
        lines.append(f"Match stopped: {result.aborted}")
    return lines + result.notes


def given_keys(result: MatchResult) -> tuple[str, str]:
    """The engines as given on the command line (or engines-file keys), made distinct."""
    a, b = result.given
    return (a, b) if a != b else (a, f"{b}#2")


def summary_json(result: MatchResult) -> dict[str, Any]:
    stats = result.stats()
    elo = result.estimate()
    return {
        "engines": list(result.names),
        "games": stats.games,
        "given": list(given_keys(result)),
        "wins": dict(zip(given_keys(result), (stats.wins, stats.losses), strict=True)),
        "score": round(stats.score, 4),
        "elo": rounded(elo.elo),
        "elo_error": rounded(elo.error),
        "los": rounded(elo.los, 4),
        "prior": DEFAULT_PRIOR,
        "seat1_wins": result.seat1_wins(),
        "terminations": dict(result.terminations()),
        # Games a proof ended, and the cells they left empty (at most the plies saved).
        "adjudicated": result.saving.as_json(),
        "void": result.void_count,
        "resumed": result.resumed,
        "unplayed": result.unplayed,
        "aborted": result.aborted or None,
        "notes": result.notes,
        "sprt": None
        if result.sprt is None
        else {
            **result.sprt.as_json(),
            "estimate": _stopped_json(result),
        },
    }


def _stopped_json(result: MatchResult) -> dict[str, float | None] | None:
    after = result.stopped_estimate()
    if after is None:
        return None
    return {"elo": rounded(after.elo), "lower": rounded(after.lower), "upper": rounded(after.upper)}


def elo_text(elo: float) -> str:
    """An Elo value for people: signed, whole, or unbounded."""
    return f"{elo:+.0f}" if math.isfinite(elo) else ("+inf" if elo > 0 else "-inf")


class TournamentProgress(Progress):
    """Progress lines, and every `every` games a short standings table with an ETA."""

    def __init__(
        self,
        stream: TextIO,
        total: int,
        standings: Callable[[], str],
        *,
        done: int = 0,
        every: int = 0,
        quiet: bool = False,
    ) -> None:
        super().__init__(stream, total, done=done, quiet=quiet)
        self.left = total - done
        self.every = every
        self.standings = standings
        self._done_here = 0
        self._t0 = time.monotonic()

    def game_finished(self, game: ScheduledGame, record: GameRecord, note: str) -> None:
        super().game_finished(game, record, note)
        if record.void:
            return
        self.left -= 1
        self._done_here += 1
        if self.every and self._done_here % self.every == 0 and self.left and not self.quiet:
            self._line(f"{self.left} games left, {self.eta()}\n{self.standings()}")

    def eta(self) -> str:
        if not self._done_here:
            return "ETA unknown"
        seconds = (time.monotonic() - self._t0) / self._done_here * self.left
        minutes, secs = divmod(round(seconds), 60)
        hours, minutes = divmod(minutes, 60)
        return f"ETA {hours}:{minutes:02d}:{secs:02d}" if hours else f"ETA {minutes}:{secs:02d}"
