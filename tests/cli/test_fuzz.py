"""Property-based fuzzing of what the harness reads: tournament files, engines files,
records lines and option values, through the command line's entry point.

The contract for every input: exit status 0, 1 or 2, never a traceback, never a hang,
and every file a command only reads left byte-identical. The default run draws a few
dozen examples per target; the `slow` marker draws thousands. Inputs found to break the
contract stay below as named regression cases.
"""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner, Result
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from paths import ROOT

from arbiter.cli import main
from arbiter.engines import config

ENGINES = ROOT / "arbiter" / "bots" / "engines.toml"
RANDOM_BOT = ROOT / "arbiter" / "bots" / "random_bot.py"

DEFAULT_EXAMPLES = 30
SLOW_EXAMPLES = 300  # a fresh draw each run (not derandomized): CI covers more over time


def fuzz_settings(examples: int) -> settings:
    return settings(
        max_examples=examples,
        deadline=None,
        derandomize=examples < 100,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
    )


def invoke(args: list[str]) -> Result:
    result = CliRunner().invoke(main, args, catch_exceptions=True)
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise AssertionError(f"{args!r} raised {result.exception!r}") from result.exception
    assert result.exit_code in (0, 1, 2), (args, result.exit_code, result.output)
    assert "Traceback" not in result.output, result.output
    return result


# -- values of every kind a TOML file can hold -------------------------------------------

_text = st.text(st.characters(blacklist_categories=["Cs"]), max_size=12)
_scalars = st.one_of(
    st.integers(min_value=-(2**63), max_value=2**63 - 1),
    st.sampled_from([0, 1, -1, 2**62, 10**18]),
    st.floats(allow_nan=True, allow_infinity=True),
    st.booleans(),
    _text,
    st.sampled_from(
        [
            "",
            "10+0.1",
            "st=0.5",
            "inf",
            "nan",
            "9" * 400 + "+0",
            "\n",
            "\x1b[2J",
            "round-robin",
            "gauntlet",
            "swiss",
            "adaptive",
            "top:1",
            "order",
            "../x",
            "/dev/null",
        ]
    ),
)
_values = st.recursive(
    _scalars,
    lambda inner: st.one_of(st.lists(inner, max_size=3), st.dictionaries(_text, inner, max_size=3)),
    max_leaves=6,
)


def toml_value(value: object) -> str:
    """A TOML literal for any JSON-like value (nan and inf included)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        if math.isnan(value):
            return "nan"
        if math.isinf(value):
            return "inf" if value > 0 else "-inf"
        return repr(value)
    if isinstance(value, int):
        return str(value)
    if isinstance(value, str):
        return json.dumps(value)  # a JSON string is a TOML basic string
    if isinstance(value, list):
        return "[" + ", ".join(toml_value(v) for v in value) + "]"
    assert isinstance(value, dict)
    return "{" + ", ".join(f"{json.dumps(k)} = {toml_value(v)}" for k, v in value.items()) + "}"


TOURNAMENT_KEYS = [
    "name",
    "format",
    "challenger",
    "rounds",
    "concurrency",
    "tc",
    "size",
    "islands",
    "pie",
    "seed",
    "openings",
    "random_openings",
    "output",
    "engines",
    "engines_file",
    "margin",
    "sandbox",
    "limits",
    "dask",
    "games",
    "until",
    "confidence",
    "min_games",
]
ENGINE_KEYS = list(config.ENGINE_KEYS)  # every key the engines file takes


def _tournament(changes: dict[str, object], engine_changes: dict[str, object]) -> str:
    table: dict[str, object] = {"name": "t", "rounds": 1, "size": 7, "tc": "5+0"}
    table.update(changes)
    table = {k: v for k, v in table.items() if v is not None}  # None: the key left out
    lines = ["[tournament]"] + [f"{json.dumps(k)} = {toml_value(v)}" for k, v in table.items()]
    for name in ("a", "b"):
        engine: dict[str, object] = {"name": name, "command": [sys.executable, str(RANDOM_BOT)]}
        if name == "a":
            engine.update(engine_changes)
        lines.append("[[engine]]")
        lines += [f"{json.dumps(k)} = {toml_value(v)}" for k, v in engine.items()]
    return "\n".join(lines) + "\n"


def _check_tournament(tmp: Path, text: str) -> None:
    file = tmp / "t.toml"
    file.write_text(text, encoding="utf-8")
    before = set(tmp.iterdir())
    for command in (
        ["tournament", "status", str(file)],
        ["tournament", "status", str(file), "--json"],
        ["ratings", str(file)],
    ):
        invoke(command)
    assert file.read_text(encoding="utf-8") == text
    assert set(tmp.iterdir()) == before  # a reader creates nothing (no store, no lock)


tournament_changes = st.dictionaries(st.sampled_from(TOURNAMENT_KEYS), _values, max_size=3)
engine_changes = st.dictionaries(st.sampled_from(ENGINE_KEYS), _values, max_size=2)


@fuzz_settings(DEFAULT_EXAMPLES)
@given(tournament_changes, engine_changes)
@example({"limits": 26}, {})
@example({"margin": math.nan}, {})
@example({"tc": "9" * 400 + "+0"}, {})
@example({"name": "a\nb"}, {})
@example({}, {"name": "\x1b[31m"})
@example({"limits": {"cpu_s": 2**63 - 1}}, {})
@example({"output": "9" * 400}, {"cwd": "9" * 400})
@example({"engines": ["random"]}, {"name": [1]})  # a name that is not a string
@example({"format": "adaptive", "games": 4, "until": "top:1", "rounds": None}, {})
@example({"format": "swiss", "rounds": 1}, {})
def test_fuzz_tournament_files(
    tmp_path_factory: pytest.TempPathFactory, changes: dict[str, object], engine: dict[str, object]
) -> None:
    _check_tournament(tmp_path_factory.mktemp("t"), _tournament(changes, engine))


@pytest.mark.slow
@fuzz_settings(SLOW_EXAMPLES)
@given(tournament_changes, engine_changes)
def test_fuzz_tournament_files_many(
    tmp_path_factory: pytest.TempPathFactory, changes: dict[str, object], engine: dict[str, object]
) -> None:
    _check_tournament(tmp_path_factory.mktemp("t"), _tournament(changes, engine))


@fuzz_settings(DEFAULT_EXAMPLES)
@given(st.text(max_size=300))
@example("[tournament]\nname = 1\n")
@example("[[tournament]]\n")
@example("\x00")
def test_fuzz_tournament_text(tmp_path_factory: pytest.TempPathFactory, text: str) -> None:
    _check_tournament(tmp_path_factory.mktemp("t"), text)


# -- engines files --------------------------------------------------------------------------


def _check_engines_file(tmp: Path, changes: dict[str, object]) -> None:
    engine: dict[str, object] = {"command": ["{python}", str(RANDOM_BOT)]}
    engine.update(changes)
    text = "[engines.x]\n" + "".join(
        f"{json.dumps(k)} = {toml_value(v)}\n" for k, v in engine.items()
    )
    book = tmp / "e.toml"
    book.write_text(text, encoding="utf-8")
    # A match the engines file lets through plays one short game; --games and the size
    # keep it short, and --margin keeps a slow start from costing a loss.
    invoke(
        [
            "match",
            "--engines",
            str(book),
            "x",
            "skeleton",
            "-n",
            "1",
            "--size",
            "7",
            "-q",
            "--tc",
            "10+0",
        ]
    )
    assert book.read_text(encoding="utf-8") == text


@fuzz_settings(DEFAULT_EXAMPLES)
@given(st.dictionaries(st.sampled_from(ENGINE_KEYS), _values, max_size=3))
@example({"name": "two\nlines"})
@example({"tc": "1+" + "9" * 400})
@example({"limits": [1]})
@example({"cwd": "9" * 400 + "+0"})  # found by the slow draw: a name too long
@example({"command": ["./" + "9" * 400]})
def test_fuzz_engines_files(
    tmp_path_factory: pytest.TempPathFactory, changes: dict[str, object]
) -> None:
    _check_engines_file(tmp_path_factory.mktemp("e"), changes)


@pytest.mark.slow
@fuzz_settings(SLOW_EXAMPLES // 3)
@given(st.dictionaries(st.sampled_from(ENGINE_KEYS), _values, max_size=3))
def test_fuzz_engines_files_many(
    tmp_path_factory: pytest.TempPathFactory, changes: dict[str, object]
) -> None:
    _check_engines_file(tmp_path_factory.mktemp("e"), changes)


# -- records lines --------------------------------------------------------------------------

GOOD = {
    "schema": 1,
    "game_id": "m-1",
    "variant": {"size": 7, "islands": 8, "pie": True},
    "seat1": "a",
    "seat2": "b",
    "swapped": False,
    "black": "a",
    "white": "b",
    "winner": "a",
    "winner_color": "black",
    "termination": "resign",
    "void": False,
    "reason": "",
    "plies": 2,
    "moves": ["d4", "c3"],
    "move_ms": [1.0, 2.0],
    "tc": {"seat1": "5+0", "seat2": "5+0"},
    "started": "2026-01-01T00:00:00.000Z",
    "finished": "2026-01-01T00:00:01.000Z",
    "versions": {},
    "seed": None,
    "pair": "p",
}


def _check_records(tmp: Path, lines: list[str]) -> None:
    records = tmp / "r.jsonl"
    data = ("\n".join(lines) + "\n").encode("utf-8", "surrogatepass")
    records.write_bytes(data)
    for command in (
        ["show", str(records)],
        ["show", str(records), "--game", "1"],
        ["ratings", str(records)],
        ["ratings", str(records), "--strict"],
        ["report", str(records), "-o", str(tmp / "r.html")],
    ):
        invoke(command)
    assert records.read_bytes() == data


def _mutated_record() -> st.SearchStrategy[str]:
    def mutate(changes: dict[str, object], drop: list[str]) -> str:
        record = {**GOOD, **changes}
        for key in drop:
            record.pop(key, None)
        return json.dumps(record, allow_nan=True)

    return st.builds(
        mutate,
        st.dictionaries(st.sampled_from(sorted(GOOD)), _values, max_size=2),
        st.lists(st.sampled_from(sorted(GOOD)), max_size=2),
    )


record_lines = st.lists(
    st.one_of(_mutated_record(), st.just(json.dumps(GOOD)), st.text(max_size=40)),
    min_size=1,
    max_size=4,
)


@fuzz_settings(DEFAULT_EXAMPLES)
@given(record_lines)
@example([json.dumps({**GOOD, "move_ms": ["slow"]})])
@example([json.dumps({**GOOD, "seat2": "a"})])
@example([json.dumps({**GOOD, "moves": ["d4", "d4"]})])
@example(["[" * 100_000])
def test_fuzz_records(tmp_path_factory: pytest.TempPathFactory, lines: list[str]) -> None:
    _check_records(tmp_path_factory.mktemp("r"), lines)


@pytest.mark.slow
@fuzz_settings(SLOW_EXAMPLES)
@given(record_lines)
def test_fuzz_records_many(tmp_path_factory: pytest.TempPathFactory, lines: list[str]) -> None:
    _check_records(tmp_path_factory.mktemp("r"), lines)


# -- option values --------------------------------------------------------------------------

_option_text = st.one_of(
    st.sampled_from(
        [
            "nan",
            "inf",
            "-inf",
            "-1",
            "0",
            "1e400",
            "9" * 400,
            "²",
            "1_0",
            "",
            " ",
            "0x10",
            "NaN",
            "1e-400",
            "-0",
        ]
    ),
    st.text(max_size=10),
    st.integers().map(str),
    st.floats().map(str),
)


def _check_options(
    tmp: Path, margin: str, prior: str, anchor: str, game: str, ply: str, tc: str
) -> None:
    records = tmp / "r.jsonl"
    records.write_text(json.dumps(GOOD) + "\n")
    before = records.read_bytes()
    invoke(["ratings", str(records), "--prior", prior])
    invoke(["ratings", str(records), "--anchor", anchor])
    invoke(["show", str(records), "--game", game])
    invoke(["show", str(records), "--ply", ply])
    # Options that are bad stop a match before any game; a match they let through is
    # played with an engine that cannot start, so nothing runs for long.
    invoke(["match", f"{tmp / 'missing'}", "random", "--margin", margin, "--tc", tc])
    assert records.read_bytes() == before


@fuzz_settings(DEFAULT_EXAMPLES)
@given(_option_text, _option_text, _option_text, _option_text, _option_text, _option_text)
@example("nan", "inf", "a=nan", "²", "-1", "9" * 400 + "+0")
def test_fuzz_option_values(
    tmp_path_factory: pytest.TempPathFactory,
    margin: str,
    prior: str,
    anchor: str,
    game: str,
    ply: str,
    tc: str,
) -> None:
    _check_options(tmp_path_factory.mktemp("o"), margin, prior, anchor, game, ply, tc)


@pytest.mark.slow
@fuzz_settings(SLOW_EXAMPLES)
@given(_option_text, _option_text, _option_text, _option_text, _option_text, _option_text)
def test_fuzz_option_values_many(
    tmp_path_factory: pytest.TempPathFactory,
    margin: str,
    prior: str,
    anchor: str,
    game: str,
    ply: str,
    tc: str,
) -> None:
    _check_options(tmp_path_factory.mktemp("o"), margin, prior, anchor, game, ply, tc)
