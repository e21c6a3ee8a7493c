"""Engines written inline in a test: the bot skeleton subclassed in a few lines, run by
this interpreter with `-c`, so that each test's misbehaviour sits next to its checks."""

from __future__ import annotations

import sys
import textwrap

from paths import BOTS

from arbiter.engines.process import EngineSpec

# What every inline engine starts with: the skeleton importable as `sk`, and the modules
# a misbehaving bot reaches for.
PRELUDE = f"""
import os, sys, time
sys.dont_write_bytecode = True
sys.path.insert(0, {str(BOTS)!r})
import skeleton as sk
"""


def inline_engine(name: str, body: str) -> EngineSpec:
    """An engine named `name` whose program is the prelude and then `body`."""
    return EngineSpec((sys.executable, "-c", PRELUDE + textwrap.dedent(body)), name=name)
