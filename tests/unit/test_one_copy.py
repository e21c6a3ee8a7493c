"""Files the project needs in two places are one file: the example tournaments installed
with the package (arbiter/examples/, which `arbiter new tournament --example` copies) are
the ones in tournaments/, and the bot skeleton exists once, in arbiter/bots/."""

from __future__ import annotations

from commands import ROOT

EXAMPLES = ROOT / "arbiter" / "examples"
SKELETON = ROOT / "arbiter" / "bots" / "skeleton.py"


def test_every_installed_example_tournament_is_the_one_in_tournaments() -> None:
    examples = sorted(EXAMPLES.glob("*.toml"))
    assert examples
    for example in examples:
        shown = ROOT / "tournaments" / example.name
        assert shown.is_file(), f"{example} has no twin: copy it to {shown}"
        assert shown.read_bytes() == example.read_bytes(), (
            f"{shown} and {example} differ: edit one and copy it over the other"
        )


def test_the_bot_skeleton_exists_once() -> None:
    # protocol/ shows it beside the specification through a link, so that what engine
    # authors read there is what `arbiter new bot` writes and what the test engines import.
    assert not SKELETON.is_symlink()
    shown = ROOT / "protocol" / "bot_skeleton.py"
    assert shown.resolve() == SKELETON.resolve()
    copies = [
        path
        for folder in ("arbiter", "protocol", "tests", "engines", "tournaments")
        for path in (ROOT / folder).rglob("*.py")
        if not path.is_symlink() and path.read_bytes() == SKELETON.read_bytes()
    ]
    assert copies == [SKELETON]
