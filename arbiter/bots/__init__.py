"""The bots that come with arbiter: `random`, `heuristic`, `mc`, `mc-fast`, `mcts` and
`skeleton`, defined in `engines.toml` beside this file.

Each is a program of its own, spoken to through the protocol like any engine: the
harness starts them as subprocesses (`python -m arbiter.bots.mcts_bot` runs one by hand).
This package imports nothing, so that starting a bot costs only what the bot needs.
"""
