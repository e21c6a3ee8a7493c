"""Full game transcripts in a folder, one file per game played (`--transcripts DIR`).

A transcript is for the bot author debugging an engine, not a result: a file that cannot
be written is counted and the run goes on (the record is stored either way). A file is
never written over: a game played again (a void attempt replayed, a run repeated into the
same folder) gets the next free name.
"""

from __future__ import annotations

import logging
import os
import re
from pathlib import Path

from arbiter.errors import ConfigError
from arbiter.results.records import GameRecord

log = logging.getLogger(__name__)

CAP = 1 << 20  # bytes of exchanges kept per game: its first three quarters and its end
_UNSAFE = re.compile(r"[^A-Za-z0-9._-]")


class TranscriptFolder:
    """Where a run's transcripts go: `GAME_ID.log`, then `GAME_ID.2.log`, ..."""

    def __init__(self, path: str | os.PathLike[str], where: str = "--transcripts") -> None:
        self.path = Path(path)
        self.failed = 0
        self.problem = ""
        try:
            self.path.mkdir(exist_ok=True)
        except FileExistsError as exc:
            raise ConfigError(
                "is a file, not a folder",
                where=str(path),
                hint=f"give {where} a folder (it is made if missing)",
            ) from exc
        except OSError as exc:
            raise ConfigError(
                f"cannot make the transcripts folder: {exc.strerror}",
                where=str(path),
                hint=f"give {where} a writable folder",
            ) from exc
        if not os.access(self.path, os.W_OK | os.X_OK):
            raise ConfigError(
                "the transcripts folder is not writable",
                where=str(path),
                hint=f"give {where} a writable folder",
            )

    def write(self, record: GameRecord, text: str) -> Path | None:
        """Write one game's transcript in a file of its own, made new (never one already
        there); None if it could not be written, which is counted for the run's notes."""
        stem = _UNSAFE.sub("_", record.game_id)[:200] or "game"
        data = text.encode("utf-8", errors="replace")
        for n in range(1, 1000):
            target = self.path / (f"{stem}.log" if n == 1 else f"{stem}.{n}.log")
            try:
                fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o644)
            except FileExistsError:
                continue
            except OSError as exc:
                self._failed(target, exc)
                return None
            try:
                with os.fdopen(fd, "wb") as handle:
                    handle.write(data)
            except OSError as exc:
                target.unlink(missing_ok=True)  # a cut transcript would mislead
                self._failed(target, exc)
                return None
            return target
        self._failed(self.path / f"{stem}.log", FileExistsError("999 files already"))
        return None

    def _failed(self, target: Path, exc: OSError) -> None:
        self.failed += 1
        if not self.problem:
            self.problem = f"{target}: {getattr(exc, 'strerror', None) or exc}"
        log.warning("cannot write the transcript %s: %s", target, exc)
        return None

    def notes(self) -> list[str]:
        if not self.failed:
            return []
        return [
            f"{self.failed} game transcript(s) could not be written (first: {self.problem});"
            " the games' records are stored all the same."
        ]
