"""The bots and examples that come with the package: known by name from any folder, a
user's definitions first, starting points that never replace a file."""

from __future__ import annotations

import dataclasses
import json
import os
import shlex
import stat
import sys
from pathlib import Path

import click
import pytest
import trio
from commands import invoke

from arbiter.cli import main
from arbiter.engines.config import EnginesFile, KnownEngines, bundled, resolve_engine
from arbiter.engines.process import BOTS_FOLDER, EngineSpec, localized, open_engine
from arbiter.errors import ConfigError
from arbiter.runs.tournament import load_tournament

BUNDLED_NAMES = ["random", "mc", "mc-fast", "skeleton", "heuristic", "mcts"]


def _user_file(folder: Path, body: str) -> Path:
    book = folder / "mine.toml"
    book.write_text(body)
    return book


def test_every_bundled_name_is_known_from_an_empty_folder(tmp_path: Path) -> None:
    done = invoke("engines", "--json", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    rows = json.loads(done.stdout)
    assert [r["name"] for r in rows] == BUNDLED_NAMES
    for row in rows:
        assert row["from"] == "bundled"
        assert row["command"][0] == sys.executable
        assert Path(row["cwd"]) == BOTS_FOLDER
        assert (BOTS_FOLDER / row["command"][1]).is_file(), row
    text = invoke("engines", cwd=tmp_path)
    assert text.returncode == 0 and "mc_bot.py --playouts 256" in text.stdout


def test_a_user_definition_wins_over_a_bundled_name(tmp_path: Path) -> None:
    mine = tmp_path / "my_random.py"
    mine.write_text("")
    line = 'command = ["{python}", "my_random.py"]\n'
    book = _user_file(tmp_path, f"[engines.random]\n{line}[engines.mine]\n{line}")
    known = KnownEngines(EnginesFile(book))
    spec = resolve_engine("random", known)
    assert spec.argv[1:] == ("my_random.py",) and not spec.bundled
    assert resolve_engine("mcts", known).bundled  # the others still resolve
    rows = json.loads(invoke("engines", "--engines", str(book), "--json").stdout)
    froms = {(r["name"], r["from"]) for r in rows}
    assert ("random", str(book)) in froms and ("mine", str(book)) in froms
    assert ("random", f"bundled, overridden by {book}") in froms
    # Found without --engines too: engines/engines.toml in the current folder.
    (tmp_path / "engines").mkdir()
    (tmp_path / "engines" / "engines.toml").write_text(book.read_text())
    (tmp_path / "engines" / "my_random.py").write_text("")
    rows = json.loads(invoke("engines", "--json", cwd=tmp_path).stdout)
    assert rows[0]["name"] == "random" and rows[0]["from"].endswith("engines.toml")


def test_a_broken_entry_is_listed_with_its_problem_and_exit_status_1(tmp_path: Path) -> None:
    book = _user_file(tmp_path, "[engines.bad]\ncommand = 3\n")
    done = invoke("engines", "--engines", str(book))
    assert done.returncode == 1  # the listing worked; an entry is broken (2: bad usage)
    assert "entries broken (bad): fix or remove them" in done.stderr
    assert "bad" in done.stdout and "mcts" in done.stdout  # the rest is still listed
    assert "engines.bad" in done.stderr and "command is missing" in done.stderr


def test_an_unknown_name_lists_the_bundled_ones(tmp_path: Path) -> None:
    done = invoke("match", "nosuchbot", "random", cwd=tmp_path)
    assert done.returncode == 2
    assert "unknown engine 'nosuchbot'" in done.stderr
    assert "mcts" in done.stderr and "arbiter engines" in done.stderr


def _tournament(folder: Path, extra: str) -> Path:
    file = folder / "t.toml"
    file.write_text('[tournament]\nname = "t"\nrounds = 1\ntc = "5+0"\n' + extra)
    return file


def test_a_tournament_resolves_names_file_then_own_entries_then_bundled(tmp_path: Path) -> None:
    (tmp_path / "bot.py").write_text("")
    _user_file(tmp_path, '[engines.heuristic]\ncommand = ["{python}", "bot.py"]\n')
    t = load_tournament(
        _tournament(
            tmp_path,
            'engines = ["random", "heuristic", "mcts"]\n'
            'engines_file = "mine.toml"\n'
            '[[engine]]\nname = "mcts"\n'
            'command = ["{python}", "bot.py"]\n',
        )
    )
    assert list(t.engines) == ["random", "heuristic", "mcts"]
    assert t.engines["random"].bundled
    assert not t.engines["heuristic"].bundled and t.engines["heuristic"].cwd == str(tmp_path)
    assert not t.engines["mcts"].bundled and t.engines["mcts"].argv[1] == "bot.py"
    # Without an engines file, names are the bundled bots'; conditions keep their command.
    t = load_tournament(_tournament(tmp_path, 'engines = ["random", "mcts"]\n'))
    assert all(spec.bundled for spec in t.engines.values())
    assert t.engine_conditions["random"]["command"] == ["{python}", "random_bot.py"]
    with pytest.raises(ConfigError, match='no engine "nope" in the bundled bots') as caught:
        load_tournament(_tournament(tmp_path, 'engines = ["random", "nope"]\n'))
    assert "mcts" in str(caught.value.hint)


async def test_a_bundled_bot_runs_with_this_machines_interpreter_and_bots() -> None:
    """A Dask worker gets the spec the client resolved: paths that may not exist on it."""
    spec = dataclasses.replace(
        bundled().spec("random"),
        argv=("/nowhere/bin/python3", "random_bot.py"),
        cwd="/nowhere/site-packages/arbiter/bots",
    )
    here = localized(spec)
    assert here.argv == (sys.executable, "random_bot.py") and here.cwd == str(BOTS_FOLDER)
    assert localized(EngineSpec(argv=("/x",))) == EngineSpec(argv=("/x",))  # others as given
    with trio.fail_after(30):
        async with open_engine(spec) as engine:
            assert engine.info.name == "random" and engine.process.returncode is None


@pytest.mark.slow  # a bot built on the skeleton passes `check` by default (test_check_mistakes)
def test_new_bot_writes_a_named_executable_skeleton_that_passes_check(tmp_path: Path) -> None:
    done = invoke("new", "bot", "my_bot.py", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    bot = tmp_path / "my_bot.py"
    assert '    name = "my_bot"  # match results and tables show it\n' in bot.read_text()
    assert bot.stat().st_mode & stat.S_IXUSR
    assert "arbiter check 'my_bot=python3 my_bot.py'" in done.stderr
    checked = invoke("check", f"my_bot={sys.executable} my_bot.py", "--json", cwd=tmp_path)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    results = json.loads(checked.stdout)
    assert results and all(r["passed"] for r in results if r["required"])
    named = invoke("new", "bot", "b.py", "--name", "Bot 2", cwd=tmp_path)
    assert named.returncode == 0 and 'name = "Bot 2"' in (tmp_path / "b.py").read_text()


def test_new_never_replaces_a_file(tmp_path: Path) -> None:
    for args in (["bot", "x.py"], ["tournament", "x.py"]):
        (tmp_path / "x.py").write_text("mine\n")
        done = invoke("new", *args, cwd=tmp_path)
        assert done.returncode == 2 and "the file exists and was left alone" in done.stderr
        assert (tmp_path / "x.py").read_text() == "mine\n"
    os.symlink(tmp_path / "gone", tmp_path / "dangling.py")
    assert invoke("new", "bot", "dangling.py", cwd=tmp_path).returncode == 2
    assert not (tmp_path / "gone").exists()
    bad = invoke("new", "bot", "y.py", "--name", "a\x1b[2Jb", cwd=tmp_path)
    assert bad.returncode == 2 and "control character" in bad.stderr
    assert not (tmp_path / "y.py").exists()


def test_new_tournament_loads_with_the_bundled_bots_and_the_new_bot(tmp_path: Path) -> None:
    (tmp_path / "bots").mkdir()
    assert invoke("new", "bot", "bots/mine.py", cwd=tmp_path).returncode == 0
    (tmp_path / "leagues").mkdir()
    done = invoke("new", "tournament", "leagues/spring.toml", "--bot", "bots/mine.py", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    t = load_tournament(tmp_path / "leagues" / "spring.toml")
    assert t.name == "spring" and list(t.engines) == ["random", "heuristic", "mcts", "mine"]
    assert t.engines["mine"].argv == (sys.executable, "../bots/mine.py")
    assert t.output == tmp_path / "leagues" / "spring.sqlite"
    assert t.variant.pie and t.openings.random_plies == 1
    missing = invoke("new", "tournament", "other.toml", "--bot", "nobot.py", cwd=tmp_path)
    assert missing.returncode == 2 and "arbiter new bot" in missing.stderr
    assert not (tmp_path / "other.toml").exists()
    plain = invoke("new", "tournament", "plain.toml", cwd=tmp_path)
    assert plain.returncode == 0
    assert list(load_tournament(tmp_path / "plain.toml").engines) == ["random", "heuristic", "mcts"]


def test_an_example_runs_from_any_folder_with_its_store_there(tmp_path: Path) -> None:
    done = invoke("tournament", "status", "--example", "demo", "--json", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    status = json.loads(done.stdout)
    assert status["games"] == 0 and status["left"] == 30
    assert (
        str(tmp_path / "demo.sqlite")
        in invoke("tournament", "status", "--example", "demo", cwd=tmp_path).stdout
    )
    for args in ([], ["--example", "demo", "t.toml"]):
        wrong = invoke("tournament", "run", *args, cwd=tmp_path)
        assert wrong.returncode == 2 and "--example" in wrong.stderr
    unknown = invoke("tournament", "run", "--example", "nosuch", cwd=tmp_path)
    assert unknown.returncode == 2 and "demo" in unknown.stderr
    assert not any(tmp_path.iterdir())  # nothing written by reading


def _commands(
    group: click.Group, path: tuple[str, ...] = ()
) -> list[tuple[tuple[str, ...], click.Command]]:
    found: list[tuple[tuple[str, ...], click.Command]] = [(path, group)]
    for name, command in group.commands.items():
        if isinstance(command, click.Group):
            found += _commands(command, (*path, name))
        else:
            found.append(((*path, name), command))
    return found


def test_every_help_ends_with_examples_that_parse() -> None:
    commands = _commands(main)
    assert len(commands) >= 13
    for path, _ in commands:
        done = invoke(*path, "--help")
        assert done.returncode == 0, done.stderr
        head, _, tail = done.stdout.rpartition("Examples:\n")
        assert head, (path, "no examples")
        lines = [line.strip() for line in tail.splitlines() if line.strip()]
        assert 1 <= len(lines) <= 2, (path, lines)
        for line in lines:
            words = shlex.split(line)
            for stop in ("&&", "|"):
                words = words[: words.index(stop)] if stop in words else words
            assert words[0] == "arbiter", line
            command: click.Command = main
            args = words[1:]
            while isinstance(command, click.Group) and args and args[0] in command.commands:
                command = command.commands[args.pop(0)]
            assert not isinstance(command, click.Group) or not args, line
            command.make_context(words[0], args)  # unknown options or bad values raise


@pytest.mark.slow
def test_the_demo_plays_the_pie_rule_and_ends_with_the_elo_table(tmp_path: Path) -> None:
    """The README's main job, as packaged: every pair opens with one random stone, the
    engine on move decides the swap (the ladder's engines swap a central stone), and
    the run ends with the table."""
    from stores import read_store

    done = invoke("tournament", "run", "--example", "demo", "-q", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.strip().splitlines()
    assert lines[0].split()[:3] == ["rank", "engine", "Elo"]
    assert {line.split()[1] for line in lines[2:5]} == {"random", "heuristic", "mcts"}
    records = read_store(tmp_path / "demo.sqlite").records
    assert len(records) == 30 and all(r["opening"] == 1 for r in records)
    swaps = [r for r in records if r["swapped"]]
    assert swaps and all(r["moves"][1] == "swap" for r in swaps)
    assert len(swaps) < len(records)  # a decision, not a habit
