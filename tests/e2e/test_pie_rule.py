"""The pie rule measured on a real match of engines that swap differently: the map and
the regret table through the command line, its JSON, and the report in Chromium."""

from __future__ import annotations

import json
from pathlib import Path

from browsers import open_chromium
from commands import invoke

from arbiter.rules import Variant


def test_a_real_match_gives_a_map_and_a_regret_table_everywhere(tmp_path: Path) -> None:
    store = tmp_path / "pie.sqlite"
    # random swaps half the time whatever the stone; heuristic swaps a central stone
    match = [
        "match",
        "random",
        "heuristic",
        "--games",
        "30",
        "--size",
        "5",
        "--islands",
        "4",
        "--tc",
        "5+0.05",
        "-q",
    ]
    played = invoke(*match, "--store", str(store), cwd=tmp_path)
    assert played.returncode == 0, played.stderr
    as_json = invoke("openings", "swapmap", str(store), "--json", cwd=tmp_path)
    assert as_json.returncode == 0, as_json.stderr
    data = json.loads(as_json.stdout)
    (board,) = data["maps"]
    assert board["variant"] == "hex/5" and board["games"] == 30
    regret = {r["engine"]: r for r in data["regret"]}
    assert set(regret) == {"random", "heuristic"}
    assert regret["random"]["decisions"] + regret["heuristic"]["decisions"] == 30
    text = invoke("openings", "swapmap", str(store), cwd=tmp_path)
    assert "hex/5: 30 games" in text.stdout and "Swap regret" in text.stdout

    page = tmp_path / "report.html"
    made = invoke("report", str(store), "-o", str(page), cwd=tmp_path)
    assert made.returncode == 0, made.stderr
    driver = open_chromium(tmp_path / "chromium")
    try:
        driver.get(page.as_uri() + "#pie")
        shown = driver.execute_script(
            "const s = document.querySelector('#pie').closest('section');"
            "const cells = s.querySelectorAll('figure.swapmap g.cell');"
            "const filled = Array.from(cells).map(function (g) {"
            "  const p = g.querySelector('polygon'); const box = p.getBoundingClientRect();"
            "  return [g.dataset.name, getComputedStyle(p).fill, box.width > 5]; });"
            "const regret = Array.from(s.querySelectorAll('table.regret tbody tr')).map("
            "  function (r) { return Array.from(r.cells).map(function (c) {"
            "    return c.textContent; }); });"
            "return {filled: filled, regret: regret,"
            " nav: !!document.querySelector('nav a[href=\"#pie\"]')};"
        )
        errors = [e["message"] for e in driver.get_log("browser") if e["level"] == "SEVERE"]
    finally:
        driver.quit()
    assert errors == []
    assert shown["nav"]
    assert len(shown["filled"]) == Variant(4, 5).geometry.n_cells
    assert all(visible for _, _, visible in shown["filled"])
    by_cell = {c: fill for c, fill, _ in shown["filled"]}
    for entry in board["cells"]:  # a cell with games is coloured, not the board's blue
        for name in entry["cells"]:
            assert by_cell[name] != "rgb(207, 231, 239)"
    rows = {r[0]: r for r in shown["regret"]}
    assert set(rows) == {"random", "heuristic"}
    for name, row in rows.items():
        assert row[1] == str(regret[name]["decisions"])
        assert row[3] == f"{regret[name]['regret']:.3f}"
