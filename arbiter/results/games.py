"""Finding one game of a records file by what a person types: its id, a unique prefix of
it, its match's game number, or its number in the file's listing.

One rule (`GameChoice`) decides, whether it is fed parsed records or, for a file of any
size, only the ids read from its lines (`find_game`), so that the two ways of reading a
file always choose the same game.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Generic, TypeVar

from arbiter.errors import ConfigError
from arbiter.results.records import BadLine, GameRecord, parse_line, read_records, scan_ids

T = TypeVar("T")

MANY = 1000  # ids that start with an ambiguous prefix, counted before saying "more than"


def no_games(count: int, where: str) -> None:
    """Refuse a file that held no game (there is nothing to list, show or write)."""
    if not count:
        raise ConfigError(
            "the file holds no games",
            where=where,
            hint="records files are written by 'arbiter match --records'",
        )


@dataclass
class GameChoice(Generic[T]):
    """One pass over a file's games, keeping only the candidates for `game_id`.

    Each game is offered with its id and what to return for it (a record, or where its
    line is). With `listing` False the games offered are not the listing's records (lines
    that may not be records), so the number in the listing cannot be told from them:
    `chosen` then answers None, for the caller to read the file as the listing does."""

    game_id: str | None
    listing: bool = True
    count: int = 0
    last: T | None = None
    exact: T | None = None
    numbered: T | None = None
    at_number: T | None = None
    heads: set[str] = field(default_factory=set)
    prefixed: dict[str, T] = field(default_factory=dict)
    starting: set[str] = field(default_factory=set)  # ids starting with it, up to MANY
    sample: list[str] = field(default_factory=list)

    @property
    def digits(self) -> bool:
        return self.game_id is not None and self.game_id.isascii() and self.game_id.isdigit()

    def offer(self, found: str | None, item: T) -> None:
        """The next game of the file (`found` None: a line with no id, counted only)."""
        self.count += 1
        self.last = item
        game_id = self.game_id
        if game_id is None or found is None:
            return
        if len(self.sample) < 6:
            self.sample.append(found)
        if found == game_id:
            self.exact = item
        if len(self.heads) < 2:
            self.heads.add(found.rsplit("-", 1)[0])
        if self.digits and found.rsplit("-", 1)[-1] == game_id:
            self.numbered = item
        if self.listing and self.digits and self.count == int(game_id):
            self.at_number = item
        if found.startswith(game_id):
            if found in self.prefixed or len(self.prefixed) < 2:
                self.prefixed[found] = item
            if len(self.starting) <= MANY:
                self.starting.add(found)

    def chosen(self, where: str) -> T | None:
        """The game named (the last game if none was), or None for the number in the
        listing when the games offered were not the listing's; ConfigError if none is."""
        no_games(self.count, where)
        game_id = self.game_id
        if game_id is None:
            return self.last
        if self.exact is not None:
            return self.exact
        if self.digits:
            if len(self.heads) == 1 and self.numbered is not None:
                return self.numbered  # one match's game number (its latest attempt)
            if self.at_number is not None:
                return self.at_number  # the number in the listing
            if not self.listing and 1 <= int(game_id) <= self.count:
                return None  # the number in the listing, which only the listing tells
        if len(self.prefixed) == 1:
            return next(iter(self.prefixed.values()))
        if self.prefixed:
            many = len(self.starting)
            raise ConfigError(
                f"{f'more than {MANY}' if many > MANY else many} games start with {game_id!r}",
                where=where,
                hint="give more of the id",
            )
        shown = ", ".join(self.sample[:5]) + (" ..." if len(self.sample) > 5 else "")
        raise ConfigError(
            f"no game {game_id!r}",
            where=where,
            hint=f"give an id, a prefix or a number; ids here: {shown}",
        )


def choose_game(games: Iterable[GameRecord], game_id: str | None, where: str) -> GameRecord:
    """By exact id, by number in the file (or a match's game number), or by unique prefix;
    one pass over `games`, keeping only the candidates (the last game if no id)."""
    choice: GameChoice[GameRecord] = GameChoice(game_id)
    for game in games:
        choice.offer(game.game_id, game)
    chosen = choice.chosen(where)
    assert chosen is not None  # every game offered is the listing's
    return chosen


def find_game(
    path: str, game_id: str | None, strict: bool, bad: list[BadLine] | None = None
) -> GameRecord:
    """The game named, as `choose_game` chooses it from every record of the file, found
    in one pass that reads each line's game id alone and checks only the record it
    returns. Under `strict`, without an id, or for a number that is the number in the
    listing (no id, nor its match's game number), every record is read and checked, so
    that the numbers are the listing's; the lines skipped then are added to `bad`."""
    skipped: list[BadLine] = [] if bad is None else bad

    def checked() -> GameRecord:
        return choose_game(read_records(path, None if strict else skipped), game_id, path)

    if strict or game_id is None:
        return checked()
    choice: GameChoice[tuple[int, str]] = GameChoice(game_id, listing=False)
    for number, found, line in scan_ids(path):
        choice.offer(found, (number, line))
    exact = choice.chosen(path)
    if exact is None:
        return checked()
    number, line = exact
    try:
        return parse_line(line)
    except ValueError as exc:
        raise ConfigError(
            f"not a game record ({exc})",
            where=f"{path}:{number}",
            hint="records files are written by 'arbiter match --records'",
        ) from exc
