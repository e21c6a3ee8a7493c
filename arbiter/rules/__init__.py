"""The Atoll rules: pure Python, no I/O. Boards are data; the win rule is derived."""

from arbiter.rules.game import (
    SWAP,
    Game,
    IllegalMove,
    IllegalReason,
    Move,
    Variant,
    replay_winner,
)
from arbiter.rules.geometry import VALID_ATOLL_SIZES, Color, Geometry, Island, atoll, hex_board

__all__ = [
    "SWAP",
    "VALID_ATOLL_SIZES",
    "Color",
    "Game",
    "Geometry",
    "IllegalMove",
    "IllegalReason",
    "Island",
    "Move",
    "Variant",
    "atoll",
    "hex_board",
    "replay_winner",
]
