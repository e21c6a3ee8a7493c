"""The definitions layer: each key of a definition file declared once, every file kind
read through the declarations, and the reference pages made from them."""

from __future__ import annotations

import importlib.util
import math
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from paths import ROOT

from arbiter.arena.config import ARENA, PLAYER, hash_token, load_arena
from arbiter.definitions import Key, Keys
from arbiter.engines.config import ENGINE, ENGINE_KEYS, load_engines
from arbiter.errors import ConfigError
from arbiter.runs.tournament import TOURNAMENT, load_tournament

KINDS = {"tournament": TOURNAMENT, "arena": ARENA, "player": PLAYER, "engine": ENGINE}


def _hooks() -> ModuleType:
    spec = importlib.util.spec_from_file_location("docs_hooks", ROOT / "docs" / "hooks.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize(
    "page", ["reference/tournament-file.md", "reference/engines-file.md", "guide/arena.md"]
)
def test_the_reference_tables_are_the_declarations(page: str) -> None:
    """A page's table of keys is what the declarations give: `python docs/hooks.py`
    rewrites it when a declaration changes."""
    hooks = _hooks()
    text = (ROOT / "docs" / page).read_text(encoding="utf-8")
    assert "<!-- begin keys" in text
    assert hooks.fill_key_tables(text) == text, f"run `python docs/hooks.py` to rewrite {page}"


def test_a_stale_table_is_rewritten_with_every_declared_key() -> None:
    hooks = _hooks()
    stale = "intro\n<!-- begin keys arena -->\n| key | old |\n<!-- end keys -->\nafter\n"
    filled = hooks.fill_key_tables(stale)
    assert "| old |" not in filled
    assert filled.startswith("intro\n") and filled.endswith("<!-- end keys -->\nafter\n")
    for name in ARENA:
        assert f"| `{name}` |" in filled
    assert "| `latency_allowance` | number | 0.25 |" in filled
    with pytest.raises(ValueError, match="no declared keys 'nope'"):
        hooks.fill_key_tables("<!-- begin keys nope -->\n<!-- end keys -->")


@pytest.mark.parametrize("kind", list(KINDS))
def test_every_declared_default_is_a_value_its_key_accepts(kind: str) -> None:
    """A default passes its own key's check: the reader never hands out a value that a
    file could not have given."""
    keys = KINDS[kind]
    for name in keys:
        key = keys[name]
        assert key.help and "\n" not in key.help and "|" not in key.help, name
        if key.default is not None:
            assert key.check(key.default, "f: t") == key.default, name


def test_the_engine_keys_are_the_declared_ones() -> None:
    """The keys an engine entry takes, in the order messages list them (as before the
    keys were declared): a key added or dropped shows here."""
    assert ENGINE_KEYS == (
        "command",
        "cwd",
        "env",
        "name",
        "tc",
        "options",
        "islands",
        "sizes",
        "swap",
        "set_param",
        "solve_command",
        "solve_budget_command",
        "time",
        "sandbox",
        "limits",
        "read",
        "start_timeout",
        "command_timeout",
        "clock",
        "threads",
    )


ROUNDS = Keys(
    Key("rounds", int, "pairs", default=1, low=1, high=10),
    Key("margin", float, "seconds", default=0.1, low=0, high=60, unit=" seconds"),
    Key("per", str, "scope", default="game", choices=("game", "pairing"), noun="scope"),
    Key("wait", float, "seconds", low=0, above=True, high=3600, unit=" seconds", hint="e.g. 9"),
)


@pytest.mark.parametrize(
    ("table", "said"),
    [
        ({"rounds": True}, "t.rounds: must be an integer, not true (e.g. rounds = 1)"),
        ({"rounds": 1.5}, "t.rounds: must be an integer, not 1.5"),
        ({"rounds": 11}, "t.rounds: must be between 1 and 10, not 11"),
        ({"margin": "1"}, 't.margin: must be a number, not "1" (e.g. margin = 0.1)'),
        ({"margin": math.nan}, "t.margin: must be between 0 and 60 seconds, not nan"),
        ({"margin": math.inf}, "t.margin: must be between 0 and 60 seconds, not inf"),
        ({"wait": 0}, "t.wait: must be above 0 and at most 3600 seconds, not 0 (e.g. 9)"),
        ({"wait": 4000}, "t.wait: must be above 0 and at most 3600 seconds, not 4000"),
        ({"per": "round"}, 't.per: unknown scope "round" (use one of "game", "pairing")'),
        ({"per": 1}, "t.per: unknown scope 1"),
    ],
)
def test_a_wrong_value_is_one_line_naming_the_key_and_quoting_it_as_toml(
    table: dict[str, Any], said: str
) -> None:
    (name,) = table
    with pytest.raises(ConfigError) as caught:
        ROUNDS.get(table, name, "t")
    assert said in str(caught.value)
    assert "\n" not in str(caught.value)


def test_absent_keys_take_the_declared_default_or_the_one_given() -> None:
    assert ROUNDS.get({}, "rounds", "t") == 1
    assert ROUNDS.get({}, "rounds", "t", 3) == 3
    assert ROUNDS.get({"margin": 2}, "margin", "t") == 2.0
    assert isinstance(ROUNDS.get({"margin": 2}, "margin", "t"), float)


def test_an_unknown_key_suggests_the_nearest_declared_one(tmp_path: Path) -> None:
    """Through the real loaders: a misspelt key names itself, the key meant, and the
    allowed keys."""
    (tmp_path / "t.toml").write_text('[tournament]\nengines = ["random", "mc"]\nround = 2\n')
    with pytest.raises(ConfigError) as caught:
        load_tournament(tmp_path / "t.toml")
    said = str(caught.value)
    assert "t.toml: tournament: unknown key(s) round" in said
    assert (
        "did you mean rounds? allowed keys: adjudicate, affinity, challenger, clock, concurrency"
        in said
    )
    (tmp_path / "a.toml").write_text('[arena]\nlisten = "127.0.0.1:0"\nmax_connection = 9\n')
    with pytest.raises(ConfigError, match="did you mean max_connections"):
        load_arena(tmp_path / "a.toml")
    (tmp_path / "e.toml").write_text('[engines.x]\ncommand = ["x"]\n"colour\\u001b" = 1\n')
    with pytest.raises(ConfigError) as caught:
        load_engines(tmp_path / "e.toml")
    assert 'unknown key(s) "colour\\u001b"' in str(caught.value)  # quoted, never raw
    assert "\x1b" not in str(caught.value)


def test_an_arena_file_is_read_through_its_declarations(tmp_path: Path) -> None:
    (tmp_path / "a.toml").write_text(
        '[arena]\nlisten = "127.0.0.1:0"\nmargin = 1\nmax_connections = 10\n'
    )
    arena = load_arena(tmp_path / "a.toml")
    assert arena.margin == 1.0 and arena.max_connections == 10
    assert arena.logins_per_minute == ARENA["logins_per_minute"].default
    assert arena.trusted_proxies == frozenset() and arena.anchors == {}
    (tmp_path / "a.toml").write_text('[arena]\nlisten = "127.0.0.1:0"\ncommand_timeout = 0.1\n')
    with pytest.raises(ConfigError, match=r"arena.command_timeout: must be between 0.5 and 600"):
        load_arena(tmp_path / "a.toml")
    (tmp_path / "a.toml").write_text(
        '[arena]\nlisten = "127.0.0.1:0"\n[[player]]\nname = "p"\n'
        f'token_hash = "{hash_token("t")}"\ngames_at_once = 65\n'
    )
    with pytest.raises(ConfigError, match=r"player 'p'.games_at_once: must be between 1 and 64"):
        load_arena(tmp_path / "a.toml")
