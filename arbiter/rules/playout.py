"""Batched random playouts: fill the empty cells at random and decide each winner once.

A connection game with no draws needs no win check during a random fill: the final
position alone says who won. Each board becomes one lane of bits in a very long Python
integer laid out on a padded axial grid, where every neighbour direction is a fixed bit
shift. A flood fill of a whole batch is then a few shifts, ORs and ANDs on one integer
per step, which runs at memory speed instead of Python-loop speed.
"""

from __future__ import annotations

from arbiter._numpy import np, npt
from arbiter.rules.game import Game
from arbiter.rules.geometry import Color, Geometry


class PlayoutEngine:
    """Random-fill winner statistics for one board geometry."""

    def __init__(self, geometry: Geometry) -> None:
        self.geometry = geometry
        coords = list(geometry.cells) + [s for isl in geometry.islands for s in isl.stones]
        qmin = min(q for q, _ in coords)
        rmin = min(r for _, r in coords)
        rmax = max(r for _, r in coords)
        qmax = max(q for q, _ in coords)
        # Two empty columns on each side keep every shift of a lane inside its own
        # padding, so lanes never leak into each other.
        self._height = rmax - rmin + 3
        width = qmax - qmin + 5
        lane = self._height * width
        self.lane_bits = (lane + 63) // 64 * 64
        self.lane_bytes = self.lane_bits // 8

        def bit(q: int, r: int) -> int:
            return (q - qmin + 2) * self._height + (r - rmin + 1)

        self._cell_bits = np.array([bit(q, r) for q, r in geometry.cells], dtype=np.int64)
        self._shifts = sorted({abs(dq * self._height + dr) for dq, dr in geometry.directions})
        self._island_bits = [
            np.array([bit(q, r) for q, r in isl.stones], dtype=np.int64) for isl in geometry.islands
        ]
        own = [k for k, isl in enumerate(geometry.islands) if isl.owner is Color.BLACK]
        # Flooding from all but one of Black's islands finds every group that joins two
        # or more of them; the last island's group, if it matters, contains an earlier one.
        self._seeds = own[:-1]
        self._black_islands = own
        self._win_list = np.array(sorted(geometry.winning_masks), dtype=np.int64)

    def _lane_template(self, islands: list[int]) -> npt.NDArray[np.bool_]:
        row = np.zeros(self.lane_bits, dtype=np.bool_)
        for k in islands:
            row[self._island_bits[k]] = True
        return row

    def _pack(self, rows: npt.NDArray[np.bool_]) -> int:
        packed = np.packbits(rows, axis=1, bitorder="little")
        return int.from_bytes(packed.tobytes(), "little")

    def _unpack_any(self, value: int, n: int) -> npt.NDArray[np.bool_]:
        raw = value.to_bytes(n * self.lane_bytes, "little")
        lanes = np.frombuffer(raw, dtype=np.uint64).reshape(n, self.lane_bytes // 8)
        return np.asarray(lanes.any(axis=1))

    def black_wins(self, black_cells: npt.NDArray[np.bool_]) -> npt.NDArray[np.bool_]:
        """Given full boards (n x cells, True = black stone), which ones Black has won.

        Every cell must be filled; on a full board exactly one player has won, so
        White has won every board that Black has not.
        """
        n = black_cells.shape[0]
        rows = np.broadcast_to(self._lane_template(self._black_islands), (n, self.lane_bits)).copy()
        rows[:, self._cell_bits] = black_cells
        black = self._pack(rows)
        lanes = [self._replicate([k], n) for k in self._black_islands]
        wins = np.zeros(n, dtype=np.bool_)
        for k in self._seeds:
            reach = self._flood(lanes[self._black_islands.index(k)], black)
            mask = np.zeros(n, dtype=np.int64)
            for j, target in zip(self._black_islands, lanes, strict=True):
                mask |= np.where(self._unpack_any(reach & target, n), 1 << j, 0)
            wins |= np.isin(mask, self._win_list)
        return wins

    def _replicate(self, islands: list[int], n: int) -> int:
        return self._pack(np.broadcast_to(self._lane_template(islands), (n, self.lane_bits)))

    def _flood(self, seed: int, black: int) -> int:
        shifts = self._shifts
        reach = seed & black
        while True:
            grown = reach
            for s in shifts:
                grown |= (reach << s) | (reach >> s)
            grown &= black
            if grown == reach:
                return reach
            reach = grown

    def random_fills(self, game: Game, n: int, rng: np.random.Generator) -> npt.NDArray[np.bool_]:
        """`n` random completions of `game`'s position, as black-stone arrays."""
        colors = np.array(game.colors, dtype=np.int8)
        empty = np.flatnonzero(colors == 0)
        boards = np.broadcast_to(colors == int(Color.BLACK), (n, len(colors))).copy()
        if len(empty):
            # The side to move places the first, third, ... of the remaining stones.
            first = (len(empty) + 1) // 2
            n_black = first if game.to_move is Color.BLACK else len(empty) - first
            keys = rng.random((n, len(empty)))
            order = np.argsort(keys, axis=1)
            black_slots = order[:, :n_black]
            sub = np.zeros((n, len(empty)), dtype=np.bool_)
            np.put_along_axis(sub, black_slots, True, axis=1)
            boards[:, empty] = sub
        return boards

    def win_rate(self, game: Game, n: int, rng: np.random.Generator) -> float:
        """Fraction of `n` random fills of `game` that the side to move wins."""
        wins = self.black_wins(self.random_fills(game, n, rng))
        black_rate = float(wins.mean())
        return black_rate if game.to_move is Color.BLACK else 1.0 - black_rate
