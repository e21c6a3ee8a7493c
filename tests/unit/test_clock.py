"""Clock arithmetic, and the referee's clock handling on virtual time with scripted engines."""

from __future__ import annotations

import pytest
import trio
import trio.testing
from fakes import ScriptedBot, play_virtual

from arbiter.engines.dialect import Dialect
from arbiter.errors import ConfigError
from arbiter.games.referee import RefereeConfig
from arbiter.results.records import Termination
from arbiter.rules import Variant
from arbiter.rules.clock import GameClock, TimeControl


@pytest.mark.parametrize(
    ("text", "canonical", "fields"),
    [
        ("10+0.1", "10+0.1", (10.0, 0.1, 0, 0.0, False)),
        ("40/60+0.5", "40/60+0.5", (60.0, 0.5, 40, 0.0, False)),
        ("1:30+1", "90+1", (90.0, 1.0, 0, 0.0, False)),
        ("5", "5+0", (5.0, 0.0, 0, 0.0, False)),
        ("1+0", "1+0", (1.0, 0.0, 0, 0.0, False)),
        ("40/60", "40/60+0", (60.0, 0.0, 40, 0.0, False)),
        ("st=0.5", "st=0.5", (0.0, 0.0, 0, 0.5, False)),
        ("inf", "inf", (0.0, 0.0, 0, 0.0, True)),
        ("0+0.2", "0+0.2", (0.0, 0.2, 0, 0.0, False)),
    ],
)
def test_time_control_parses_and_prints(text: str, canonical: str, fields: tuple) -> None:
    tc = TimeControl.parse(text)
    assert (tc.base, tc.increment, tc.moves, tc.per_move, tc.infinite) == fields
    assert str(tc) == canonical
    assert TimeControl.parse(str(tc)) == tc


@pytest.mark.parametrize("bad", ["", "fast", "10+", "+1", "0/10+1", "st=0", "st=x", "0", "1:xx"])
def test_bad_time_controls_say_how_to_write_one(bad: str) -> None:
    with pytest.raises(ConfigError, match="BASE\\+INC"):
        TimeControl.parse(bad)


def test_fischer_clock_arithmetic() -> None:
    clock = GameClock(TimeControl(1.0, 0.1), margin=0.1)
    assert clock.remaining == pytest.approx(1.1)  # BASE + INC at the start
    assert clock.stop(0.6)
    assert clock.remaining == pytest.approx(0.6)
    assert clock.stop(0.65)  # 0.6 - 0.65 = -0.05: within the margin, clamped to 0, + INC
    assert clock.remaining == pytest.approx(0.1)
    assert clock.remaining_ms() == 100
    assert not clock.stop(0.21)  # 0.1 - 0.21 = -0.11 < -margin
    assert clock.flagged


def test_moves_clock_adds_base_every_period() -> None:
    clock = GameClock(TimeControl(base=2.0, increment=0.0, moves=2), margin=0.0)
    assert clock.stop(0.5) and clock.remaining == pytest.approx(1.5)
    assert clock.stop(0.5) and clock.remaining == pytest.approx(3.0)  # 1.0 + 2.0
    assert clock.stop(1.0) and clock.remaining == pytest.approx(2.0)
    assert clock.stop(1.0) and clock.remaining == pytest.approx(3.0)


def test_fixed_time_per_move_and_infinite() -> None:
    clock = GameClock(TimeControl(per_move=0.5), margin=0.1)
    assert clock.stop(0.59) and clock.remaining == pytest.approx(0.5)
    assert not clock.stop(0.61)
    inf = GameClock(TimeControl(infinite=True))
    assert inf.stop(10_000.0)
    assert inf.deadline(grace=0.5, infinite_move_limit=600.0) == 600.0
    fischer = GameClock(TimeControl(1.0, 0.0), margin=0.1)
    assert fischer.deadline(grace=0.5, infinite_move_limit=600.0) == pytest.approx(1.6)


def test_never_a_negative_time_for_the_engine() -> None:
    clock = GameClock(TimeControl(0.0, 0.05), margin=1.0)
    for _ in range(5):
        assert clock.stop(0.5)
        assert clock.remaining_ms() >= 0


async def test_slow_engine_loses_on_time_by_the_clock_rules(autojump_clock: trio.abc.Clock) -> None:
    # 1+0.1 with 0.5 s per move: 1.1 -> 0.7 -> 0.3 -> -0.2 < -0.1 on its third move.
    outcome, players, _ = await play_virtual((ScriptedBot(0.5, 1), ScriptedBot(0.0, 2)), "1+0.1")
    record = outcome.record  # type: ignore[attr-defined]
    assert record.termination is Termination.TIME
    assert record.winner == "p2" and record.evidence.engine == "p1"
    assert record.plies == 4  # p1 made two moves in time, p2 two; p1's third was late
    assert record.move_ms[0] == pytest.approx(500, abs=1)
    assert "used 500 ms" in record.reason  # the late answer was measured, not cut off
    assert players[0].killed  # a faulty engine is killed and restarted for its next game


async def test_engine_within_margin_does_not_lose(autojump_clock: trio.abc.Clock) -> None:
    # 0.55 s per move at 1+0.5: 1.5 -> 1.45 -> 1.4 ...: never flags; a full game finishes.
    outcome, _, _ = await play_virtual((ScriptedBot(0.55, 3), ScriptedBot(0.55, 4)), "1+0.5")
    assert outcome.record.termination is Termination.CONNECTION  # type: ignore[attr-defined]


async def test_hanging_engine_is_killed_at_remaining_plus_margin_plus_grace(
    autojump_clock: trio.abc.Clock,
) -> None:
    config = RefereeConfig(margin=0.1, grace=0.5)
    outcome, players, elapsed = await play_virtual(
        (ScriptedBot(0.0, 5, hang_after=0), ScriptedBot(0.0, 6)), "2+0", config
    )
    record = outcome.record  # type: ignore[attr-defined]
    assert record.termination is Termination.TIME and record.winner == "p2"
    assert players[0].killed
    assert elapsed == pytest.approx(2.0 + 0.1 + 0.5, abs=0.01)


async def test_inf_still_has_a_move_deadline(autojump_clock: trio.abc.Clock) -> None:
    config = RefereeConfig(infinite_move_limit=30.0)
    outcome, players, elapsed = await play_virtual(
        (ScriptedBot(0.0, 7), ScriptedBot(0.0, 8, hang_after=1)), "inf", config
    )
    assert outcome.record.termination is Termination.TIME  # type: ignore[attr-defined]
    assert players[1].killed and elapsed == pytest.approx(30.0, abs=0.01)


async def test_a_deadline_passing_after_its_answer_is_charged_to_no_one_else(
    autojump_clock: trio.abc.Clock,
) -> None:
    # Without a clock the answer counts however late it is read; the move deadline that
    # passed meanwhile must not cut the opponent's next wait short.
    config = RefereeConfig(infinite_move_limit=5.0)
    bots = (ScriptedBot(0.0, 13), ScriptedBot(0.0, 14))
    bots[0].late_by = 6.0
    outcome, players, _ = await play_virtual(bots, "inf", config)
    record = outcome.record  # type: ignore[attr-defined]
    assert record.termination is Termination.CONNECTION, record.reason
    assert record.move_ms[0] == pytest.approx(6000, abs=1)
    assert not players[0].killed and not players[1].killed


async def test_engines_are_told_their_clock_each_move(autojump_clock: trio.abc.Clock) -> None:
    bots = (ScriptedBot(0.25, 9), ScriptedBot(0.0, 10))
    outcome, _, _ = await play_virtual(bots, "10+1")
    times = bots[0].time_lefts
    # Both colours, Black first, before each of Black's genmoves: the clocks start at
    # BASE + INC = 11 s; Black spends 0.25 s and gains 1 s per move, White 0 s and 1 s.
    moves = len(times) // 2
    assert moves > 5 and len(times) == 2 * moves
    expected = [t for k in range(moves) for t in (11000 + 750 * k, 11000 + 1000 * k)]
    assert times == expected
    assert outcome.record.termination is Termination.CONNECTION  # type: ignore[attr-defined]


async def test_a_missing_play_answer_is_a_stall(autojump_clock: trio.abc.Clock) -> None:
    bots = (ScriptedBot(0.0, 11), ScriptedBot(0.0, 12))
    bots[1].hang_on_play = True
    outcome, players, elapsed = await play_virtual(bots, "60+0", command_timeout=1.0)
    # The second engine never answers the `play` of the first move: the command deadline
    # (1 s) decides long before its 60 s clock would.
    record = outcome.record  # type: ignore[attr-defined]
    assert record.termination is Termination.STALL and record.winner == "p1"
    assert players[1].killed and elapsed == pytest.approx(1.0, abs=0.01)


@pytest.mark.parametrize("answer", ["a\u00b2", "\u0663\u0664", "f" + "9" * 5000, "pass", ""])
async def test_strange_genmove_answers_are_illegal_not_harness_errors(
    answer: str, autojump_clock: trio.abc.Clock
) -> None:
    bots = (ScriptedBot(0.0, 13), ScriptedBot(0.0, 14))
    bots[0].raw_genmove = answer
    outcome, _, _ = await play_virtual(bots, "10+0")
    record = outcome.record  # type: ignore[attr-defined]
    assert not record.void
    assert record.termination is Termination.ILLEGAL and record.winner == "p2"


async def test_a_fault_before_the_first_genmove_is_written_voids_the_game(
    autojump_clock: trio.abc.Clock,
) -> None:
    bots = (ScriptedBot(0.0, 15), ScriptedBot(0.0, 16))
    bots[0].close_before_genmove = True  # answers the set-up, then closes its end
    outcome, _, _ = await play_virtual(bots, "10+0")
    record = outcome.record  # type: ignore[attr-defined]
    assert record.void and record.winner is None
    assert record.termination is Termination.SETUP and outcome.faulty == {0}  # type: ignore[attr-defined]


@pytest.mark.parametrize(
    ("delay", "verdict"), [(0.5, Termination.PROTOCOL), (1.5, Termination.TIME)]
)
async def test_the_clock_is_checked_before_a_refusal(
    delay: float, verdict: Termination, autojump_clock: trio.abc.Clock
) -> None:
    bots = (ScriptedBot(delay, 17), ScriptedBot(0.0, 18))
    bots[0].raw_genmove = "?cannot move"
    outcome, _, _ = await play_virtual(bots, "st=1")
    record = outcome.record  # type: ignore[attr-defined]
    assert record.termination is verdict and record.winner == "p2"


GTP_HEX = frozenset(["play", "genmove", "boardsize", "clear_board", "time_left"])


async def test_every_command_each_dialect_is_sent(autojump_clock: trio.abc.Clock) -> None:
    """A plain GTP Hex engine (spells the pie move swap-pieces, lists time_left but not
    time_settings) against an atoll-* engine: every line each one is told, in order."""
    bots = (ScriptedBot(0.5, 3), ScriptedBot(0.25, 4))
    bots[0].islands = 4  # a Hex program: it is never told the variant
    speak = ((GTP_HEX, Dialect(islands=(4,), swap="swap-pieces")), (None, None))
    outcome, _, _ = await play_virtual(
        bots, "10+1", variant=Variant(4, 5, True), opening=("c3", "swap"), speak=speak
    )
    record = outcome.record  # type: ignore[attr-defined]
    assert record.termination is Termination.CONNECTION and record.moves[:2] == ["c3", "swap"]
    gtp, atoll = bots[0].received, bots[1].received
    # Set-up: only what each one lists; the GTP engine hears of no clock at all.
    assert gtp[:2] == ["boardsize 5", "clear_board"]
    assert atoll[:5] == [
        "atoll-islands 4",
        "boardsize 5",
        "clear_board",
        "atoll-pie on",
        "atoll-time_settings fischer 10000 1000",
    ]
    assert not any(line.startswith(("time_", "atoll-")) for line in gtp)
    # The opening reaches both, the pie move in each one's spelling.
    assert gtp[2:4] == ["play b c3", "play w swap-pieces"]
    assert atoll[5:7] == ["play b c3", "play w swap"]
    # Before each of its genmoves the atoll engine hears both clocks, Black first.
    for i, line in enumerate(atoll):
        if line.startswith("genmove"):
            assert atoll[i - 2].startswith("atoll-time_left b ")
            assert atoll[i - 1].startswith("atoll-time_left w ")
    # Each engine is told exactly the other's moves: together, every move of the game.
    told = [line.split()[-1] for line in gtp[4:] + atoll[7:] if line.startswith("play")]
    assert sorted(told) == sorted(record.moves[2:-1])


async def test_a_move_deadline_passing_on_a_play_answer_names_the_play(
    autojump_clock: trio.abc.Clock,
) -> None:
    # With 1+0 the move deadline (1.6 s) comes before the command deadline (10 s): the
    # engine that never answers the `play` of the first move loses on time, and the
    # reason says which answer never came (it never reached its genmove).
    bots = (ScriptedBot(0.0, 19), ScriptedBot(0.0, 20))
    bots[1].hang_on_play = True
    outcome, players, elapsed = await play_virtual(bots, "1+0")
    record = outcome.record  # type: ignore[attr-defined]
    assert record.termination is Termination.TIME and record.winner == "p1"
    assert f"no answer to 'play b {record.moves[0]}' after 1.60 s" in record.reason, record.reason
    assert players[1].killed and elapsed == pytest.approx(1.6, abs=0.01)


async def test_the_pie_move_in_the_engines_own_spelling_is_read_as_swap(
    autojump_clock: trio.abc.Clock,
) -> None:
    # Its definition says it spells the pie move "pie": its "pie" as move 2 is the swap
    # (its later "pie", with the pie move gone, is an illegal swap, not an unknown word).
    bots = (ScriptedBot(0.0, 21), ScriptedBot(0.0, 22))
    bots[1].raw_genmove = "pie"
    speak = ((None, None), (None, Dialect(swap="pie")))
    outcome, _, _ = await play_virtual(bots, "10+0", speak=speak)
    record = outcome.record  # type: ignore[attr-defined]
    assert record.moves[1] == "swap" and record.swapped
    assert record.termination is Termination.ILLEGAL and "swap not allowed" in record.reason
