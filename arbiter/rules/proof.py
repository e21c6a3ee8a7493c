"""Proven connections: virtual connections with disjoint carriers, found by H-search.

A side has a *proof* when two of its groups whose islands together win (two opposite
islands; Hex: two edges) are joined by a virtual connection: a set of empty cells, the
carrier, inside which the side connects the two groups even if the opponent moves
first, whatever the opponent does. The owner keeps the connection by answering each
intrusion into a carrier inside that carrier, so a proof wins the game.

Connections are derived only by rules that are proven in the literature (Anshelevich's
hierarchical virtual connections, "H-search"), adapted to islands: an island is a group
of fixed stones of its owner, so a chain may run through a third own island.

- Two nodes that touch are connected with an empty carrier.
- AND: x-z and z-y connected with disjoint carriers that avoid x and y. Through an own
  group z this is a connection x-y; through an empty cell z it is a *semi* connection
  (the owner connects by playing z first) whose carrier includes z.
- OR: semi connections x-y whose carriers have no common cell make a connection x-y:
  the opponent's stone misses at least one of them, whose key the owner then plays.

Bridges (two common empty neighbours), the second-row edge template (a bridge to an
island) and the third-row ziggurat are small cases of these rules; they are also built
directly, so that a cheaper level can use them alone. Every link carries its
derivation, so the owner's reply to any intrusion follows from it (`respond`), and
anyone can check the proof by playing it out. Nothing is guessed: a side without a
proof found here may still be winning; a side with one is.

The search is bounded (`budget` combination steps per call), which keeps one call
well under the time a move takes; a budget that runs out only means fewer proofs.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass, replace
from enum import Enum, IntEnum

from arbiter.rules.geometry import Color, Geometry

DEFAULT_BUDGET = 20_000
_MAX_VC = 3  # connections kept per pair of nodes, smallest carriers first
_MAX_SC = 6  # semi connections kept per pair of nodes


class Level(IntEnum):
    """Which rules the search may use; each level includes the ones below it."""

    BRIDGES = 1  # bridges between groups and the second-row edge template
    ZIGGURAT = 2  # plus the third-row edge template (ziggurat) to an island
    HSEARCH = 3  # plus the AND/OR rules over empty cells (full H-search)


class LinkKind(Enum):
    """How a link of a proof was built, for the record and for counting."""

    BRIDGE = "bridge"
    EDGE = "edge template II"
    ZIGGURAT = "ziggurat"
    HSEARCH = "h-search"


# Derivations. Carriers are bit masks over cell indices; nodes are ints (see _Board).


@dataclass(frozen=True)
class Touch:
    """Two nodes that touch: connected with an empty carrier."""

    carrier: int = 0


@dataclass(frozen=True)
class Series:
    """AND: x-mid and mid-y. `key` is the empty middle cell the owner still has to play
    (a semi connection), or None once the middle is the owner's (a connection)."""

    left: Derivation
    right: Derivation
    key: int | None
    carrier: int
    middle: int = -1  # the own group in the middle while searching, for cutting chains
    start: int = -1  # the node `left` starts from, so that a chain is cut in its order


@dataclass(frozen=True)
class Parallel:
    """OR: semi connections whose carriers share no cell; their union is the carrier."""

    options: tuple[Series, ...]
    carrier: int
    kind: LinkKind = LinkKind.HSEARCH


Derivation = Touch | Series | Parallel


def respond(derivation: Derivation, cell: int) -> tuple[int | None, Derivation]:
    """The owner's reply to an opponent stone on `cell`, and what remains to keep.

    A stone outside the carrier needs no reply (None). In a series the stone is in one
    side's carrier (they are disjoint), which answers it. In a parallel it misses one
    option's carrier (their common part is empty): the owner plays that option's key,
    which turns it into a series of two untouched connections.
    """
    if not derivation.carrier >> cell & 1:
        return None, derivation
    if isinstance(derivation, Series):
        if derivation.key is not None:
            raise ValueError("a semi connection cannot be kept against an intrusion")
        if derivation.left.carrier >> cell & 1:
            reply, left = respond(derivation.left, cell)
            right = derivation.right
        else:
            reply, right = respond(derivation.right, cell)
            left = derivation.left
        return reply, Series(left, right, None, left.carrier | right.carrier)
    if isinstance(derivation, Parallel):
        for option in derivation.options:
            if not option.carrier >> cell & 1 and option.key is not None:
                kept = Series(option.left, option.right, None, option.carrier & ~(1 << option.key))
                return option.key, kept
    raise ValueError(f"cell {cell} breaks a connection that was claimed to hold")


@dataclass(frozen=True)
class Group:
    """Stones of one colour connected to each other, with the islands they include."""

    stones: frozenset[int]
    islands: frozenset[int]


@dataclass(frozen=True)
class ProofLink:
    """A virtual connection between two consecutive groups of a proof's chain."""

    kind: LinkKind
    derivation: Derivation

    @property
    def carrier(self) -> frozenset[int]:
        """The empty cells this link needs (its evidence)."""
        return frozenset(_cells(self.derivation.carrier))


@dataclass(frozen=True)
class Proof:
    """A won connection: `chain[i]` and `chain[i + 1]` are joined by `links[i]`, the
    carriers are pairwise disjoint, and the first and last groups' islands win.

    With a `key`, the owner is the side to move and the proof holds once it has played
    there (the chain's stones include the key): a win for the side to move only, since
    the opponent, to move, could take the key itself (`find_winning_move`)."""

    owner: Color
    chain: tuple[Group, ...]
    links: tuple[ProofLink, ...]
    key: int | None = None

    @property
    def carrier(self) -> frozenset[int]:
        """Every empty cell the proof needs; the opponent's other moves are harmless."""
        return frozenset(c for link in self.links for c in link.carrier)

    def respond(self, cell: int) -> tuple[int | None, Proof]:
        """The owner's reply to an opponent stone on `cell` (None: no reply needed, the
        owner may play anywhere outside the carrier) and the proof that still holds."""
        links = list(self.links)
        for i, link in enumerate(links):
            if link.derivation.carrier >> cell & 1:
                reply, kept = respond(link.derivation, cell)
                links[i] = ProofLink(link.kind, kept)
                return reply, Proof(self.owner, self.chain, tuple(links))
        return None, self


def _cells(mask: int) -> Iterator[int]:
    while mask:
        low = mask & -mask
        yield low.bit_length() - 1
        mask ^= low


def _popcount(mask: int) -> int:
    return mask.bit_count()


class _Board:
    """One side's view: own groups (islands included) are nodes 0..g-1, empty cells are
    nodes g + cell. The opponent's stones are not nodes at all."""

    def __init__(self, geometry: Geometry, colors: Sequence[int], owner: Color) -> None:
        self.geometry = geometry
        self.owner = owner
        n = geometry.n_cells
        me = int(owner)
        k = len(geometry.islands)
        parent = list(range(n + k))

        def find(x: int) -> int:
            while parent[x] != x:
                parent[x] = parent[parent[x]]
                x = parent[x]
            return x

        own_islands = [i for i in range(k) if geometry.islands[i].owner is owner]
        for cell in range(n):
            if colors[cell] != me:
                continue
            for nb in geometry.neighbours[cell]:
                if colors[nb] == me:
                    parent[find(nb)] = find(cell)
            for i in geometry.shores[cell]:
                if geometry.islands[i].owner is owner:
                    parent[find(n + i)] = find(cell)
        roots: dict[int, int] = {}
        stones: list[set[int]] = []
        islands: list[set[int]] = []
        members = [(x, x < n) for x in range(n) if colors[x] == me]
        members += [(n + i, False) for i in own_islands]
        self.group_of = [-1] * n
        for x, is_cell in members:
            root = find(x)
            g = roots.get(root)
            if g is None:
                g = roots[root] = len(stones)
                stones.append(set())
                islands.append(set())
            if is_cell:
                stones[g].add(x)
                self.group_of[x] = g
            else:
                islands[g].add(x - n)
        self.n_groups = len(stones)
        self.groups = [
            Group(frozenset(s), frozenset(i)) for s, i in zip(stones, islands, strict=True)
        ]
        self.masks = [sum(1 << i for i in isl) for isl in islands]
        self.empty = [c for c in range(n) if colors[c] == 0]
        # Empty neighbours of each group (as a cell mask) and the groups each empty cell
        # touches.
        self.group_libs = [0] * self.n_groups
        self.cell_groups: dict[int, set[int]] = {c: set() for c in self.empty}
        island_group = {i: g for g, isl in enumerate(islands) for i in isl}
        for c in self.empty:
            touched = {self.group_of[nb] for nb in geometry.neighbours[c] if colors[nb] == me}
            touched |= {island_group[i] for i in geometry.shores[c] if i in island_group}
            for g in touched:
                self.group_libs[g] |= 1 << c
            self.cell_groups[c] = touched
        wins = geometry.winning_masks
        self.winning = [w for w in wins if w & ~geometry.island_mask[owner] == 0]

    def wins(self, mask: int) -> bool:
        return any(w & mask == w for w in self.winning)


def has_won(geometry: Geometry, colors: Sequence[int], color: Color) -> bool:
    """Whether `color`'s stones already join a winning set of its islands."""
    board = _Board(geometry, colors, color)
    return any(board.wins(m) for m in board.masks)


def _bridges(board: _Board, a: int, b: int) -> list[tuple[int, Derivation]]:
    """Bridges between groups a and b: two empty cells that both touch both groups."""
    common = list(_cells(board.group_libs[a] & board.group_libs[b]))
    edge = bool(board.groups[a].islands or board.groups[b].islands)
    kind = LinkKind.EDGE if edge else LinkKind.BRIDGE
    out: list[tuple[int, Derivation]] = []
    for i in range(len(common)):
        for j in range(i + 1, len(common)):
            out.append((1 << common[i] | 1 << common[j], _bridge(common[i], common[j], kind)))
            if len(out) >= _MAX_VC:
                return out
    return out


def _bridge(c1: int, c2: int, kind: LinkKind = LinkKind.BRIDGE) -> Parallel:
    one = Series(Touch(), Touch(), c1, 1 << c1)
    two = Series(Touch(), Touch(), c2, 1 << c2)
    return Parallel((one, two), 1 << c1 | 1 << c2, kind)


def _ziggurats(board: _Board, g: int) -> list[tuple[int, int, Derivation]]:
    """Third-row templates from a stone of group g to an own island: (island group,
    carrier, derivation). The shape is built from the board's six directions, so it
    fits every orientation of Hex and Atoll; the four cells next to the island only
    have to touch it, which is all the template's proof uses."""
    geom = board.geometry
    index = geom.index
    dirs = geom.directions
    turns = [(u, v) for u in dirs for v in dirs if (v[0] - u[0], v[1] - u[1]) in dirs]
    out: list[tuple[int, int, Derivation]] = []
    island_groups = [h for h in range(board.n_groups) if board.groups[h].islands and h != g]
    if not island_groups:
        return out
    empty_mask = sum(1 << c for c in board.empty)
    # Offsets (steps along u, steps along v) of: a, b below the stone; c beside it;
    # d below c; then the four cells on the island's row.
    shape = ((1, 0), (0, 1), (-1, 1), (-1, 2), (2, 0), (1, 1), (0, 2), (-1, 3))
    for s in board.groups[g].stones:
        q, r = geom.cells[s]
        for u, v in turns:
            found = [
                index.get((q + i * u[0] + j * v[0], r + i * u[1] + j * v[1]), -1) for i, j in shape
            ]
            if min(found) < 0:
                continue
            mask = sum(1 << c for c in found)
            if mask & empty_mask != mask:
                continue
            ca, cb, cc, cd, e1, e2, e3, e4 = found
            for h in island_groups:
                libs = board.group_libs[h]
                if all(libs >> e & 1 for e in (e1, e2, e3, e4)):
                    out.append((h, mask, _ziggurat(ca, cb, cc, cd, e1, e2, e3, e4)))
    return out


def _ziggurat(ca: int, cb: int, cc: int, cd: int, e1: int, e2: int, e3: int, e4: int) -> Parallel:
    via_a = Series(Touch(), _bridge(e1, e2), ca, 1 << ca | 1 << e1 | 1 << e2)
    via_b = Series(Touch(), _bridge(e2, e3), cb, 1 << cb | 1 << e2 | 1 << e3)
    via_d = Series(
        _bridge(cb, cc), _bridge(e3, e4), cd, 1 << cd | 1 << cb | 1 << cc | 1 << e3 | 1 << e4
    )
    carrier = via_a.carrier | via_b.carrier | via_d.carrier
    return Parallel((via_a, via_b, via_d), carrier, LinkKind.ZIGGURAT)


def find_proof(
    geometry: Geometry,
    colors: Sequence[int],
    owner: Color,
    *,
    level: Level = Level.HSEARCH,
    budget: int = DEFAULT_BUDGET,
) -> Proof | None:
    """A proof that `owner` wins from this position whoever moves, or None.

    `colors` holds 0 (empty), 1 (Black) or 2 (White) per cell, as `Game.colors` does.
    None means no proof was found within the rules of `level` and the `budget` of
    combination steps; it never means the owner is losing.
    """
    board = _Board(geometry, colors, owner)
    for g in range(board.n_groups):
        if board.wins(board.masks[g]):
            return Proof(owner, (board.groups[g],), ())
    search = _Search(board, level, budget)
    return search.run()


def find_winning_move(
    geometry: Geometry,
    colors: Sequence[int],
    mover: Color,
    *,
    level: Level = Level.BRIDGES,
    budget: int = DEFAULT_BUDGET,
) -> Proof | None:
    """A cell where `mover`, the side to move, plays and then holds a proof (or has
    already won): the proof of the position after that stone, with the cell as its
    `key`; None if no cell tried gives one within `level` and `budget`.

    This proves a win for the side to move only: it plays the key, then keeps the proof
    as `find_proof`'s owner does. A search costs one `find_proof` per cell tried, so only
    the cells a bridges-level chain can run through are tried: those touching one of
    the mover's groups (its islands included), and those with two empty neighbours
    touching the same group (a bridge or an edge template away). A stone anywhere else
    would be a group of its own with no link to any other, so at the bridges level
    nothing is missed; at higher levels a key elsewhere is only not found."""
    board = _Board(geometry, colors, mover)
    neighbours = geometry.neighbours
    played = list(colors)
    for cell in board.empty:
        touched = board.cell_groups[cell]
        if not touched:
            seen: set[int] = set()
            for nb in neighbours[cell]:
                groups = board.cell_groups.get(nb, set())
                if groups & seen:
                    break
                seen |= groups
            else:
                continue  # no group is a bridge away: no chain runs through it
        played[cell] = int(mover)
        proof = find_proof(geometry, played, mover, level=level, budget=budget)
        played[cell] = 0
        if proof is not None:
            return replace(proof, key=cell)
    return None


class _Search:
    def __init__(self, board: _Board, level: Level, budget: int) -> None:
        self.board = board
        self.level = level
        self.budget = budget
        self.g = board.n_groups
        self.vcs: dict[tuple[int, int], list[tuple[int, Derivation]]] = {}
        self.scs: dict[tuple[int, int], list[tuple[int, Series]]] = {}
        self.vnbrs: dict[int, set[int]] = {}
        self.queue: list[tuple[int, int, int, Derivation]] = []
        self.found: tuple[int, int, Derivation] | None = None

    def node_bit(self, x: int) -> int:
        return 0 if x < self.g else 1 << (x - self.g)

    def add_vc(self, x: int, y: int, carrier: int, d: Derivation) -> None:
        if x == y:
            return
        key = (x, y) if x < y else (y, x)
        found = self.vcs.get(key)
        if found is None:
            found = self.vcs[key] = []
            self.vnbrs.setdefault(x, set()).add(y)
            self.vnbrs.setdefault(y, set()).add(x)
        for m, _ in found:
            if m & carrier == m:
                return  # an existing connection needs no more cells
        if len(found) >= _MAX_VC:
            worst = max(range(len(found)), key=lambda i: _popcount(found[i][0]))
            if _popcount(found[worst][0]) <= _popcount(carrier):
                return
            found.pop(worst)
        found.append((carrier, d))
        both_groups = x < self.g and y < self.g and self.found is None
        if both_groups and self.board.wins(self.board.masks[x] | self.board.masks[y]):
            self.found = (x, y, d)
        self.queue.append((x, y, carrier, d))

    def add_sc(self, x: int, y: int, sc: Series) -> None:
        key = (x, y) if x < y else (y, x)
        carrier = sc.carrier
        for m, _ in self.vcs.get(key, ()):
            if m & carrier == m:
                return
        found = self.scs.setdefault(key, [])
        for m, _ in found:
            if m & carrier == m:
                return
        if len(found) >= _MAX_SC:
            return
        found.append((carrier, sc))
        # OR: gather semi connections until their common cells run out.
        common = carrier
        union = carrier
        used = [sc]
        for m, other in sorted(found, key=lambda f: _popcount(f[0])):
            if other is sc or common & m == common:
                continue
            common &= m
            union |= m
            used.append(other)
            if not common:
                self.add_vc(x, y, union, Parallel(tuple(used), union))
                return

    def seed(self) -> None:
        board = self.board
        g = self.g
        for a in range(g):
            for b in range(a + 1, g):
                for carrier, d in _bridges(board, a, b):
                    self.add_vc(a, b, carrier, d)
        if self.level >= Level.ZIGGURAT:
            for a in range(g):
                for h, carrier, d in _ziggurats(board, a):
                    self.add_vc(a, h, carrier, d)
        if self.level >= Level.HSEARCH:
            neighbours = board.geometry.neighbours
            for c in board.empty:
                for grp in board.cell_groups[c]:
                    self.add_vc(grp, g + c, 0, Touch())
                for nb in neighbours[c]:
                    if nb > c and nb in board.cell_groups:
                        self.add_vc(g + c, g + nb, 0, Touch())

    def run(self) -> Proof | None:
        self.seed()
        steps = 0
        head = 0
        while self.found is None and head < len(self.queue) and steps < self.budget:
            x0, y0, m1, d1 = self.queue[head]
            head += 1
            for x, z in ((x0, y0), (y0, x0)):
                # AND with z in the middle: x-z (this one) and z-y (known).
                z_empty = z >= self.g
                if not z_empty and self.level < Level.HSEARCH and x >= self.g:
                    continue
                xbit = self.node_bit(x)
                for y in list(self.vnbrs.get(z, ())):
                    if y == x:
                        continue
                    if self.level < Level.HSEARCH and (z_empty or y >= self.g):
                        continue
                    ybit = self.node_bit(y)
                    if m1 & ybit:
                        continue
                    key = (z, y) if z < y else (y, z)
                    for m2, d2 in list(self.vcs.get(key, ())):
                        steps += 1
                        if m1 & m2 or m2 & xbit:
                            continue
                        left, right = d1, d2
                        if z_empty:
                            zbit = self.node_bit(z)
                            union = m1 | m2 | zbit
                            self.add_sc(x, y, Series(left, right, z - self.g, union))
                        else:
                            joined = Series(left, right, None, m1 | m2, middle=z, start=x)
                            self.add_vc(x, y, m1 | m2, joined)
                    if self.found is not None:
                        break
                if self.found is not None:
                    break
        if self.found is None:
            return None
        return self.proof(*self.found)

    def proof(self, x: int, y: int, d: Derivation) -> Proof:
        """Cut the winning connection at its own groups into a chain of links."""
        chain: list[int] = [x]
        links: list[ProofLink] = []
        self.flatten(y, d, chain, links)
        groups = tuple(self.board.groups[n] for n in chain)
        return Proof(self.board.owner, groups, tuple(links))

    def flatten(self, y: int, d: Derivation, chain: list[int], links: list[ProofLink]) -> None:
        if isinstance(d, Series) and d.key is None and d.middle >= 0:
            # A connection is stored once per pair of nodes, so it may be walked from
            # either end: `left` joins `start` to the middle.
            first, second = (d.left, d.right) if d.start == chain[-1] else (d.right, d.left)
            self.flatten(d.middle, first, chain, links)
            self.flatten(y, second, chain, links)
            return
        if not isinstance(d, Parallel):
            raise AssertionError("own groups never touch, so every link is an OR")
        chain.append(y)
        links.append(ProofLink(d.kind, d))
