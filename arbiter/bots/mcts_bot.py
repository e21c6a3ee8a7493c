#!/usr/bin/env python3
"""Bundled engine: Monte-Carlo tree search with RAVE and batched random playouts.

Each simulation descends the tree by a blend of its own win rate and the all-moves-as-
first (AMAF) statistics of the playouts that passed through it, adds one node, and
finishes the game by a random fill. Leaves are gathered in batches (a virtual loss
spreads them over the tree) and their fills decided at once by the rules core's
bit-parallel playout engine. The tree is kept between moves. Thinking time is a share
of the clock the referee reports, so it never loses on time. It plays an immediate win,
blocks a single threat and resigns only when the opponent has two winning cells and it
has none. With the pie rule it opens just outside the central zone, and swaps a first
stone inside it or one the search finds clearly better than White's best answer.
"""

from __future__ import annotations

import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")  # one core per bot: no numeric thread pools

import argparse  # noqa: E402
import math  # noqa: E402
import time  # noqa: E402

import numpy as np  # noqa: E402
import numpy.typing as npt  # noqa: E402

from arbiter.bot import BASE_COMMANDS, Bot, CommandError, moves_left  # noqa: E402
from arbiter.bots.connection import Tables, modest_openings, wants_swap  # noqa: E402
from arbiter.rules import SWAP, Color, Game  # noqa: E402
from arbiter.rules.playout import PlayoutEngine  # noqa: E402

Floats = npt.NDArray[np.float64]
SWAP_BELOW = 0.47  # White's best win rate under which the first stone is taken over


class Node:
    """A position: statistics of the moves from it, indexed by cell."""

    __slots__ = ("amaf_n", "amaf_w", "children", "legal", "mover", "n", "total", "w", "win_move")

    def __init__(self, legal: npt.NDArray[np.bool_], mover: int) -> None:
        size = legal.shape[0]
        self.legal = legal
        self.mover = mover
        self.n: Floats = np.zeros(size)
        self.w: Floats = np.zeros(size)
        self.amaf_n: Floats = np.zeros(size)
        self.amaf_w: Floats = np.zeros(size)
        self.total = 0.0
        self.children: dict[int, Node] = {}
        self.win_move = -1  # a cell that wins at once for the mover, once seen


class Search:
    """The tree for one board, its playout engine and the search parameters."""

    def __init__(
        self, game: Game, rng: np.random.Generator, *, rave: float, explore: float, per_leaf: int
    ) -> None:
        self.engine = PlayoutEngine(game.geometry)
        self.rng = rng
        self.rave = rave
        self.explore = explore
        self.per_leaf = per_leaf
        self.leaves = 2  # leaves per batch, grown while batches stay short
        # Four float arrays of the board's size per node: cap the tree near 200 MB, after
        # which leaves are still played out but no longer added.
        self.max_nodes = max(1000, 200_000_000 // (32 * game.geometry.n_cells))
        self.nodes = 1
        self.root = self._node(game)
        self.root_moves = list(game.moves)
        self.simulations = 0

    @staticmethod
    def _node(game: Game) -> Node:
        colors = np.array(game.colors, dtype=np.int8)
        return Node(colors == 0, int(game.to_move))

    def advance(self, game: Game) -> None:
        """Keep the subtree of the moves played since the last search, if there is one."""
        done = self.root_moves
        node: Node | None = self.root
        if game.moves[: len(done)] != done:
            node = None
        for move in game.moves[len(done) :]:
            if node is None or move == SWAP:
                node = None
                break
            node = node.children.get(int(move))
        self.root = node if node is not None else self._node(game)
        self.root_moves = list(game.moves)
        self.nodes = _count(self.root)

    def select(self, node: Node) -> int:
        n, legal = node.n, node.legal
        q = np.divide(node.w, n, out=np.full_like(n, 0.5), where=n > 0)
        amaf = (node.amaf_w + 0.5) / (node.amaf_n + 1.0)
        beta = np.sqrt(self.rave / (3.0 * n + self.rave))
        score = (1.0 - beta) * q + beta * amaf
        if self.explore:
            score += self.explore * np.sqrt(math.log(node.total + 1.0) / (n + 1.0))
        score[~legal] = -np.inf
        return int(np.argmax(score))

    def run_batch(self, game: Game) -> None:
        """Descend to `self.leaves` leaves, fill each at random `per_leaf` times, back up."""
        per_leaf = self.per_leaf
        paths: list[list[tuple[Node, int]]] = []
        positions: list[Game] = []
        known: list[tuple[list[tuple[Node, int]], int]] = []
        for _ in range(self.leaves):
            g = game.copy()
            node = self.root
            path: list[tuple[Node, int]] = []
            winner = 0
            while True:
                cell = node.win_move if node.win_move >= 0 else self.select(node)
                node.n[cell] += per_leaf  # virtual loss until the result is in
                node.total += per_leaf
                path.append((node, cell))
                won = g.play(cell)
                if won is not None:
                    node.win_move = cell
                    winner = int(won)
                    break
                child = node.children.get(cell)
                if child is None:
                    if self.nodes < self.max_nodes:
                        node.children[cell] = self._node(g)
                        self.nodes += 1
                    break
                node = child
            if winner:
                known.append((path, winner))
            else:
                paths.append(path)
                positions.append(g)
        for path, winner in known:
            for node, cell in path:
                if node.mover == winner:
                    node.w[cell] += per_leaf
        if positions:
            self._playouts(paths, positions)
        self.simulations += per_leaf * self.leaves

    def _playouts(self, paths: list[list[tuple[Node, int]]], positions: list[Game]) -> None:
        m = self.per_leaf
        colors = np.repeat(np.array([g.colors for g in positions], dtype=np.int8), m, axis=0)
        black_moves = np.repeat(np.array([g.to_move is Color.BLACK for g in positions]), m)
        empty = colors == 0
        keys = self.rng.random(colors.shape)
        keys[~empty] = 2.0
        rank = np.argsort(np.argsort(keys, axis=1), axis=1)
        # The side to move takes the first, third, ... of the empty cells in random order.
        first = (empty.sum(axis=1) + 1) // 2
        movers = rank < first[:, None]
        black = (colors == 1) | (empty & (movers == black_moves[:, None]))
        won = self.engine.black_wins(black)
        leaves = len(positions)
        boards = black.reshape(leaves, m, -1)
        won3 = won.reshape(leaves, m)
        black_owned = boards.sum(axis=1)
        black_won = (boards & won3[:, :, None]).sum(axis=1)
        black_wins = won3.sum(axis=1)
        # White owns every other cell of a full board; it won the boards Black lost.
        white_owned = m - black_owned
        white_won = (m - black_wins)[:, None] - (black_owned - black_won)
        for i, path in enumerate(paths):
            bw = float(black_wins[i])
            for node, cell in path:
                if node.mover == 1:
                    node.w[cell] += bw
                    node.amaf_n += black_owned[i]
                    node.amaf_w += black_won[i]
                else:
                    node.w[cell] += m - bw
                    node.amaf_n += white_owned[i]
                    node.amaf_w += white_won[i]

    def best(self) -> tuple[int, float]:
        """The most visited move at the root and its win rate for the mover."""
        n = np.where(self.root.legal, self.root.n, -1.0)
        cell = int(np.argmax(n))
        return cell, float(self.root.w[cell] / max(1.0, self.root.n[cell]))


def _count(root: Node) -> int:
    """Nodes in the tree under `root`, itself included."""
    count, stack = 0, [root]
    while stack:
        node = stack.pop()
        count += 1
        stack.extend(node.children.values())
    return count


# The parameters the bot lists with `atoll-params` and takes with `atoll-set-param`
# (PROTOCOL.md 5.4): name, type and range; the default is the command line's value.
PARAMS = {"explore": (0.0, 10.0), "rave": (0.0, 1e6)}


class MctsBot(Bot):
    name = "mcts"

    def __init__(self, args: argparse.Namespace) -> None:
        super().__init__()
        self.args = args
        self._defaults = {name: float(getattr(args, name)) for name in PARAMS}
        self._handlers["atoll-params"] = self._params
        self._handlers["atoll-set-param"] = self._set_param
        self._handlers["list_commands"] = lambda a: "\n".join(
            (*BASE_COMMANDS, "atoll-params", "atoll-set-param")
        )
        self.rng = np.random.default_rng(args.seed)
        self.search: Search | None = None
        self._tables: dict[str, Tables] = {}

    def new_game(self) -> None:
        self.search = None

    def _params(self, args: tuple[str, ...]) -> str:
        """One line per parameter: NAME TYPE DEFAULT MIN MAX."""
        return "\n".join(
            f"{name} float {self._defaults[name]:g} {low:g} {high:g}"
            for name, (low, high) in PARAMS.items()
        )

    def _set_param(self, args: tuple[str, ...]) -> str:
        """NAME VALUE: the value for this game on (a search starts with each game)."""
        if len(args) != 2 or args[0] not in PARAMS:
            raise CommandError(f"usage: atoll-set-param {'|'.join(PARAMS)} VALUE")
        try:
            value = float(args[1])
        except ValueError:
            raise CommandError(f"not a number: {args[1]}") from None
        low, high = PARAMS[args[0]]
        if not low <= value <= high:  # nan is never in range
            raise CommandError(f"{args[0]} must be between {low:g} and {high:g}")
        setattr(self.args, args[0], value)
        self.search = None
        return ""

    def tables(self, game: Game) -> Tables:
        key = game.geometry.key
        if key not in self._tables:
            self._tables[key] = Tables(game.geometry)
        return self._tables[key]

    def budget(self, color: Color, game: Game) -> float:
        """Seconds for this move: --time, capped by the clock's share; 1 s with neither."""
        empty = game.colors.count(0)
        clock = self.think_time(color, moves_left(game, 0.25 * empty))
        fixed = self.args.time
        if clock is None:
            return fixed if fixed is not None else 1.0
        return clock if fixed is None else min(fixed, clock)

    def choose_move(self, game: Game, color: Color) -> str:
        start = time.perf_counter()
        if not game.moves and game.variant.pie:
            # A strong first stone would be swapped: open modestly.
            cells = modest_openings(self.tables(game))
            return game.move_name(int(self.rng.choice(cells)))
        wins = game.winning_cells(color)
        if wins:
            return game.move_name(wins[0])
        threats = game.winning_cells(color.other)
        if threats and game.swap_allowed:
            return SWAP  # the stone that threatens becomes ours: never resign a swap away
        if len(threats) == 1:
            return game.move_name(threats[0])
        if len(threats) > 1 and self.args.resign:
            return "resign"
        deadline = start + self.budget(color, game)
        search = self.searcher(game)
        self.think(search, game, deadline)
        cell, value = search.best()
        if game.swap_allowed and (wants_swap(self.tables(game), game) or value < SWAP_BELOW):
            # Swapping takes over the first stone: worth it in the central zone, or when
            # the search finds White's best reply clearly below even.
            return SWAP
        return game.move_name(cell)

    def searcher(self, game: Game) -> Search:
        search = self.search
        if search is None or search.engine.geometry != game.geometry or not self.args.reuse:
            search = Search(
                game,
                self.rng,
                rave=self.args.rave,
                explore=self.args.explore,
                per_leaf=self.args.per_leaf,
            )
            self.search = search
        else:
            search.advance(game)
        return search

    def think(self, search: Search, game: Game, deadline: float) -> None:
        limit = self.args.playouts
        done = 0
        while True:
            t0 = time.perf_counter()
            search.run_batch(game)
            done += search.per_leaf * search.leaves
            now = time.perf_counter()
            if now >= deadline or (limit is not None and done >= limit):
                return
            # Batches grow while they take under a tenth of the time left, up to 16 leaves.
            took = now - t0
            if took * 10 < deadline - now and search.leaves < 16:
                search.leaves *= 2
            elif took * 4 > deadline - now and search.leaves > 1:
                search.leaves //= 2


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--time",
        type=float,
        default=None,
        metavar="SECONDS",
        help="think at most this long per move (default: a share of the"
        " clock; 1 s when the referee sends no clock)",
    )
    parser.add_argument(
        "--playouts",
        type=int,
        default=None,
        metavar="N",
        help="stop after about N playouts per move (default: no limit)",
    )
    parser.add_argument(
        "--seed",
        type=int,
        default=None,
        help="seed for playouts and openings (default: a fresh one each run)",
    )
    parser.add_argument(
        "--rave",
        type=float,
        default=600.0,
        metavar="K",
        help="playouts at which a move's own rate and its AMAF rate weigh"
        " equally, roughly (default 600)",
    )
    parser.add_argument(
        "--explore",
        type=float,
        default=0.05,
        metavar="C",
        help="UCT exploration constant on top of RAVE (default 0.05)",
    )
    parser.add_argument(
        "--per-leaf", type=int, default=8, metavar="N", help="random fills per new leaf (default 8)"
    )
    parser.add_argument(
        "--no-reuse",
        dest="reuse",
        action="store_false",
        help="start a fresh tree every move instead of keeping the subtree",
    )
    parser.add_argument(
        "--no-resign",
        dest="resign",
        action="store_false",
        help="play on even when the opponent has two winning cells",
    )
    args = parser.parse_args()
    if args.playouts is not None and args.playouts < 1:
        parser.error("--playouts must be at least 1")
    if args.time is not None and args.time <= 0:
        parser.error("--time must be positive")
    if args.per_leaf < 1:
        parser.error("--per-leaf must be at least 1")
    MctsBot(args).run()


if __name__ == "__main__":
    main()
