"""The referee: plays one game between two engines and turns every fault into a verdict.

The referee owns the rules, the clocks and the verdicts; each engine is a `Player`
(arbiter.engines.player), which speaks to it. Per ply the player on move is given the
opponent's last move and both clocks and asked for its move: one round trip per ply.

Fault policy: before the first `genmove` is written, any fault makes the game void (it
is replayed and never rated); from then on a fault forfeits the game to the other
engine. A failure of the harness itself always voids the game.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import trio

from arbiter import logs
from arbiter.engines.player import RESIGN, Fault, GameLog, Player
from arbiter.errors import ArbiterInternalError
from arbiter.games import pauses
from arbiter.games.adjudication import Adjudication, Adjudicator, proof_json
from arbiter.games.solver import Judgement, OutsideJudge
from arbiter.results.records import Evidence, GameRecord, StoneColor, Termination, timestamp
from arbiter.rules import SWAP, Color, Game, IllegalMove, Variant
from arbiter.rules.clock import WALL_CEILING, ClockMode, GameClock, TimeControl
from arbiter.rules.proof import Proof
from arbiter.text import escape, shorten

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class RefereeConfig:
    margin: float = 0.1  # seconds over the clock before a move loses on time
    grace: float = 0.5  # further seconds before the referee stops waiting and kills
    infinite_move_limit: float = 600.0  # the deadline for one move under `inf`
    exit_wait: float = 1.0  # how long to wait for a crashed engine's exit status
    # Bytes of each game's full transcript kept (0: none is made); `--transcripts DIR`.
    transcript_bytes: int = 0
    # Whether a proven connection ends the game (a condition of play, see
    # arbiter.games.adjudication).
    adjudicate: Adjudication = Adjudication.OFF
    # Under a CPU clock, the wall time a move may take, in multiples of the time left
    # (see arbiter.rules.clock.WALL_CEILING).
    ceiling: float = WALL_CEILING


@dataclass(frozen=True)
class GameSpec:
    """Everything needed to play one game, deterministic and picklable."""

    game_id: str
    variant: Variant
    tc: tuple[TimeControl, TimeControl]  # seat 1, seat 2
    opening: tuple[str, ...] = ()
    seed: int | None = None
    pair: str = ""  # the seat-swapped pair this game belongs to
    commands: tuple[tuple[str, ...], tuple[str, ...]] = ((), ())  # seat 1's and seat 2's argv
    # Seat 1's and seat 2's parameter values, filled into their commands' `{NAME}`
    # placeholders for this game (arbiter.engines.params); empty for untuned engines.
    params: tuple[tuple[tuple[str, float], ...], tuple[tuple[str, float], ...]] = ((), ())
    clocks: tuple[ClockMode, ClockMode] = (ClockMode.WALL, ClockMode.WALL)  # what each charges

    def record(
        self, seat1: str, seat2: str, termination: Termination, **outcome: Any
    ) -> GameRecord:
        """This game's record, made once from its outcome (`started` defaults to now)."""
        v = self.variant
        outcome.setdefault("started", timestamp())
        return GameRecord(
            game_id=self.game_id,
            variant={"size": v.size, "islands": v.islands, "pie": v.pie},
            seat1=seat1,
            seat2=seat2,
            tc={"seat1": str(self.tc[0]), "seat2": str(self.tc[1])},
            termination=termination,
            seed=self.seed,
            pair=self.pair,
            commands={"seat1": list(self.commands[0]), "seat2": list(self.commands[1])},
            params={
                seat: dict(values)
                for seat, values in zip(("seat1", "seat2"), self.params, strict=True)
                if values
            },
            clock=self.clock_names(),
            **outcome,
        )

    def clock_names(self) -> dict[str, str]:
        """What each seat's clock charges, as the record keeps it: nothing when both
        charge wall time, as every record before CPU clocks did."""
        if ClockMode.CPU not in self.clocks:
            return {}
        return {"seat1": self.clocks[0].value, "seat2": self.clocks[1].value}


@dataclass
class GameOutcome:
    record: GameRecord
    faulty: set[int] = field(default_factory=set)  # seat indices (0, 1) to restart
    transcript: str = ""  # the game's full transcript, when the config asks for one


@dataclass
class _Progress:
    """What has happened so far in a game: the record is made from it at the end."""

    started: bool = False  # a game starts when its first genmove has been written
    moves: list[str] = field(default_factory=list)
    move_ms: list[float] = field(default_factory=list)
    stalled: float = 0.0  # seconds of the engines' waits the harness itself was stalled
    # Kept only when a remote engine plays: per ply, the network time not charged and
    # the engine's own time as its client reported it (-1: not reported).
    allowance_ms: list[float] = field(default_factory=list)
    reported_ms: list[float] = field(default_factory=list)
    wall_ms: list[float] = field(default_factory=list)  # kept only under a CPU clock
    proof: Proof | None = None  # the proof that ended the game, when one did
    judged: Judgement | None = None  # the solver's answer that ended it, when one did


@dataclass(frozen=True)
class _Verdict:
    termination: Termination
    winner_seat: int | None = None  # None: void
    reason: str = ""
    evidence: Evidence | None = None


class _HarnessStalled(Exception):
    """A deadline passed while the harness itself was not running: nobody watched the
    engine, so nobody can say it was too slow."""

    def __init__(self, seat: int, stalled: float, detail: str) -> None:
        self.seat = seat
        self.stalled = stalled
        self.detail = detail
        super().__init__(detail)


class _Fault(Exception):
    """A verdict against the engine in `seat`."""

    def __init__(self, seat: int, fault: Fault) -> None:
        self.seat = seat
        self.fault = fault
        super().__init__(fault.detail)


def harness_fault(game_id: str, exc: BaseException) -> _Verdict:
    """A bug of the harness's own in this game: void, logged with its traceback, and
    the traceback kept in the record, since a one-line reason can never tell the story."""
    error = ArbiterInternalError(f"{type(exc).__name__}: {exc}")
    error.__cause__ = exc
    log.error("harness error in game %s", game_id, exc_info=exc)
    detail = shorten(escape(str(error)), 500)  # one line, whatever the exception says
    return _Verdict(
        Termination.HARNESS,
        reason=f"harness error: {detail}; the traceback is in the record's evidence and in"
        f" {logs.where()}",
        evidence=Evidence.of_harness(detail, exc),
    )


def transcript(record: GameRecord, game_log: GameLog) -> str:
    """A game's full transcript as a text file: what game it was, every exchange with
    both engines (`GameLog.lines`), and how it ended."""
    v = record.variant
    board = f"Hex {v['size']}" if v["islands"] == 4 else f"Atoll {v['size']}"
    tc = record.tc
    clocks = tc["seat1"] if tc["seat1"] == tc["seat2"] else f"{tc['seat1']} and {tc['seat2']}"
    if record.void:
        end = f"void ({record.termination}): {record.reason}"
    else:
        end = f"{record.winner} wins ({record.termination})"
        end += f": {record.reason}" if record.reason else ""
    lines = [
        f"# Game {record.game_id}: {board}, seat 1 {record.seat1}, seat 2 {record.seat2},"
        f" time control {clocks}, started {record.started}",
        "# Milliseconds since the game's set-up; > written to an engine, < read from it.",
        *game_log.lines([record.seat1, record.seat2]),
        f"# {escape(end)}",
    ]
    return "\n".join(lines) + "\n"


class Referee:
    """Plays games between two players, seat 1 placing the first stone."""

    def __init__(self, config: RefereeConfig | None = None) -> None:
        self.config = config or RefereeConfig()

    async def play(
        self,
        spec: GameSpec,
        players: Sequence[Player],
        *,
        host: str = "",
        cpu: str = "",
        on_move: Callable[[str], None] | None = None,
        solver: OutsideJudge | None = None,
    ) -> GameOutcome:
        """The game's record (made once, naming the machine it was played on), the seats
        whose engines must be restarted, and the game's full transcript if asked for.
        `on_move` is told each move as it is played (a live page follows the game);
        `solver`, the outside judge, is asked who wins (arbiter.games.solver)."""
        if not self.config.transcript_bytes:
            return await self._play(spec, players, host, cpu, on_move, solver)
        game_log = GameLog(self.config.transcript_bytes)
        for seat, player in enumerate(players, 1):
            player.log_to(game_log, seat)
        try:
            outcome = await self._play(spec, players, host, cpu, on_move, solver)
        finally:
            for player in players:
                player.log_to(None)
        outcome.transcript = transcript(outcome.record, game_log)
        return outcome

    async def _play(
        self,
        spec: GameSpec,
        players: Sequence[Player],
        host: str,
        cpu: str,
        on_move: Callable[[str], None] | None,
        solver: OutsideJudge | None = None,
    ) -> GameOutcome:
        started = timestamp()
        game = Game(spec.variant)
        progress = _Progress()
        faulty: set[int] = set()
        try:
            await self._setup(spec, players)
            if solver is not None:
                solver.new_game()
            winner_seat, termination = await self._play_moves(
                spec, players, game, progress, on_move, solver
            )
            verdict = _Verdict(termination, winner_seat)
            if progress.proof is not None:
                verdict = adjudicated(game, progress.proof, winner_seat)
            elif progress.judged is not None:
                verdict = judged(game, progress.judged, winner_seat)
        except _Fault as fault:
            verdict = await self._judge_fault(fault, players, progress)
            faulty.add(fault.seat)
        except _HarnessStalled as stall:
            faulty.add(stall.seat)
            name = players[stall.seat].name
            detail = (
                f"the harness itself did not run for {stall.stalled:.2f} s (paused,"
                f" suspended or starved of CPU) while {name} was to answer; {stall.detail}"
            )
            log.warning("game %s is void: %s", spec.game_id, detail)
            verdict = _Verdict(
                Termination.HARNESS,
                reason=f"{detail}; not charged to {name}, replayed",
                evidence=Evidence.of_harness(detail, transcript=players[stall.seat].transcript()),
            )
        except Exception as exc:
            faulty.update((0, 1))
            verdict = harness_fault(spec.game_id, exc)
        record = self._record(spec, players, game, progress, verdict, started, host, cpu)
        return GameOutcome(record, faulty)

    def _record(
        self,
        spec: GameSpec,
        players: Sequence[Player],
        game: Game,
        progress: _Progress,
        verdict: _Verdict,
        started: str,
        host: str,
        cpu: str,
    ) -> GameRecord:
        """The game's record, made once, from the verdict and what was played."""
        names = [players[0].name, players[1].name]
        seat = verdict.winner_seat
        black_seat = 1 if game.swapped else 0
        return spec.record(
            names[0],
            names[1],
            verdict.termination,
            started=started,
            finished=timestamp(),
            swapped=game.swapped,
            black=names[black_seat],
            white=names[1 - black_seat],
            moves=progress.moves,
            move_ms=progress.move_ms,
            allowance_ms=progress.allowance_ms,
            reported_ms=progress.reported_ms,
            wall_ms=progress.wall_ms,
            opening=min(len(spec.opening), len(progress.moves)),
            winner=None if seat is None else names[seat],
            winner_color=None
            if seat is None
            else (StoneColor.BLACK if seat == black_seat else StoneColor.WHITE),
            void=seat is None,
            reason=verdict.reason,
            versions={p.name: p.info.version for p in players},
            # What each engine answered to `name`, whole (up to the cap): a label only.
            answers={"seat1": players[0].info.name, "seat2": players[1].info.name},
            evidence=verdict.evidence,
            stalled_ms=round(progress.stalled * 1000, 1),
            host=host,
            cpu=cpu,
        )

    async def _judge_fault(
        self, fault: _Fault, players: Sequence[Player], progress: _Progress
    ) -> _Verdict:
        """The verdict on a fault, with its evidence: a forfeit once the game has
        started, a void game before."""
        player = players[fault.seat]
        found = await player.autopsy(fault.fault, self.config.exit_wait)
        reason = f"{player.name}: {found.detail}"
        if progress.started:
            return _Verdict(found.kind, 1 - fault.seat, reason, found.evidence)
        return _Verdict(
            Termination.SETUP,
            reason=f"set-up failed ({found.kind}): {reason}",
            evidence=found.evidence,
        )

    async def _setup(self, spec: GameSpec, players: Sequence[Player]) -> None:
        for seat, player in enumerate(players):
            try:
                await player.new_game(spec.variant, spec.tc[seat])
            except Fault as fault:
                raise _Fault(seat, fault) from fault

    async def _play_moves(
        self,
        spec: GameSpec,
        players: Sequence[Player],
        game: Game,
        progress: _Progress,
        on_move: Callable[[str], None] | None = None,
        solver: OutsideJudge | None = None,
    ) -> tuple[int, Termination]:
        cfg = self.config
        beat = pauses.heartbeat()
        clocks = [GameClock(spec.tc[0], cfg.margin), GameClock(spec.tc[1], cfg.margin)]
        owner = {Color.BLACK: 0, Color.WHITE: 1}
        pending: list[list[tuple[str, str]]] = [[], []]  # moves each engine has not seen
        network = players[0].remote or players[1].remote
        # Seats charged CPU time: those whose clock says so and whose CPU is measured.
        on_cpu = [
            spec.clocks[s] is ClockMode.CPU and players[s].cpu_seconds is not None for s in (0, 1)
        ]
        cpu_kept = on_cpu[0] or on_cpu[1]
        # Each CPU-clocked engine's reading at the end of its last move: what it uses
        # between its moves (pondering, work on the opponent's time) is charged to its next.
        cpu_mark: list[float | None] = [None, None]
        for text in spec.opening:
            # Openings are validated when the schedule is built; a bad one is a harness bug.
            color = game.to_move
            move = game.parse_move(text)
            game.play(move)
            name = game.move_name(move)
            progress.moves.append(name)
            progress.move_ms.append(0.0)
            if cpu_kept:
                progress.wall_ms.append(0.0)
            if on_move is not None:
                on_move(name)
            if network:
                progress.allowance_ms.append(0.0)
                progress.reported_ms.append(-1.0)
            for seat in (0, 1):
                pending[seat].append((color.letter, name))
            if move == SWAP:
                owner = {Color.BLACK: 1, Color.WHITE: 0}
        by_color = (clocks[owner[Color.BLACK]], clocks[owner[Color.WHITE]])  # as told
        seat = 0
        judge = Adjudicator() if cfg.adjudicate is Adjudication.PROVEN else None
        while True:
            # One cancel scope serves a run of plies: entering a scope per ply was the
            # largest single cost of a ply. The player moves its deadline before each wait.
            # A deadline that passes just after its answer arrived leaves the scope
            # cancelled without a wait to interrupt; the next ply then gets a fresh scope.
            with trio.CancelScope() as scope:
                while not scope.cancel_called:
                    color = game.to_move
                    seat = owner[color]
                    player = players[seat]
                    clock = clocks[seat]
                    budget = clock.deadline(cfg.grace, cfg.infinite_move_limit)
                    cpu = player.cpu_seconds if on_cpu[seat] else None
                    if cpu is not None:
                        if clock.tc.clocked:
                            budget = self._ceiling(clock.budget(cfg.infinite_move_limit))
                        if cpu_mark[seat] is None:
                            cpu_mark[seat] = cpu()
                    if network:
                        budget += player.latency_allowance
                    try:
                        reply = await player.turn(pending[seat], by_color, color, budget, scope)
                    except Fault as fault:
                        progress.started = progress.started or fault.started
                        raise _Fault(seat, fault) from fault
                    progress.started = True
                    elapsed = reply.elapsed
                    stalled = beat.stalled(reply.waited_since, reply.waited_since + elapsed)
                    if stalled:  # time nobody watched is nobody's
                        elapsed = max(0.0, elapsed - stalled)
                        progress.stalled += stalled
                    pending[seat].clear()
                    wall = elapsed
                    if cpu is not None:
                        now = cpu()
                        elapsed = max(0.0, now - (cpu_mark[seat] or 0.0))
                        cpu_mark[seat] = now
                    if network:
                        free = min(elapsed, player.allowance(elapsed))
                        elapsed -= free
                        progress.allowance_ms.append(round(free * 1000, 1))
                        progress.reported_ms.append(player.reported_ms())
                    if not clock.stop(elapsed):  # a late answer loses on time, whatever it says
                        raise _Fault(
                            seat,
                            Fault(
                                Termination.TIME,
                                f"used {elapsed * 1000:.0f} ms with {clock_left(clock, elapsed)}",
                                started=True,
                            ),
                        )
                    if reply.refused is not None:
                        raise _Fault(seat, reply.refused)
                    if reply.move == RESIGN:
                        return 1 - seat, Termination.RESIGN
                    try:
                        move = game.parse_move(reply.move)
                        game.play(move)
                    except (IllegalMove, ValueError) as exc:
                        raise _Fault(
                            seat, Fault(Termination.ILLEGAL, str(exc), started=True)
                        ) from exc
                    name = game.move_name(move)
                    progress.moves.append(name)
                    progress.move_ms.append(round(elapsed * 1000, 1))
                    if cpu_kept:
                        progress.wall_ms.append(round(wall * 1000, 1))
                    if on_move is not None:
                        on_move(name)
                    pending[1 - seat].append((color.letter, name))
                    if move == SWAP:
                        owner = {Color.BLACK: owner[Color.WHITE], Color.WHITE: owner[Color.BLACK]}
                        by_color = (clocks[owner[Color.BLACK]], clocks[owner[Color.WHITE]])
                    if game.winner is not None:
                        return seat, Termination.CONNECTION
                    if judge is not None:
                        # The referee's own time, between turns: no clock runs. Shielded
                        # so that the last deadline passing meanwhile cancels nothing.
                        with trio.CancelScope(shield=True):
                            proof = await trio.to_thread.run_sync(judge.judge, game)
                        if proof is not None:
                            progress.proof = proof
                            return owner[proof.owner], Termination.ADJUDICATED
                    if solver is not None:
                        # The referee's time too; the solver's own deadlines bound it.
                        with trio.CancelScope(shield=True):
                            judgement = await solver.ask(game)
                        if judgement is not None:
                            progress.judged = judgement
                            return owner[judgement.winner], Termination.ADJUDICATED
            if scope.cancelled_caught:
                player = players[seat]
                player.kill()
                late = player.timed_out()
                if late.kind is Termination.TIME:
                    parts = (
                        self._ceiling_parts(clocks[seat])
                        if on_cpu[seat] and clocks[seat].tc.clocked
                        else self._deadline_parts(budget)
                    )
                    late.detail += f" ({parts}); the engine was killed"
                progress.started = progress.started or late.started
                stalled = beat.stalled(player.waited_since, trio.current_time())
                if stalled:
                    progress.stalled += stalled
                    raise _HarnessStalled(seat, stalled, late.detail)
                raise _Fault(seat, late)

    def _ceiling(self, left: float) -> float:
        """The wall deadline of a move on a CPU clock with `left` seconds left."""
        cfg = self.config
        return left * cfg.ceiling + cfg.margin + cfg.grace

    def _ceiling_parts(self, clock: GameClock) -> str:
        cfg = self.config
        return (
            f"the wall-time ceiling of a CPU clock: {cfg.ceiling:g} x {clock.remaining:.2f} s"
            f" left + margin {cfg.margin:g} s + grace {cfg.grace:g} s"
        )

    def _deadline_parts(self, budget: float) -> str:
        cfg = self.config
        clock = budget - cfg.margin - cfg.grace
        if clock <= 0 or budget == cfg.infinite_move_limit:
            return f"move limit {budget:g} s"
        return f"clock {clock:.2f} s + margin {cfg.margin:g} s + grace {cfg.grace:g} s"


def adjudicated(game: Game, proof: Proof, winner_seat: int) -> _Verdict:
    """The verdict on a game ended by a proof, the proof kept as its evidence."""
    side = "Black" if proof.owner is Color.BLACK else "White"
    kinds = sorted({link.kind.value for link in proof.links})
    empty = game.geometry.n_cells - game.n_stones
    detail = (
        f"{side} has a proven connection ({len(proof.links)} links:"
        f" {', '.join(kinds) or 'already joined'}) with {empty} cells empty"
    )
    if proof.key is not None:
        detail = (
            f"{side}, to move, has a proven connection once it plays"
            f" {game.geometry.names[proof.key]} ({len(proof.links)} links:"
            f" {', '.join(kinds) or 'already joined'}) with {empty} cells empty"
        )
    return _Verdict(
        Termination.ADJUDICATED,
        winner_seat,
        reason=detail,
        evidence=Evidence(engine="referee", detail=detail, proof=proof_json(game, proof)),
    )


def judged(game: Game, judgement: Judgement, winner_seat: int) -> _Verdict:
    """The verdict on a game ended by an outside judge: its word, not a proof."""
    said = judgement.evidence
    side = "Black" if judgement.winner is Color.BLACK else "White"
    empty = game.geometry.n_cells - game.n_stones
    detail = (
        f"the solver {said['engine']} answered {said['command']!r} with {said['answer']!r}:"
        f" {side} wins, with {empty} cells empty (its word, not a proof)"
    )
    return _Verdict(
        Termination.ADJUDICATED,
        winner_seat,
        reason=detail,
        evidence=Evidence(
            engine=said["engine"], detail=detail, transcript=judgement.transcript, solver=said
        ),
    )


def clock_left(clock: GameClock, elapsed: float) -> str:
    """What a late answer had to think with, in words."""
    if clock.tc.per_move:
        return f"a fixed {clock.tc.per_move * 1000:.0f} ms per move"
    return f"{(clock.remaining + elapsed) * 1000:.0f} ms on the clock"
