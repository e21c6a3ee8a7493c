// The viewer and the game-list filters. Everything shown comes from the JSON block above
// and is put on the page as text (textContent), never as markup.
(function () {
  "use strict";
  const data = JSON.parse(document.getElementById("report-data").textContent);
  const games = data.games;
  const engines = data.engines;
  // A game id names its rated play (its void attempts share the id), else its first attempt.
  const byId = new Map();
  games.forEach(function (g, i) {
    if (!byId.has(g.id) || (g.r !== "void" && games[byId.get(g.id)].r === "void")) { byId.set(g.id, i); }
  });
  const tbody = document.querySelector("#gametable tbody");
  let matches = games.map(function (g, i) { return i; });  // the games the filters let through
  let page = 0;
  const boards = new Map();
  document.querySelectorAll(".board-wrap").forEach(function (wrap) {
    const cells = [];
    wrap.querySelectorAll("g.cell").forEach(function (el) { cells[Number(el.dataset.cell)] = el; });
    boards.set(wrap.dataset.board, {
      wrap: wrap, cells: cells, svg: wrap.querySelector("svg"),
      last: wrap.querySelector(".last-mark"), swap: wrap.querySelector(".swap-mark"),
    });
  });
  const $ = function (id) { return document.getElementById(id); };
  const DIGITS = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
  // Moves and chains come as two characters a cell ("..": the swap); decoded when shown.
  function cells(text) {
    const out = [];
    for (let i = 0; i + 1 < text.length; i += 2) {
      out.push(text[i] === "." ? -1 : DIGITS.indexOf(text[i]) * 64 + DIGITS.indexOf(text[i + 1]));
    }
    return out;
  }

  // Move times come as tenths of a millisecond, five bits a digit, low bits first; a digit
  // of 32 or more says that more follow.
  function times(text) {
    const out = [];
    let value = 0;
    let scale = 1;
    for (let i = 0; i < text.length; i++) {
      const d = DIGITS.indexOf(text[i]);
      value += (d & 31) * scale;
      if (d < 32) { out.push(value); value = 0; scale = 1; } else { scale *= 32; }
    }
    return out;
  }

  let current = -1;
  let ply = 0;
  let moveButtons = [];

  function seat(g, n) { return engines[g.s[n - 1]]; }

  function moveName(g, board, m) { return m < 0 ? "swap" : board.cells[m].dataset.name; }

  function setText(id, text) { $(id).textContent = text; }

  function showGame(index, atPly) {
    if (index < 0 || index >= games.length) { return; }
    current = index;
    const k = matches.indexOf(index);
    if (k >= 0 && Math.floor(k / data.page) !== page) {
      page = Math.floor(k / data.page);
      renderList();
    } else {
      markCurrent();
    }
    const g = games[index];
    if (typeof g.m === "string") { g.m = cells(g.m); g.ch = cells(g.ch); g.ms = times(g.ms); }
    boards.forEach(function (b, key) { b.wrap.hidden = key !== g.v; });
    // A board too big for the column at a legible size takes the viewer's whole width.
    $("viewer-layout").classList.toggle("wide", boards.has(g.v) && "wide" in boards.get(g.v).wrap.dataset);
    setText("game-title", "Game " + g.n + ": " + g.id);
    setText("result", g.res);
    setText("game-meta", [g.v || "", g.tc ? "time control " + g.tc : "", g.when ? "started " + g.when : ""].filter(Boolean).join(" · "));
    const problem = $("problem");
    problem.hidden = !g.bad;
    problem.textContent = g.bad || "";
    const ev = g.ev;
    $("evidence").hidden = !ev;
    if (ev) {
      setText("ev-verdict", g.t);
      setText("ev-engine", ev.engine);
      setText("ev-status", ev.status ? " (" + ev.status + ")" : "");
      setText("ev-detail", ev.detail);
      setText("ev-transcript", ev.transcript.length ? ev.transcript.join("\n") : "(none)");
      setText("ev-stderr", ev.stderr.length ? ev.stderr.join("\n") : "(nothing)");
    }
    const list = $("moves");
    list.replaceChildren();
    moveButtons = [];
    const board = boards.get(g.v);
    const labels = ["start"];
    g.m.forEach(function (m, i) { labels.push((i + 1) + ". " + moveName(g, board, m)); });
    labels.forEach(function (label, i) {
      const item = document.createElement("li");
      const button = document.createElement("button");
      button.type = "button";
      button.textContent = label;
      if (i > 0 && g.m[i - 1] < 0) { button.className = "swap"; }
      if (i > 0 && g.ms[i - 1] !== undefined) {
        const ms = document.createElement("span");
        ms.className = "ms";
        ms.textContent = " " + g.ms[i - 1] / 10 + " ms";
        button.appendChild(ms);
      }
      button.addEventListener("click", function () { setPly(i); });
      item.appendChild(button);
      list.appendChild(item);
      moveButtons.push(button);
    });
    setPly(atPly === undefined || atPly === null ? g.m.length : atPly);
  }

  function setPly(p) {
    const g = games[current];
    if (!g) { return; }
    ply = Math.max(0, Math.min(g.m.length, p));
    const board = boards.get(g.v);
    const swappedNow = g.m.slice(0, ply).indexOf(-1) >= 0;
    const blackSeat = swappedNow ? 2 : 1;
    $("players").replaceChildren();
    [["b", "Black", blackSeat], ["w", "White", 3 - blackSeat]].forEach(function (p, i) {
      const span = document.createElement("span");
      span.className = p[0];
      span.textContent = p[1] + ": " + seat(g, p[2]) + " (seat " + p[2] + ")" + (g.ans[p[2] - 1] ? ", answers to \u201c" + g.ans[p[2] - 1] + "\u201d" : "");
      $("players").appendChild(span);
      if (i === 0) { $("players").appendChild(document.createTextNode(" \u00b7 ")); }
    });
    if (swappedNow) { $("players").appendChild(document.createTextNode(" (colours after the swap)")); }
    moveButtons.forEach(function (b, i) {
      if (i === ply) { b.setAttribute("aria-current", "step"); } else { b.removeAttribute("aria-current"); }
    });
    setText("counter", ply + " / " + g.m.length);
    if (!board) { setText("status", "No board for this game."); return; }
    const colors = new Array(board.cells.length).fill("");
    let stones = 0;
    let last = -1;
    for (let i = 0; i < ply; i++) {
      const m = g.m[i];
      if (m < 0) { continue; }
      colors[m] = stones % 2 === 0 ? "b" : "w";  // stones alternate black, white; a swap places none
      stones += 1;
      last = m;
    }
    const final = ply === g.m.length;
    const chain = new Set(final ? g.ch : []);
    // An adjudicated game's proof, on its final board only: the chain's stones ringed and
    // each link's carrier shaded by its kind (board.css), with a legend below the status.
    const proof = final && g.pf ? g.pf : null;
    const marks = new Map();
    if (proof) {
      cells(proof.st).forEach(function (i) { marks.set(i, " proof-stone"); });
      proof.k.forEach(function (k) { cells(k[2]).forEach(function (i) { marks.set(i, " carrier " + k[0]); }); });
    }
    board.cells.forEach(function (el, i) {
      el.setAttribute("class", "cell" + (colors[i] ? " " + colors[i] : "") + (chain.has(i) ? " chain" : "") + (marks.get(i) || ""));
      el.dataset.stone = colors[i];
    });
    const legend = $("proof-legend");
    legend.hidden = !proof;
    legend.textContent = "";
    if (proof) {
      const ring = document.createElement("span");
      ring.className = "swatch proof-stone";
      legend.append(ring, (proof.o === "black" ? "Black" : "White") + "'s proven chain");
      proof.k.forEach(function (k) {
        const swatch = document.createElement("span");
        swatch.className = "swatch carrier " + k[0];
        legend.append(swatch, k[1] + " carrier");
      });
    }
    board.svg.dataset.ply = String(ply);
    placeMark(board.last, last >= 0 ? board.cells[last] : null);
    const swapMove = ply > 0 && g.m[ply - 1] < 0;
    placeMark(board.swap, swapMove ? board.cells[g.m[0]] : null);
    let status;
    if (ply === 0) {
      status = "Start: the empty board, Black (" + seat(g, 1) + ") to move.";
    } else if (swapMove) {
      status = "Move " + ply + ": swap. " + seat(g, 2) + " takes the black stone on " + moveName(g, board, g.m[0]) + " and plays Black; " + seat(g, 1) + " plays White and moves next.";
    } else {
      status = "Move " + ply + ": " + (colors[last] === "b" ? "Black" : "White") + " " + moveName(g, board, last) + ".";
    }
    if (final) {
      status += " " + (g.ch.length ? "Final position; the winning chain is highlighted." : proof ? "Final position; the proof that ended the game is drawn." : "Final position.");
    }
    setText("status", status);
    const names = { b: [], w: [] };
    colors.forEach(function (c, i) { if (c) { names[c].push(board.cells[i].dataset.name); } });
    board.svg.setAttribute("aria-label", "Board after " + ply + " of " + g.m.length + " plies. Black stones: " + (names.b.join(" ") || "none") + ". White stones: " + (names.w.join(" ") || "none") + "." + (chain.size ? " Winning chain: " + Array.from(chain).map(function (i) { return board.cells[i].dataset.name; }).join(" ") + "." : ""));
    history.replaceState(null, "", "#game=" + g.n + "&ply=" + ply);
  }

  function placeMark(mark, cell) {
    if (!cell) { mark.setAttribute("visibility", "hidden"); return; }
    const stone = cell.querySelector("circle");
    mark.setAttribute("cx", stone.getAttribute("cx"));
    mark.setAttribute("cy", stone.getAttribute("cy"));
    mark.setAttribute("visibility", "visible");
  }

  // #game=N (the game's number in the list) or #game=ID, and &ply=P.
  function fromHash() {
    const params = new URLSearchParams(location.hash.slice(1));
    const wanted = params.get("game");
    if (wanted === null) { return false; }
    let index = /^[0-9]+$/.test(wanted) ? Number(wanted) - 1 : -1;
    if ((index < 0 || index >= games.length) && byId.has(wanted)) { index = byId.get(wanted); }
    if (index < 0 || index >= games.length) { return false; }
    const p = params.get("ply");
    showGame(index, p !== null && /^[0-9]+$/.test(p) ? Number(p) : undefined);
    return true;
  }

  function step(delta) { if (current >= 0) { setPly(ply + delta); } }

  function nextVisible(delta) {
    let k = matches.indexOf(current);
    if (k < 0) {  // the current game is filtered out: the nearest one that is not
      k = matches.findIndex(function (i) { return i > current; });
      k = delta > 0 ? k : (k < 0 ? matches.length : k) - 1;
    } else {
      k += delta;
    }
    if (k < 0 || k >= matches.length) { return; }
    showGame(matches[k]);
    const row = tbody.querySelector("tr.current");
    if (row) { row.scrollIntoView({ block: "nearest" }); }
  }

  function markCurrent() {
    tbody.querySelectorAll("tr").forEach(function (row) {
      const on = Number(row.dataset.game) === current;
      row.classList.toggle("current", on);
      if (on) { row.setAttribute("aria-current", "true"); } else { row.removeAttribute("aria-current"); }
    });
  }

  function addCell(row, text, className) {
    const td = document.createElement("td");
    td.textContent = text;
    if (className) { td.className = className; }
    row.appendChild(td);
    return td;
  }

  // The list holds one page of rows at a time, built from the data as text.
  function renderList() {
    const from = page * data.page;
    const slice = matches.slice(from, from + data.page);
    const rows = document.createDocumentFragment();
    slice.forEach(function (i) {
      const g = games[i];
      const row = document.createElement("tr");
      row.dataset.game = String(i);
      addCell(row, String(g.n));
      const link = document.createElement("a");
      link.href = "#game=" + g.n;
      link.textContent = g.id;
      addCell(row, "", "name").appendChild(link);
      addCell(row, engines[g.s[0]], "name");
      addCell(row, engines[g.s[1]], "name");
      addCell(row, g.r === "void" ? "void" : engines[g.s[Number(g.r) - 1]], "name");
      addCell(row, g.t, "name");
      addCell(row, String(g.p));
      addCell(row, g.vn, "name");
      rows.appendChild(row);
    });
    tbody.replaceChildren(rows);
    markCurrent();
    let count = matches.length + " of " + games.length + " games";
    if (matches.length > data.page) {
      count += ", rows " + (from + 1) + "\u2013" + (from + slice.length) + " shown";
    }
    setText("f-count", count);
    $("page-prev").disabled = page === 0;
    $("page-next").disabled = from + data.page >= matches.length;
  }

  $("first").addEventListener("click", function () { setPly(0); });
  $("prev").addEventListener("click", function () { step(-1); });
  $("next").addEventListener("click", function () { step(1); });
  $("last").addEventListener("click", function () { if (current >= 0) { setPly(games[current].m.length); } });
  document.addEventListener("keydown", function (event) {
    const target = event.target;
    if (event.altKey || event.ctrlKey || event.metaKey) { return; }
    if (target && (/^(INPUT|SELECT|TEXTAREA)$/.test(target.tagName) || target.isContentEditable)) { return; }
    const inViewer = $("viewer-section").contains(target) || target === document.body;
    const actions = {
      ArrowLeft: function () { step(-1); },
      ArrowRight: function () { step(1); },
      Home: function () { setPly(0); },
      End: function () { if (current >= 0) { setPly(games[current].m.length); } },
      PageUp: function () { nextVisible(-1); },
      PageDown: function () { nextVisible(1); },
    };
    const action = actions[event.key];
    if (!action || (!inViewer && event.key !== "ArrowLeft" && event.key !== "ArrowRight")) { return; }
    event.preventDefault();
    action();
  });
  window.addEventListener("hashchange", function () {
    if (fromHash()) { $("viewer-section").scrollIntoView(); }
  });

  function filter() {
    const engine = $("f-engine").value;
    const result = $("f-result").value;
    const term = $("f-term").value;
    matches = [];
    games.forEach(function (g, i) {
      let ok = !engine || g.s.indexOf(Number(engine)) >= 0;
      if (ok && (result === "won" || result === "lost")) {
        const winner = g.r === "void" ? -1 : g.s[Number(g.r) - 1];
        ok = engine !== "" && g.r !== "void" && ((winner === Number(engine)) === (result === "won"));
      } else if (ok && result) {
        ok = g.r === result;
      }
      if (ok && (!term || g.t === term)) { matches.push(i); }
    });
    page = 0;
    renderList();
  }
  ["f-engine", "f-result", "f-term"].forEach(function (id) { $(id).addEventListener("change", filter); });
  $("filters").addEventListener("submit", function (event) { event.preventDefault(); });
  $("page-prev").addEventListener("click", function () { page = Math.max(0, page - 1); renderList(); });
  $("page-next").addEventListener("click", function () {
    if ((page + 1) * data.page < matches.length) { page += 1; renderList(); }
  });
  renderList();

  // The download: each game's records line, unpacked from the gzipped block; the moves and
  // move times of most lines are the viewer's own (\x01 and \x02 mark where they go).
  function moveNames(g) {
    const board = boards.get(g.v);
    const moves = typeof g.m === "string" ? cells(g.m) : g.m;
    return moves.map(function (m) { return moveName(g, board, m); });
  }
  function recordsFile() {
    const packed = atob(data.records.replace(/-/g, "+").replace(/_/g, "/"));
    const bytes = new Uint8Array(packed.length);
    for (let i = 0; i < packed.length; i++) { bytes[i] = packed.charCodeAt(i); }
    const stream = new Blob([bytes]).stream().pipeThrough(new DecompressionStream("gzip"));
    return new Response(stream).text().then(function (text) {
      const lines = text.split("\n");
      const out = [];
      games.forEach(function (g, i) {
        const line = lines[i];
        if (!line) { return; }
        out.push(line.replace("\x01", function () { return JSON.stringify(moveNames(g)); })
          .replace("\x02", function () {
            return JSON.stringify((typeof g.ms === "string" ? times(g.ms) : g.ms).map(function (t) { return t / 10; }));
          }) + "\n");
      });
      return new Blob(out, { type: "application/jsonl" });
    });
  }
  const download = $("download");
  if (typeof DecompressionStream === "function") {
    recordsFile().then(function (file) {
      download.href = URL.createObjectURL(file);
      download.removeAttribute("aria-disabled");
      download.dataset.ready = "1";
      if (window.performance && performance.mark) { performance.mark("records-ready"); }
    }, function (error) {
      download.textContent += " (could not be unpacked: " + error + ")";
    });
  } else {
    download.textContent += " (needs a newer browser)";
  }

  if (fromHash()) {
    $("viewer-section").scrollIntoView();
  } else if (games.length) {
    showGame(0);
  }
  document.body.dataset.ready = "1";
  if (window.performance && performance.mark) { performance.mark("viewer-ready"); }
})();
