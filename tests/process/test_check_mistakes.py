"""`arbiter check` against the mistakes that keep every move legal: a consistent misreading
of cell names, a swap only after a central stone, an untried size, an answer ended by one
newline. Each is a copy of one correct bot (tests/engines/checkbots.py, mode `wins`)
with one realistic bug, checked with the default seed."""

from __future__ import annotations

import functools
import json
import subprocess
import sys
from pathlib import Path

import pytest
from commands import invoke
from paths import ENGINES

from arbiter.check.probes import MISREADINGS, mappings, mirror_probes, plain_probes
from arbiter.rules import Color, Game, Variant

CHECKBOTS = ENGINES / "checkbots.py"


@functools.cache
def check(mode: str) -> tuple[int, dict[str, dict[str, object]]]:
    """One check of a mode, shared by the cases that look at it (a test process runs it
    once). An answer never ended needs no long wait to show."""
    timeout = "1.5" if mode == "one-newline" else "3"
    done = invoke("check", f"{sys.executable} {CHECKBOTS} {mode}", "--json", "--timeout", timeout)
    return done.returncode, {r["name"]: r for r in json.loads(done.stdout)}


def test_the_correct_bot_passes_and_the_summary_names_what_was_tried() -> None:
    code, results = check("wins")
    assert code == 0, [r for r in results.values() if not r["passed"]]
    for board in ("atoll-8/11", "hex/11"):
        assert "reads cell names right" in str(results[f"coordinates: {board}"]["detail"])
    assert results["variants and sizes tried"]["detail"] == (
        "Atoll 7, 11, 15, 19, 23 (pie rule on and off); Hex 2, 5, 11, 19, 26 (pie rule on and off)"
    )
    for size in (7, 11, 15, 19, 23):
        assert f"positions: atoll-8/{size}" in results
    for size in (2, 5, 11, 19, 26):
        assert f"positions: hex/{size} no-pie" in results
    hex2 = results["not checked: wins in one on Hex 2"]
    assert "checked on the other sizes only" in str(hex2["detail"])


@pytest.mark.parametrize(
    ("mode", "failed", "detail", "hint"),
    [
        (
            "hex-rows-from-bottom",
            "coordinates: hex/11",
            "rows counted from the other end",
            "a1 is the top-left corner",
        ),
        pytest.param(
            "atoll-ranks-from-top",
            "coordinates: atoll-8/11",
            "rows counted from the other end",
            "rank 1 is the bottom cell of each file",
            marks=pytest.mark.slow,
        ),  # the Atoll form of rows from the bottom
        pytest.param(
            "files-from-right",
            "coordinates: hex/11",
            "letters from the right",
            "letter counted from the left",
            marks=pytest.mark.slow,
        ),  # a misread file, as rows from the bottom (fast)
        pytest.param(
            "files-from-right",
            "coordinates: atoll-8/11",
            "letters from the right",
            "letter counted from the left",
            marks=pytest.mark.slow,
        ),  # the same mistake on the other board
        pytest.param(
            "letter-number-swapped",
            "coordinates: hex/11",
            "letter and number swapped",
            "the letter is the column",
            marks=pytest.mark.slow,
        ),
        pytest.param(
            "letter-number-swapped",
            "positions: atoll-8/11",
            "not a playable cell",
            "rank 1 the bottom cell of its file (PROTOCOL.md section 4.1)",
            marks=pytest.mark.slow,
        ),  # the same mistake on the other board
        pytest.param(
            "swaps-central-without-pie",
            "positions: hex/11 no-pie",
            "swap",
            "never answer swap",
            marks=pytest.mark.slow,
        ),
        pytest.param(
            "swaps-central-without-pie",
            "positions: atoll-8/11 no-pie",
            "swap",
            "never answer swap",
            marks=pytest.mark.slow,
        ),  # the same mistake on the other board
        pytest.param(
            "refuses-7-and-23",
            "positions: atoll-8/23",
            "boardsize 23",
            "declare the sizes",
            marks=pytest.mark.slow,
        ),
        (
            "one-newline",
            "start-up handshake",
            "answered '=1 2\\n=2 checkbot-one-newline",
            "end every answer with an empty line",
        ),
    ],
)
def test_each_mistake_fails_check_with_a_hint_that_names_it(
    mode: str, failed: str, detail: str, hint: str
) -> None:
    code, results = check(mode)
    assert code == 1
    result = results[failed]
    assert not result["passed"], result
    assert detail in str(result["detail"]), result
    assert hint in str(result["hint"]), result
    if failed != "start-up handshake":
        assert results["known_command"]["passed"]  # only the mistake fails


@pytest.mark.slow
def test_a_misreading_is_named_only_for_an_engine_that_takes_wins() -> None:
    """An engine that plays at random takes no winning cell and is not blamed; what was
    not checked is said in a note after the table, not as a PASS line."""
    code, results = check("ok")
    assert code == 0
    assert "coordinates: hex/11" not in results
    assert "wins in one, everywhere" not in results
    notes = [str(r["detail"]) for r in results.values() if r["note"]]
    assert any(n.startswith("hex/11: cell names not confirmed by play") for n in notes)
    assert any(n.startswith("it does not look for wins") for n in notes)


@pytest.mark.parametrize("variant", [Variant(4, 11, False), Variant(8, 11, False)])
def test_probe_positions_are_what_they_claim(variant: Variant) -> None:
    """Tests: one winning cell for Black, none for White, and no misread board wins
    there. Controls: misread, the board is the same and so is the winning cell."""
    for probe in plain_probes(variant, 1, 3):
        game = Game(variant)
        for cell in probe.moves:
            assert game.play(cell) is None
        assert game.winning_cells(Color.BLACK) == [probe.win]
        assert game.winning_cells(Color.WHITE) == []
        assert len(game.legal_cells()) >= variant.geometry.n_cells // 4
        assert set(probe.confused) == set(mappings(variant))
        assert probe.win not in probe.confused.values()
    for mistake in MISREADINGS:
        mapping = mappings(variant).get(mistake.key)
        if mapping is None:
            assert variant.islands == 8 and mistake.key == "transposed"  # names off the board
            continue
        found = mirror_probes(variant, mistake.key, 1, 4, tries=2000)
        assert len(found) >= 3
        for probe in found:
            stones = {cell: i % 2 for i, cell in enumerate(probe.moves)}
            assert {mapping[c]: color for c, color in stones.items()} == stones
            assert mapping[probe.win] == probe.win


@pytest.mark.parametrize(
    ("mode", "words"),
    [
        ("win-no-island-chain", "does not chain through islands"),
        # the other kinds are second cases: with the slow tests
        pytest.param(
            "win-any-two-islands",
            "counts a join of two islands that does not win",
            marks=pytest.mark.slow,
        ),
        pytest.param("colour-cached", "plays for the wrong colour", marks=pytest.mark.slow),
        pytest.param("swap-recoloured", "first stone stays black", marks=pytest.mark.slow),
        pytest.param("large-board-bytes", "breaks on this size", marks=pytest.mark.slow),
        pytest.param(
            "odd-files", "neighbour rule for files of both parities", marks=pytest.mark.slow
        ),
    ],
)
def test_a_bot_that_takes_some_wins_but_not_others_fails_with_the_position(
    mode: str, words: str
) -> None:
    code, results = check(mode)
    wins = results["wins in one, everywhere"]
    assert code == 1 and not wins["passed"]
    assert words in str(wins["hint"])
    detail = str(wins["detail"])
    assert "the winning cell is" in detail and "it answered" in detail
    marker = "replay the first by hand (whole in --json): "
    assert marker + "printf" in detail
    if mode == "win-no-island-chain":
        # The command replays the position: the engine gives the answer check saw.
        # (the detail ends with the engine's last stderr line)
        replay = detail[detail.index(marker) + len(marker) :].split("\n")[0]
        win = detail.split("the winning cell is ", 1)[1].split(",", 1)[0]
        done = subprocess.run(["bash", "-c", replay], capture_output=True, text=True, timeout=60)
        answers = [a for a in done.stdout.split("\n\n") if a.strip()]
        assert answers[-2].startswith("= ") and answers[-2] != f"= {win}", answers[-3:]


@pytest.mark.slow
def test_a_cell_invented_above_an_even_file_fails_check_naming_it() -> None:
    """The bot answers the cell it invented, where the referee has an island stone."""
    code, results = check("top-cells")
    wins = results["wins in one, everywhere"]
    assert code == 1 and not wins["passed"]
    assert "a cell above the top of an even file on offer" in str(wins["detail"])
    assert "illegal move" in str(wins["detail"])
    assert "even files (a, c, e, ...) have size-2 cells" in str(wins["hint"])


@pytest.mark.slow
def test_movetime_milliseconds_read_as_seconds_fail_the_movetime_clock() -> None:
    """The Fischer clock it reads right passes; only the movetime family fails, in
    milliseconds."""
    code, results = check("movetime-seconds")
    assert code == 1
    assert results["within its clock: fischer 1.5 s + 0"]["passed"]
    movetime = results["within its clock: movetime 0.5 s"]
    assert not movetime["passed"]
    assert "milliseconds" in str(movetime["hint"])


@pytest.mark.slow
def test_transcripts_and_verbose_show_each_positions_exchange(tmp_path: Path) -> None:
    folder = tmp_path / "exchanges"
    done = invoke(
        "check",
        "-v",
        "--transcripts",
        str(folder),
        f"{sys.executable} {CHECKBOTS} win-no-island-chain",
    )
    assert done.returncode == 1
    files = sorted(folder.glob("position-*.log"))
    assert len(files) > 40
    texts = [f.read_text() for f in files]
    assert all("genmove" in t for t in texts)
    assert "position 1: " in done.stderr and ">checkbot-win-no-island-chain(1): " in done.stderr
    # the FAIL line names the file of each missed position's exchange
    named = done.stdout.split("(the exchange is in ", 1)[1].split(")", 1)[0]
    assert "genmove" in Path(named).read_text()


def test_a_bot_that_takes_wins_everywhere_passes_the_wins_check() -> None:
    code, results = check("wins")
    assert code == 0
    assert str(results["wins in one, everywhere"]["detail"]).startswith("took the win in all")
