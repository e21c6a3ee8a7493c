"""What a results store holds, read as the commands read it: through `Store`, never SQL.

The store is the one module that speaks SQL; a test that read the tables itself would
pin their layout and could pass on rows every reader skips as damaged.
"""

from __future__ import annotations

import os
from collections import Counter
from dataclasses import dataclass
from typing import Any

from arbiter.results.store import Damage, GameRow, Store


@dataclass(frozen=True)
class Stored:
    games: list[GameRow]  # rated games
    records: list[dict[str, Any]]  # their records, in play order
    voids: list[dict[str, Any]]  # the records of void attempts, in the order stored
    engines: list[dict[str, Any]]  # name, command, hashes, replies
    damage: list[Damage]  # rows every reader leaves out

    @property
    def ids(self) -> list[str]:
        return [str(row.game_id) for row in self.games]

    def pairings(self) -> Counter[tuple[str, str]]:
        return Counter((str(row.seat1), str(row.seat2)) for row in self.games)


def read_store(path: str | os.PathLike[str]) -> Stored:
    with Store.open_read(path) as store:
        everything = list(store.records())
        return Stored(
            games=list(store.game_rows()),
            records=[record for record, void in everything if not void],
            voids=[record for record, void in everything if void],
            engines=store.engines(),
            damage=list(store.damage),
        )


def games_stored(path: str | os.PathLike[str]) -> int:
    with Store.open_read(path) as store:
        return store.games_stored()


def meta(path: str | os.PathLike[str], key: str) -> str | None:
    with Store.open_read(path) as store:
        return store.meta(key)
