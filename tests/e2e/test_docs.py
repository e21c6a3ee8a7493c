"""Every example in the docs works: shell blocks are run, complete files are loaded.

`tests/kit/doc_blocks.py` says how a page marks its blocks. Cheap blocks run in the default
run; blocks that play games are marked slow on their page and run with `-m slow`.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import click
import pytest
from browsers import open_chromium
from doc_blocks import (
    ROOT,
    Block,
    DocError,
    check_marks,
    load_file_block,
    matches,
    pages,
    read_blocks,
    run_block,
)

from arbiter.cli import main
from arbiter.engines.sandbox import ENGINE_GID, ENGINE_UID
from arbiter.engines.sandbox.bubblewrap import _account
from arbiter.rules import Variant
from arbiter.runs.schedule import Format, match_games, tournament_games

BLOCKS = [block for page in pages() for block in read_blocks(page)]
SHELL = [
    pytest.param(
        block,
        id=block.where,
        marks=[pytest.mark.slow, pytest.mark.timeout(1800)] if block.slow else [],
    )
    for block in BLOCKS
    if block.runnable
]
FILES = [pytest.param(b, id=b.where) for b in BLOCKS if b.get("file") and b.lang == "toml"]

# The docs' examples are cheap (their slow blocks are marked): all in the default run.
pytestmark = pytest.mark.smoke


def test_every_block_says_what_it_is() -> None:
    problems = []
    for block in BLOCKS:
        try:
            check_marks(block)
        except DocError as e:
            problems.append(str(e))
    assert not problems, "\n".join(problems)


def test_the_docs_have_blocks_of_each_kind() -> None:
    # The runner reads what the pages hold: if it read nothing, every test above would pass.
    assert len(SHELL) >= 6 and len(FILES) >= 3
    assert {b.path.name for b in BLOCKS if b.runnable} >= {"writing-a-bot.md", "arena.md"}


@pytest.mark.parametrize("block", SHELL)
def test_shell_block(block: Block, tmp_path: Path) -> None:
    run_block(block, tmp_path, timeout=1800 if block.slow else 120)


@pytest.mark.parametrize("block", FILES)
def test_file_block(block: Block, tmp_path: Path) -> None:
    load_file_block(block, tmp_path)


# The runner fails when a block breaks: samples of each way, on pages of their own.


def sample(tmp_path: Path, text: str) -> list[Block]:
    page = tmp_path / "page.md"
    page.write_text(text)
    return read_blocks(page)


def test_a_failing_command_fails_naming_the_page_and_line(tmp_path: Path) -> None:
    (block,) = sample(tmp_path, "# Page\n\nText.\n\n```sh\narbiter no-such-command\n```\n")
    with pytest.raises(DocError, match=r"page\.md:5: the block failed \(exit 2\)"):
        run_block(block, tmp_path / "run")


def test_a_console_block_whose_output_differs_fails(tmp_path: Path) -> None:
    good, bad = sample(
        tmp_path,
        "```console\n$ arbiter engines\n...mcts...\n```\n\n"
        "```console\n$ arbiter engines\nnothing here\n```\n",
    )
    (tmp_path / "a").mkdir()
    run_block(good, tmp_path / "a")
    (tmp_path / "b").mkdir()
    with pytest.raises(DocError, match=r"page\.md:6: `\$ arbiter engines` printed"):
        run_block(bad, tmp_path / "b")


def test_output_is_compared_with_ellipses_and_notes_only() -> None:
    assert matches("token ...  # a note\nend", "token abc123\nend  ")
    assert not matches("token ...\nend", "token abc\nend\nmore")
    assert not matches("exactly", "exactly not")


def test_marks_without_a_reason_or_unknown_ones_are_refused(tmp_path: Path) -> None:
    with pytest.raises(DocError, match=r"page\.md:1: .*needs its reason"):
        sample(tmp_path, "<!-- not-run: -->\n```sh\nfalse\n```\n")
    with pytest.raises(DocError, match=r"page\.md:1: unknown doc directive 'not-ran'"):
        sample(tmp_path, "<!-- not-ran: typo -->\n```sh\nfalse\n```\n")
    (skipped,) = sample(tmp_path, "<!-- not-run: needs a cluster -->\n\n```sh\nfalse\n```\n")
    assert not skipped.runnable


def test_a_toml_block_says_whether_it_is_a_file_and_files_load(tmp_path: Path) -> None:
    bare, broken = sample(
        tmp_path,
        "```toml\n[tournament]\n```\n\n<!-- file: t.toml -->\n"
        '```toml\n[tournament]\nname = "x"\nrounds = 0\n'
        'engines = ["random", "mc"]\n```\n',
    )
    with pytest.raises(DocError, match=r"page\.md:1: a TOML block is either"):
        check_marks(bare)
    with pytest.raises(DocError, match=r"page\.md:6: the file t\.toml is refused.*rounds"):
        load_file_block(broken, tmp_path / "load")


def test_file_blocks_are_in_the_folder_of_later_blocks(tmp_path: Path) -> None:
    _, block = sample(
        tmp_path,
        "<!-- file: sub/x.txt -->\n```text\nhello\n```\n\n"
        "```console\n$ cat sub/x.txt\nhello\n```\n",
    )
    run_block(block, tmp_path / "run")
    assert (tmp_path / "run" / "tournaments" / "demo.toml").is_file()
    assert ROOT.joinpath("tournaments", "demo.toml").is_file()


# What the reference pages say about the code is checked against the code.


def _words(text: str) -> str:
    return " ".join(text.split())


def test_the_docs_paths_the_package_names_exist() -> None:
    named = {
        (source, path)
        for source in ROOT.joinpath("arbiter").rglob("*.py")
        for path in re.findall(r"docs/[\w./-]*\w\.md", source.read_text(encoding="utf-8"))
    }
    assert named
    missing = [f"{s.relative_to(ROOT)} names {p}" for s, p in named if not (ROOT / p).is_file()]
    assert not missing


def test_the_command_table_names_every_command() -> None:
    def leaves(command: click.Command, path: str) -> list[str]:
        if isinstance(command, click.Group):
            return [
                leaf
                for name, sub in command.commands.items()
                for leaf in leaves(sub, f"{path} {name}")
            ]
        return [path]

    table = (ROOT / "docs" / "reference" / "cli.md").read_text(encoding="utf-8")
    commands = leaves(main, "arbiter")
    assert len(commands) > 10
    assert [c for c in commands if f"| `{c}" not in table] == []


def test_the_layout_page_names_every_module_of_the_package() -> None:
    page = (ROOT / "docs" / "reference" / "layout.md").read_text(encoding="utf-8")
    top = [
        p
        for p in ROOT.joinpath("arbiter").iterdir()
        if not p.name.startswith("__") and p.name != "templates"
    ]
    names = [p.name + ("/" if p.is_dir() else "") for p in top]
    assert [n for n in names if f"`{n}`" not in page and f"`{n.rstrip('/')}`" not in page] == []


def test_the_sandbox_page_names_the_engine_user_as_its_passwd_does() -> None:
    passwd, _ = _account(ENGINE_UID, ENGINE_GID)  # the harness is root: the engine is 65534
    (line,) = [x for x in passwd.decode().splitlines() if x.split(":")[2] == str(ENGINE_UID)]
    name = line.split(":")[0]
    page = _words((ROOT / "docs" / "guide" / "sandbox.md").read_text(encoding="utf-8"))
    assert f"uid and gid {ENGINE_UID} (named `{name}`" in page


def test_the_readme_and_the_home_page_list_the_same_slow_tests() -> None:
    def slow_list(path: Path) -> str:
        text = _words(path.read_text(encoding="utf-8"))
        found = re.search(r"The rest of `tests/e2e/` .*?\) carry the `slow` marker", text)
        assert found, f"{path}: no list of the slow tests"
        return found[0]

    assert slow_list(ROOT / "README.md") == slow_list(ROOT / "docs" / "index.md")


def test_recorded_seeds_stay_within_what_json_readers_read_exactly() -> None:
    variant = Variant(islands=8, size=11, pie=True)
    games = list(
        tournament_games("t", ["a", "b", "c", "d"], Format.ROUND_ROBIN, 10, variant, seed=2**62)
    )
    games += list(match_games("m", 100, variant, seed=10**15))
    seeds = [g.seed for g in games]
    assert len(set(seeds)) == len(seeds) == 220
    assert all(s is not None and 0 <= s < 2**53 for s in seeds)
    again = list(
        tournament_games("t", ["a", "b", "c", "d"], Format.ROUND_ROBIN, 10, variant, seed=2**62)
    )
    assert [g.seed for g in again] == seeds[:120]
    assert "2^53" in (ROOT / "docs" / "records.md").read_text(encoding="utf-8")


@pytest.mark.slow  # builds the whole site and opens it in Chromium
def test_the_site_builds_strictly_and_no_code_block_is_cut_off(tmp_path: Path) -> None:
    site = tmp_path / "site"
    built = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "-d", str(site)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        env=dict(os.environ, PYTHONPATH=str(ROOT)),
    )
    assert built.returncode == 0, built.stderr
    driver = open_chromium(tmp_path / "profile")
    try:
        cut = []
        for page in ("guide/tournaments", "guide/ratings", "guide/arena", "records", "index"):
            driver.get(
                (site / page / "index.html").as_uri()
                if page != "index"
                else (site / "index.html").as_uri()
            )
            blocks = driver.execute_script(
                "return [...document.querySelectorAll('.md-typeset pre > code')]"
                ".map(c => [c.scrollWidth, c.clientWidth, c.textContent.slice(0, 60)])"
            )
            assert blocks, page
            cut += [(page, text) for wide, shown, text in blocks if wide > shown + 1]
        assert cut == []
    finally:
        driver.quit()
