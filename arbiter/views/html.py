"""The tournament report as one self-contained HTML page, and single positions as SVG.

The page is rendered by Jinja2 with autoescaping on, so whatever a record holds (engine
names, what engines answered, their stderr) reaches the page as text, never as markup.
Everything it needs is inline: styles, the boards as SVG, the games as JSON in a
``<script type="application/json">`` block, and a small script for the viewer and the
filters. Boards come from the rules core (arbiter.views.svg), moves are replayed by it
here, so the viewer only places stones the rules already accepted, and the winning
chain shown is the one the rules found.
"""

from __future__ import annotations

import base64
import gzip
import json
import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from functools import cache
from typing import Any

import jinja2

from arbiter.engines.process import exit_status
from arbiter.results.conditions import SourceConditions
from arbiter.results.elo import Difference
from arbiter.results.records import GameRecord, Termination
from arbiter.results.sprt import Sprt, Verdict
from arbiter.results.standings import Games, Selection, Standings, head_to_head, seat_advantage
from arbiter.rules import SWAP, IllegalMove, Variant
from arbiter.text import escape, name, shorten
from arbiter.views.conditions import conditions as conditions_table
from arbiter.views.plots import elo_plot, error_text, signed, trajectory_plot
from arbiter.views.report import describe_result
from arbiter.views.standings_text import UNBOUNDED
from arbiter.views.svg import (
    LABEL_FONT,
    BoardPicture,
    picture,
    position,
    proof_drawing,
    stone_class,
)

TRANSCRIPT_LINES = 12  # exchanges of evidence shown per faulty game
STDERR_LINES = 30
STDERR_CHARS = 4000
LINE_CHARS = 400
PAGE_SIZE = 100  # rows of the game list in the page at a time: what keeps big reports fast
# Cell names are drawn at least this large on screen (CSS px): a board that would draw
# them smaller at the viewer's column width is shown wider (the viewer then puts the
# board above the move list, and a narrow window scrolls it). At 10 px a three-character
# name such as "k11" is still read at a glance and fits in its cell.
MIN_LABEL_PX = 10.0
BOARD_COLUMN = 620  # CSS px: the viewer's board column (report.css) at full page width
MAX_TENTHS = 2**53 - 1  # move times (tenths of a millisecond) the page's script counts exactly
DASH = "\u2013"  # typographic en dash, for ranges on the page


CELL_DIGITS = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
SWAP_CODE = ".."


@cache
def _environment() -> jinja2.Environment:
    env = jinja2.Environment(
        loader=jinja2.PackageLoader("arbiter.views", "templates"),
        autoescape=True,  # every template: page, SVG, and the inline style and script
        undefined=jinja2.StrictUndefined,
    )
    # `tojson` escapes <, >, & and ' (nothing in the data can close the script block);
    # without spaces it is a quarter smaller.
    env.policies["json.dumps_kwargs"] = {"separators": (",", ":"), "sort_keys": False}
    env.globals["label_font"] = LABEL_FONT
    return env


def encode_cells(cells: Iterable[int]) -> str:
    """Cell indices (-1 for the swap) as two characters each: the game data's bulk, kept
    small (a 1,000-game report on the largest board stays within its budget)."""
    return "".join(
        SWAP_CODE if c < 0 else CELL_DIGITS[c // 64] + CELL_DIGITS[c % 64] for c in cells
    )


def encode_times(tenths: Iterable[int]) -> str:
    """Move times (tenths of a millisecond, not negative) as base-64 digits of five bits
    each, least significant first, a digit of 32 or more saying that more follow: a
    move under 3.2 ms takes one character, one under 102.4 ms two (as JSON numbers,
    three or four with their commas)."""
    table = _time_codes()
    return "".join(table[t] if t < len(table) else _time_code(t) for t in tenths)


def _time_code(value: int) -> str:
    out = []
    while value >= 32:
        out.append(CELL_DIGITS[32 | (value & 31)])
        value >>= 5
    out.append(CELL_DIGITS[value])
    return "".join(out)


@cache
def _time_codes() -> list[str]:
    """The codes of times under 3.2768 s (three digits or fewer), computed once."""
    return [_time_code(t) for t in range(32**3)]


def _text(value: Any, limit: int = LINE_CHARS) -> str:
    """Record text for the page: control and bidi characters escaped, capped."""
    return shorten(escape(str(value)), limit)


# ---------------------------------------------------------------- leaderboard


def leaderboard(board: Standings) -> tuple[list[str], list[dict[str, Any]]]:
    """(fault verdicts with a column each, one row per engine)."""
    verdicts = sorted({v for r in board.rows for v in r.faults})
    rows = []
    for r in board.rows:
        rows.append(
            {
                "rank": r.rank,
                "name": name(r.name),
                "elo": UNBOUNDED if r.elo is None else signed(r.elo),
                "error": "" if r.error is None else error_text(r.error),
                "games": r.games,
                "score": f"{100 * r.score:.1f}",
                "wl": f"{r.wins}{DASH}{r.losses}",
                "los": "" if r.los_next is None else f"{100 * r.los_next:.1f}%",
                "faults": [r.faults.get(v, 0) for v in verdicts],
            }
        )
    return verdicts, rows


def _difference(d: Difference, unit: str = "") -> str:
    if d.elo is None or d.error is None:
        return UNBOUNDED
    return f"{signed(d.elo)} ± {error_text(d.error)}{unit}"


def cross_table(board: Standings) -> tuple[list[str], list[list[dict[str, Any] | None]]]:
    """Engines in leaderboard order and, per engine, one cell per opponent (None if they
    never met or on the diagonal): the score, the pairing's own Elo estimate and, labelled
    apart, the pool fit's difference, which other games inform too."""
    names = [r.name for r in board.rows]
    met = {(h.engine, h.opponent): h for h in head_to_head(board)}
    grid: list[list[dict[str, Any] | None]] = []
    for a in names:
        line: list[dict[str, Any] | None] = []
        for b in names:
            h = met.get((a, b))
            if h is None:
                line.append(None)
                continue
            line.append(
                {
                    "score": f"{h.wins}{DASH}{h.losses}",
                    "percent": f"{100 * h.score:.0f}%",
                    "own": _difference(h.own),
                    "pool": _difference(h.pool),
                    "pairs": None if h.pairs is None else "/".join(map(str, h.pairs[::-1])),
                    "tone": "ahead"
                    if h.wins > h.losses
                    else "behind"
                    if h.wins < h.losses
                    else "even",
                }
            )
        grid.append(line)
    return [name(n) for n in names], grid


# ---------------------------------------------------------------------- games


def _evidence(record: GameRecord) -> dict[str, Any] | None:
    ev = record.evidence
    if ev is None or ev.proof is not None or ev.solver is not None:
        # An adjudicated game's evidence is a proof or a solver's answer, not a fault:
        # its result says so, and `arbiter show --game` lists it.
        return None
    stderr = ev.stderr_tail[-STDERR_CHARS:].splitlines()[-STDERR_LINES:]
    return {
        "engine": _text(ev.engine),
        "detail": _text(ev.detail, 1000),
        "status": exit_status(ev.returncode) if ev.returncode is not None else "",
        "transcript": [_text(line) for line in ev.transcript[-TRANSCRIPT_LINES:]],
        "stderr": [_text(line) for line in stderr],
        "stage": _text(ev.stage, 20),
    }


def _replay(record: GameRecord) -> tuple[list[int], list[int], str]:
    """(moves as cell indices, -1 for the swap; the winning chain; a problem, if the
    record does not replay)."""
    try:
        game = record.replay()
    except IllegalMove as exc:
        return [], [], _text(f"the record does not replay: {exc}")
    moves = [-1 if m == SWAP else int(m) for m in game.moves]
    return moves, sorted(game.winning_chain()), ""


def _proof_view(record: GameRecord, moves: list[int], problem: str) -> dict[str, Any] | None:
    """An adjudicated game's proof as the viewer draws it on the final board, as
    `show --svg` does: the owner, its chain's stones and, per kind of link, the kind's
    style (`LINK_STYLES`) and the carrier cells; None for any other game."""
    evidence = record.evidence
    if problem or evidence is None or evidence.proof is None:
        return None
    drawing = proof_drawing(picture(record.rules.geometry), evidence.proof)
    return {
        "o": drawing.owner,
        "st": encode_cells(c.index for c in drawing.stones),
        "k": [[k.css, k.label, encode_cells(c.index for c in k.cells)] for k in drawing.carriers],
    }


# Where a records line leaves its moves and move times for the page's script to put back
# (json.dumps escapes every control character, so neither can be in its output).
MOVES_HERE, MOVE_MS_HERE = "\x01", "\x02"


def records_line(raw: dict[str, Any], *, shared: bool) -> str:
    """A record as the download's line, as `json.dumps(raw, separators=(",", ":"))`
    writes it, except that a faulty game's stderr is cut to the tail the viewer shows,
    and, if `shared`, its moves and move times stand as MOVES_HERE and MOVE_MS_HERE: the
    viewer's data holds them already (as cells, and tenths of a millisecond), so the
    page carries them once. `shares_moves` says when the viewer's restore them exactly."""
    data = raw
    evidence = raw.get("evidence")
    if isinstance(evidence, dict):
        cut = {
            k: v[-STDERR_CHARS:]
            for k in ("stderr_tail", "traceback")
            if isinstance(v := evidence.get(k), str) and len(v) > STDERR_CHARS
        }
        if cut:
            data = {**raw, "evidence": {**evidence, **cut}}
    parts = []
    for key, value in data.items():
        if shared and key == "moves":
            parts.append('"moves":' + MOVES_HERE)
        elif shared and key == "move_ms":
            parts.append('"move_ms":' + MOVE_MS_HERE)
        else:
            parts.append(json.dumps(key) + ":" + json.dumps(value, separators=(",", ":")))
    return "{" + ",".join(parts) + "}"


def shares_moves(
    raw: dict[str, Any], record: GameRecord, moves: list[int], tenths: list[int]
) -> bool:
    """Whether the viewer's moves (cells, -1 the swap, as replayed) and move times
    (tenths) restore the record's own exactly; if not, its line carries them itself."""
    if "moves" not in raw or "move_ms" not in raw:
        return False
    names = record.rules.geometry.names
    ms = raw["move_ms"]
    if len(ms) != len(moves) or len(tenths) != len(ms):
        return False
    if [SWAP if m < 0 else names[m] for m in moves] != raw["moves"]:
        return False
    return all(t / 10 == x for t, x in zip(tenths, ms, strict=True))


def _tenths(ms: list[float]) -> list[int]:
    """Move times in tenths of a millisecond, as the viewer shows them (the referee
    measures to a tenth); a negative or absurd time from a foreign record is clamped."""
    return [min(max(round(t * 10), 0), MAX_TENTHS) for t in ms]


class ViewCache:
    """The viewer's data and the download's line of each game a page embedded, by the
    game's record, so that a page made again (the arena's, every few seconds) replays
    only the games it did not embed last time. Holds the games of the last page only."""

    def __init__(self) -> None:
        self._views: dict[str, tuple[dict[str, Any], str, tuple[str, str], str, Variant]] = {}
        self._used: dict[str, tuple[dict[str, Any], str, tuple[str, str], str, Variant]] = {}
        self.replayed = 0  # games replayed since made (the others came from the cache)

    def get(self, key: str) -> tuple[dict[str, Any], str, tuple[str, str], str, Variant] | None:
        found = self._views.get(key)
        if found is not None:
            self._used[key] = found
        return found

    def put(
        self, key: str, value: tuple[dict[str, Any], str, tuple[str, str], str, Variant]
    ) -> None:
        self.replayed += 1
        self._used[key] = value

    def page_done(self) -> None:
        """Forget the games the page just made did not embed."""
        self._views, self._used = self._used, {}


def game_views(
    records: Iterable[dict[str, Any]],
    engines: dict[str, int],
    variants: dict[str, Variant],
    lines: list[str] | None = None,
    cache: ViewCache | None = None,
) -> list[dict[str, Any]]:
    """Each game as the viewer's data, replayed with the rules; `engines` and `variants`
    are filled in as they are met, and `lines` (if given) gets each game's records line
    for the download ("" for a record that does not load). A game found in `cache` (by
    its whole record) is not replayed again."""
    views = []
    for number, raw in enumerate(records, 1):
        whole = json.dumps(raw, sort_keys=True) if cache is not None else ""
        hit = cache.get(whole) if cache is not None else None
        if hit is not None:
            data, line, seat_names, board, variant = hit
            variants.setdefault(board, variant)
            placed = [engines.setdefault(name, len(engines)) for name in seat_names]
            views.append({**data, "n": number, "s": placed})
            if lines is not None:
                lines.append(line)
            continue
        try:
            record = GameRecord.from_json(raw)
        except (ValueError, TypeError, KeyError, AttributeError) as exc:
            views.append(_unreadable(number, raw, engines, f"not a readable game record ({exc})"))
            if lines is not None:
                lines.append("")
            continue
        variant = record.rules
        key = variant.geometry.key
        variants.setdefault(key, variant)
        seats = (
            engines.setdefault(record.seat1, len(engines)),
            engines.setdefault(record.seat2, len(engines)),
        )
        moves, chain, problem = _replay(record)
        tenths = _tenths(record.move_ms[: len(moves)])
        if lines is not None:
            shared = not problem and shares_moves(raw, record, moves, tenths)
            lines.append(records_line(raw, shared=shared))
        result = "void" if record.void else "1" if record.winner == record.seat1 else "2"
        tc1, tc2 = _text(record.tc.get("seat1", "")), _text(record.tc.get("seat2", ""))
        data = {
            "id": _text(record.game_id, 200),
            "n": number,
            "v": key,
            "vn": str(variant),
            "s": list(seats),
            "p": record.plies,
            "sw": record.swapped,
            "r": result,
            "t": record.termination.value,
            "res": _text(describe_result(record), 1000),
            "m": encode_cells(moves),
            "ms": encode_times(tenths),
            "ch": encode_cells(chain),
            "bad": problem,
            "ev": _evidence(record),
            "pf": _proof_view(record, moves, problem),
            "tc": tc1 if tc1 == tc2 else f"{tc1} / {tc2}",
            "when": _text(record.started, 40),
            "ans": [_text(record.answers.get(k, ""), 80) for k in ("seat1", "seat2")],
        }
        views.append(data)
        if cache is not None:
            line = lines[-1] if lines is not None else ""
            cache.put(whole, (data, line, (record.seat1, record.seat2), key, variant))
    return views


def _unreadable(
    number: int, raw: dict[str, Any], engines: dict[str, int], problem: str
) -> dict[str, Any]:
    """A record the tally accepted but that cannot be replayed: listed, without a board."""
    seat1, seat2 = str(raw.get("seat1")), str(raw.get("seat2"))
    seats = (engines.setdefault(seat1, len(engines)), engines.setdefault(seat2, len(engines)))
    result = "void" if raw.get("void") else "1" if raw.get("winner") == seat1 else "2"
    termination = str(raw.get("termination"))
    game_id = _text(raw.get("game_id"), 200)
    return {
        "id": game_id,
        "n": number,
        "v": None,
        "vn": "?",
        "p": 0,
        "s": list(seats),
        "sw": False,
        "r": result,
        "t": termination,
        "res": _text(f"{raw.get('winner')} wins ({termination})"),
        "m": "",
        "ms": "",
        "ch": "",
        "bad": _text(problem, 1000),
        "ev": None,
        "tc": "",
        "when": _text(raw.get("started", ""), 40),
        "ans": ["", ""],
    }


# ----------------------------------------------------------------------- page


def records_blob(lines: list[str]) -> str:
    """The download's lines, one per game of the list, gzipped (the same bytes for the
    same games) and in URL-safe base64 (no "/" that could read as a link): the page's
    script unpacks them when it loads."""
    packed = gzip.compress("\n".join(lines).encode(), compresslevel=9, mtime=0)
    return base64.urlsafe_b64encode(packed).decode("ascii")


def board_min_width(p: BoardPicture) -> int:
    """The narrowest the board is drawn (CSS px) so that its cell names are MIN_LABEL_PX."""
    return math.ceil(p.width * MIN_LABEL_PX / LABEL_FONT)


def render_report(
    board: Standings,
    records: list[dict[str, Any]],
    *,
    title: str,
    sources: list[str],
    conditions: Sequence[SourceConditions] = (),
    download: str = "games.jsonl",
    tests: Sequence[tuple[str, Sprt, tuple[str, str], Verdict, int]] = (),
    selection: Selection | None = None,
    read: int | None = None,
    voids: int | None = None,
    boards: Sequence[str] = (),
    formats: Sequence[FormatResult] = (),
    pie_rule: Any = None,
    cache: ViewCache | None = None,
) -> str:
    """The whole page as one string; `conditions` are those of each source, `download`
    the name the page offers its games' records under, `tests` each tested pairing's
    sequential test (source, test, pairing with the engine under test first, state, the
    pairs the pairing is scheduled).

    `records` are the games the page embeds, chosen by `selection` (None: every game)
    among the `read` games counted (`voids` of them void attempts, `boards` the variants
    they were played on); the page says how many it leaves out and how to see them.
    `formats` are the results of the sources whose format has its own (a Swiss's
    standings, an adaptive run's stop rule), shown as `tournament status` shows them;
    `pie_rule` the "Pie rule" section (`views.openings.PieSection`), if any game had one."""
    engines = {r.name: i for i, r in enumerate(board.rows)}
    variants: dict[str, Variant] = {}
    lines: list[str] = []
    views = game_views(records, engines, variants, lines, cache)
    if cache is not None:
        cache.page_done()
    verdicts, rows = leaderboard(board)
    cross_names, grid = cross_table(board)
    pictures = {key: picture(v.geometry) for key, v in variants.items()}
    terminations = [t.value for t in Termination if any(g["t"] == t.value for g in views)]
    payload = {
        "engines": [name(n) for n in engines],
        "games": views,
        "page": PAGE_SIZE,
        "records": records_blob(lines),
    }
    f = board.fit
    return (
        _environment()
        .get_template("report.html")
        .render(
            title=title,
            sources=sources,
            leaderboard=rows,
            verdicts=verdicts,
            plot=elo_plot(board),
            seat=_difference(seat_advantage(f), " Elo"),
            rated=board.games,
            prior=board.prior,
            connected=f.connected,
            components=[[name(n) for n in c] for c in f.components] if not f.connected else [],
            cross_names=cross_names,
            grid=grid,
            pictures=pictures,
            engines=payload["engines"],
            terminations=terminations,
            payload=payload,
            anchors=[(name(a), signed(v)) for a, v in f.anchors],
            floating=[[name(n) for n in g] for g in f.floating],
            games=len(views),
            voids=sum(g["r"] == "void" for g in views) if voids is None else voids,
            read=len(views) if read is None else read,
            omitted=0 if read is None else max(read - len(views), 0),
            selection=selection,
            variants=sorted({*boards, *(g["vn"] for g in views)}),
            page_size=PAGE_SIZE,
            conditions=conditions_table(conditions) if conditions else None,
            download=_text(download, 120),
            unreadable=lines.count(""),
            min_widths={key: board_min_width(p) for key, p in pictures.items()},
            board_column=BOARD_COLUMN,
            tests=[_test_row(*t) for t in tests],
            formats=[_format_view(f) for f in formats],
            pie=pie_rule,
        )
    )


@dataclass(frozen=True)
class FormatResult:
    """A source's own result under its format: `data` as `tournament status --json`
    gives it (its "swiss" or "adaptive" object), `lines` as its text shows it."""

    source: str
    data: dict[str, Any]
    lines: list[str]


def _format_view(f: FormatResult) -> dict[str, Any]:
    swiss = f.data.get("swiss")
    rows = []
    note = [_text(line) for line in f.lines]
    if isinstance(swiss, dict):
        for r in swiss["standings"]:
            pairs = r["pairs"]
            rows.append(
                [
                    str(r["rank"]),
                    name(r["name"]),
                    f"{r['points']:g}",
                    f"{r['buchholz']:g}",
                    f"{r['sonneborn_berger']:g}",
                    f"{pairs['won']}-{pairs['split']}-{pairs['lost']}",
                    ", ".join(map(str, r["byes"])) or "-",
                ]
            )
        note = [
            f"Swiss: {swiss['rounds_complete']} of {swiss['rounds']} rounds complete."
            " Ranked by pair points (1 a pair won twice, 1/2 split, 0 lost twice; a bye"
            " 1), then Buchholz (the opponents' points), then Sonneborn-Berger (each"
            " opponent's points weighted by the pair points scored against it): the"
            " Swiss's own order, which may differ from the Elo fit's."
        ]
        if swiss.get("problem"):
            note.append(_text(swiss["problem"]))
    return {
        "source": _text(f.source, 80),
        "kind": "swiss" if rows else "adaptive",
        "rows": rows,
        "note": note,
        "plot": trajectory_plot(f.data.get("tune")),
    }


def _test_row(
    source: str, test: Sprt, pairing: tuple[str, str], v: Verdict, rounds: int
) -> dict[str, str]:
    lost, split, won = v.pairs
    return {
        "source": _text(source, 80),
        "first": name(pairing[0]),
        "second": name(pairing[1]),
        "test": f"elo0 {test.elo0:g}, elo1 {test.elo1:g}, alpha {test.alpha:g},"
        f" beta {test.beta:g} ({test.model})",
        "llr": f"{v.llr:.2f}",
        "bounds": f"{v.lower:.2f} .. {v.upper:.2f}",
        "result": v.state(rounds),
        "tone": {"H1": "ahead", "H0": "behind"}.get(v.result, ""),
        "pairs": f"{won} / {split} / {lost}",
        "games": str(v.games),
    }


def position_svg(record: GameRecord, ply: int | None = None) -> str:
    """One position of a recorded game as a standalone SVG document.

    Raises IllegalMove if the record does not replay.
    """
    variant = record.rules
    pos = position(record.replay(ply), record.plies)
    p: BoardPicture = pos.picture
    stones = [stone_class(c) for c in pos.colors]
    swapped = None
    if pos.swap_now:
        swapped = pos.last
    title = (
        f"{variant}, game {escape(record.game_id)}: {name(record.seat1)} (seat 1) vs"
        f" {name(record.seat2)} (seat 2), after {pos.ply} of {pos.plies} plies"
    )
    shown = record.moves[: pos.ply]
    desc = "Moves: " + " ".join(f"{n}.{_text(m, 8)}" for n, m in enumerate(shown, 1))
    if pos.chain:
        desc += ". Winning chain: " + " ".join(p.cells[i].name for i in sorted(pos.chain))
    proof = None
    evidence = record.evidence
    if pos.ply == pos.plies and evidence is not None and evidence.proof is not None:
        # The proof is of the final position: drawn there, not on an earlier one.
        proof = proof_drawing(p, evidence.proof)
        desc += f". Proven connection for {proof.owner}, drawn with its legend"
    return (
        _environment()
        .get_template("position.svg")
        .render(
            p=p,
            stones=stones,
            last=pos.last,
            chain=pos.chain,
            swapped=swapped,
            title=title,
            desc=desc if shown else "No moves.",
            proof=proof,
        )
    )


def render_gathered(
    board: Standings,
    keep: Games,
    *,
    title: str,
    sources: list[str],
    download: str,
    tests: Sequence[tuple[str, Sprt, tuple[str, str], Verdict, int]] = (),
    selection: Selection | None = None,
    formats: Sequence[FormatResult] = (),
    pie_rule: Any = None,
    cache: ViewCache | None = None,
) -> str:
    """The report of what `standings.gather` read into `keep`: the boards its games were
    played on, the conditions of each source, the selection it embeds (the games that
    `cache` holds from the last page are not replayed)."""
    variants = set()
    for source in keep.sources:
        for islands, size, pie in source.variants:
            try:
                variants.add(str(Variant(islands, size, pie)))  # type: ignore[arg-type]
            except (TypeError, ValueError):
                continue
    return render_report(
        board,
        keep.records,
        title=title,
        sources=sources,
        conditions=keep.sources,
        download=download,
        tests=tests,
        selection=selection,
        read=keep.read,
        voids=keep.voids,
        boards=sorted(variants),
        formats=formats,
        pie_rule=pie_rule,
        cache=cache,
    )


def arena_page(name: str, in_room: bool = False) -> str:
    """The arena's live page: a shell that fills itself from the API and `/events`
    (`in_room`: a room's, which links back to the list of rooms)."""
    return _environment().get_template("arena.html").render(name=name, in_room=in_room)
