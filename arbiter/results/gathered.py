"""The standings of several sources combined (stores and records files), as `ratings`
and `report` rate them: duplicates counted once, damaged lines skipped or refused,
engines whose games were played under different conditions named, anchors checked.

What it has to say as it reads (a line skipped, a warning) goes to `warn` at once, in
the order it is found, so that a reader sees it before a later refusal.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

from arbiter.errors import ConfigError
from arbiter.results.ratings import DEFAULT_PRIOR
from arbiter.results.records import BadLine
from arbiter.results.standings import Games, Identities, Standings, gather, standings
from arbiter.results.store import READ_HINT, Damage, Store

DUPLICATES = "{} games appeared in more than one source and were counted once."


def skip_or_refuse(problem: Damage | BadLine, strict: bool, warn: Callable[[str], None]) -> None:
    """A damaged store row or a records line that is not a record, as every reader of
    results treats it: a `skipped` line to `warn`, or (`strict`) a refusal that says how
    to mend it."""
    if strict:
        raise ConfigError(
            str(problem),
            hint=READ_HINT
            if isinstance(problem, Damage)
            else "fix or remove the line, or leave out --strict",
        )
    warn(f"skipped {problem}")


def watch_damage(store: Store, strict: bool, warn: Callable[[str], None]) -> None:
    """A reader's damaged store rows: each skipped or refused (`skip_or_refuse`); so are
    those found later, as the records they are in are read."""
    for damage in store.damage:
        skip_or_refuse(damage, strict, warn)
    store.on_damage = lambda damage: skip_or_refuse(damage, strict, warn)


def gathered_standings(
    stores: Sequence[str],
    *,
    labels: Sequence[str],
    prior: float | None,
    anchors: Mapping[str, float],
    strict: bool,
    warn: Callable[[str], None],
    keep: Games | None = None,
    split: tuple[str, ...] | None = None,
) -> tuple[Standings, list[str]]:
    """The joint fit, and the tournament names met, over `stores` (paths of stores or
    records files, each named by its label in messages). With `keep`, the records
    counted are kept there; `split` (condition keys) rates an engine's games under
    different conditions apart (None: the command has no --split-by). Raises
    ConfigError naming the option to change."""
    identities = Identities(split or ())
    tally, bad, met = gather(list(stores), keep, identities, labels=list(labels))
    if tally.duplicates:
        warn(DUPLICATES.format(tally.duplicates))
    for line in bad:
        skip_or_refuse(line, strict, warn)
    if not tally.games:
        raise ConfigError(
            "no rated games in " + ", ".join(labels),
            hint="give records files, a store or a tournament file with games",
        )
    names = identities.labels() if split else {}
    for note in identities.split_lines(names) if split else []:
        warn(note)
    remedy = (
        "; --split-by conditions rates them apart"
        if split is not None
        else "; `arbiter ratings --split-by conditions` rates them apart"
    )
    for mixed in identities.mixed():
        warn(f"Warning: {mixed}{remedy}.")
    if prior is not None and not 0 <= prior <= 1e6:  # also refuses nan
        raise ConfigError(f"--prior {prior} is out of range", hint="give 0 to 1000000 games")
    for anchor in anchors:
        if anchor in tally.names:
            continue
        split_names = identities.split_names(anchor, names)
        if split_names:
            raise ConfigError(
                f"--anchor names {anchor!r}, whose games are rated apart"
                f" by {', '.join(split or ())}",
                hint="anchor one of " + ", ".join(repr(n) for n in split_names),
            )
        raise ConfigError(
            f"--anchor names {anchor!r}, which has no games here",
            hint=f"engines: {', '.join(list(tally.names)[:20])}",
        )
    board = standings(
        tally,
        prior=DEFAULT_PRIOR if prior is None else prior,
        anchors=dict(anchors) or None,
    )
    return board, met
