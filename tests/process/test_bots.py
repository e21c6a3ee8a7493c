"""The bundled ladder (random, heuristic, mcts) through the real protocol and the real CLI."""

from __future__ import annotations

import json
import random
import subprocess
import sys
from pathlib import Path

import pytest
from paths import ROOT

from arbiter.bot import Bot, moves_left
from arbiter.protocol.codec import parse_command
from arbiter.results.records import GameRecord, Termination, read_records
from arbiter.results.store import Store
from arbiter.rules import SWAP, Color, Game, Variant

ENGINES = ROOT / "arbiter" / "bots"
BOTS = {"random": "random_bot.py", "heuristic": "heuristic_bot.py", "mcts": "mcts_bot.py"}
FLAGS = {
    "random": ["--seed"],
    "heuristic": ["--depth", "--width", "--seed"],
    "mcts": [
        "--time",
        "--playouts",
        "--seed",
        "--rave",
        "--explore",
        "--per-leaf",
        "--no-reuse",
        "--no-resign",
    ],
}


def start_arbiter(*args: str) -> subprocess.Popen[str]:
    """Start the CLI from the project root, where the bundled engines file is found."""
    return subprocess.Popen(
        [sys.executable, "-m", "arbiter", *args],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        stdin=subprocess.DEVNULL,
    )


def run_all(jobs: list[tuple[str, list[str]]], at_once: int = 2) -> None:
    """Run CLI commands a few at a time (they are mostly engine start-ups); all must pass."""
    pending = list(jobs)
    while pending:
        batch, pending = pending[:at_once], pending[at_once:]
        started = [(tag, start_arbiter(*args)) for tag, args in batch]
        try:
            for tag, proc in started:
                _, err = proc.communicate(timeout=120)
                assert proc.returncode == 0, f"{tag}: {err}"
        finally:
            for _, proc in started:
                if proc.poll() is None:
                    proc.terminate()  # the harness shuts its engines down on SIGTERM
                    proc.wait(timeout=30)


def replayed(record: GameRecord) -> Game:
    """The game replayed on the referee's rules: every move legal, the win where it says."""
    game = Game(Variant(**record.variant))
    for move in record.moves:
        game.play(move)
    if record.termination is Termination.CONNECTION:
        assert game.winner is not None and str(game.winner) == record.winner_color
    return game


VARIANTS = {  # name: (islands, size, pie)
    "atoll7": (8, 7, True),
    "atoll11-nopie": (8, 11, False),
    "atoll15": (8, 15, True),
    "atoll19-nopie": (8, 19, False),
    "atoll23": (8, 23, True),
    "hex2": (4, 2, True),
    "hex11-nopie": (4, 11, False),
    "hex26": (4, 26, True),
}


# Light settings keep the long games of the big boards cheap; the clock test below plays
# the bots as bundled.
QUICK = {"random": [], "heuristic": ["--depth", "1", "--width", "4"], "mcts": ["--playouts", "64"]}


@pytest.mark.slow  # real-clock games of the whole ladder on every board
def test_every_bot_plays_every_variant(tmp_path: Path) -> None:
    """A one-round round-robin of the ladder on every board: each rung moves first and
    second against each other rung, pie on and off, through the real CLI and store."""
    jobs = []
    for tag, (islands, size, pie) in VARIANTS.items():
        (tmp_path / f"{tag}.toml").write_text(
            f'[tournament]\nname = "{tag}"\nrounds = 1\nconcurrency = 1\ntc = "0.5+0.01"\n'
            f"size = {size}\nislands = {islands}\npie = {str(pie).lower()}\n"
            + "".join(
                f"[[engine]]\nname = {json.dumps(bot)}\ncwd = {json.dumps(str(ENGINES))}\n"
                f"command = {json.dumps([sys.executable, BOTS[bot], *QUICK[bot]])}\n"
                for bot in BOTS
            )
        )
        jobs.append((tag, ["tournament", "run", str(tmp_path / f"{tag}.toml"), "--quiet"]))
    run_all(jobs)
    for tag, (islands, size, pie) in VARIANTS.items():
        with Store.open(tmp_path / f"{tag}.sqlite", create=False) as store:
            stored = list(store.records())
        assert len(stored) == 6 and not any(void for _, void in stored), tag
        seats: dict[str, list[str]] = {bot: [] for bot in BOTS}
        for data, _ in stored:
            record = GameRecord.from_json(data)
            assert record.termination in (Termination.CONNECTION, Termination.RESIGN), (
                tag,
                record.termination,
                record.reason,
            )
            game = replayed(record)
            assert game.variant == Variant(islands, size, pie)
            assert pie or not record.swapped
            seats[record.seat1].append("first")
            seats[record.seat2].append("second")
        for bot in BOTS:
            assert sorted(seats[bot]) == ["first", "first", "second", "second"], (tag, bot)


def seat_times(record: GameRecord, engine: str) -> list[float]:
    """Milliseconds each of `engine`'s moves took: seat 1 makes the even plies."""
    first = 0 if record.seat1 == engine else 1
    return record.move_ms[first::2]


@pytest.mark.slow  # real-clock games
def test_clock_is_used_but_never_overrun(tmp_path: Path) -> None:
    """Under 1+0.01 the searchers spend a real share of their clock and never lose on it;
    with a fixed time per move they stay inside it."""
    run_all(
        [
            (tag, ["match", *args, "--records", str(tmp_path / f"{tag}.jsonl")])
            for tag, args in [
                ("fischer", ["heuristic", "mcts", "--games", "2", "--tc", "1+0.01", "--seed", "5"]),
                ("movetime", ["mcts", "random", "--games", "2", "--tc", "st=0.2", "--seed", "5"]),
            ]
        ]
    )
    for record in read_records(tmp_path / "fischer.jsonl"):
        assert record.termination in (Termination.CONNECTION, Termination.RESIGN)
        replayed(record)
        for engine in ("heuristic", "mcts"):
            times = seat_times(record, engine)
            available = 1000 + 10 * len(times)
            assert sum(times) < 0.8 * available, (engine, times)
            assert max(times) < 300, (engine, times)
        # The search thinks for a while on a real clock rather than answering at once.
        assert sum(seat_times(record, "mcts")) > 0.1 * (1000 + 10 * len(seat_times(record, "mcts")))
    for record in read_records(tmp_path / "movetime.jsonl"):
        times = seat_times(record, "mcts")
        assert max(times) < 200, times
        thought = sorted(times)[len(times) // 2]
        assert thought > 40, times  # half the allowance, less the round trip


def test_help_lists_every_flag_and_the_docs_document_them() -> None:
    docs = (ROOT / "docs" / "guide" / "bundled-bots.md").read_text()
    for bot, script in BOTS.items():
        done = subprocess.run(
            [sys.executable, str(ENGINES / script), "--help"],
            cwd=ENGINES,
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert done.returncode == 0, done.stderr
        for flag in FLAGS[bot]:
            assert flag in done.stdout, (bot, flag)
            assert f"`{flag}" in docs, (bot, flag)
        assert f"[engines.{bot}]" in (ENGINES / "engines.toml").read_text()


def talk(bot: str, lines: list[str], *flags: str) -> list[str]:
    """Send protocol commands to a bot process; its answers, one per command."""
    done = subprocess.run(
        [sys.executable, str(ENGINES / BOTS[bot]), *flags],
        input="".join(f"{i} {line}\n" for i, line in enumerate(lines, 1)),
        cwd=ENGINES,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    answers = [a for a in done.stdout.split("\n\n") if a.strip()]
    assert len(answers) == len(lines), done.stdout
    for i, answer in enumerate(answers, 1):
        assert answer.startswith(f"={i}"), (lines[i - 1], answer)
    return [a.split(" ", 1)[1].strip() if " " in a else "" for a in answers]


SETUP = [
    "atoll-islands 8",
    "boardsize 11",
    "clear_board",
    "atoll-pie on",
    "atoll-time_settings fischer 5000 50",
    "atoll-time_left b 5000",
    "atoll-time_left w 5000",
]
CENTRAL, CORNER = "f5", "a1"


@pytest.mark.parametrize("bot", ["heuristic", "mcts"])
def test_pie_swaps_a_central_stone_and_keeps_a_corner_one(bot: str) -> None:
    flags = ["--seed", "3"] + (["--playouts", "3000"] if bot == "mcts" else [])
    central = talk(bot, [*SETUP, f"play b {CENTRAL}", "genmove w"], *flags)[-1]
    corner = talk(bot, [*SETUP, f"play b {CORNER}", "genmove w"], *flags)[-1]
    assert central == SWAP
    assert corner != SWAP and corner in Game().geometry.name_index
    off = [s if s != "atoll-pie on" else "atoll-pie off" for s in SETUP]
    assert talk(bot, [*off, f"play b {CENTRAL}", "genmove w"], *flags)[-1] != SWAP


@pytest.mark.parametrize("bot", ["heuristic", "mcts"])
def test_opening_is_modest_with_the_pie_rule(bot: str) -> None:
    """With the pie rule on, a first stone the bots themselves would not swap."""
    flags = ["--seed", "4"] + (["--playouts", "3000"] if bot == "mcts" else [])
    for seed in ("4", "5"):
        flags[1] = seed
        opening = talk(bot, [*SETUP, "genmove b"], *flags)[-1]
        answer = talk("heuristic", [*SETUP, f"play b {opening}", "genmove w"], "--seed", seed)
        assert answer[-1] != SWAP, opening


def test_random_takes_the_pie_at_random_and_never_without_it() -> None:
    answers = [
        talk("random", [*SETUP, f"play b {CENTRAL}", "genmove w"], "--seed", str(s))[-1]
        for s in range(8)
    ]
    assert SWAP in answers and any(a != SWAP for a in answers)
    off = [s if s != "atoll-pie on" else "atoll-pie off" for s in SETUP]
    assert talk("random", [*off, f"play b {CENTRAL}", "genmove w"], "--seed", "1")[-1] != SWAP


def lost_position(variant: Variant) -> Game:
    """A position where Black, to move, cannot win at once and White has two winning cells."""
    rng = random.Random(1)
    while True:
        game = Game(variant)
        while game.winner is None:
            if (
                game.to_move is Color.BLACK
                and not game.winning_cells(Color.BLACK)
                and len(game.winning_cells(Color.WHITE)) >= 2
            ):
                return game
            game.play(rng.choice(game.legal_cells()))


def test_mcts_resigns_only_a_lost_position_and_heuristic_never() -> None:
    variant = Variant(4, 5, pie=False)
    game = lost_position(variant)
    names = [game.move_name(m) for m in game.moves]
    setup = ["atoll-islands 4", "boardsize 5", "clear_board", "atoll-pie off"]
    plays = [f"play {'b' if i % 2 == 0 else 'w'} {m}" for i, m in enumerate(names)]
    assert talk("mcts", [*setup, *plays, "genmove b"], "--time", "0.2")[-1] == "resign"
    block = talk("mcts", [*setup, *plays, "genmove b"], "--time", "0.2", "--no-resign")[-1]
    assert block in {game.move_name(c) for c in game.winning_cells(Color.WHITE)}
    assert talk("heuristic", [*setup, *plays, "genmove b"])[-1] != "resign"
    # One step earlier (White to move) nothing is lost yet for Black: no resignation.
    earlier = talk(
        "mcts", [*setup, *plays[:-1], f"genmove {'b' if len(plays) % 2 else 'w'}"], "--time", "0.2"
    )
    assert earlier[-1] != "resign"


def test_mcts_takes_a_threatening_first_stone_instead_of_resigning() -> None:
    # On Hex 2 the first stone at a2 leaves White two losing cells: with the pie rule the
    # position is not lost, the stone can be taken.
    setup = ["atoll-islands 4", "boardsize 2", "clear_board", "atoll-pie on"]
    assert talk("mcts", [*setup, "play b a2", "genmove w"], "--time", "0.1")[-1] == SWAP


def test_moves_left_is_capped_by_the_board_size() -> None:
    big = Game(Variant(8, 23, True))
    assert moves_left(big, 0.25 * len(big.legal_cells())) == 2.5 * 23  # not ~120
    small = Game(Variant(8, 11, True))
    assert moves_left(small, 0.25 * len(small.legal_cells())) == 0.25 * len(small.legal_cells())
    assert moves_left(small, 1.0) == 6.0


def tell(bot: Bot, line: str) -> None:
    command = parse_command(line)
    assert command is not None and bot.handle(command).startswith("=")


def test_think_time_is_a_share_of_the_clock_and_never_all_of_it() -> None:
    bot = Bot()
    assert bot.think_time(Color.BLACK, 30) is None  # no clock: the bot decides
    tell(bot, "1 atoll-time_settings fischer 5000 50")
    first = bot.think_time(Color.BLACK, 30)
    # A fifth of the base is kept back: (5.05 - 1) s over 30 moves, most of the increment.
    assert first is not None and abs(first - (4.05 / 30 + 0.04 - 0.01)) < 1e-9
    tell(bot, "2 atoll-time_left b 1500")
    later = bot.think_time(Color.BLACK, 30)
    assert later is not None and abs(later - (0.5 / 30 + 0.04 - 0.01)) < 1e-9
    tell(bot, "3 atoll-time_left b 800")
    low = bot.think_time(Color.BLACK, 30)
    assert low is not None and abs(low - (0.025 - 0.01)) < 1e-9  # half the increment
    tell(bot, "4 atoll-time_left b 0")
    assert bot.think_time(Color.BLACK, 30) == 0.0
    tell(bot, "5 atoll-time_settings movetime 200")
    assert bot.think_time(Color.WHITE, 30) == 0.1
    tell(bot, "5 atoll-time_settings movetime 50")
    assert bot.think_time(Color.WHITE, 30) == 0.025  # a very short move time: half, not 0
    tell(bot, "5 atoll-time_settings movetime 200")
    tell(bot, "6 atoll-time_settings moves 10 1000 0")
    tell(bot, "7 atoll-time_left w 1000")
    blocked = bot.think_time(Color.WHITE, 30)
    assert blocked is not None and abs(blocked - (0.8 / 10 - 0.01)) < 1e-9  # the block is short
