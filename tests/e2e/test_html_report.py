"""The HTML report and `show --svg`: a real tournament, the real CLI, a real HTML parser,
and (where Chromium is installed) a real browser driving the viewer."""

from __future__ import annotations

import json
import math
import random
import re
import shlex
import shutil
import string
import sys
import xml.etree.ElementTree as ET
from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest
from browsers import open_chromium
from click.testing import CliRunner
from commands import invoke
from paths import BADBOT, ROOT

from arbiter.cli import main
from arbiter.results.records import Evidence, GameRecord, Stage, Termination, read_records
from arbiter.results.store import Store
from arbiter.rules import VALID_ATOLL_SIZES, Color, Game, Variant
from arbiter.runs.tournament import load_tournament
from arbiter.text import escape, shorten
from arbiter.views.svg import RADIUS, picture

ENGINES = ROOT / "arbiter" / "bots" / "engines.toml"
HOSTILE_ANSWER = r"ev\x1b[31mil</script><img src=x onerror=alert(1)>\u202e"
HOSTILE_STDERR = "<script>alert(1)</script>"
HTML_NAME = "<b>bold</b>"  # a tournament-file name that is markup


def badbot(name: str, mode: str, *extra: str) -> str:
    argv = [sys.executable, str(BADBOT), mode, *extra]
    return f"[[engine]]\nname = {json.dumps(name)}\ncommand = {json.dumps(argv)}\n"


@dataclass
class Played:
    folder: Path
    tournament: Path
    hex_records: Path
    report: Path
    html: str
    records: list[GameRecord]  # every game in the report: the tournament's, then Hex


@pytest.fixture(scope="module")
def played(tmp_path_factory: pytest.TempPathFactory) -> Played:
    """A small real tournament (a random bot, a bot that swaps whenever it may, with a
    hostile name answer, and one that crashes with markup on its stderr) on Atoll 7, and
    a Hex match in a records file; the report of both combined. The engines run under a
    memory limit, for the conditions to state."""
    folder = tmp_path_factory.mktemp("report")
    tournament = folder / "t.toml"
    tournament.write_text(
        '[tournament]\nname = "tiny"\nrounds = 1\nconcurrency = 2\ntc = "10+0.1"\nsize = 7\n'
        f"random_openings = 1\nseed = 4\nengines_file = {json.dumps(str(ENGINES))}\n"
        'engines = ["random"]\n\n[tournament.limits]\nmemory_mb = 1024\n\n'
        + badbot(HTML_NAME, "swapper", "--hostile", "--name", HOSTILE_ANSWER)
        + badbot("crashy", "crash", "--after", "1", "--say", HOSTILE_STDERR)
    )
    done = invoke("tournament", "run", str(tournament), "-q")
    assert done.returncode == 0, done.stderr
    hex_records = folder / "hex.jsonl"
    done = invoke(
        "match",
        "random",
        "skeleton",
        "--islands",
        "4",
        "--size",
        "5",
        "--games",
        "2",
        "--tc",
        "5+0",
        "--records",
        str(hex_records),
        "-q",
    )
    assert done.returncode == 0, done.stderr
    exported = folder / "t.jsonl"
    runner = CliRunner()
    done = runner.invoke(
        main, ["tournament", "export", str(tournament), "--records", str(exported)]
    )
    assert done.exit_code == 0, done.output
    report = folder / "report.html"
    done = runner.invoke(main, ["report", str(tournament), str(hex_records), "-o", str(report)])
    assert done.exit_code == 0, done.output
    assert "8 in the viewer" in done.output
    records = list(read_records(exported)) + list(read_records(hex_records))
    return Played(folder, tournament, hex_records, report, report.read_text(), records)


@dataclass
class Element:
    tag: str
    attrs: dict[str, str]
    text: str = ""
    children: list[Element] = field(default_factory=list)

    def find_all(self, tag: str, **attrs: str) -> Iterator[Element]:
        for child in self.children:
            if child.tag == tag and all(child.attrs.get(k) == v for k, v in attrs.items()):
                yield child
            yield from child.find_all(tag, **attrs)

    def all_text(self) -> str:
        return self.text + "".join(c.all_text() for c in self.children)


VOID_TAGS = {
    "meta",
    "link",
    "br",
    "img",
    "input",
    "hr",
    "col",
    "source",
    "area",
    "base",
    "wbr",
    "embed",
    "param",
    "track",
}


class TreeBuilder(HTMLParser):
    """The document as a tree, from the standard library's HTML tokenizer."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.root = Element("#document", {})
        self.stack = [self.root]

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        element = Element(tag, {k: v or "" for k, v in attrs})
        self.stack[-1].children.append(element)
        if tag not in VOID_TAGS:
            self.stack.append(element)

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.stack[-1].children.append(Element(tag, {k: v or "" for k, v in attrs}))

    def handle_endtag(self, tag: str) -> None:
        for depth in range(len(self.stack) - 1, 0, -1):
            if self.stack[depth].tag == tag:
                del self.stack[depth:]
                return

    def handle_data(self, data: str) -> None:
        self.stack[-1].children.append(Element("#text", {}, data))


def parse(html: str) -> Element:
    builder = TreeBuilder()
    builder.feed(html)
    builder.close()
    return builder.root


def payload(doc: Element) -> dict[str, Any]:
    (block,) = doc.find_all("script", type="application/json")
    data: dict[str, Any] = json.loads(block.all_text())
    return data


def decode_cells(text: str) -> list[int]:
    """The page's two-character cell code: base64url digits, ".." for the swap."""
    digits = string.ascii_uppercase + string.ascii_lowercase + string.digits + "-_"
    return [
        -1 if text[i] == "." else digits.index(text[i]) * 64 + digits.index(text[i + 1])
        for i in range(0, len(text), 2)
    ]


def test_report_structure_from_a_real_tournament(played: Played) -> None:
    doc = parse(played.html)
    data = payload(doc)
    # One leaderboard row per engine, named by the tournament file and the match.
    (standings,) = doc.find_all("table", **{"class": "standings"})
    (body,) = standings.find_all("tbody")
    rows = list(body.find_all("tr"))
    names = [next(r.find_all("th")).all_text() for r in rows]
    assert sorted(names) == sorted(["random", HTML_NAME, "crashy", "skeleton"])
    crashy = rows[names.index("crashy")]
    header = [th.all_text() for th in next(standings.find_all("thead")).find_all("th")]
    assert "faults: crash" in header
    cells = [c.all_text() for c in crashy.children if c.tag in ("td", "th")]
    assert cells[header.index("faults: crash")] == "4"  # it crashed in each of its 4 games
    # The cross table: a row and a column per engine; the diagonal is the engine itself.
    (cross,) = doc.find_all("table", **{"class": "cross"})
    cross_rows = list(next(cross.find_all("tbody")).find_all("tr"))
    assert len(cross_rows) == 4
    assert all(len([c for c in r.children if c.tag == "td"]) == 4 for r in cross_rows)
    assert "pairs " in cross.all_text() and "±" in cross.all_text()
    # Each cell: the score, the pairing's own estimate and the pool fit's, labelled, as
    # `ratings --matrix` has them.
    matrix = json.loads(
        CliRunner()
        .invoke(
            main,
            [
                "ratings",
                str(played.tournament),
                str(played.hex_records),
                "--matrix",
                "--json",
            ],
        )
        .stdout
    )["matrix"]
    heads = [th.all_text() for th in next(cross.find_all("thead")).find_all("th")]

    def same(text: str, label: str, d: dict[str, float]) -> bool:
        """The page's whole Elo against the JSON's (rounded to a tenth)."""
        found = re.fullmatch(label + r" (0|[+\u2212]\d+) ± (\d+)", text)
        assert found is not None, text
        elo, error = (float(found[1].replace("\u2212", "-")), float(found[2]))
        return abs(elo - d["elo"]) <= 0.55 and abs(error - d["error"]) <= 0.55

    cells = 0
    for row in cross_rows:
        engine = next(row.find_all("th")).all_text()
        for opponent, cell in zip(heads, [c for c in row.children if c.tag == "td"], strict=True):
            [entry] = [m for m in matrix if (m["engine"], m["opponent"]) == (engine, opponent)] or [
                None
            ]
            if entry is None:
                continue
            cells += 1
            (own,) = cell.find_all("span", **{"class": "elo own"})
            (pool,) = cell.find_all("span", **{"class": "elo pool"})
            assert same(own.all_text(), "head-to-head", entry["head_to_head"])
            assert same(pool.all_text(), "pool fit", entry["pool"])
    assert cells == len(matrix) > 0
    # The ratings plot: one dot per engine.
    (plot,) = doc.find_all("svg", **{"class": "plot"})
    assert len(list(plot.find_all("circle"))) == 4
    assert "Seat 1 advantage:" in doc.all_text()
    # One viewer entry per game, in the order of the sources, each game once.
    assert len(data["games"]) == len(played.records) == 8
    assert [g["id"] for g in data["games"]] == [r.game_id for r in played.records]
    for game, record in zip(data["games"], played.records, strict=True):
        replay = Game(Variant(**record.variant))
        for move in record.moves:
            replay.play(move)
        assert decode_cells(game["m"]) == [-1 if m == "swap" else int(m) for m in replay.moves]
        assert decode_cells(game["ch"]) == sorted(replay.winning_chain())
        assert (game["ev"] is not None) == (record.evidence is not None)
        assert data["engines"][game["s"][0]] == record.seat1
    # A board per variant met, each with every cell of its geometry.
    boards = {b.attrs["data-board"]: b for b in doc.find_all("div", **{"class": "board-wrap"})}
    assert set(boards) == {"atoll-8/7", "hex/5"}
    for key, variant in (("atoll-8/7", Variant(8, 7)), ("hex/5", Variant(4, 5))):
        cells = list(boards[key].find_all("g", **{"class": "cell"}))
        assert [c.attrs["data-name"] for c in cells] == list(variant.geometry.names)
    assert any(g["sw"] for g in data["games"])  # the swapper swapped


def test_report_makes_no_request_elsewhere(played: Played) -> None:
    doc = parse(played.html)

    def walk(e: Element) -> Iterator[Element]:
        for child in e.children:
            yield child
            yield from walk(child)

    for element in walk(doc):
        for attr in ("src", "href", "xlink:href", "action", "srcset", "poster", "data"):
            value = element.attrs.get(attr)
            assert value is None or value.startswith("#"), (element.tag, attr, value)
        assert element.tag not in ("link", "iframe", "object", "embed", "img", "base")
    assert "url(" not in played.html and "@import" not in played.html
    assert not re.search(
        r"\b(https?:)?//[a-z]", played.html.replace('xmlns="http://www.w3.org/2000/svg"', "")
    )  # no absolute or scheme-relative URL
    scripts = list(doc.find_all("script"))
    assert [s.attrs.get("type") for s in scripts] == ["application/json", None]


def test_engine_text_reaches_the_page_as_text(played: Played) -> None:
    doc = parse(played.html)
    # Markup from a tournament-file name and from engines is text, never elements.
    assert not list(doc.find_all("b")) and not list(doc.find_all("img"))
    assert "<b>bold</b>" not in played.html and "<img" not in played.html
    assert HOSTILE_STDERR not in played.html
    assert "&lt;b&gt;bold&lt;/b&gt;" in played.html
    data = payload(doc)
    answers = {a for g in data["games"] for a in g["ans"]}
    # The engine's name answer (the protocol layer already dropped its ESC): the bidi
    # override escaped, the markup kept as text.
    assert r"ev[31mil</script><img src=x onerror=alert(1)>\u202e" in answers
    evidence = [g["ev"] for g in data["games"] if g["ev"]]
    assert len(evidence) == 4 and all(ev["engine"] == "crashy" for ev in evidence)
    assert all(any(HOSTILE_STDERR in line for line in ev["stderr"]) for ev in evidence)
    assert all(
        any(line.startswith(">") and "genmove" in line for line in ev["transcript"])
        for ev in evidence
    )
    for g in data["games"]:
        assert not re.search(
            "[\x00-\x08\x0b-\x1f\x7f\u202a-\u202e\u2066-\u2069]", json.dumps(g, ensure_ascii=False)
        )


def test_report_refuses_bad_arguments(played: Played, tmp_path: Path) -> None:
    runner = CliRunner()
    same = runner.invoke(main, ["report", str(played.hex_records), "-o", str(played.hex_records)])
    assert same.exit_code == 2 and "overwrite one of its sources" in same.output
    empty = tmp_path / "empty.jsonl"
    empty.write_text("")
    none = runner.invoke(main, ["report", str(empty), "-o", str(tmp_path / "r.html")])
    assert none.exit_code == 2 and "no rated games" in none.output
    assert not (tmp_path / "r.html").exists()
    # A store, records file or any file not written by `report` is never replaced.
    store = played.folder / "tiny.sqlite"
    before = store.read_bytes()
    clobber = runner.invoke(main, ["report", str(played.tournament), "-o", str(store)])
    assert clobber.exit_code == 2 and "left alone" in clobber.output
    assert store.read_bytes() == before
    clobber = runner.invoke(
        main, ["show", str(played.hex_records), "--game", "1", "--svg", str(played.hex_records)]
    )
    assert clobber.exit_code == 2 and "left alone" in clobber.output
    # A report is replaced by the next one.
    shutil.copy(played.report, tmp_path / "old.html")
    again = runner.invoke(
        main, ["report", str(played.hex_records), "-o", str(tmp_path / "old.html")]
    )
    assert again.exit_code == 0, again.output
    assert "2 in the viewer" in again.output
    assert len(payload(parse((tmp_path / "old.html").read_text()))["games"]) == 2
    missing = runner.invoke(
        main, ["report", str(played.hex_records), "-o", str(tmp_path / "no" / "dir" / "r.html")]
    )
    assert missing.exit_code == 2 and "cannot write" in missing.output


def test_records_that_do_not_replay_are_skipped_with_the_problem(
    played: Played, tmp_path: Path
) -> None:
    lines = [json.loads(line) for line in played.hex_records.read_text().splitlines()]
    # A move after the game was won: every field has its type, but the replay stops there.
    extra = json.loads(json.dumps(lines[0]))
    game = Game(
        Variant(extra["variant"]["islands"], extra["variant"]["size"], extra["variant"]["pie"])
    )
    for move in extra["moves"]:
        game.play(move)
    assert game.over
    plies = len(extra["moves"])
    extra["moves"].append(
        next(
            (n for i, n in enumerate(game.geometry.names) if not game.colors[i]), extra["moves"][0]
        )
    )
    extra["plies"], extra["game_id"] = plies + 1, "extra"
    bad_variant = {**lines[1], "variant": {"size": 5, "islands": 4}, "game_id": "variant"}
    damaged = tmp_path / "damaged.jsonl"
    damaged.write_text("".join(json.dumps(line) + "\n" for line in [*lines, extra, bad_variant]))
    page = tmp_path / "damaged.html"
    done = CliRunner().invoke(
        main,
        ["report", str(damaged), "-o", str(page), "--anchor", "random=1500", "--title", "Damaged"],
    )
    assert done.exit_code == 0, done.output
    n = len(lines)
    assert (
        f"{damaged}:{n + 1}: not a game record (the moves do not replay at ply"
        f" {plies + 1}" in done.output
    )
    assert f"{damaged}:{n + 2}: not a game record" in done.output
    doc = parse(page.read_text())
    assert len(payload(doc)["games"]) == n  # the good games only
    assert "anchored so that random has +1500" in doc.all_text()


@pytest.mark.smoke
def test_picture_and_rules_agree_on_every_board() -> None:
    """Two cells or island stones are drawn side by side exactly when the geometry makes
    them neighbours, and nothing overlaps."""
    variants = [Variant(8, n) for n in VALID_ATOLL_SIZES] + [Variant(4, n) for n in (2, 5, 11)]
    for variant in variants:
        geom = variant.geometry
        p = picture(geom)
        coords = list(geom.cells) + [s for isl in geom.islands for s in isl.stones]
        points = [(c.x, c.y) for c in p.cells] + [(s.x, s.y) for s in p.stones]
        assert len(points) == len(coords)
        index = {c: i for i, c in enumerate(coords)}
        step = RADIUS * math.sqrt(3)
        for i, (q, r) in enumerate(coords):
            near = {
                j
                for j, (x, y) in enumerate(points)
                if j != i and math.dist((x, y), points[i]) < step * 1.05
            }
            expected = {
                index[(q + dq, r + dr)] for dq, dr in geom.directions if (q + dq, r + dr) in index
            }
            assert near == expected, (geom.key, geom.name_of((q, r)) or (q, r))
            for j in near:
                assert abs(math.dist(points[i], points[j]) - step) < 0.2
        assert min(x for x, _ in points) > 0 and max(x for x, _ in points) < p.width
        assert min(y for _, y in points) > 0 and max(y for _, y in points) < p.height


def test_show_svg_writes_the_position(played: Played, tmp_path: Path) -> None:
    records = played.folder / "t.jsonl"
    swapped = next(r for r in played.records if r.swapped)
    hexed = next(r for r in played.records if r.variant["islands"] == 4)
    for record, source, ply in (
        (swapped, records, 5),
        (swapped, records, None),
        (hexed, played.hex_records, 3),
    ):
        out = tmp_path / f"{record.game_id}-{ply}.svg"
        extra = [] if ply is None else ["--ply", str(ply)]
        done = CliRunner().invoke(
            main, ["show", str(source), "--game", record.game_id, "--svg", str(out), *extra]
        )
        assert done.exit_code == 0, done.output
        root = ET.parse(out).getroot()
        ns = "{http://www.w3.org/2000/svg}"
        assert root.tag == f"{ns}svg"
        game = Game(Variant(**record.variant))
        for move in record.moves[:ply]:
            game.play(move)
        drawn = {}
        for g in root.iter(f"{ns}g"):
            if "cell" in g.get("class", "").split() and g.find(f"{ns}circle") is not None:
                drawn[g.get("data-name")] = g.get("data-stone")
        expected = {
            game.geometry.names[i]: "b" if c == Color.BLACK else "w"
            for i, c in enumerate(game.colors)
            if c
        }
        assert drawn == expected and len(drawn) == game.n_stones
        chain = {
            g.get("data-name") for g in root.iter(f"{ns}g") if "chain" in g.get("class", "").split()
        }
        assert chain == {game.geometry.names[i] for i in game.winning_chain()}
        assert (ply is None) == bool(chain)
        assert root.find(f"{ns}title") is not None and "plies" in str(root.find(f"{ns}title").text)
    bad = CliRunner().invoke(
        main,
        [
            "show",
            str(records),
            "--game",
            swapped.game_id,
            "--ply",
            "999",
            "--svg",
            str(tmp_path / "x.svg"),
        ],
    )
    assert bad.exit_code == 2 and "out of range" in bad.output
    assert not (tmp_path / "x.svg").exists()


def table_rows(table: Element) -> dict[str, list[Element]]:
    """A table's body rows by their heading cell's text, each as its data cells."""
    (body,) = table.find_all("tbody")
    return {next(r.find_all("th")).all_text(): list(r.find_all("td")) for r in body.find_all("tr")}


def test_report_states_the_conditions_of_each_source(played: Played) -> None:
    doc = parse(played.html)
    (table,) = doc.find_all("table", **{"class": "conditions"})
    heads = [th.all_text() for th in next(table.find_all("thead")).find_all("th")]
    assert heads == ["t.toml", "hex.jsonl"]  # one column per source, as given
    rows = table_rows(table)
    text = {label: [c.all_text() for c in cells] for label, cells in rows.items()}
    tournament = load_tournament(played.tournament, engines_here=False)
    store = played.folder / "tiny.sqlite"
    with Store.open_read(store) as opened:
        created, engines = opened.meta("created"), opened.engines()
    ours = [r for r in played.records if r.variant["islands"] == 8]
    hexed = [r for r in played.records if r.variant["islands"] == 4]
    assert text["Source"] == ["tournament \u201ctiny\u201d, store tiny.sqlite", "records file"]
    assert text["Games"] == [
        f"{len(ours)} rated, {sum(r.swapped for r in ours)} with a swap"
        if any(r.swapped for r in ours)
        else f"{len(ours)} rated",
        f"{len(hexed)} rated"
        + (
            f", {sum(r.swapped for r in hexed)} with a swap"
            if any(r.swapped for r in hexed)
            else ""
        ),
    ]
    assert text["Format"][0] == (
        "round-robin, 1 round: 6 games for 3 engines, each pairing as a seat-swapped pair"
    )
    assert tournament.total == 6
    assert text["Format"][1].startswith("not recorded")
    assert text["Board"] == ["Atoll 7", "Hex 5"]
    assert text["Pie rule"][0].startswith("on: seat 2 may swap")
    assert text["Time control"] == ["10+0.1", "5+0 (from the records)"]
    assert text["Openings"][0].startswith("1 random stone per seat-swapped pair")
    # A records file says how many first moves came from an opening (when not none).
    (plies,) = {r.opening for r in hexed}
    assert text["Openings"][1] == (
        f"openings of {plies} pl{'y' if plies == 1 else 'ies'} in"
        f" {len(hexed)} of {len(hexed)} games (from the records)"
        if plies
        else "not recorded"
    )
    assert text["Seed"] == ["4", "not recorded"]
    assert text["Sandbox and limits"] == ["no sandbox, limits: memory 1024 MB", "not recorded"]
    day = str(created)[:10]
    assert text["Dates"][0].startswith(f"store started {day} {str(created)[11:19]} UTC; games from")
    first = min(r.started for r in hexed)
    assert text["Dates"][1].startswith(f"games from {first[:10]} {first[11:19]} UTC to")
    host = f"{ours[0].host} ({ours[0].cpu})"
    assert text["Hosts"] == [f"{host}: {len(ours)} games", f"{host}: {len(hexed)} games"]
    # Unknowns are marked; rows whose known values differ are, and the page says so.
    unknown = [c for c in rows["Seed"] if "unknown" in c.attrs.get("class", "")]
    assert [c.all_text() for c in unknown] == ["not recorded"]
    differing = {r.attrs.get("class") for r in table.find_all("tr", **{"class": "differs"})}
    assert differing == {"differs"}
    marked = [
        next(r.find_all("th")).all_text() for r in table.find_all("tr", **{"class": "differs"})
    ]
    assert marked == ["Board", "Time control"]
    (note,) = doc.find_all("p", id="differences")
    assert "differ in board, time control" in note.all_text()
    # The engines: what the store kept (commands as started, versions, answers), and
    # for the records file what its records carry.
    tables = list(doc.find_all("table", **{"class": "engines"}))
    assert len(tables) == 2
    stored = table_rows(tables[0])
    assert list(stored) == [e["name"] for e in engines]
    for e in engines:
        command, version, answers, tc, confinement, _ = (c.all_text() for c in stored[e["name"]])
        assert command == shlex.join(json.loads(e["command"]))
        # What engines answered is shown escaped (the hostile answer's bidi override).
        assert (version, answers) == (e["reply_version"], shorten(escape(e["reply_name"]), 80))
        assert (tc, confinement) == ("10+0.1", "no sandbox, limits: memory 1024 MB")
    assert "badbot.py crash" in stored["crashy"][0].all_text()
    recorded = table_rows(tables[1])
    assert sorted(recorded) == sorted({r.seat1 for r in hexed})
    for r in hexed:
        command, version, _, tc, confinement, setup = (c.all_text() for c in recorded[r.seat1])
        assert command == shlex.join(r.commands["seat1"])
        assert version == r.versions[r.seat1]
        assert (tc, confinement, setup) == (r.tc["seat1"], "not recorded", "not recorded")
    # What LOS is, and that seat 1 moves first.
    (caption,) = next(doc.find_all("table", **{"class": "standings"})).find_all("caption")
    assert "LOS next is the likelihood of superiority" in caption.all_text()
    (seat,) = doc.find_all("p", id="seat")
    assert "Seat 1 moves first: it places the first stone" in seat.all_text()


@dataclass
class Voided:
    report: Path
    ids: list[str]  # the report's games, in the order the list must show them
    void: str  # the id of the game that has a void attempt


@pytest.fixture(scope="module")
def voided(played: Played, tmp_path_factory: pytest.TempPathFactory) -> Voided:
    """A copy of the tournament's store with a void attempt of its third game stored
    after every game was played, reported after the Hex records file."""
    folder = tmp_path_factory.mktemp("voided")
    store = folder / "voided.sqlite"
    shutil.copy(played.folder / "tiny.sqlite", store)
    tournament = load_tournament(played.tournament, engines_here=False)
    schedule = list(tournament.games())
    third = schedule[2]
    rated = next(r for r in played.records if r.game_id == third.game_id)
    attempt = replace(
        rated,
        void=True,
        termination=Termination.SETUP,
        winner=None,
        winner_color=None,
        moves=[],
        move_ms=[],
        opening=0,
        swapped=False,
        black="",
        white="",
        reason=f"{rated.seat1} did not start",
        started="2000-01-01T00:00:00.000Z",
        finished="2000-01-01T00:00:01.000Z",
        evidence=Evidence(engine=rated.seat1, detail="did not start", stage=Stage.GAME),
    )
    with Store.open(store) as opened:  # writable, as a run's
        opened.write(third, attempt)
    report = folder / "voided.html"
    done = CliRunner().invoke(
        main, ["report", str(played.hex_records), str(store), "-o", str(report)]
    )
    assert done.exit_code == 0, done.output
    hexed = [r.game_id for r in read_records(played.hex_records)]
    ids = [g.game_id for g in schedule]
    return Voided(report, [*hexed, *ids[:2], third.game_id, *ids[2:]], third.game_id)


def test_games_are_listed_in_schedule_order(played: Played, voided: Voided) -> None:
    # The sources in the order given; a store's games in the order of its schedule (not
    # as they finished), a void attempt just before the game it was replayed as.
    games = payload(parse(voided.report.read_text()))["games"]
    assert [g["id"] for g in games] == voided.ids
    assert [g["n"] for g in games] == list(range(1, len(games) + 1))
    assert [g["r"] == "void" for g in games].index(True) == voided.ids.index(voided.void)
    # A tournament file orders its store's games by its schedule.
    tournament = load_tournament(played.tournament, engines_here=False)
    listed = [g["id"] for g in payload(parse(played.html))["games"]]
    assert listed[:6] == list(tournament.ids())


# ----------------------------------------------------------------- in a browser


@pytest.fixture(scope="module")
def browser(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    driver = open_chromium(tmp_path_factory.mktemp("chromium"))
    try:
        yield driver
    finally:
        driver.quit()


def script_errors(driver: Any) -> list[str]:
    """The page's errors since the last call (uncaught exceptions, failed requests)."""
    return [e["message"] for e in driver.get_log("browser") if e["level"] == "SEVERE"]


def shown_stones(driver: Any) -> dict[str, str]:
    stones: dict[str, str] = driver.execute_script(
        "const out = {};"
        "document.querySelectorAll('.board-wrap:not([hidden]) g.cell').forEach(function (g) {"
        "  if (g.dataset.stone) { out[g.dataset.name] = g.dataset.stone; } });"
        "return out;"
    )
    return stones


def expected_stones(record: GameRecord, ply: int) -> tuple[dict[str, str], Game]:
    game = Game(Variant(**record.variant))
    for move in record.moves[:ply]:
        game.play(move)
    names = game.geometry.names
    return {
        names[i]: "b" if c == Color.BLACK else "w" for i, c in enumerate(game.colors) if c
    }, game


def test_viewer_steps_through_games_in_a_browser(played: Played, browser: Any) -> None:
    from selenium.webdriver.common.action_chains import ActionChains
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys

    swapped = next(r for r in played.records if r.swapped and not r.evidence)
    browser.get(f"{played.report.as_uri()}#game={swapped.game_id}&ply=0")
    assert browser.execute_script("return document.body.dataset.ready") == "1"
    assert swapped.game_id in browser.find_element(By.ID, "game-title").text
    assert shown_stones(browser) == {}
    # The list: a row per game, each linking to the game in the viewer by its number.
    links = browser.find_elements(By.CSS_SELECTOR, "#gametable tbody tr a")
    assert [a.get_attribute("href").split("#", 1)[1] for a in links] == [
        f"game={n}" for n in range(1, len(played.records) + 1)
    ]
    assert [a.text for a in links] == [r.game_id for r in played.records]
    keys = ActionChains(browser)
    for ply in range(1, swapped.plies + 1):
        keys.send_keys(Keys.ARROW_RIGHT).perform()
        expected, game = expected_stones(swapped, ply)
        state = browser.execute_script(
            "const board = document.querySelector('.board-wrap:not([hidden])');"
            "const stones = {};"
            "board.querySelectorAll('g.cell').forEach(function (g) {"
            "  if (g.dataset.stone) { stones[g.dataset.name] = g.dataset.stone; } });"
            "const mark = board.querySelector('.last-mark');"
            "const cell = board.querySelector('g.cell[data-cell=\"' + arguments[0] + '\"] circle');"
            "return {stones: stones, ply: board.querySelector('svg').dataset.ply,"
            "  mark: [mark.getAttribute('visibility'), mark.getAttribute('cx'),"
            "         mark.getAttribute('cy')],"
            "  cell: [cell.getAttribute('cx'), cell.getAttribute('cy')],"
            "  status: document.getElementById('status').textContent,"
            "  players: document.getElementById('players').textContent};",
            game.last_cell(),
        )
        assert state["stones"] == expected and state["ply"] == str(ply), f"ply {ply}"
        assert state["mark"] == ["visible", *state["cell"]]  # the last stone is marked
        if swapped.moves[ply - 1] == "swap":
            assert "swap" in state["status"] and "takes the black stone" in state["status"]
            assert "colours after the swap" in state["players"]
    chain = browser.execute_script(
        "return Array.from(document.querySelectorAll('.board-wrap:not([hidden]) g.cell.chain'))"
        ".map(function (g) { return g.dataset.name; });"
    )
    assert set(chain) == {game.geometry.names[i] for i in game.winning_chain()} != set()
    # Home and End, and the buttons.
    keys.send_keys(Keys.HOME).perform()
    assert shown_stones(browser) == {}
    keys.send_keys(Keys.END).perform()
    assert shown_stones(browser) == expected_stones(swapped, swapped.plies)[0]
    browser.find_element(By.ID, "prev").click()
    assert shown_stones(browser) == expected_stones(swapped, swapped.plies - 1)[0]
    # The move list is the board's text alternative: one entry per ply and the start.
    moves = browser.find_elements(By.CSS_SELECTOR, "#moves li")
    assert len(moves) == swapped.plies + 1
    assert "swap" in moves[2].text
    assert script_errors(browser) == []


def test_viewer_shows_hex_games_evidence_and_filters(played: Played, browser: Any) -> None:
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import Select

    hexed = next(r for r in played.records if r.variant["islands"] == 4)
    browser.get(f"{played.report.as_uri()}#game={hexed.game_id}&ply=4")
    assert browser.execute_script("return document.body.dataset.ready") == "1"
    assert shown_stones(browser) == expected_stones(hexed, 4)[0]
    visible = browser.find_elements(By.CSS_SELECTOR, ".board-wrap:not([hidden])")
    assert [v.get_attribute("data-board") for v in visible] == ["hex/5"]
    # A faulty game: the verdict and the evidence, engine text shown as text.
    number = next(i for i, r in enumerate(played.records, 1) if r.evidence)
    browser.get(f"{played.report.as_uri()}#game={number}")
    evidence = browser.find_element(By.ID, "evidence")
    assert evidence.is_displayed()
    assert browser.find_element(By.ID, "ev-verdict").text == "crash"
    assert HOSTILE_STDERR in browser.find_element(By.ID, "ev-stderr").text
    assert browser.execute_script("return document.querySelectorAll('img').length") == 0

    # Filters: by engine and termination, by result.
    def listed() -> list[str]:
        return [a.text for a in browser.find_elements(By.CSS_SELECTOR, "#gametable tbody a")]

    Select(browser.find_element(By.ID, "f-engine")).select_by_visible_text("crashy")
    assert listed() == [r.game_id for r in played.records if "crashy" in (r.seat1, r.seat2)]
    assert len(listed()) == 4
    Select(browser.find_element(By.ID, "f-result")).select_by_value("won")
    assert listed() == []
    Select(browser.find_element(By.ID, "f-result")).select_by_value("lost")
    assert len(listed()) == 4
    Select(browser.find_element(By.ID, "f-result")).select_by_value("")
    Select(browser.find_element(By.ID, "f-engine")).select_by_value("")
    Select(browser.find_element(By.ID, "f-term")).select_by_value("connection")
    expected = [r.game_id for r in played.records if r.termination.value == "connection"]
    assert listed() == expected
    assert browser.find_element(By.ID, "f-count").text == f"{len(expected)} of 8 games"
    assert script_errors(browser) == []


def test_game_list_pages_through_many_games(played: Played, browser: Any, tmp_path: Path) -> None:
    from selenium.webdriver.common.action_chains import ActionChains
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys

    many = tmp_path / "many.jsonl"
    lines = played.hex_records.read_text().splitlines()
    with open(many, "w") as handle:
        for n in range(115):  # 230 games: three pages of the list
            for line in lines:
                data = json.loads(line)
                data["game_id"] = f"{data['game_id']}-copy{n}"
                handle.write(json.dumps(data) + "\n")
    page = tmp_path / "many.html"
    done = CliRunner().invoke(main, ["report", str(many), "-o", str(page)])
    assert done.exit_code == 0, done.output
    browser.get(f"{page.as_uri()}#game=100")
    count = browser.find_element(By.ID, "f-count")
    assert count.text == "230 of 230 games, rows 1\u2013100 shown"
    rows = browser.find_elements(By.CSS_SELECTOR, "#gametable tbody tr")
    assert len(rows) == 100 and "current" in rows[-1].get_attribute("class")
    ActionChains(browser).send_keys(Keys.PAGE_DOWN).perform()  # the next game: next page
    assert count.text == "230 of 230 games, rows 101\u2013200 shown"
    assert browser.find_element(By.ID, "game-title").text.startswith("Game 101:")
    browser.find_element(By.ID, "page-next").click()
    assert count.text == "230 of 230 games, rows 201\u2013230 shown"
    assert browser.find_element(By.ID, "page-next").get_attribute("disabled") is not None
    assert script_errors(browser) == []


def open_game(driver: Any, url: str, number: int) -> None:
    """Go to `url` and wait until the viewer shows game `number`: a link within the page
    that is open already changes only its fragment, and the page reacts to that after
    the navigation returns."""
    from selenium.webdriver.support.ui import WebDriverWait

    driver.get(url)
    WebDriverWait(driver, 10).until(
        lambda d: d.execute_script(
            "return document.getElementById('game-title').textContent"
        ).startswith(f"Game {number}:")
    )


def downloaded(driver: Any, folder: Path) -> Path:
    """The page's download of its games' records, fetched from the link once the page
    has built it, as a file."""
    from selenium.webdriver.support.ui import WebDriverWait

    WebDriverWait(driver, 10).until(
        lambda d: d.execute_script("return document.getElementById('download').dataset.ready")
    )
    text = driver.execute_async_script(
        "const done = arguments[arguments.length - 1];"
        "fetch(document.getElementById('download').href).then(function (r) { return r.text(); })"
        ".then(done, function (e) { done('failed: ' + e); });"
    )
    path = folder / "downloaded.jsonl"
    path.write_text(text)
    return path


def test_download_holds_the_games_records(played: Played, browser: Any, tmp_path: Path) -> None:
    browser.get(played.report.as_uri())
    # The records reader takes every line (it raises on one that is not a record), and
    # they are the games of the list, in its order, as the sources hold them.
    assert list(read_records(downloaded(browser, tmp_path))) == played.records
    link = browser.find_element("id", "download")
    assert link.get_attribute("download") == "report-games.jsonl"
    assert link.get_attribute("href").startswith("blob:")
    assert script_errors(browser) == []


def test_download_keeps_what_the_viewer_cannot_restore(
    played: Played, browser: Any, tmp_path: Path
) -> None:
    """Move times finer than the viewer's tenths travel in the line itself; a faulty
    game's long stderr is cut to the tail the viewer shows."""
    first, second = (json.loads(line) for line in played.hex_records.read_text().splitlines())
    first["move_ms"] = [t + 0.05 for t in first["move_ms"]]
    game = Game(Variant(**second["variant"]))
    for move in second["moves"][:3]:
        game.play(move)
    loser = second["seat1"] if game.to_move is Color.BLACK else second["seat2"]
    second.update(
        moves=second["moves"][:3],
        move_ms=second["move_ms"][:3],
        plies=3,
        termination="crash",
        winner=second["seat2"] if loser == second["seat1"] else second["seat1"],
        winner_color=None,
        reason="crashed",
        evidence={"engine": loser, "detail": "crashed", "stderr_tail": "x" * 9000 + "END"},
    )
    source = tmp_path / "odd.jsonl"
    source.write_text(json.dumps(first) + "\n" + json.dumps(second) + "\n")
    page = tmp_path / "odd.html"
    done = CliRunner().invoke(main, ["report", str(source), "-o", str(page)])
    assert done.exit_code == 0, done.output
    browser.get(page.as_uri())
    got = list(read_records(downloaded(browser, tmp_path)))
    want = list(read_records(source))
    assert got[0] == want[0] and got[0].move_ms == first["move_ms"]
    assert got[1].evidence is not None and want[1].evidence is not None
    assert got[1].evidence.stderr_tail == want[1].evidence.stderr_tail[-4000:]
    assert replace(got[1], evidence=None) == replace(want[1], evidence=None)
    assert script_errors(browser) == []


def test_game_link_opens_that_game_in_the_viewer(voided: Voided, browser: Any) -> None:
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    def state() -> dict[str, Any]:
        found: dict[str, Any] = browser.execute_script(
            "const box = document.getElementById('viewer-section').getBoundingClientRect();"
            "const row = document.querySelector('#gametable tr.current a');"
            "return {hash: location.hash, title: document.getElementById('game-title')"
            ".textContent, top: box.top, height: window.innerHeight,"
            " row: row ? row.textContent : null};"
        )
        return found

    n = voided.ids.index(voided.void) + 2  # the game after the void attempt: its rated play
    open_game(browser, f"{voided.report.as_uri()}#game={n}", n)
    seen = state()
    assert seen["title"] == f"Game {n}: {voided.void}" and seen["row"] == voided.void
    assert 0 <= seen["top"] < seen["height"] / 2  # scrolled to the viewer
    assert seen["hash"].startswith(f"#game={n}&ply=")
    # Clicking a game in the list opens it and says so in the address.
    browser.execute_script("window.scrollTo(0, 0)")
    link = browser.find_elements(By.CSS_SELECTOR, "#gametable tbody tr a")[0]
    link.click()
    WebDriverWait(browser, 10).until(lambda _: state()["title"].startswith("Game 1:"))
    seen = state()
    assert seen["title"] == f"Game 1: {voided.ids[0]}"
    assert seen["hash"].startswith("#game=1&ply=")
    # An id names the game's rated play, not the void attempt listed before it.
    open_game(browser, f"{voided.report.as_uri()}#game={voided.void}", n)
    assert state()["title"] == f"Game {n}: {voided.void}"
    assert script_errors(browser) == []


def random_record(variant: Variant, plies: int, game_id: str, rng: random.Random) -> dict[str, Any]:
    game = Game(variant)
    moves = []
    for _ in range(plies):
        cell = rng.choice(game.legal_cells())
        game.play(cell)
        moves.append(game.move_name(cell))
    return {
        "schema": 1,
        "game_id": game_id,
        "variant": {"size": variant.size, "islands": variant.islands, "pie": variant.pie},
        "seat1": "a",
        "seat2": "b",
        "tc": {"seat1": "1+0", "seat2": "1+0"},
        "started": "2026-01-01T00:00:00.000Z",
        "termination": "resign",
        "winner": "a",
        "moves": moves,
    }


def test_cell_names_are_legible_on_every_board(browser: Any, tmp_path: Path) -> None:
    """At the default window width (1280 px), every empty cell's name is drawn at least
    10 px high (the page's body text is 15 px; at 10 px a name like "k11" is still read
    at a glance) and fits inside its cell, on the standard Hex board, the largest Atoll
    board and the largest Hex board."""
    rng = random.Random(1)
    boards = [Variant(4, 11), Variant(8, 23), Variant(4, 26)]
    source = tmp_path / "boards.jsonl"
    source.write_text(
        "".join(
            json.dumps(random_record(v, 6, f"g{n}", rng)) + "\n" for n, v in enumerate(boards, 1)
        )
    )
    page = tmp_path / "boards.html"
    done = CliRunner().invoke(main, ["report", str(source), "-o", str(page)])
    assert done.exit_code == 0, done.output
    for n, variant in enumerate(boards, 1):
        open_game(browser, f"{page.as_uri()}#game={n}", n)
        sizes = browser.execute_script(
            "const wrap = document.querySelector('.board-wrap:not([hidden])');"
            "const svg = wrap.querySelector('svg');"
            "const scale = svg.getScreenCTM().a;"
            "const out = [];"
            "wrap.querySelectorAll('g.cell:not(.b):not(.w)').forEach(function (g) {"
            "  const text = g.querySelector('text').getBoundingClientRect();"
            "  const cell = g.querySelector('polygon').getBoundingClientRect();"
            "  out.push([parseFloat(getComputedStyle(g.querySelector('text')).fontSize) * scale,"
            "            text.width, text.height, cell.width, g.dataset.name]); });"
            "return {board: wrap.dataset.board, names: out,"
            " wide: document.getElementById('viewer-layout').classList.contains('wide'),"
            " width: svg.getBoundingClientRect().width};"
        )
        assert sizes["board"] == variant.geometry.key
        names = sizes["names"]
        assert len(names) == len(variant.geometry.names) - 6
        font, _, height, _, _ = min(names)
        assert font >= 10 and height >= 10, (variant, font, height)
        widest = max(names, key=lambda s: s[1])
        assert widest[1] < widest[3] * 0.9, (variant, widest)  # inside its hexagon
        # The biggest board takes the viewer's whole width to stay legible.
        assert sizes["wide"] == (variant == Variant(4, 26))
    assert script_errors(browser) == []
