"""Seat-swapped pairs, counted in one place for every reader (pure).

Games come in pairs sharing an opening and a pair key, one game from each seat. The SPRT
tests pairs, a match's estimate takes its interval from their variance, the head-to-head
table shows them and the store hands over the ones it holds: all of them count pairs
here, with one rule and in one order, so that no two of them can disagree.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import NamedTuple

# A game as a pair counts it: (the engine that won, the engine that lost).
Result = tuple[str, str]


class PairCounts(NamedTuple):
    """One pairing from one engine's side: the pair classes in the SPRT's order, and
    the pairing's rated games."""

    classes: list[int]  # [lost twice, split, won twice], for the engine asked about
    wins: int
    losses: int


def by_name(x: str, y: str) -> tuple[str, str]:
    """The default order of a pairing's two engines: by name."""
    return (x, y) if x <= y else (y, x)


class PairTally:
    """Whole seat-swapped pairs and the games of each pairing.

    The rule: two rated games with the same pair key, one after the other, between the
    same two engines make a pair; a lone game waits for its partner (a replayed void
    game keeps its pair), and a game without a pair key is in no pair. A pairing's
    games are counted whatever their pairs.

    The order: every count is asked for from one engine's side, and the classes are
    indexed by that engine's wins in the pair, [lost twice, split, won twice] (the
    scores 0, 1/2 and 1 of `sprt.PAIR_SCORES`): `counts(a, b)` and `classes(a, b)` give
    them for `a`, flipped from `b`'s side when the pairing is kept the other way round.
    `first` decides which way round each pairing is kept (by default by name; a test
    puts the engine whose strength it is about first), and with it the order of
    `pairings()`; the counts asked for do not depend on it.
    """

    def __init__(self, first: Callable[[str, str], tuple[str, str]] = by_name) -> None:
        self._first = first
        self._half: dict[str, Result] = {}  # pair key: its first game's result
        self.pairs: dict[tuple[str, str], list[int]] = {}  # as `first` orders: classes
        self.games: dict[tuple[str, str], list[int]] = {}  # [wins, losses] of the first

    def add(self, pair_key: str, winner: str, loser: str) -> None:
        """A rated game: counted for its pairing, and for a pair once its partner is."""
        self.add_games(winner, loser, 1, 0)
        if not pair_key:
            return
        other = self._half.pop(pair_key, None)
        if other is None:
            self._half[pair_key] = (winner, loser)
        else:
            self.add_pair(other, (winner, loser))

    def add_pair(self, first: Result, second: Result, n: int = 1) -> None:
        """`n` pairs whose two games ended as `first` and `second` (games counted apart);
        two games that are not between the same two engines are no pair."""
        if {first[0], first[1]} != {second[0], second[1]}:
            return
        a, b = self._first(*second)
        self.pairs.setdefault((a, b), [0, 0, 0])[(first[0] == a) + (second[0] == a)] += n

    def add_games(self, x: str, y: str, x_wins: int, y_wins: int) -> None:
        """Games of the pairing of `x` and `y` (pairs counted apart)."""
        a, b = self._first(x, y)
        games = self.games.setdefault((a, b), [0, 0])
        games[0] += x_wins if a == x else y_wins
        games[1] += y_wins if a == x else x_wins

    def counts(self, a: str, b: str) -> PairCounts:
        """The pair classes and the games (wins, losses) of `a` against `b`."""
        key = self._first(a, b)
        classes = list(self.pairs.get(key, (0, 0, 0)))
        wins, losses = self.games.get(key, (0, 0))
        if key != (a, b):
            classes.reverse()
            wins, losses = losses, wins
        return PairCounts(classes, wins, losses)

    def classes(self, a: str, b: str) -> tuple[int, int, int] | None:
        """`a`'s pair classes against `b`, or None where the two completed no pair."""
        if self._first(a, b) not in self.pairs:
            return None
        lost, split, won = self.counts(a, b).classes
        return lost, split, won

    def pairings(self) -> Iterator[tuple[str, str]]:
        """Every pairing counted, its engines in the order kept."""
        return iter(dict.fromkeys([*self.games, *self.pairs]))

    def merge(self, other: PairTally) -> None:
        """Add another tally's counts (each asked for from its own side, so the two may
        order their pairings differently); its half pairs stay its own."""
        self.add_counted(other, {})

    def renamed(self, names: Mapping[str, str]) -> PairTally:
        """The same counts under other engine names (a name missing from `names` keeps
        its own), in the default order."""
        out = PairTally()
        out.add_counted(self, names)
        return out

    def add_counted(self, other: PairTally, names: Mapping[str, str]) -> None:
        """Add `other`'s counts, its engines renamed by `names`."""
        for x, y in other.pairings():
            x_new, y_new = names.get(x, x), names.get(y, y)
            counts = other.counts(x, y)
            self.add_games(x_new, y_new, counts.wins, counts.losses)
            for won, n in enumerate(counts.classes):
                if n:
                    self._add_classes(x_new, y_new, won, n)

    def _add_classes(self, x: str, y: str, won: int, n: int) -> None:
        """`n` pairs in which `x` won `won` games of two against `y`."""
        a, b = self._first(x, y)
        self.pairs.setdefault((a, b), [0, 0, 0])[won if a == x else 2 - won] += n

    def add_stored(self, pairs: Iterable[tuple[Result, Result, int]]) -> None:
        """The pairs a store reads out (`Store.stored_pairs`): each pair's two games' results,
        with how many pairs ended so."""
        for first, second, n in pairs:
            self.add_pair(first, second, n)
