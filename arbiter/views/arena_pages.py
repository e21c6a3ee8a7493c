"""The arena's pages of stored games: one game (`/game/N`) and the list (`/games`).

Plain HTML made on the server, without a script: a game's page shows its final
position, its moves and how it ended, with its record (JSON Lines) and, for Hex, its
SGF to download; the list pages back through every game the store holds, by number.
Every text from an engine or a record is escaped here; names are checked identities,
and escaped all the same.
"""

from __future__ import annotations

from html import escape
from typing import Any
from urllib.parse import quote

from arbiter.results.records import GameRecord
from arbiter.rules import Variant
from arbiter.views.html import position_svg
from arbiter.views.sgf import is_hex
from arbiter.views.svg import picture

_STYLE = (
    "body{font:15px/1.45 system-ui,sans-serif;margin:1.5em auto;max-width:60em;padding:0 1em}"
    "table{border-collapse:collapse}td,th{padding:.2em .6em;border-bottom:1px solid #ddd;"
    "text-align:left}td.n{text-align:right}.board svg{max-width:100%;height:auto}"
    "ol.moves{columns:6;font-family:monospace}"
)


def _page(title: str, body: str) -> str:
    return (
        f"<!doctype html><html lang=en><meta charset=utf-8><title>{escape(title)}</title>"
        f'<meta name=viewport content="width=device-width, initial-scale=1">'
        '<link rel=icon href="data:,">'
        f"<style>{_STYLE}</style><body>{body}</body></html>"
    )


def outcome(record: GameRecord) -> str:
    """How a game ended, in words."""
    if record.void:
        return f"void: {record.reason}"
    words = f"{record.winner} won by {record.termination.value}"
    return f"{words} ({record.reason})" if record.reason else words


def game_page(number: int, record: GameRecord, arena: str) -> str:
    """The page of game `number`: the final position, the moves, the result, links."""
    try:
        board = position_svg(record)
    except ValueError:  # IllegalMove: a record that does not replay; its moves still show
        board = "<p>(this record does not replay)</p>"
    moves = "".join(f"<li>{escape(move)}</li>" for move in record.moves)
    downloads = f'<a id=record href="{number}.jsonl" download>record (JSON Lines)</a>'
    if is_hex(record):
        downloads += f' · <a id=sgf href="{number}.sgf" download>SGF</a>'
    rows = (
        ("game", record.game_id),
        ("seat 1", record.seat1),
        ("seat 2", record.seat2),
        ("result", outcome(record)),
        ("plies", str(record.plies)),
        ("finished", record.finished),
    )
    table = "".join(f"<tr><th>{k}</th><td>{escape(v)}</td></tr>" for k, v in rows)
    body = (
        f'<p><a href="../">{escape(arena)}</a> · <a href="../games">all games</a></p>'
        f"<h1>Game {number}: {escape(record.seat1)} vs {escape(record.seat2)}</h1>"
        f"<table id=facts>{table}</table><p>{downloads}</p>"
        f"<div class=board>{board}</div><h2>Moves</h2><ol class=moves id=moves>{moves}</ol>"
    )
    return _page(f"Game {number}: {record.seat1} vs {record.seat2}", body)


def games_page(rows: list[dict[str, Any]], older: int | None, arena: str) -> str:
    """A page of the games list, newest first (`rows` as `/api/games` lists them),
    with a link to the next older page when there is one."""
    cells = []
    for g in rows:
        n = int(g["number"])
        result = "void" if g["void"] else str(g["winner"])
        cells.append(
            f'<tr><td class=n><a href="game/{n}">{n}</a></td><td>{escape(str(g["seat1"]))}</td>'
            f"<td>{escape(str(g['seat2']))}</td><td>{escape(result)}</td>"
            f"<td>{escape(str(g['termination']))}</td><td class=n>{int(g['plies'])}</td>"
            f"<td>{escape(str(g['finished']))}</td></tr>"
        )
    more = f'<p><a id=older href="games?before={older}">older games</a></p>' if older else ""
    body = (
        f'<p><a href="./">{escape(arena)}</a></p><h1>Games</h1>'
        "<table id=games><thead><tr><th>#</th><th>seat 1</th><th>seat 2</th><th>winner</th>"
        "<th>termination</th><th>plies</th><th>finished</th></tr></thead><tbody>"
        + "".join(cells)
        + f"</tbody></table>{more}"
    )
    return _page(f"{arena}: games", body)


def rating_plot(points: list[list[float]], width: int = 640, height: int = 240) -> str:
    """An engine's rating (Elo) against the games stored, as an inline SVG."""
    if not points:
        return "<p>No rating yet: it comes with the first rated games.</p>"
    xs, ys = [p[0] for p in points], [p[1] for p in points]
    x0, x1 = min(xs), max(xs)
    y0, y1 = min(ys) - 10, max(ys) + 10
    pad = 40

    def at(x: float, y: float) -> str:
        px = pad + (x - x0) / ((x1 - x0) or 1) * (width - 2 * pad)
        py = height - pad - (y - y0) / ((y1 - y0) or 1) * (height - 2 * pad)
        return f"{px:.1f},{py:.1f}"

    line = " ".join(at(x, y) for x, y in zip(xs, ys, strict=True))
    return (
        f'<svg id=rating xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {width} {height}"'
        f' width="{width}" height="{height}" role="img"'
        f' aria-label="rating from {ys[0]:.0f} to {ys[-1]:.0f} Elo">'
        f'<rect x="{pad}" y="{pad / 2}" width="{width - 2 * pad}" height="{height - 1.5 * pad}"'
        ' fill="none" stroke="#dde5e8"/>'
        f'<polyline points="{line}" fill="none" stroke="#1f6f8b" stroke-width="2"/>'
        f'<text x="2" y="{pad / 2 + 10}" font-size="11">{y1:.0f}</text>'
        f'<text x="2" y="{height - pad}" font-size="11">{y0:.0f}</text>'
        f'<text x="{pad}" y="{height - 8}" font-size="11">{x0:.0f} games</text>'
        f'<text x="{width - pad}" y="{height - 8}" font-size="11"'
        f' text-anchor="end">{x1:.0f} games</text></svg>'
    )


def engine_page(name: str, points: list[list[float]], arena: str) -> str:
    """An engine's page: its rating over the arena's life (`/api/history` has the
    numbers)."""
    now = f"{points[-1][1]:.0f} Elo after {points[-1][0]:.0f} games stored" if points else ""
    owner, at, version = name.partition("@")
    apart = (
        f'<p id=version>Version {escape(version)} of <a href="{quote(owner, safe="")}">'
        f"{escape(owner)}</a>, rated apart from its other versions.</p>"
        if at
        else ""
    )
    body = (
        f'<p><a href="../">{escape(arena)}</a> · <a href="../games">all games</a></p>'
        f"<h1>{escape(name)}</h1>{apart}<p id=now>{escape(now)}</p>"
        f"<h2>Rating over time</h2><div class=board>{rating_plot(points)}</div>"
    )
    return _page(f"{arena}: {name}", body)


def rooms_page(arena: str, rooms: list[dict[str, Any]]) -> str:
    """The index of an arena with rooms: each room, its game, its clock, who is there
    and how many games it has played since the server started, linked to its page."""
    cells = "".join(
        f'<tr data-room="{escape(r["room"])}"><td><a href="room/{quote(r["room"], safe="")}/">'
        f"{escape(r['room'])}</a></td><td>{escape(r['game'])}</td><td>{escape(r['tc'])}</td>"
        f"<td class=n>{int(r['connected'])}</td><td class=n>{int(r['playing'])}</td>"
        f"<td class=n>{int(r['games'])}</td></tr>"
        for r in rooms
    )
    body = (
        f"<h1>{escape(arena)}</h1><p>Each room is an arena of its own: its games, its"
        " pairing, its leaderboard. Engines pick one with <code>arena connect --room"
        " NAME</code>.</p><table id=rooms><thead><tr><th>room</th><th>game</th>"
        "<th>clock</th><th>engines here</th><th>games in play</th><th>games since start</th>"
        f"</tr></thead><tbody>{cells}</tbody></table>"
    )
    return _page(f"{arena}: rooms", body)


def live_board(variant: Variant) -> dict[str, Any]:
    """The drawing of the arena's board for the live page's small boards: the cells'
    names and centres, the island stones and the hexagon, from the geometry the report
    draws with (the page colours stones in as moves come)."""
    p = picture(variant.geometry)
    return {
        "key": p.key,
        "width": p.width,
        "height": p.height,
        "hexagon": p.hexagon,
        "stone": p.stone_radius,
        "cells": [[c.name, c.x, c.y] for c in p.cells],
        "islands": [[s.owner, s.x, s.y] for s in p.stones],
    }
