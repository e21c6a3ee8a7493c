"""Connection distances for the bundled bots (imported by the engine scripts beside it).

A player's distance is the number of empty cells it still needs to join one of its
opposite island pairs, its own stones costing nothing and the opponent's blocking: a
0-1 breadth-first search from each island over the cell graph. It is the classic
shortest-path evaluation of Hex programs, done on the generalised Atoll boards through
the same geometry tables the referee uses. The same searches on the empty board give
each cell's centrality, which the bots use to open and to answer the pie rule.
"""

from __future__ import annotations

from collections import deque

from arbiter.rules import Color, Game, Geometry

INF = 1 << 20


class Tables:
    """Per-geometry data the searches walk: neighbours, shores and the island pairs."""

    def __init__(self, geometry: Geometry) -> None:
        self.geometry = geometry
        self.n = geometry.n_cells
        self.neighbours = geometry.neighbours
        shores: list[list[int]] = [[] for _ in geometry.islands]
        for cell, near in enumerate(geometry.shores):
            for k in near:
                shores[k].append(cell)
        self.shores = [tuple(s) for s in shores]
        self.pairs: dict[int, list[tuple[int, int]]] = {}
        for color in Color:
            own = geometry.island_mask[color]
            self.pairs[int(color)] = [
                (a, b)
                for a in range(len(geometry.islands))
                for b in range(a + 1, len(geometry.islands))
                if own >> a & 1 and own >> b & 1 and (1 << a | 1 << b) in geometry.winning_masks
            ]
        self.islands = {
            int(c): sorted({k for pair in self.pairs[int(c)] for k in pair}) for c in Color
        }
        empty = [0] * self.n
        hops = [from_island(self, empty, k, 1) for k in range(len(geometry.islands))]
        # A central cell is close to every island: the farthest island is near.
        self.centrality = [max(h[c] for h in hops) for c in range(self.n)]


def from_island(t: Tables, colors: list[int], island: int, me: int) -> list[int]:
    """Empty cells `me` needs from `island` to each cell, that cell included (0-1 BFS)."""
    dist = [INF] * t.n
    queue: deque[tuple[int, int]] = deque()
    for cell in t.shores[island]:
        v = colors[cell]
        if v == me:
            dist[cell] = 0
            queue.appendleft((0, cell))
        elif v == 0 and dist[cell] > 1:
            dist[cell] = 1
            queue.append((1, cell))
    neighbours = t.neighbours
    while queue:
        d, cell = queue.popleft()
        if d > dist[cell]:
            continue
        for nb in neighbours[cell]:
            v = colors[nb]
            if v == me:
                if d < dist[nb]:
                    dist[nb] = d
                    queue.appendleft((d, nb))
            elif v == 0 and d + 1 < dist[nb]:
                dist[nb] = d + 1
                queue.append((d + 1, nb))
    return dist


def distance(t: Tables, colors: list[int], me: int) -> int:
    """Fewest empty cells `me` must still fill to join an opposite pair (INF: cut off)."""
    best = INF
    for a, b in t.pairs[me]:
        dist = from_island(t, colors, a, me)
        best = min(best, min((dist[c] for c in t.shores[b]), default=INF))
    return best


def through(t: Tables, colors: list[int], me: int) -> list[int]:
    """For each empty cell, the shortest connection for `me` that runs through it."""
    dists = {k: from_island(t, colors, k, me) for k in t.islands[me]}
    out = [INF] * t.n
    for a, b in t.pairs[me]:
        da, db = dists[a], dists[b]
        for c in range(t.n):
            if colors[c] == 0:
                v = da[c] + db[c] - 1
                if v < out[c]:
                    out[c] = v
    return out


def swap_zone(t: Tables) -> int:
    """Centrality at or below which a first stone is worth taking over with the pie rule."""
    best = min(t.centrality)
    return best + max(1, t.geometry.size // 6)


def wants_swap(t: Tables, game: Game) -> bool:
    """Take the first stone over when it stands in the central zone."""
    first = game.last_cell()
    return first is not None and t.centrality[first] <= swap_zone(t)


def modest_openings(t: Tables) -> list[int]:
    """First moves for the pie rule: just outside the zone a sensible opponent swaps."""
    zone = swap_zone(t)
    cells = [c for c in range(t.n) if t.centrality[c] == zone + 1]
    outside = [c for c in range(t.n) if t.centrality[c] > zone]
    # On the smallest boards every cell is central: the least central ones will do.
    edge = [c for c in range(t.n) if t.centrality[c] == max(t.centrality)]
    return cells or outside or edge
