"""What one source of games says about how they were played: its conditions.

A store keeps the conditions its competition was started with (format, rounds, board,
time control, openings, seed, and each engine's command, limits and sandbox) and the
engines' answers; a records file keeps none of that, but every record carries its
board, time controls, commands, versions, host and times. `SourceConditions` holds both
kinds of fact for one source: what the store says, and what its records show, so that
a report can state the conditions of every source and say what is not known.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from arbiter.results.score import Saving, empty_cells
from arbiter.results.store import Store
from arbiter.rules import Variant


@dataclass
class SourceEngine:
    """One engine as a source's records show it (seat names are identities)."""

    tcs: Counter[str] = field(default_factory=Counter)
    commands: Counter[tuple[str, ...]] = field(default_factory=Counter)
    versions: Counter[str] = field(default_factory=Counter)
    answers: Counter[str] = field(default_factory=Counter)
    games: int = 0


@dataclass
class SourceConditions:
    """The conditions of one SOURCE argument: stored ones, and those its records show.

    `kind` is "tournament" or "match" for a store that kept its conditions, "store" for
    one that did not, "records" for a records file, and "repeat" for a store given again
    (its games are read once, under the first: `store` names that source).
    """

    label: str  # the argument as given
    kind: str
    name: str = ""  # the tournament's name or the match's id
    store: str = ""  # the store's file, for a tournament file or a store
    stored: dict[str, Any] | None = None  # the store's conditions
    definition: dict[str, Any] | None = None  # the definition of its last run
    engines: list[dict[str, Any]] = field(default_factory=list)  # the store's engine rows
    definitions: dict[str, dict[str, Any]] = field(default_factory=dict)  # by engine name
    created: str = ""  # when the store was started
    # What its records show (each record of the source, including those another source
    # also holds).
    games: int = 0
    voids: int = 0
    # (islands, size, pie) as the records give them
    variants: Counter[tuple[object, object, object]] = field(default_factory=Counter)
    seen: dict[str, SourceEngine] = field(default_factory=dict)
    hosts: Counter[tuple[str, str]] = field(default_factory=Counter)  # (host, cpu)
    swaps: int = 0
    adjudicated: int = 0  # rated games a proof ended
    saving: Saving = field(default_factory=Saving)  # and what they saved (estimated)
    openings: Counter[int] = field(default_factory=Counter)  # plies from an opening: games
    first_started: str = ""
    last_finished: str = ""

    @classmethod
    def of_store(cls, label: str, store: Store) -> SourceConditions:
        conditions = store.conditions()
        kind = (
            "store"
            if conditions is None
            else ("match" if conditions.get("kind") == "match" else "tournament")
        )
        return cls(
            label=label,
            kind=kind,
            name=store.meta("tournament") or "",
            store=store.path.name,
            stored=conditions,
            definition=store.definition(),
            engines=store.engines(),
            definitions=store.engine_definitions(),
            created=store.meta("created") or "",
        )

    def observe(self, data: dict[str, Any], *, void: bool, games: int = 1) -> None:
        """Take in one record (a JSON object that the records reader accepted), or
        `games` records that show the same."""
        if void:
            self.voids += games
        else:
            self.games += games
        variant = data.get("variant") or {}
        self.variants[(variant.get("islands"), variant.get("size"), variant.get("pie"))] += games
        self.swaps += bool(data.get("swapped")) * games
        if not void and data.get("termination") == "adjudicated":
            self.adjudicated += games
            self._saving(data, variant)
        if data.get("opening"):
            self.openings[int(data["opening"])] += games
        tc, commands = data.get("tc") or {}, data.get("commands") or {}
        versions, answers = data.get("versions") or {}, data.get("answers") or {}
        for seat in ("seat1", "seat2"):
            name = str(data.get(seat))
            engine = self.seen.setdefault(name, SourceEngine())
            engine.games += games
            if seat in tc:
                engine.tcs[str(tc[seat])] += games
            if seat in commands:
                engine.commands[tuple(map(str, commands[seat]))] += games
            if name in versions:
                engine.versions[str(versions[name])] += games
            if seat in answers:
                engine.answers[str(answers[seat])] += games
        host, cpu = str(data.get("host") or ""), str(data.get("cpu") or "")
        self.hosts[(host, cpu)] += games
        started, finished = str(data.get("started") or ""), str(data.get("finished") or "")
        if started and (not self.first_started or started < self.first_started):
            self.first_started = started
        if finished > self.last_finished:
            self.last_finished = finished

    def _saving(self, data: dict[str, Any], variant: dict[str, Any]) -> None:
        """Take a rated adjudicated record into what adjudication saved (`Saving`)."""
        # The records reader checked the fields' types: moves are texts, times numbers.
        moves = data.get("moves") or []
        cells = Variant(int(variant["islands"]), int(variant["size"])).geometry.n_cells
        left = empty_cells(cells, moves)
        seats = (str(data.get("seat1")), str(data.get("seat2")))
        opening = int(data.get("opening") or 0)
        self.saving.take(seats, moves, data.get("move_ms") or [], opening, left=left)

    def observe_store(self, store: Store) -> bool:
        """Take in a store's rated games from the groups it keeps of what their records
        show (`Store.seen_records`), in the order the records would be met, without
        reading a record; False (nothing taken in) where it keeps none."""
        groups = store.seen_records()
        if groups is None:
            return False
        for seat1, seat2, facts, _, games, started, finished in groups:
            fields = dict(zip(SEEN_FIELDS, facts, strict=False))
            fields.update(seat1=seat1, seat2=seat2, started=started, finished=finished)
            self.observe(
                {k: v for k, v in fields.items() if v is not None}, void=False, games=games
            )
        self._adjudicated_of(store)
        return True

    def _adjudicated_of(self, store: Store) -> None:
        """Take in a store's adjudicated games (the groups leave out how games ended):
        their count, and what they saved where the store holds one board."""
        boards = {(islands, size) for islands, size, _ in self.variants}
        if len(boards) != 1 or not all(isinstance(n, int) for n in next(iter(boards))):
            # No game, or boards mixed: count them, save nothing.
            self.adjudicated += store.adjudicated_count()
            return
        islands, size = next(iter(boards))
        assert isinstance(islands, int) and isinstance(size, int)
        cells = Variant(islands, size).geometry.n_cells
        self.adjudicated += self.saving.take_stored(store.adjudicated_games(), cells)


# The fields of a record that `records_seen` keeps, in its order (the store's schema).
SEEN_FIELDS = (
    "variant",
    "swapped",
    "opening",
    "tc",
    "commands",
    "versions",
    "answers",
    "host",
    "cpu",
)
