"""The run's policy on a fake executor: what a void game becomes, when a run stops, what
is stored, and what a resumed run plays. No engine is started: each game's outcome is
scripted (tests/kit/fakes.py), so every branch of the policy is reached in milliseconds.
Real faults becoming these outcomes is checked on real processes (test_faults.py,
test_dask.py, test_tournament.py)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from fakes import FakeExecutor, Halt, Outcome, Refused, Script, Twice, Void, Win

from arbiter.executors.jobs import GameJob
from arbiter.games.referee import GameSpec
from arbiter.results.records import GameRecord, Stage, Termination
from arbiter.results.score import MatchResult
from arbiter.results.sprt import Sprt
from arbiter.results.store import Store
from arbiter.rules import Variant
from arbiter.rules.clock import TimeControl
from arbiter.runs.driver import Driver, RunOutcome, VoidPolicy
from arbiter.runs.run import Unheard
from arbiter.runs.schedule import WAIT, ScheduledGame, Unschedulable, Wait, match_games
from arbiter.runs.tournament import load_tournament

TC = TimeControl.parse("1+0")
VARIANT = Variant(8, 7, True)


def schedule(count: int = 3) -> list[ScheduledGame]:
    return [
        ScheduledGame(
            number=n,
            game_id=f"g{n}",
            round=1,
            pair_key=f"p{n}",
            engines=("a", "b"),
            opening=(),
            seed=n,
        )
        for n in range(1, count + 1)
    ]


def spec(game: ScheduledGame) -> GameSpec:
    return GameSpec(game.game_id, VARIANT, (TC, TC), pair=game.pair_key)


@dataclass
class Run:
    """A driver on a fake executor, and what it saw as the run's sink and reporter."""

    executor: FakeExecutor
    stored: list[GameRecord] = field(default_factory=list)
    started: list[str] = field(default_factory=list)
    finished: list[tuple[str, str]] = field(default_factory=list)  # game id, note
    outcome: RunOutcome = field(default_factory=RunOutcome)

    def begin(self, names: Mapping[str, str]) -> None:
        pass

    def write(self, game: ScheduledGame, record: GameRecord) -> None:
        self.stored.append(record)

    def engine_seen(self, name: str, reply_name: str, reply_version: str) -> None:
        pass

    def engine_started(self, name: str, seconds: float) -> None:
        pass

    def game_started(self, game: ScheduledGame, seat1: str, seat2: str) -> None:
        self.started.append(game.game_id)

    def game_finished(self, game: ScheduledGame, record: GameRecord, note: str) -> None:
        self.finished.append((game.game_id, note))

    def run_finished(self, outcome: RunOutcome) -> None:
        pass

    def taken(self) -> Counter[str]:
        """How often each game was handed to the executor."""
        return Counter(job.spec.game_id for job in self.executor.jobs)


async def drive(
    script: Script,
    games: Iterable[ScheduledGame] | None = None,
    policy: VoidPolicy | None = None,
    **kwargs: object,
) -> Run:
    run = Run(FakeExecutor(script))
    driver = Driver(
        iter(schedule() if games is None else games),
        spec,
        run.executor,
        [run],
        run,
        policy=policy,
        **kwargs,
    )  # type: ignore[arg-type]
    run.outcome = await driver.run()
    return run


def void_ids(run: Run) -> list[str]:
    return [r.game_id for r in run.stored if r.void]


def rated_ids(run: Run) -> list[str]:
    return sorted(r.game_id for r in run.stored if not r.void)


async def test_a_void_game_is_stored_then_replayed_until_it_is_played() -> None:
    run = await drive({"g2": [Void(), Void(Termination.HARNESS), Win(seat=2)]})
    assert not run.outcome.aborted and not run.outcome.unplayed
    assert run.taken() == Counter({"g1": 1, "g2": 3, "g3": 1})
    assert rated_ids(run) == ["g1", "g2", "g3"] and void_ids(run) == ["g2", "g2"]
    [won] = [r for r in run.stored if r.game_id == "g2" and not r.void]
    assert won.winner == "b"
    notes = [note for game, note in run.finished if game == "g2"]
    assert notes == [
        "it will be replayed (attempt 2 of 3)",
        "it will be replayed (attempt 3 of 3)",
        "",
    ]


async def test_a_game_void_max_attempts_times_is_given_up_and_the_run_goes_on() -> None:
    run = await drive(
        {"g1": [Void(Termination.HARNESS)]},
        policy=VoidPolicy(max_attempts=2, max_consecutive_voids=10),
    )
    assert not run.outcome.aborted
    assert [g.game_id for g in run.outcome.unplayed] == ["g1"]
    assert run.taken() == Counter({"g1": 2, "g2": 1, "g3": 1})
    assert void_ids(run) == ["g1", "g1"] and rated_ids(run) == ["g2", "g3"]
    assert ("g1", "given up after 2 attempts") in run.finished


async def test_voids_in_a_row_stop_the_run_with_the_last_reason() -> None:
    run = await drive(
        lambda job, attempt: Void(Termination.HARNESS, detail=f"try {attempt}"),
        policy=VoidPolicy(max_attempts=3, max_consecutive_voids=4),
    )
    assert run.outcome.aborted.startswith("4 games in a row were void; last: ")
    assert len(run.stored) == 4 and all(r.void for r in run.stored)
    assert run.finished[-1][1] == "the run stops"
    assert not run.outcome.config_error


async def test_a_rated_game_resets_the_count_of_voids_in_a_row() -> None:
    # Six voids in all, never three in a row: each game's replay is won.
    script = {f"g{n}": [Void(), Win()] for n in range(1, 7)}
    run = await drive(script, schedule(6), VoidPolicy(max_attempts=3, max_consecutive_voids=3))
    assert len(void_ids(run)) == 6
    assert not run.outcome.aborted and rated_ids(run) == sorted(script)


async def test_an_engine_that_never_started_stops_the_run_at_its_first_void() -> None:
    never = Void(
        Termination.SETUP,
        Stage.START,
        seat=2,
        detail="exit status 3",
        stderr_tail="Traceback\nSyntaxError: invalid syntax\n",
    )
    run = await drive({"g1": [never]})
    assert run.outcome.aborted == (
        "b could not be started: exit status 3; its last stderr line: SyntaxError: invalid syntax"
    )
    assert run.taken() == Counter({"g1": 1}) and void_ids(run) == ["g1"]
    assert not run.outcome.config_error and not run.outcome.unplayed


async def test_an_engine_that_came_up_before_is_retried_when_it_fails_to_restart() -> None:
    never = Void(Termination.SETUP, Stage.START, seat=2, detail="exit status 3")
    run = await drive({"g2": [never, Win()]})
    assert not run.outcome.aborted
    assert run.taken()["g2"] == 2 and rated_ids(run) == ["g1", "g2", "g3"]


async def test_a_result_reported_twice_is_stored_and_counted_once() -> None:
    run = await drive(lambda job, attempt: Twice(Win()))
    assert rated_ids(run) == ["g1", "g2", "g3"] and len(run.stored) == 3
    assert sorted(game for game, _ in run.finished) == ["g1", "g2", "g3"]
    assert not run.outcome.aborted
    # A void reported twice is one void: replayed once, not twice.
    run = await drive({"g1": [Twice(Void()), Win()]})
    assert void_ids(run) == ["g1"] and run.taken()["g1"] == 2


async def test_a_game_the_engines_cannot_play_stops_the_run_as_a_config_error() -> None:
    run = await drive({"g2": [Refused("b cannot play atoll-islands 4")]})
    assert run.outcome.aborted == "b cannot play atoll-islands 4"
    assert run.outcome.config_error
    assert rated_ids(run) == ["g1"] and void_ids(run) == []


async def test_an_executor_that_cannot_go_on_stops_the_run() -> None:
    run = await drive({"g2": [Halt("no Dask worker can start b")]})
    assert run.outcome.aborted == "no Dask worker can start b"
    assert not run.outcome.config_error
    assert rated_ids(run) == ["g1"]


async def test_a_stop_is_asked_after_each_rated_game_only() -> None:
    run = Run(FakeExecutor({"g1": [Void(), Win()]}))
    after_void: list[bool] = []

    def stop() -> bool:
        after_void.append(run.stored[-1].void)
        return len(rated_ids(run)) >= 2

    outcome = await Driver(iter(schedule(10)), spec, run.executor, [run], run, stop=stop).run()
    assert not outcome.aborted and rated_ids(run) == ["g1", "g2"]
    assert after_void == [False, False]  # asked twice, never after the void attempt
    assert run.taken() == Counter({"g1": 2, "g2": 1})  # nothing after the stop


@pytest.mark.parametrize("model", ["pairs", "games"])
@pytest.mark.parametrize(("winner", "verdict"), [("0", "H1"), ("1", "H0")])
async def test_the_sprt_stops_a_match_once_it_decides(
    winner: str, verdict: str, model: str
) -> None:
    test = Sprt(0.0, 100.0, model=model)
    result = MatchResult(names=("a", "b"), keep=True, test=test)
    run = Run(FakeExecutor(lambda job, attempt: Win(engine=winner)))
    games = match_games("m", 200, VARIANT)

    def stop() -> bool:
        return result.sprt_result().result != "inconclusive"

    # The score is a sink of the run, as a match's is: it counts before the stop is asked.
    driver = Driver(games, spec, run.executor, [run, result], run, stop=stop)
    outcome = await driver.run()
    decided = result.sprt_result()
    assert not outcome.aborted and decided.result == verdict and decided.model == model
    assert decided.games == len(run.stored) == len(run.executor.jobs) < 200
    # It stopped at the first game (pairs: the first whole pair) that decided: one fewer
    # was not enough.
    step = 2 if model == "pairs" else 1
    assert decided.games % step == 0
    before = MatchResult(names=("a", "b"), test=test)
    for record in run.stored[:-step]:
        before.add(("0", "1") if record.seat1 == "0" else ("1", "0"), record)
    assert before.sprt_result().result == "inconclusive"
    if model == "pairs":
        assert decided.pairs == (
            (0, 0, len(run.stored) // 2) if winner == "0" else (len(run.stored) // 2, 0, 0)
        )


class Knockout:
    """A schedule whose second round is made from the first round's results: the
    winners of games g1 and g2 meet in g3, which cannot be handed out before both are
    settled. `stored` is what the run's store holds, checked as each result is told."""

    def __init__(self, stored: list[GameRecord], fail: str = "") -> None:
        self.stored = stored
        self.pending = schedule(2)
        self.heard: list[tuple[str, str | None]] = []  # game id, winner
        self.fail = fail  # raised as Unschedulable when round 2 is to be made
        self.final = False

    def next(self) -> ScheduledGame | Wait | None:
        if self.pending:
            return self.pending.pop(0)
        if len(self.heard) < 2:
            return WAIT
        if self.fail:
            raise Unschedulable(self.fail)
        if self.final:
            return None
        self.final = True
        winners = [winner or "" for _, winner in sorted(self.heard)]  # of g1, then g2
        return ScheduledGame(
            number=3, game_id="g3", round=2, pair_key="p3", engines=(winners[0], winners[1])
        )

    def settled(self, game: ScheduledGame, record: GameRecord) -> None:
        assert not record.void and record is self.stored[-1]  # stored before it is told
        self.heard.append((game.game_id, record.winner))


async def test_a_schedule_made_from_results_waits_for_them_and_hears_each_rated_one() -> None:
    run = Run(FakeExecutor({"g1": [Void(), Win(seat=2)], "g2": [Win(seat=1)]}))
    knockout = Knockout(run.stored)
    outcome = await Driver(knockout, spec, run.executor, [run], run).run()
    assert not outcome.aborted and not outcome.blocked
    # The void attempt is the driver's to replay: the schedule hears rated games only.
    assert run.taken() == Counter({"g1": 2, "g2": 1, "g3": 1})
    assert run.executor.jobs[-1].spec.game_id == "g3"  # once g1 and g2 are settled
    assert sorted(knockout.heard) == [("g1", "b"), ("g2", "a"), ("g3", "b")]
    assert run.executor.jobs[-1].engines == ("b", "a")


async def test_a_schedule_waiting_for_a_game_given_up_ends_the_run_blocked() -> None:
    run = Run(FakeExecutor({"g1": [Void(Termination.HARNESS)]}))
    knockout = Knockout(run.stored)
    outcome = await Driver(
        knockout, spec, run.executor, [run], run, policy=VoidPolicy(max_attempts=2)
    ).run()
    assert outcome.blocked and not outcome.aborted
    assert [g.game_id for g in outcome.unplayed] == ["g1"]
    assert "g3" not in run.taken() and knockout.heard == [("g2", "a")]


async def test_a_schedule_that_cannot_go_on_stops_the_run_with_its_reason() -> None:
    run = Run(FakeExecutor())
    knockout = Knockout(run.stored, fail="round 2 cannot be paired")
    outcome = await Driver(knockout, spec, run.executor, [run], run).run()
    assert outcome.aborted == "round 2 cannot be paired" and not outcome.blocked
    assert rated_ids(run) == ["g1", "g2"]


async def test_a_resumed_tournament_plays_only_the_games_not_stored(tmp_path: Path) -> None:
    path = tmp_path / "t.toml"
    path.write_text(
        '[tournament]\nname = "t"\nsize = 7\nrounds = 2\n'
        + "".join(f'[[engine]]\nname = "{n}"\ncommand = ["true"]\n' for n in ("a", "b", "c"))
    )
    t = load_tournament(path, engines_here=False)
    assert t.total == 12

    def stops_at(count: int) -> Callable[[GameJob, int], Outcome]:
        return lambda job, attempt: Halt("interrupted") if job.number > count else Win(seat=2)

    with Store.open(t.output) as store:
        store.begin(t.name, t.conditions(), t.definition(), t.entries())
        first = FakeExecutor(stops_at(5))
        plan = t.plan(store)
        outcome = await Driver(plan.games, plan.game_spec, first, plan.sinks, Unheard()).run()
        assert outcome.aborted == "interrupted"
        done = store.done_ids()
        assert len(done) == 5
        second = FakeExecutor()
        plan = t.plan(store)
        outcome = await Driver(plan.games, plan.game_spec, second, plan.sinks, Unheard()).run()
        assert not outcome.aborted
        again = [job.spec.game_id for job in second.jobs]
        assert len(again) == 7 and not done & set(again)
    with Store.open_read(t.output) as store:
        assert store.done_ids() == set(t.ids()) and store.games_stored() == 12
        assert store.void_count() == 0


async def test_a_game_the_plan_no_longer_wants_is_taken_back_unplayed() -> None:
    """Games are read ahead of the slots; the plan is asked again as each is about to
    start (a pairing's test may have decided meanwhile): one it no longer wants is
    neither played nor stored, and the run still ends."""
    played: list[str] = []

    def keep(game: ScheduledGame) -> bool:
        played.append(game.game_id)
        return len(played) <= 2  # the third and later are not wanted

    run = await drive({}, games=schedule(5), keep=keep)
    assert rated_ids(run) == ["g1", "g2"] and not void_ids(run)
    assert run.taken() == Counter({"g1": 1, "g2": 1})
    assert not run.outcome.unplayed and not run.outcome.aborted


async def test_the_dispatcher_asks_keep_as_a_job_is_taken_not_as_it_is_read() -> None:
    import trio
    import trio.testing

    from arbiter.executors.dispatch import Dispatcher
    from arbiter.executors.jobs import Withdrawn

    send, receive = trio.open_memory_channel[GameJob](100)
    for game in schedule(6):
        send.send_nowait(GameJob(game.number, spec(game), game.engines))
    send.close()
    wanted = {1, 2, 3, 4, 5, 6}
    withdrawn: list[int] = []

    def emit(event: object) -> None:
        assert isinstance(event, Withdrawn)
        withdrawn.append(event.number)

    dispatcher = Dispatcher(receive, 1, lambda job: job.number in wanted, emit)
    taken = []
    async with trio.open_nursery() as nursery:
        nursery.start_soon(dispatcher.fill)
        await trio.testing.wait_all_tasks_blocked()  # all six read ahead
        while (job := await dispatcher.take()) is not None:
            taken.append(job.number)
            wanted -= {3, 4}  # a result came in: games 3 and 4 are no longer wanted
    assert taken == [1, 2, 5, 6] and withdrawn == [3, 4]
