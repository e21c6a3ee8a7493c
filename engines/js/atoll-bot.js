#!/usr/bin/env node
// atoll-bot.js: an example Atoll and Hex engine in JavaScript (Node 18 or later), one file,
// no dependencies. Run it with `node engines/js/atoll-bot.js [SEED]`.
//
// It speaks the protocol of protocol/PROTOCOL.md: the GTP core, atoll-islands, atoll-pie
// and the atoll- clock commands. Under the pie rule it swaps a first stone near the
// centre. It plays a win in one when it has one, blocks the opponent's win in one, and
// otherwise plays the empty cell with the most stones of its own colour around it,
// nearest the centre (ties broken at random, from a seeded generator).
//
// The board is data, as in PROTOCOL.md section 4: cells on axial coordinates, six
// neighbour directions, and the islands in their order around the edge. A chain joins
// through the islands of its owner (an island's stones belong to its owner's chains), and
// a chain wins when the islands it touches leave no gap of more than half of them around
// the edge. The same player as engines/c/atoll_bot.c, for authors who write JavaScript.
"use strict";

const readline = require("node:readline");

let nIslands = 8;
let size = 11;
let pie = true;
let cells = []; // {q, r, file, rank, nbr: [index], shore: bits of the islands beside it}
let owner = []; // per island: 1 black, 2 white
let winMask = []; // per set of islands (bits): does touching them all win?
let color = []; // per cell: 0 empty, 1 black, 2 white
let history = []; // cell indexes, or -1 for the swap
let timeKind = "none";
let movetimeMs = 0;
let timeLeftMs = -1;

// A small seeded generator (mulberry32), so that games are repeatable.
let seed = (Number.parseInt(process.argv[2] ?? "1", 10) || 1) >>> 0;
function random() {
  seed = (seed + 0x6d2b79f5) >>> 0;
  let t = seed;
  t = Math.imul(t ^ (t >>> 15), t | 1);
  t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
  return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
}

// Island stones as [q, r], as PROTOCOL.md section 4 places them.
function islandStones(k) {
  const n = size;
  const m = Math.floor((n + 1) / 2);
  const s = Math.floor((n - 3) / 2);
  const e0 = Math.floor((n + 3) / 2);
  const out = [];
  if (nIslands === 4) {
    // top B, right W, bottom B, left W
    for (let i = 1; i <= n; i++) {
      out.push([
        k === 0 ? i : k === 1 ? n + 1 : k === 2 ? i : 0,
        k === 0 ? 0 : k === 1 ? i : k === 2 ? n + 1 : i,
      ]);
    }
  } else if (k === 0 || k === 1) {
    // north: white left, black right
    for (let q = k === 0 ? 0 : m; q < (k === 0 ? m - 1 : n); q++) {
      out.push([q, n - 1 + Math.floor((q + 1) / 2)]);
    }
  } else if (k === 2 || k === 3) {
    // east: white upper, black lower
    for (let r = k === 3 ? e0 : e0 + s; r < (k === 3 ? e0 + s : e0 + 2 * s); r++) {
      out.push([n, r]);
    }
  } else if (k === 4 || k === 5) {
    // south: white right, black left
    for (let q = k === 5 ? 0 : m; q < (k === 5 ? m - 1 : n); q++) {
      out.push([q, Math.floor(q / 2)]);
    }
  } else {
    // west: white lower, black upper
    for (let r = k === 6 ? 1 : s + 1; r <= (k === 6 ? s : 2 * s); r++) {
      out.push([-1, r]);
    }
  }
  return out;
}

function buildBoard() {
  const atollDirs = [[0, 1], [0, -1], [1, 0], [-1, 0], [1, 1], [-1, -1]];
  const hexDirs = [[1, 0], [-1, 0], [0, 1], [0, -1], [1, -1], [-1, 1]];
  const dirs = nIslands === 4 ? hexDirs : atollDirs;
  cells = [];
  const index = new Map();
  for (let x = 0; x < size; x++) {
    const top = nIslands === 4 ? size : x % 2 === 0 ? size - 2 : size - 1;
    for (let k = 1; k <= top; k++) {
      const q = nIslands === 4 ? x + 1 : x;
      const r = nIslands === 4 ? k : k + Math.floor(x / 2);
      index.set(`${q},${r}`, cells.length);
      cells.push({ q, r, file: x, rank: k, nbr: [], shore: 0 });
    }
  }
  for (const cell of cells) {
    for (const [dq, dr] of dirs) {
      const j = index.get(`${cell.q + dq},${cell.r + dr}`);
      if (j !== undefined) cell.nbr.push(j);
    }
  }
  owner = [];
  for (let k = 0; k < nIslands; k++) {
    owner.push(nIslands === 4 ? (k % 2 === 0 ? 1 : 2) : k % 2 === 1 ? 1 : 2);
    const stones = new Set(islandStones(k).map(([q, r]) => `${q},${r}`));
    for (const cell of cells) {
      if (dirs.some(([dq, dr]) => stones.has(`${cell.q + dq},${cell.r + dr}`))) {
        cell.shore |= 1 << k;
      }
    }
  }
  // A set of islands wins when no gap between members around the edge exceeds K/2.
  winMask = [];
  for (let mask = 0; mask < 1 << nIslands; mask++) {
    let first = -1;
    let prev = -1;
    let gap = 0;
    for (let k = 0; k < nIslands; k++) {
      if ((mask >> k) & 1) {
        if (first < 0) first = k;
        else if (k - prev > gap) gap = k - prev;
        prev = k;
      }
    }
    if (first >= 0 && first + nIslands - prev > gap) gap = first + nIslands - prev;
    winMask.push(first >= 0 && prev !== first && gap * 2 <= nIslands);
  }
}

function clearBoard() {
  color = new Array(cells.length).fill(0);
  history = [];
}

// Does a `who` stone on `start` win? A flood fill over `who`'s stones, through its
// islands: an island reached joins every stone on its shore.
function winsAt(start, who) {
  const seen = new Uint8Array(cells.length);
  const stack = [start];
  seen[start] = 1;
  let islands = 0;
  while (stack.length) {
    const c = stack.pop();
    let mine = 0;
    for (let k = 0; k < nIslands; k++) {
      if ((cells[c].shore >> k) & 1 && owner[k] === who) mine |= 1 << k;
    }
    const fresh = mine & ~islands;
    if (fresh) {
      for (let j = 0; j < cells.length; j++) {
        if (!seen[j] && color[j] === who && cells[j].shore & fresh) {
          seen[j] = 1;
          stack.push(j);
        }
      }
    }
    islands |= mine;
    for (const j of cells[c].nbr) {
      if (!seen[j] && color[j] === who) {
        seen[j] = 1;
        stack.push(j);
      }
    }
  }
  return winMask[islands];
}

const nameOf = (i) => `${String.fromCharCode(97 + cells[i].file)}${cells[i].rank}`;

function parseCell(word) {
  const match = /^([a-z])(\d+)$/.exec(word.toLowerCase());
  if (!match) return -1;
  const file = match[1].charCodeAt(0) - 97;
  const rank = Number(match[2]);
  return cells.findIndex((c) => c.file === file && c.rank === rank);
}

function centre() {
  let mq = 0;
  let mr = 0;
  for (const c of cells) {
    mq += c.q;
    mr += c.r;
  }
  return [mq / cells.length, mr / cells.length];
}

const SWAP = -2;

function choose(who) {
  const [mq, mr] = centre();
  if (pie && history.length === 1 && history[0] >= 0) {
    // the pie rule: take a first stone near the centre
    const dq = cells[history[0]].q - mq;
    const dr = cells[history[0]].r - mr;
    if (dq * dq + dr * dr + dq * dr <= 2.5) return SWAP;
  }
  for (const side of [who, 3 - who]) {
    // a win of our own, then a block
    for (let i = 0; i < cells.length; i++) {
      if (color[i]) continue;
      color[i] = side;
      const wins = winsAt(i, side);
      color[i] = 0;
      if (wins) return i;
    }
  }
  let best = -1;
  let bestScore = -Infinity;
  let ties = 0;
  for (let i = 0; i < cells.length; i++) {
    if (color[i]) continue;
    const own = cells[i].nbr.filter((j) => color[j] === who).length;
    const dq = cells[i].q - mq;
    const dr = cells[i].r - mr;
    const score = own * 100 - Math.trunc(dq * dq + dr * dr + dq * dr);
    if (score > bestScore) {
      best = i;
      bestScore = score;
      ties = 1;
    } else if (score === bestScore && Math.floor(random() * ++ties) === 0) {
      best = i;
    }
  }
  return best;
}

// Think for a share of the time the referee gave: a whole movetime allowance is not
// spent, a Fischer clock is spent over the moves to come.
function thinkingMs() {
  let budget = 0;
  if (timeKind === "movetime") budget = movetimeMs / 4;
  else if (timeLeftMs > 0) budget = timeLeftMs / 40;
  return Math.min(budget, 5000);
}

const COMMANDS = [
  "protocol_version", "name", "version", "known_command", "list_commands", "quit",
  "boardsize", "clear_board", "play", "genmove", "atoll-islands", "atoll-pie",
  "atoll-time_settings", "atoll-time_left",
];

const validSize = (k, n) =>
  Number.isInteger(n) && (k === 4 ? n >= 2 && n <= 26 : n >= 7 && n <= 23 && n % 4 === 3);

function parseColour(word) {
  const w = (word ?? "").toLowerCase();
  if (w === "b" || w === "black") return 1;
  if (w === "w" || w === "white") return 2;
  return 0;
}

class Refusal extends Error {}

// Answers one command: the text of a success, or throws a Refusal for a `?` answer.
async function handle(args) {
  const [cmd, ...rest] = args;
  switch (cmd) {
    case "protocol_version":
      return "2";
    case "name":
      return "atoll-bot-js";
    case "version":
      return "1.0";
    case "known_command":
      return COMMANDS.includes(rest[0]) ? "true" : "false";
    case "list_commands":
      return COMMANDS.join("\n");
    case "quit":
      return "";
    case "boardsize": {
      const n = Number(rest[0]);
      if (!validSize(nIslands, n)) throw new Refusal("unacceptable size");
      size = n;
      buildBoard();
      clearBoard();
      return "";
    }
    case "clear_board":
      clearBoard();
      return "";
    case "atoll-islands": {
      const k = Number(rest[0]);
      if (k !== 4 && k !== 8) throw new Refusal("unsupported island count");
      nIslands = k;
      if (!validSize(k, size)) size = 11;
      buildBoard();
      clearBoard();
      return "";
    }
    case "atoll-pie":
      if (rest[0] !== "on" && rest[0] !== "off") throw new Refusal("syntax error");
      pie = rest[0] === "on";
      return "";
    case "atoll-time_settings":
      if (!rest.length) throw new Refusal("syntax error");
      timeKind = rest[0];
      movetimeMs = timeKind === "movetime" ? Number(rest[1]) || 0 : 0;
      timeLeftMs = -1;
      return "";
    case "atoll-time_left":
      if (rest.length < 2) throw new Refusal("syntax error");
      timeLeftMs = Number(rest[1]) || 0;
      return "";
    case "play": {
      const who = parseColour(rest[0]);
      if (!who || rest.length < 2) throw new Refusal("syntax error");
      if (["swap", "swap-pieces", "swap-sides"].includes(rest[1])) {
        if (!pie || history.length !== 1) throw new Refusal("illegal move");
        history.push(-1); // the stone stays black; White moves
        return "";
      }
      const cell = parseCell(rest[1]);
      if (cell < 0 || color[cell]) throw new Refusal("illegal move");
      color[cell] = who;
      history.push(cell);
      return "";
    }
    case "genmove": {
      const who = parseColour(rest[0]);
      if (!who) throw new Refusal("syntax error");
      const wait = thinkingMs();
      if (wait > 0) await new Promise((done) => setTimeout(done, wait));
      const cell = choose(who);
      if (cell === SWAP) {
        history.push(-1);
        return "swap";
      }
      if (cell < 0) throw new Refusal("no empty cell");
      color[cell] = who;
      history.push(cell);
      return nameOf(cell);
    }
    default:
      throw new Refusal("unknown command");
  }
}

async function main() {
  buildBoard();
  clearBoard();
  const lines = readline.createInterface({ input: process.stdin, crlfDelay: Infinity });
  for await (const raw of lines) {
    const words = raw.split("#")[0].trim().split(/\s+/).filter(Boolean);
    if (!words.length) continue;
    const id = /^\d+$/.test(words[0]) ? words.shift() : "";
    if (!words.length) continue;
    let answer;
    try {
      const text = await handle(words);
      answer = `=${id}${text ? ` ${text}` : ""}`;
    } catch (error) {
      if (!(error instanceof Refusal)) throw error;
      answer = `?${id} ${error.message}`;
    }
    process.stdout.write(`${answer}\n\n`);
    if (words[0] === "quit") break;
  }
  lines.close();
}

main();
