"""`arbiter new`: starting points to edit, a bot from the skeleton and a tournament file."""

from __future__ import annotations

import shlex

import click

from arbiter.cli.outfile import shown as output_name

from .options import examples
from .output import handle_errors, say


@click.group(
    "new",
    epilog=examples(
        "arbiter new bot my_bot.py", "arbiter new tournament league.toml --bot my_bot.py"
    ),
)
def new() -> None:
    """Starting points to edit: a bot of your own, a tournament file."""


@new.command(
    "bot",
    epilog=examples("arbiter new bot my_bot.py", "arbiter new bot bots/fox.py --name fox"),
)
@click.argument("file", type=click.Path(dir_okay=False))
@click.option(
    "--name", default=None, help="The name it answers and results show.  [default: FILE's stem]"
)
@handle_errors
def new_bot(file: str, name: str | None) -> None:
    """Write a bot to start from: the protocol skeleton, standalone (Python's standard
    library only), with its name filled in. Replace its choose_move with your strategy.

    Never replaces an existing file.
    """
    from .scaffold import new_bot as write_bot
    from .scaffold import saved_as

    label = write_bot(file, name)
    say(
        f"Wrote {output_name(file)}: a bot named {label!r} that plays a random legal move.",
        err=True,
    )
    command = shlex.join(["python3", saved_as(file, "bot")])
    say("Next:", err=True)
    say(f"  arbiter check {shlex.quote(f'{label}={command}')}", err=True)
    say(f"  arbiter match {shlex.quote(f'{label}={command}')} random --games 10", err=True)


@new.command(
    "tournament",
    epilog=examples(
        "arbiter new tournament league.toml",
        "arbiter new tournament league.toml --bot bots/fox.py --bot bots/owl.py",
    ),
)
@click.argument("file", type=click.Path(dir_okay=False))
@click.option(
    "--bot",
    "bots",
    multiple=True,
    metavar="PATH",
    help="A bot program to add as an [[engine]] entry (repeatable).",
)
@handle_errors
def new_tournament(file: str, bots: tuple[str, ...]) -> None:
    """Write a commented tournament file: a round-robin of the bundled bots and yours.

    Never replaces an existing file.
    """
    from .scaffold import new_tournament as write_tournament
    from .scaffold import saved_as

    estimate = write_tournament(file, bots)
    say(
        f"Wrote {output_name(file)}. Play it with: arbiter tournament run"
        f" {shlex.quote(saved_as(file, 'tournament'))}",
        err=True,
    )
    say(f"It plays {estimate}.", err=True)
