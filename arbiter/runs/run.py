"""One run for every competition: a plan, an executor and a reporter.

A front (`arbiter.runs.match`, `arbiter.runs.tournament`) only builds a `Plan`: the games
left to play, how each becomes a `GameSpec`, where results go and when to stop. `run`
does the rest the same way for both, as gomill's ringmaster runs every competition type:
the preflight where the games will be played, the engines' names fixed from its answers,
the driver, the executor's notes, and the executor's shutdown however the run ends.
"""

from __future__ import annotations

import glob
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from arbiter.engines.config import program_hashes
from arbiter.engines.process import EngineSpec
from arbiter.errors import ConfigError
from arbiter.executors.affinity import assign_cores, usable_cpus
from arbiter.executors.jobs import Executor, ExecutorSettings, Preflight, display_names
from arbiter.executors.local import LocalExecutor
from arbiter.games.referee import GameSpec
from arbiter.results.records import GameRecord, RecordWriter
from arbiter.results.store import EngineEntry, Store, store_files
from arbiter.results.transcripts import CAP as TRANSCRIPT_CAP
from arbiter.results.transcripts import TranscriptFolder
from arbiter.rules import Variant
from arbiter.rules.clock import DEFAULT_TC, ClockMode, TimeControl
from arbiter.runs.driver import Driver, Reporter, RunOutcome, Sink, VoidPolicy
from arbiter.runs.schedule import Schedule, ScheduledGame

__all__ = [
    "Plan",
    "Records",
    "Reporter",
    "RunOutcome",
    "Sink",
    "Stored",
    "Unheard",
    "hidden_files",
    "open_executor",
    "refuse_changes",
    "refuse_rebuilds",
    "run",
    "time_controls",
]


@dataclass
class Plan:
    """What a run plays: the engines by key, the games left (lazily), where results go
    and when to stop early. `tc` is the competition's time control: an engine's own wins.
    """

    settings: ExecutorSettings  # the engines by key, the referee's rules, the deadlines
    # The games still to play: a fixed sequence, or a schedule told the results.
    games: Schedule | Iterable[ScheduledGame]
    total: int  # games in the whole schedule
    left: int  # of those, how many are still to play
    variant: Variant
    tc: TimeControl = DEFAULT_TC
    sinks: Sequence[Sink] = ()  # the store first: the truth is written before the rest
    stop: Callable[[], bool] = field(default=lambda: False)  # asked before and after games
    policy: VoidPolicy = field(default_factory=VoidPolicy)
    concurrency: int = 1  # games at once on this machine, unless the run is told otherwise
    # An engine that cannot start is left out (its games void, the others played) instead
    # of stopping the run, where this says the schedule still has games without the
    # engines that failed (None: an engine that cannot start stops the run).
    leave_out: Callable[[Collection[str]], bool] | None = None
    # Asked as each game is about to start (games are read ahead of the slots): False
    # takes it back, unplayed and unrecorded (a pairing whose test has decided).
    keep: Callable[[ScheduledGame], bool] | None = None
    transcripts: TranscriptFolder | None = None  # each game's full transcript goes there
    affinity: bool = False  # each slot's engines pinned to cores of their own

    def __post_init__(self) -> None:
        """With a transcripts folder, every host makes each game's transcript (the
        referee's settings travel to every worker), and a sandboxed engine cannot read
        the folder: the other games' exchanges are not its business."""
        if self.transcripts is None:
            return
        folder = str(self.transcripts.path.resolve())
        engines = {
            key: replace(spec, hidden=(*spec.hidden, folder)) if spec.sandbox else spec
            for key, spec in self.settings.engines.items()
        }
        referee = replace(self.settings.referee, transcript_bytes=TRANSCRIPT_CAP)
        self.settings = replace(self.settings, engines=engines, referee=referee)

    @property
    def tcs(self) -> dict[str, TimeControl]:
        return time_controls(self.settings.engines, self.tc)

    def game_spec(self, game: ScheduledGame) -> GameSpec:
        """What a scheduled game is, for whichever host plays it."""
        tcs = self.tcs
        seat1, seat2 = (self.settings.engines[key] for key in game.engines)
        # A tuned engine's record keeps its template; the values are `params`.
        command1, command2 = (
            self.settings.templates.get(key, spec.argv)
            for key, spec in zip(game.engines, (seat1, seat2), strict=True)
        )
        return GameSpec(
            game_id=game.game_id,
            variant=self.variant,
            tc=(tcs[game.engines[0]], tcs[game.engines[1]]),
            opening=game.opening,
            seed=game.seed,
            pair=game.pair_key,
            commands=(command1, command2),
            params=game.params,
            clocks=(seat1.clock or ClockMode.WALL, seat2.clock or ClockMode.WALL),
        )


def time_controls(engines: Mapping[str, EngineSpec], tc: TimeControl) -> dict[str, TimeControl]:
    """Each engine's time control: its own if it has one, else the competition's `tc` (the
    one place that fallback is made)."""
    return {key: spec.tc or tc for key, spec in engines.items()}


async def run(plan: Plan, executor: Executor, reporter: Reporter) -> RunOutcome:
    """Play a plan on an executor (built from `plan.settings`), telling the reporter.

    Before any game the executor checks, where it will play them, that every engine
    starts and can play the variant; an engine that cannot stops the run with its
    evidence (`config_error` when the operator must change the engines or the variant).
    The engines' names are then fixed from their answers, once: every slot, worker and
    restart names an engine the same way, as the sinks were told. The executor's session
    spans it all, so that engines started for the check can stay for the games.
    """
    async with executor.session():
        replies = {key: "" for key in plan.settings.engines}
        left_out: dict[str, str] = {}
        if plan.left and not plan.stop():
            checked = await executor.preflight(list(plan.settings.engines), plan.variant, plan.tcs)
            problem = _left_out_or_problem(plan, checked)
            if not problem:
                left_out = dict(checked.failures)
            else:
                outcome = RunOutcome(
                    aborted=problem, config_error=checked.config_error, notes=list(executor.notes)
                )
                reporter.run_finished(outcome)
                return outcome
            replies.update({key: info.name for key, info in checked.info.items()})
        keys = list(plan.settings.engines)
        specs = [plan.settings.engines[key] for key in keys]
        names = dict(zip(keys, display_names(specs, [replies[k] for k in keys]), strict=True))
        # Named before the executor starts its slots: a worker process that restarts an
        # engine must not name it from that start's own answer.
        executor.settings = executor.settings.named(names)
        for sink in plan.sinks:
            sink.begin(names)
        if plan.left and not plan.stop():
            driver = Driver(
                plan.games,
                plan.game_spec,
                executor,
                plan.sinks,
                reporter,
                policy=plan.policy,
                stop=plan.stop,
                left_out=left_out,
                keep=plan.keep,
                transcripts=plan.transcripts,
            )
            outcome = await driver.run()
        else:
            outcome = RunOutcome()
        if outcome.blocked and not outcome.aborted:
            outcome.notes.append(
                "The schedule's next games are made from the results of games not played"
                " in this run (given up or left out): run again to play those and go on."
            )
        for key, why in left_out.items():
            games = sum(1 for game in outcome.left_out if key in game.engines)
            outcome.notes.append(
                f"{names[key]} was left out ({why}): its {games} game(s) are stored as void"
                " and are played when the tournament is run again and it starts"
            )
        outcome.notes.extend(executor.notes)
        if plan.transcripts is not None:
            outcome.notes.extend(plan.transcripts.notes())
        reporter.run_finished(outcome)
        return outcome


def _left_out_or_problem(plan: Plan, checked: Preflight) -> str:
    """Why the run stops after the preflight, or "" when it goes on: nothing was wrong,
    or the engines that could not start are left out. They are only where the plan says
    so, when nothing else is wrong (a variant an engine cannot play is the operator's to
    fix), and while the schedule has games without them."""
    failed = checked.failures
    if (
        plan.leave_out is None
        or not failed
        or checked.config_error
        or checked.problem not in failed.values()
    ):
        return checked.problem
    if plan.leave_out(failed.keys()):
        return ""
    names = ", ".join(plan.settings.engines[key].label for key in failed)
    return (
        f"{checked.problem}; without {names} no game of the schedule is left to play,"
        " so the run stops"
    )


def open_executor(
    plan: Plan,
    *,
    concurrency: int | None = None,
    dask: str | None = None,
    where: str = "--dask",
    processes: bool = True,
) -> Executor:
    """The executor a run asks for: a Dask scheduler's workers (`dask`, its address named
    by `where` in errors), `concurrency` then bounding the games in flight (default:
    twice the workers' threads); else slots on this machine (default: the plan's), no
    more than the games left."""
    if dask:
        from arbiter.executors.dask import DaskExecutor

        return DaskExecutor(plan.settings, dask, window=concurrency, where=where)
    slots = min(concurrency or plan.concurrency, max(1, plan.left))
    cores = None
    if plan.affinity:
        threads = max((spec.threads for spec in plan.settings.engines.values()), default=1)
        cores = assign_cores(slots, threads, usable_cpus())
    return LocalExecutor(plan.settings, slots, processes=processes, cores=cores)


def hidden_files(store: Path) -> list[str]:
    """A store's files and the copies kept beside it (--fresh, a lost store): what a
    sandboxed engine must not read, not even the results it is judged by."""
    kept = sorted(store.parent.glob(f"{glob.escape(store.stem)}.*.sqlite*"))
    return [str(p) for p in [*store_files(store), *kept]]


# Conditions older stores do not name, as they were: a store from before CPU clocks
# charged wall time and scaled no time control, and a run that does either must not add
# its games to it.
IMPLIED: Mapping[str, object] = {"clock": "wall", "scale_tc": False, "solver": None}


def refuse_changes(
    old: Mapping[str, Any],
    new: Mapping[str, Any],
    where: Callable[[str], str],
    store: str,
    fix: str,
    implied: Mapping[str, object] = IMPLIED,
) -> None:
    """Refuse conditions that differ from those a store was started with (ConfigError
    naming the first change, `where(key)` saying where it was given). A key older stores
    lack is no change, unless `implied` says what it was then."""
    for key, value in new.items():
        before = old.get(key, implied.get(key, value))
        if before != value:
            raise ConfigError(
                f"changed from {before!r} to {value!r} since the store {store} was started",
                where=where(key),
                hint=fix,
            )


def refuse_rebuilds(
    store: Store,
    engines: Mapping[str, EngineSpec],
    rebuilt: Iterable[str],
    where: Callable[[str], str],
    kind: str,
) -> None:
    """Refuse an engine whose program or script changed since the store was started,
    unless `rebuilt` names it: the operator accepts the new build as the same engine,
    and the store records that. `engines` are by name, as the store keeps them.

    An engine's program is part of its identity: a new build at the same path would
    otherwise be rated together with the old one's games.
    """
    accepted = set(rebuilt)
    unknown = accepted - set(engines)
    if unknown:
        raise ConfigError(
            f"--rebuilt names {', '.join(sorted(unknown))}, not an engine of this {kind}",
            hint=f"engines: {', '.join(engines)}",
        )
    stored = {row["name"]: row for row in store.engines()}
    for name, spec in engines.items():
        row = stored.get(name)
        if row is None:
            continue
        now = program_hashes(spec)
        for what, before, after in (
            ("program", row["program_sha256"], now[0]),
            ("script", row["script_sha256"], now[1]),
        ):
            if before is None or after is None or before == after:
                continue  # not known then, or not readable here (a cluster's engines)
            if name in accepted:
                store.accept_rebuild(name, *now)
                break
            raise ConfigError(
                f"the {what} of engine {name!r} changed since the store {store.path.name} was"
                f" started (sha256 {before[:12]} then, {after[:12]} now): its games would be"
                " rated as one engine's",
                where=where(name),
                hint="give the new build a new name, use --fresh to start a new store (the"
                f" old one is kept under a dated name), or run with --rebuilt {name} to"
                " accept it as the same engine (the store records that)",
            )


class Unheard:
    """A reporter that tells nobody: a run from code reads its outcome instead."""

    def engine_seen(self, name: str, reply_name: str, reply_version: str) -> None:
        pass

    def game_started(self, game: ScheduledGame, seat1: str, seat2: str) -> None:
        pass

    def game_finished(self, game: ScheduledGame, record: GameRecord, note: str) -> None:
        pass

    def run_finished(self, outcome: RunOutcome) -> None:
        pass


class Stored:
    """A results store as a run's sink: the competition's conditions and engines are
    recorded once the run has fixed the engines' names, then every result as it comes.

    `entries` are the engines by key; the store keeps them by name (a tournament's keys
    are its names; a match's are "0" and "1", named from their answers).
    """

    def __init__(
        self,
        store: Store,
        name: str,
        conditions: Mapping[str, object],
        definition: Mapping[str, object],
        entries: Mapping[str, EngineEntry],
    ) -> None:
        self.store = store
        self.name = name
        self.conditions = conditions
        self.definition = definition
        self.entries = entries

    def begin(self, names: Mapping[str, str]) -> None:
        entries = {names[key]: entry for key, entry in self.entries.items()}
        self.store.begin(self.name, self.conditions, self.definition, entries)

    def write(self, game: ScheduledGame, record: GameRecord) -> None:
        self.store.write(game, record)

    def engine_seen(self, name: str, reply_name: str, reply_version: str) -> None:
        self.store.engine_seen(name, reply_name, reply_version)

    def engine_started(self, name: str, seconds: float) -> None:
        self.store.engine_started(seconds)


class Records:
    """A JSON Lines records file as a run's sink: one line per finished attempt."""

    def __init__(self, writer: RecordWriter) -> None:
        self.writer = writer

    def begin(self, names: Mapping[str, str]) -> None:
        pass  # a records file has no header: every line names its engines

    def write(self, game: ScheduledGame, record: GameRecord) -> None:
        self.writer.write(record)

    def engine_seen(self, name: str, reply_name: str, reply_version: str) -> None:
        pass  # labels only, and a records file keeps none

    def engine_started(self, name: str, seconds: float) -> None:
        pass  # a records file keeps games only
