"""SPSA tuning as a pure schedule: the gains, the trajectory, resuming from a store."""

from __future__ import annotations

import json
import math
import random
import sys
from pathlib import Path

import pytest
from files import write_tournament

from arbiter.engines.config import EnginesFile, KnownEngines, resolve_engine
from arbiter.engines.dialect import Dialect, param_commands, setup_commands
from arbiter.engines.params import fill, placeholders
from arbiter.errors import ConfigError
from arbiter.results.records import GameRecord, Termination
from arbiter.results.sprt import Sprt
from arbiter.results.store import ResultRow
from arbiter.rules import Variant
from arbiter.rules.clock import TimeControl
from arbiter.runs.schedule import WAIT, Openings, ScheduledGame
from arbiter.runs.tournament import load_tournament
from arbiter.runs.tune import Param, TuneSchedule, TuneSettings, tune_json, tune_lines

HEX5 = Variant(4, 5, True)
BEST = {"X": 70.0, "Y": 30.0}


def settings(batch: int = 1, opponents: tuple[str, ...] = ()) -> TuneSettings:
    params = (Param("X", 0, 100, 20, step=10, integer=True), Param("Y", 0, 100, 80, step=10))
    return TuneSettings("tb", params, batch, opponents)


def winner(game: ScheduledGame, rng: random.Random) -> int:
    """The seat that wins, as tests/engines/tunebot.py plays: at each of its moves an
    engine resigns with probability min(0.95, d / 2), d its distance from BEST in
    units of the range; a game nobody resigns is a coin toss."""

    def resign(values: tuple[tuple[str, float], ...]) -> float:
        v = dict(values)
        d = math.hypot((v["X"] - BEST["X"]) / 100, (v["Y"] - BEST["Y"]) / 100)
        return min(0.95, d / 2)

    p1, p2 = resign(game.params[0]), resign(game.params[1])
    for _ in range(12):
        if rng.random() < p1:
            return 2
        if rng.random() < p2:
            return 1
    return rng.choice((1, 2))


def record(game: ScheduledGame, seat: int) -> GameRecord:
    a, b = game.engines
    return GameRecord(
        game_id=game.game_id,
        variant={"size": 5, "islands": 4, "pie": True},
        seat1=a,
        seat2=b,
        tc={"seat1": "inf", "seat2": "inf"},
        started="",
        termination=Termination.RESIGN,
        winner=a if seat == 1 else b,
    )


def play(schedule: TuneSchedule, rng: random.Random, stop: int | None = None) -> list[ResultRow]:
    """Play the schedule one game at a time (each batch's games handed out before any is
    told), up to `stop` games; the rows stored."""
    rows: list[ResultRow] = []
    held: list[ScheduledGame] = []
    while stop is None or len(rows) < stop:
        game = schedule.next()
        if game is WAIT or game is None:
            if not held:
                break
            for g in held:
                if stop is not None and len(rows) >= stop:
                    break
                seat = winner(g, rng)
                schedule.settled(g, record(g, seat))
                rows.append(ResultRow(g.game_id, g.round, *g.engines, seat))
            held = []
            continue
        held.append(game)
    return rows


def test_spsa_reaches_the_best_point_within_a_tenth_of_each_range_in_300_games() -> None:
    """The stated budget: 150 iterations (300 games) from 50 and 50 units away."""
    schedule = TuneSchedule("t", settings(batch=2), 300, HEX5, Openings(), 5, [])
    rows = play(schedule, random.Random(1))
    assert len(rows) == 300 and schedule.over
    values = schedule.current()
    assert abs(values["X"] - BEST["X"]) <= 10 and abs(values["Y"] - BEST["Y"]) <= 10, values
    assert values["X"] == round(values["X"])  # an integer parameter plays whole numbers
    # Whole pairs only: each iteration is one seat-swapped pair.
    assert sorted({r.round for r in rows}) == list(range(1, 151))
    assert all(sum(r.round == k for r in rows) == 2 for k in range(1, 151))


def confirming(batch: int) -> TuneSettings:
    base = settings(batch)
    return TuneSettings(base.engine, base.params, batch, (), Sprt(0, 100))  # a short test


@pytest.mark.parametrize("cut", [1, 7, 8, 13, 45])
def test_a_schedule_rebuilt_from_stored_results_goes_on_the_same_trajectory(cut: int) -> None:
    """Killed after `cut` games (mid-batch or not, in the tune or its confirming test) and
    rebuilt from the store: the games still to play and the values reached are those of
    the run never interrupted."""
    openings = Openings(random_plies=1)
    whole = TuneSchedule("t", confirming(3), 40, HEX5, openings, 9, [])
    rows = play(whole, random.Random(2))
    assert len(rows) > 45
    first = TuneSchedule("t", confirming(3), 40, HEX5, openings, 9, [])
    kept = play(first, random.Random(2), stop=cut)
    resumed = TuneSchedule("t", confirming(3), 40, HEX5, openings, 9, kept)
    by_id = {r.game_id: r for r in rows}
    handed: list[str] = []
    while True:
        game = resumed.next()
        if game is None:
            break
        if game is WAIT:
            continue
        handed.append(game.game_id)
        assert game.game_id not in {r.game_id for r in kept}  # nothing played twice
        resumed.settled(game, record(game, by_id[game.game_id].winner_seat))
    assert sorted(handed + [r.game_id for r in kept]) == sorted(by_id)
    assert resumed.trajectory == whole.trajectory
    assert resumed.current() == whole.current()
    assert resumed.verdict == whole.verdict and resumed.counts == whole.counts


def test_against_other_engines_both_values_play_the_same_opponent_on_one_opening() -> None:
    schedule = TuneSchedule(
        "t", settings(opponents=("a", "b")), 8, HEX5, Openings(random_plies=1), 3, []
    )
    games = [schedule.next() for _ in range(4)]
    assert all(isinstance(g, ScheduledGame) for g in games)
    first = [g for g in games if isinstance(g, ScheduledGame)]
    assert {g.opening for g in first} == {first[0].opening}
    assert [sorted(g.engines) for g in first] == [["a", "tb"]] * 4
    plus = dict(first[0].params[0])
    minus = dict(first[2].params[0])
    assert plus != minus and first[1].params[1] == first[0].params[0]
    assert schedule.next() is WAIT


def test_placeholders_are_filled_with_the_values_as_a_command_line_writes_them() -> None:
    argv = ("bot", "--c={C}", "{N}", "{C}x", "{not-a-name}")
    assert placeholders(argv) == ["C", "N"]
    assert fill(argv, {"C": 1.25, "N": 3.0}) == ("bot", "--c=1.25", "3", "1.25x", "{not-a-name}")


TUNE = """format = "spsa"
games = 8

[tune]
engine = "x"

[tune.params.C]
min = 0.5
max = 2
start = 1
"""


def engine(name: str, *words: str) -> str:
    return (
        f"[[engine]]\nname = {json.dumps(name)}\ncommand = {json.dumps([sys.executable, *words])}\n"
    )


@pytest.mark.parametrize(
    ("header", "engines", "where", "words"),
    [
        ("", [engine("x", "-c", "{C}"), engine("y", "-c", "")], "engine 'x'.command", "{C}"),
        (TUNE, [engine("x", "-c", "{C}"), engine("y", "{D}")], "engine 'y'.command", "{D}"),
        (TUNE, [engine("x", "-c", "{C} {E}")], "engine 'x'.command", "{E}"),
        (
            "",
            ['[[engine]]\nname = "x"\ncommand = ["sh"]\nset_param = "two words"\n', engine("y")],
            "engine 'x'.set_param",
            "one plain ASCII word",
        ),
        (TUNE.replace("start = 1", "start = 3"), [engine("x", "{C}")], "params.C.start", "outside"),
    ],
)
def test_unknown_or_unfilled_placeholders_are_one_config_error(
    tmp_path: Path, header: str, engines: list[str], where: str, words: str
) -> None:
    path = write_tournament(tmp_path, header, engines)
    with pytest.raises(ConfigError) as caught:
        load_tournament(path)
    text = str(caught.value)
    assert where in text and words in text and str(path) in text, text


def test_a_tune_against_itself_plays_two_seats_started_at_the_start_values(tmp_path: Path) -> None:
    path = write_tournament(tmp_path, TUNE, [engine("x", "-c", "{C}")])
    t = load_tournament(path)
    assert list(t.engines) == ["x+", "x-"]
    assert t.engines["x+"].argv[-1] == "1" and t.templates["x+"][-1] == "{C}"
    assert t.conditions()["tune"]["engine"] == "x"


def test_the_confirming_sprt_plays_tuned_against_start_once_the_budget_is_spent() -> None:
    base = settings(batch=2)
    test = Sprt(0, 10)
    confirmed = TuneSettings(base.engine, base.params, base.batch, (), test)
    schedule = TuneSchedule("t", confirmed, 300, HEX5, Openings(), 5, [])
    rows = play(schedule, random.Random(1))
    assert schedule.over and schedule.verdict is not None
    assert schedule.verdict.result == "H1"  # the tuned values are much the stronger
    confirming = [r for r in rows if r.round > 150]
    assert confirming and len(confirming) == 2 * schedule.confirmed < 300
    assert {frozenset((r.seat1, r.seat2)) for r in confirming} == {
        frozenset(("tb:tuned", "tb:start"))
    }
    status = tune_json(schedule)
    assert status["confirm"]["state"] == "H1 accepted"  # type: ignore[index]
    assert "H1 accepted" in tune_lines(schedule)[-1]


def test_a_confirming_test_adds_the_tuned_and_start_seats(tmp_path: Path) -> None:
    header = TUNE.replace('engine = "x"', 'engine = "x"\nconfirm = { elo0 = 0, elo1 = 10 }')
    t = load_tournament(write_tournament(tmp_path, header, [engine("x", "-c", "{C}")]))
    assert list(t.engines) == ["x+", "x-", "x:tuned", "x:start"]
    # The test plays at most the pairs it is expected to need (elo0 = 0, elo1 = 10: 3200).
    assert t.templates["x:tuned"][-1] == "{C}" and t.total == 8 + 2 * 3200
    bad = header.replace("elo1 = 10", "elo1 = -10")
    with pytest.raises(ConfigError, match=r"tune\.confirm"):
        load_tournament(write_tournament(tmp_path, bad, [engine("x", "-c", "{C}")]))


def test_values_without_a_placeholder_are_told_by_the_command_the_dialect_names() -> None:
    values = [("C", "0.5")]
    assert param_commands(Dialect(), lambda c: c == "atoll-set-param", values) == [
        ("atoll-set-param", "C", "0.5")
    ]
    kata = Dialect(set_param="kata-set-param")
    assert param_commands(kata, lambda c: False, values) == [("kata-set-param", "C", "0.5")]
    problem = param_commands(Dialect(), lambda c: False, values)
    assert isinstance(problem, str) and "lists no atoll-set-param" in problem
    assert param_commands(Dialect(), lambda c: False, []) == []
    # Told after clear_board, before the pie and the clock.
    told = setup_commands(Dialect(), lambda c: True, HEX5, TimeControl(infinite=True), [("s",)])
    assert told.index(("s",)) == told.index(("clear_board",)) + 1


def test_a_parameter_without_a_placeholder_is_left_to_the_protocol(tmp_path: Path) -> None:
    t = load_tournament(write_tournament(tmp_path, TUNE, [engine("x", "-c", "pass")]))
    assert t.engines["x+"].argv == t.templates["x+"]


def test_a_named_engine_with_a_placeholder_is_refused_outside_a_tune(tmp_path: Path) -> None:
    book = tmp_path / "engines.toml"
    book.write_text(f'[engines.tb]\ncommand = [{json.dumps(sys.executable)}, "{{C}}"]\n')
    with pytest.raises(ConfigError) as caught:
        resolve_engine("tb", KnownEngines(EnginesFile(book)))
    assert "engines.tb.command" in str(caught.value) and "{C}" in str(caught.value)
