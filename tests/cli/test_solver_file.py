"""A tournament file's `solver`: read, checked, recorded as a condition, and played."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from commands import invoke
from files import write_tournament

from arbiter.results.records import GameRecord, Termination

# The test solver of tests/process/test_solver.py as a program file: it answers
# `test-solve` with the side that has a proof from arbiter.rules.proof, else "unknown".
SOLVER = """
import sys
sys.path.insert(0, {bots!r})
import skeleton as sk
from arbiter.rules import Color, Game, Variant
from arbiter.rules.proof import Level, find_proof

class Bot(sk.Bot):
    def __init__(self):
        super().__init__()
        self.commands["test-solve"] = self.cmd_test_solve

    def cmd_test_solve(self, args):
        g = self.game
        game = Game(Variant(g.islands, g.size, g.pie))
        for _, move in g.history:
            game.play(move)
        for color in (game.to_move, game.to_move.other):
            if find_proof(game.geometry, game.colors, color, level=Level.HSEARCH):
                return "black" if color is Color.BLACK else "white"
        return "unknown"

sys.exit(Bot().run())
"""
# An opening after which Black, to move, has a proven connection on Atoll 7 (no pie rule:
# move 2 is a stone).
OPENING = "c4 c2 b3 g5 b4 c3 d5 f5 b6 g4 g1 a5 a1 e3"


def setup(folder: Path, solver: str = 'solver = "prover"\nsolve_from = 0.3') -> Path:
    from paths import BOTS

    (folder / "prover.py").write_text(SOLVER.format(bots=str(BOTS)))
    (folder / "engines.toml").write_text(
        '[engines.prover]\ncommand = ["{python}", "prover.py"]\nsolve_command = "test-solve"\n'
        '\n[engines.plain]\ncommand = ["{python}", "prover.py"]\n'
    )
    (folder / "openings.txt").write_text(OPENING + "\n")
    header = (
        'engines_file = "engines.toml"\nengines = ["random", "skeleton"]\nrounds = 1\nsize = 7\n'
        f'tc = "20+0.1"\npie = false\nopenings = "openings.txt"\n{solver}\n'
    )
    return write_tournament(folder, header, [])


@pytest.mark.parametrize(
    ("solver", "message"),
    [
        ('solver = "nobody"', 'no engine "nobody" to be the solver'),
        ('solver = "plain"', '"plain" has no solve_command'),
        ('solver = "prover"\nsolve_from = 1.5', "solve_from"),
    ],
)
def test_a_solver_that_cannot_judge_is_refused(tmp_path: Path, solver: str, message: str) -> None:
    path = setup(tmp_path, solver)
    done = invoke("tournament", "run", str(path), "-q", cwd=tmp_path)
    assert done.returncode == 2 and message in done.stderr, done.stderr
    assert "tournament.solve" in done.stderr and not (tmp_path / "t.sqlite").exists()


def test_a_bad_solve_command_is_refused_where_it_is_written(tmp_path: Path) -> None:
    path = setup(tmp_path)
    engines = tmp_path / "engines.toml"
    engines.write_text(engines.read_text().replace('"test-solve"', '"test-solve # x"'))
    done = invoke("tournament", "run", str(path), "-q", cwd=tmp_path)
    assert done.returncode == 2, done.stderr
    assert "engines.prover.solve_command" in done.stderr and "plain ASCII words" in done.stderr


def test_a_tournament_judged_by_its_solver_records_it_and_refuses_a_change(
    tmp_path: Path,
) -> None:
    path = setup(tmp_path)
    done = invoke("tournament", "run", str(path), "-q", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    exported = invoke("tournament", "export", str(path), "--records", "r.jsonl", cwd=tmp_path)
    assert exported.returncode == 0, exported.stderr
    lines = (tmp_path / "r.jsonl").read_text().splitlines()
    records = [GameRecord.from_json(json.loads(line)) for line in lines]
    assert len(records) == 2
    for record in records:  # Black's proof after the opening: the solver's first answer
        assert record.termination is Termination.ADJUDICATED and record.winner == record.black
        assert record.plies == 15  # asked once 30% of the board was filled: 12 stones
        assert record.evidence is not None and record.evidence.solver is not None
        assert record.evidence.solver["answer"] == "black"
    status = json.loads(invoke("tournament", "status", str(path), "--json", cwd=tmp_path).stdout)
    assert status["adjudicated"]["games"] == 2
    shown = invoke("show", "r.jsonl", "--game", records[0].game_id, cwd=tmp_path).stdout
    assert "wins (adjudicated by the solver prover:" in shown
    assert "Judged by the solver prover (its word, not a proof)" in shown
    # The report's viewer says who judged, and shows no evidence against the solver.
    done = invoke("report", str(path), "-o", "report.html", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    page = (tmp_path / "report.html").read_text()
    assert "adjudicated by the solver prover" in page and '"ev":{' not in page.replace(" ", "")

    # Another budget is another condition of play: refused on the same store.
    path.write_text(path.read_text() + "solve_budget = 3\n")
    done = invoke("tournament", "run", str(path), "-q", cwd=tmp_path)
    assert done.returncode == 2 and "tournament.solver: changed from" in done.stderr, done.stderr
