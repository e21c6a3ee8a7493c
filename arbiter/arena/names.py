"""Names that register themselves (open registration): which may, and for how long.

A name is an identity on the live page, in the ratings and in every record, so a new
name that a reader could take for another's is refused: one that Unicode would fold to
a name already taken (NFKC and case folding, and the Cyrillic and Greek letters drawn
like Latin ones), one with a plainer form (full-width letters, ligatures), one with
combining marks or invisible characters, one that mixes scripts, one that begins or
ends with a space. A registered name is kept only while it is used: one that has
played no game `registration_hours` after it registered is forgotten, and free again.
"""

from __future__ import annotations

import json
import time
import unicodedata
from collections.abc import Callable, Iterable

from arbiter.results.store import Store

# Letters of other scripts drawn as Latin ones (Unicode's confusables, the common part):
# folded to the Latin letter, so that "alice" spelt in Cyrillic is taken for "alice".
_LIKE_LATIN = str.maketrans(
    "аеорсухіјѕԁӏвнкмтԛԝαβεηικνορτυχζ",
    "aeopcyxijsdlbhkmtqwabenikvoptuxz",
)
_INVISIBLE = ("Mn", "Me", "Cf")  # combining marks, enclosing marks, format characters


def folded(name: str) -> str:
    """The form two names that look alike share."""
    return unicodedata.normalize("NFKC", name).casefold().translate(_LIKE_LATIN)


def _script(ch: str) -> str:
    """The script of a letter, as the first word of its Unicode name (LATIN, CYRILLIC,
    GREEK, CJK, ...): coarse, enough to see two scripts in one name."""
    return unicodedata.name(ch, "?").split(" ", 1)[0]


def lookalike(name: str, taken: Iterable[str]) -> str | None:
    """Why `name` may not register itself, or None: the reasons of the module docstring,
    each with what to do instead."""
    if name != name.strip():
        return f"{name!r} begins or ends with a space; choose a name without"
    if "@" in name:
        return f"{name!r} holds '@', which joins a name to its engine's version; choose another"
    plain = unicodedata.normalize("NFKC", name)
    if plain != name:
        return f"{name!r} has a plainer form, {plain!r}; register that instead"
    if any(unicodedata.category(ch) in _INVISIBLE for ch in name):
        return f"{name!r} holds a combining mark or an invisible character; choose another"
    scripts = sorted({_script(ch) for ch in name if ch.isalpha()})
    if len(scripts) > 1:
        return f"{name!r} mixes scripts ({', '.join(scripts)}); write it in one"
    key = folded(name)
    for other in taken:
        if other != name and folded(other) == key:
            return f"{name!r} looks like {other!r}, which is taken; choose another name"
    return None


class Registry:
    """The names that registered themselves, with their token hashes and when each
    registered, kept in the store's notes so that a restart keeps them."""

    HASHES = "arena_registered"
    TIMES = "arena_registered_at"

    def __init__(self, store: Store, hours: float, clock: Callable[[], float] = time.time) -> None:
        self.store = store
        self.seconds = hours * 3600.0
        self.clock = clock
        hashes, times = self._read(self.HASHES), self._read(self.TIMES)
        self.hashes = {k: v for k, v in hashes.items() if isinstance(v, str)}
        now = clock()
        # A name kept before its time was: from this start on.
        self.times = {
            name: float(at) if isinstance(at, (int, float)) else now
            for name, at in ((n, times.get(n)) for n in self.hashes)
        }

    def _read(self, key: str) -> dict[str, object]:
        text = self.store.meta(key)
        try:
            data = json.loads(text) if text else {}
        except ValueError:
            return {}
        return (
            {k: v for k, v in data.items() if isinstance(k, str)} if isinstance(data, dict) else {}
        )

    def get(self, name: str) -> str | None:
        return self.hashes.get(name)

    def add(self, name: str, token_hash: str) -> None:
        self.hashes[name] = token_hash
        self.times[name] = self.clock()
        self._write()

    def expire(self, keep: Callable[[str], bool]) -> list[str]:
        """Forget the names registered `registration_hours` ago or more that `keep`
        does not hold on to (it keeps those that have played, or are connected)."""
        now = self.clock()
        gone = [
            name for name, at in self.times.items() if now - at >= self.seconds and not keep(name)
        ]
        for name in gone:
            self.hashes.pop(name, None)
            self.times.pop(name, None)
        if gone:
            self._write()
        return gone

    def _write(self) -> None:
        self.store.remember(self.HASHES, json.dumps(self.hashes, sort_keys=True))
        self.store.remember(self.TIMES, json.dumps(self.times, sort_keys=True))
