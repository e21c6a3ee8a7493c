"""Definition files, read through declarations of their keys.

Every key of a tournament file, an arena file and an engine definition is declared once,
as a `Key`: its name, its type, its range or choices, its default, one line of help and
how an error about it is phrased. One reader (`Keys`) reads any file kind through them:
it refuses unknown keys (listing the allowed ones), values of the wrong type, out of
range or not among the choices, each with one line naming the file and the key, quoting
the value as TOML and saying how to fix it. The reference pages of the docs are made
from the same declarations (`arbiter.definitions.reference`), so they cannot drift from
what the code accepts.

What is left to each file kind's loader is what is really its own: values that depend
on other keys (a gauntlet's challenger, an adaptive run's budget), parsing of values
with a grammar (a time control, a listen address) and checks on the host (paths,
programs).

The package sits with the ground modules: it imports only `errors` and `text`, so that
`engines/`, `runs/` and `arena/` can all read through it.
"""

from __future__ import annotations

from arbiter.definitions.files import MAX_TEXT_FILE, read_small, read_toml
from arbiter.definitions.keys import Key, Keys, type_name

__all__ = ["MAX_TEXT_FILE", "Key", "Keys", "read_small", "read_toml", "type_name"]
