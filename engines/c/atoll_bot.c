/*
 * atoll-bot: an example Atoll and Hex engine in standard C (C99), one file.
 *
 * It speaks the protocol of protocol/PROTOCOL.md: the GTP core, atoll-islands,
 * atoll-pie and the atoll- clock commands. Under the pie rule it swaps a first stone
 * near the centre. It plays a win in one when it has one,
 * blocks the opponent's win in one, and otherwise plays the empty cell with the most
 * stones of its own colour around it, nearest the centre (ties broken at random).
 *
 * The board is data, as in PROTOCOL.md section 4: cells on axial coordinates, six
 * neighbour directions, and the islands in their order around the edge. A chain is a
 * union-find over the cells plus one node per island (an island's stones belong to its
 * owner's chains), and a chain wins when the islands it touches leave no gap of more than
 * half of them around the edge.
 *
 * Built with -DMISTAKE_<KIND>, it carries one mistake that real bots make and that keeps
 * every move legal; `arbiter check` must catch each (tests/process/test_check_c_bot.py):
 *   MISTAKE_NO_ISLAND_CHAIN  islands are not links: a win must be one chain of stones
 *   MISTAKE_ANY_TWO_ISLANDS  any two islands of its colour count as a win
 *   MISTAKE_ODD_FILES        the neighbour rule of even files used for odd files too
 *   MISTAKE_COLOUR_CACHED    the colour of its first genmove of a game kept for the game
 *   MISTAKE_SWAP_RECOLOUR    the swapped first stone recoloured white on its own board
 *   MISTAKE_MOVETIME_SECONDS movetime's milliseconds read as seconds
 *   MISTAKE_BYTE_CELLS       cell numbers kept in a byte: boards over 256 cells break
 *   MISTAKE_HEX_ROWS_BOTTOM  Hex rows numbered from the bottom, like Atoll ranks
 *   MISTAKE_TOP_CELLS        even files given the height of odd ones: an invented cell at
 *                            the top of each, where an island stone stands
 */
#define _POSIX_C_SOURCE 200809L /* nanosleep, for thinking time */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define MAX_CELLS 700
#define MAX_ISLANDS 8

#ifdef MISTAKE_BYTE_CELLS
typedef unsigned char cell_t;
#else
typedef int cell_t;
#endif

static int n_islands = 8, size = 11, pie = 1, n_cells;
static int cq[MAX_CELLS], cr[MAX_CELLS], file_of[MAX_CELLS], rank_of[MAX_CELLS];
static int nbr[MAX_CELLS][6], n_nbr[MAX_CELLS], shore[MAX_CELLS]; /* shore: island bits */
static int owner[MAX_ISLANDS];                                 /* 1 black, 2 white */
static unsigned char win_mask[1 << MAX_ISLANDS];
static int color[MAX_CELLS];
static cell_t history[MAX_CELLS + 1];
static int n_moves, swapped, to_move = 1, cached = 0;
static long time_left_ms = -1;
static char tc_kind[16] = "none";
static long movetime_ms = 0;

static int index_of(int q, int r) {
    for (int i = 0; i < n_cells; i++)
        if (cq[i] == q && cr[i] == r) return i;
    return -1;
}

/* Island stones as (q, r), as PROTOCOL.md section 4 places them. */
static void island_stones(int k, int *qs, int *rs, int *count) {
    int n = size, m = (n + 1) / 2, s = (n - 3) / 2, e0 = (n + 3) / 2, c = 0;
    if (n_islands == 4) { /* top B, right W, bottom B, left W */
        for (int i = 1; i <= n; i++, c++) {
            qs[c] = k == 0 ? i : k == 1 ? n + 1 : k == 2 ? i : 0;
            rs[c] = k == 0 ? 0 : k == 1 ? i : k == 2 ? n + 1 : i;
        }
    } else if (k == 0 || k == 1) { /* north: white left, black right */
        for (int q = k == 0 ? 0 : m; q < (k == 0 ? m - 1 : n); q++, c++) {
            qs[c] = q; rs[c] = n - 1 + (q + 1) / 2;
        }
    } else if (k == 2 || k == 3) { /* east: white upper, black lower */
        for (int r = k == 3 ? e0 : e0 + s; r < (k == 3 ? e0 + s : e0 + 2 * s); r++, c++) {
            qs[c] = n; rs[c] = r;
        }
    } else if (k == 4 || k == 5) { /* south: white right, black left */
        for (int q = k == 5 ? 0 : m; q < (k == 5 ? m - 1 : n); q++, c++) {
            qs[c] = q; rs[c] = q / 2;
        }
    } else { /* west: white lower, black upper */
        for (int r = k == 6 ? 1 : s + 1; r <= (k == 6 ? s : 2 * s); r++, c++) {
            qs[c] = -1; rs[c] = r;
        }
    }
    *count = c;
}

static void build_board(void) {
    static const int atoll_dirs[6][2] = {{0, 1}, {0, -1}, {1, 0}, {-1, 0}, {1, 1}, {-1, -1}};
    static const int hex_dirs[6][2] = {{1, 0}, {-1, 0}, {0, 1}, {0, -1}, {1, -1}, {-1, 1}};
    const int (*dirs)[2] = n_islands == 4 ? hex_dirs : atoll_dirs;
    n_cells = 0;
    for (int x = 0; x < size; x++) {
        int top = n_islands == 4 ? size : (x % 2 == 0 ? size - 2 : size - 1);
#ifdef MISTAKE_TOP_CELLS
        if (n_islands == 8) top = size - 1; /* every file as tall as the odd ones */
#endif
        for (int k = 1; k <= top; k++, n_cells++) {
            file_of[n_cells] = x; rank_of[n_cells] = k;
            cq[n_cells] = n_islands == 4 ? x + 1 : x;
            cr[n_cells] = n_islands == 4 ? k : k + x / 2;
        }
    }
    for (int i = 0; i < n_cells; i++) {
        n_nbr[i] = 0;
        for (int d = 0; d < 6; d++) {
            int dq = dirs[d][0], dr = dirs[d][1];
#ifdef MISTAKE_ODD_FILES
            /* the even files' rule (ranks k and k+1 beside it) used on odd files too */
            if (n_islands == 8 && file_of[i] % 2 == 1 && dq != 0) dr += 1;
#endif
            int j = index_of(cq[i] + dq, cr[i] + dr);
            if (j >= 0) nbr[i][n_nbr[i]++] = j;
        }
        shore[i] = 0;
    }
    for (int k = 0; k < n_islands; k++) {
        int qs[64], rs[64], count;
        island_stones(k, qs, rs, &count);
        owner[k] = n_islands == 4 ? (k % 2 == 0 ? 1 : 2) : (k % 2 == 1 ? 1 : 2);
        for (int s = 0; s < count; s++)
            for (int i = 0; i < n_cells; i++)
                for (int d = 0; d < 6; d++)
                    if (cq[i] + dirs[d][0] == qs[s] && cr[i] + dirs[d][1] == rs[s])
                        shore[i] |= 1 << k;
    }
    /* A set of islands wins when no gap between members around the edge exceeds K/2. */
    for (int mask = 0; mask < (1 << n_islands); mask++) {
        int first = -1, prev = -1, gap = 0;
        for (int k = 0; k < n_islands; k++)
            if (mask >> k & 1) {
                if (first < 0) first = k;
                else if (k - prev > gap) gap = k - prev;
                prev = k;
            }
        if (first >= 0 && first + n_islands - prev > gap) gap = first + n_islands - prev;
        win_mask[mask] = first >= 0 && prev != first && gap * 2 <= n_islands;
#ifdef MISTAKE_ANY_TWO_ISLANDS
        win_mask[mask] = first >= 0 && prev != first;
#endif
    }
}

static void clear_board(void) {
    memset(color, 0, sizeof color);
    n_moves = swapped = cached = 0;
    to_move = 1;
}

/* Does a `who` stone on `cell` win? A flood fill over `who`'s stones, through its
 * islands: an island reached joins every stone on its shore. */
static int wins_at(int cell, int who) {
    static int seen[MAX_CELLS], stack[MAX_CELLS];
    int top = 0, islands = 0;
    memset(seen, 0, sizeof seen);
    seen[cell] = 1;
    stack[top++] = cell;
    while (top) {
        int c = stack[--top];
        int mine = 0;
        for (int k = 0; k < n_islands; k++)
            if ((shore[c] >> k & 1) && owner[k] == who) mine |= 1 << k;
#ifndef MISTAKE_NO_ISLAND_CHAIN
        int fresh = mine & ~islands;
        for (int j = 0; fresh && j < n_cells; j++)
            if (!seen[j] && color[j] == who && (shore[j] & fresh)) {
                seen[j] = 1;
                stack[top++] = j;
            }
#endif
        islands |= mine;
        for (int d = 0; d < n_nbr[c]; d++) {
            int j = nbr[c][d];
            if (!seen[j] && color[j] == who) {
                seen[j] = 1;
                stack[top++] = j;
            }
        }
    }
    return win_mask[islands];
}

static const char *name_of(int cell) {
    static char buf[8];
    int rank = rank_of[cell];
#ifdef MISTAKE_HEX_ROWS_BOTTOM
    if (n_islands == 4) rank = size + 1 - rank;
#endif
    snprintf(buf, sizeof buf, "%c%d", 'a' + file_of[cell], rank);
    return buf;
}

static int parse_cell(const char *word) {
    char letter = (char)tolower((unsigned char)word[0]);
    if (letter < 'a' || letter > 'z' || !isdigit((unsigned char)word[1])) return -1;
    int x = letter - 'a', rank = atoi(word + 1);
#ifdef MISTAKE_HEX_ROWS_BOTTOM
    if (n_islands == 4) rank = size + 1 - rank;
#endif
    for (int i = 0; i < n_cells; i++)
        if (file_of[i] == x && rank_of[i] == rank) return i;
    return -1;
}

static void place(int cell, int who) {
    color[(cell_t)cell] = who;
    history[n_moves++] = (cell_t)cell;
    to_move = 3 - who;
}

#define SWAP_MOVE (-2)

static int choose(int who) {
    int best = -1, best_score = -1000000, ties = 0;
    if (pie && n_moves == 1 && !swapped) { /* the pie rule: take a first stone near the centre */
        double mq = 0, mr = 0;
        for (int i = 0; i < n_cells; i++) mq += cq[i], mr += cr[i];
        mq /= n_cells; mr /= n_cells;
        double dq = cq[history[0]] - mq, dr = cr[history[0]] - mr;
        if (dq * dq + dr * dr + dq * dr <= 2.5) return SWAP_MOVE;
    }
    for (int pass = 0; pass < 2; pass++) { /* a win of our own, then a block */
        int side = pass == 0 ? who : 3 - who;
        for (int i = 0; i < n_cells; i++)
            if (!color[i]) {
                color[i] = side;
                int w = wins_at(i, side);
                color[i] = 0;
                if (w) return i;
            }
    }
    double mq = 0, mr = 0;
    for (int i = 0; i < n_cells; i++) mq += cq[i], mr += cr[i];
    mq /= n_cells; mr /= n_cells;
    for (int i = 0; i < n_cells; i++) {
        if (color[i]) continue;
        int own = 0;
        for (int d = 0; d < n_nbr[i]; d++) own += color[nbr[i][d]] == who;
        double dq = cq[i] - mq, dr = cr[i] - mr;
        int score = own * 100 - (int)(dq * dq + dr * dr + dq * dr);
        if (score > best_score) best = i, best_score = score, ties = 1;
        else if (score == best_score && rand() % ++ties == 0) best = i;
    }
    return best;
}

/* Think for a share of the time the referee gave: a whole movetime allowance is
 * not spent, a Fischer clock is spent over the moves to come. */
static void think(void) {
    long budget = 0;
    if (!strcmp(tc_kind, "movetime")) {
        budget = movetime_ms / 4;
#ifdef MISTAKE_MOVETIME_SECONDS
        budget = movetime_ms * 1000 / 4; /* "movetime 500" read as 500 seconds */
#endif
    } else if (time_left_ms > 0) {
        budget = time_left_ms / 40;
    }
    if (budget > 5000) budget = 5000;
    struct timespec ts = {budget / 1000, (budget % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

static const char *commands[] = {
    "protocol_version", "name", "version", "known_command", "list_commands", "quit",
    "boardsize", "clear_board", "play", "genmove", "atoll-islands", "atoll-pie",
    "atoll-time_settings", "atoll-time_left", NULL};

static int known(const char *word) {
    for (int i = 0; commands[i]; i++)
        if (!strcmp(commands[i], word)) return 1;
    return 0;
}

static int parse_colour(const char *word) {
    if (!word) return 0;
    if (!strcmp(word, "b") || !strcmp(word, "black") || !strcmp(word, "B")) return 1;
    if (!strcmp(word, "w") || !strcmp(word, "white") || !strcmp(word, "W")) return 2;
    return 0;
}

static int valid_size(int k, int n) {
    return k == 4 ? n >= 2 && n <= 26 : n >= 7 && n <= 23 && n % 4 == 3;
}

/* Answers one command into `out`; returns 1 for success, 0 for an error. */
static int handle(char **args, int argc, char *out, size_t cap, int *quit) {
    const char *cmd = args[0];
    out[0] = 0;
    if (!strcmp(cmd, "protocol_version")) snprintf(out, cap, "2");
    else if (!strcmp(cmd, "name")) snprintf(out, cap, "atoll-bot-c");
    else if (!strcmp(cmd, "version")) snprintf(out, cap, "1.0");
    else if (!strcmp(cmd, "known_command"))
        snprintf(out, cap, "%s", argc > 1 && known(args[1]) ? "true" : "false");
    else if (!strcmp(cmd, "list_commands")) {
        size_t used = 0;
        for (int i = 0; commands[i]; i++)
            used += (size_t)snprintf(out + used, cap - used, "%s%s", i ? "\n" : "", commands[i]);
    } else if (!strcmp(cmd, "quit")) *quit = 1;
    else if (!strcmp(cmd, "boardsize")) {
        int n = argc > 1 ? atoi(args[1]) : 0;
        if (!valid_size(n_islands, n)) return snprintf(out, cap, "unacceptable size"), 0;
        size = n;
        build_board();
        clear_board();
    } else if (!strcmp(cmd, "clear_board")) clear_board();
    else if (!strcmp(cmd, "atoll-islands")) {
        int k = argc > 1 ? atoi(args[1]) : 0;
        if (k != 4 && k != 8) return snprintf(out, cap, "unsupported island count"), 0;
        n_islands = k;
        if (!valid_size(k, size)) size = 11;
        build_board();
        clear_board();
    } else if (!strcmp(cmd, "atoll-pie")) {
        if (argc < 2 || (strcmp(args[1], "on") && strcmp(args[1], "off")))
            return snprintf(out, cap, "syntax error"), 0;
        pie = !strcmp(args[1], "on");
    } else if (!strcmp(cmd, "atoll-time_settings")) {
        if (argc < 2) return snprintf(out, cap, "syntax error"), 0;
        snprintf(tc_kind, sizeof tc_kind, "%s", args[1]);
        movetime_ms = !strcmp(args[1], "movetime") && argc > 2 ? atol(args[2]) : 0;
        time_left_ms = -1;
    } else if (!strcmp(cmd, "atoll-time_left")) {
        if (argc < 3) return snprintf(out, cap, "syntax error"), 0;
        time_left_ms = atol(args[2]);
    } else if (!strcmp(cmd, "play")) {
        int who = argc > 2 ? parse_colour(args[1]) : 0;
        if (!who) return snprintf(out, cap, "syntax error"), 0;
        if (!strcmp(args[2], "swap") || !strcmp(args[2], "swap-pieces")
            || !strcmp(args[2], "swap-sides")) {
            if (!pie || n_moves != 1) return snprintf(out, cap, "illegal move"), 0;
            swapped = 1;
            history[n_moves++] = (cell_t)n_cells; /* n_cells stands for the swap */
            to_move = 2; /* the stone stays black; White moves */
#ifdef MISTAKE_SWAP_RECOLOUR
            color[history[0]] = 2;
#endif
            return 1;
        }
        int cell = parse_cell(args[2]);
        if (cell < 0 || color[(cell_t)cell]) return snprintf(out, cap, "illegal move"), 0;
        place(cell, who);
    } else if (!strcmp(cmd, "genmove")) {
        int who = argc > 1 ? parse_colour(args[1]) : 0;
        if (!who) return snprintf(out, cap, "syntax error"), 0;
#ifdef MISTAKE_COLOUR_CACHED
        if (!cached) cached = who;
        who = cached;
#endif
        think();
        int cell = choose(who);
        if (cell == SWAP_MOVE) {
            swapped = 1;
            history[n_moves++] = (cell_t)n_cells;
            to_move = 2;
#ifdef MISTAKE_SWAP_RECOLOUR
            color[history[0]] = 2;
#endif
            return snprintf(out, cap, "swap"), 1;
        }
        if (cell < 0) return snprintf(out, cap, "no empty cell"), 0;
        place(cell, who);
        snprintf(out, cap, "%s", name_of(cell));
    } else return snprintf(out, cap, "unknown command"), 0;
    return 1;
}

int main(int argc, char **argv) {
    static char line[1 << 16], out[1 << 14];
    srand(argc > 1 ? (unsigned)atoi(argv[1]) : 1u);
    build_board();
    clear_board();
    int quit = 0;
    while (!quit && fgets(line, sizeof line, stdin)) {
        char *hash = strchr(line, '#');
        if (hash) *hash = 0;
        char *args[64];
        int n = 0;
        for (char *tok = strtok(line, " \t\r\n"); tok && n < 64; tok = strtok(NULL, " \t\r\n"))
            args[n++] = tok;
        if (!n) continue;
        const char *id = "";
        char **words = args;
        if (isdigit((unsigned char)args[0][0])) id = args[0], words++, n--;
        if (!n) continue;
        int ok = handle(words, n, out, sizeof out, &quit);
        printf("%c%s%s%s\n\n", ok ? '=' : '?', id, out[0] ? " " : "", out);
        fflush(stdout);
    }
    return 0;
}
