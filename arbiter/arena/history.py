"""Each engine's rating over the arena's life, as CGOS shows it: a point per fit.

The standings are fitted again as games are stored (`web.Site.refresh_standings`);
each fit adds, per engine, its rating at the store's game count then. The points are
kept in the store's notes, written at most every `WRITE_EVERY` seconds and when the
server stops, so that a restart goes on from them; an engine keeps at most `MOST`
points, thinned to every other one (the last always kept) when it has more.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

import trio

from arbiter.results.store import Store

MOST = 400
WRITE_EVERY = 30.0


class History:
    """The ratings of every engine, one point per fit: [games stored, Elo]."""

    KEY = "arena_history"

    def __init__(self, store: Store | None) -> None:
        """The points kept in `store`, which keeps the new ones (None: in memory only)."""
        self.store = store
        self.points: dict[str, list[list[float]]] = {}
        text = store.meta(self.KEY) if store is not None else None
        try:
            data = json.loads(text) if text else {}
        except ValueError:
            data = {}
        if isinstance(data, dict):
            for name, points in data.items():
                if isinstance(name, str) and isinstance(points, list):
                    self.points[name] = [
                        [float(p[0]), float(p[1])]
                        for p in points
                        if isinstance(p, list)
                        and len(p) == 2
                        and all(type(v) in (int, float) for v in p)
                    ]
        self._written = trio.current_time()
        self._dirty = False

    def add(self, games: int, ratings: Mapping[str, float]) -> None:
        """The ratings of one fit over `games` stored games."""
        for name, elo in ratings.items():
            points = self.points.setdefault(name, [])
            point = [float(games), round(float(elo), 1)]
            if points and points[-1][0] == games:
                points[-1] = point
            else:
                points.append(point)
            if len(points) > MOST:
                points[:] = [*points[:-1:2], points[-1]]
        self._dirty = True
        if trio.current_time() - self._written >= WRITE_EVERY:
            self.write()

    def write(self) -> None:
        if self._dirty and self.store is not None:
            self.store.remember(self.KEY, json.dumps(self.points, separators=(",", ":")))
            self._dirty = False
        self._written = trio.current_time()

    def of(self, name: str) -> list[list[float]]:
        return list(self.points.get(name, []))

    def as_json(self) -> dict[str, Any]:
        return {"engines": self.points}
