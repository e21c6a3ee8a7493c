/* A minimal, instant Atoll engine for benchmarks: answers every command at once, plays
 * the next empty cell of a shuffled list, and writes all answers to one batch of input
 * with a single write(2). Optional argument: think divisor D > 0 makes every genmove
 * sleep (own time left)/D milliseconds, a well-behaved engine that never flags.
 * Build: cc -O2 -o instant_bot instant_bot.c
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#define MAXC 1024
static char names[MAXC][16];
static int occupied[MAXC];
static int order[MAXC];
static int ncells;
static int size = 11;
static long time_left[2] = {-1, -1};
static int divisor = 0;
static unsigned rng = 12345;

static void setup(int n) {
    ncells = 0;
    for (int x = 0; x < n; x++) {
        int top = (x % 2 == 0) ? n - 2 : n - 1;
        for (int r = 1; r <= top; r++) {
            snprintf(names[ncells], sizeof names[0], "%c%d", 'a' + x, r);
            ncells++;
        }
    }
    for (int i = 0; i < ncells; i++) { occupied[i] = 0; order[i] = i; }
    for (int i = ncells - 1; i > 0; i--) {
        rng = rng * 1103515245u + 12345u;
        int j = (int)((rng >> 8) % (unsigned)(i + 1));
        int t = order[i]; order[i] = order[j]; order[j] = t;
    }
}

static int find(const char *name) {
    for (int i = 0; i < ncells; i++) if (strcasecmp(names[i], name) == 0) return i;
    return -1;
}

static char out[1 << 16];
static size_t outlen;

static void reply(const char *id, int ok, const char *text) {
    outlen += (size_t)snprintf(out + outlen, sizeof out - outlen, "%c%s%s%s\n\n",
                               ok ? '=' : '?', id, *text ? " " : "", text);
}

static void handle(char *line) {
    char *words[8]; int n = 0;
    for (char *tok = strtok(line, " \t\r"); tok && n < 8; tok = strtok(NULL, " \t\r"))
        words[n++] = tok;
    if (n == 0) return;
    const char *id = "";
    int w = 0;
    if (words[0][0] >= '0' && words[0][0] <= '9') { id = words[0]; w = 1; }
    if (w >= n) { reply(id, 0, "empty command"); return; }
    const char *cmd = words[w];
    char **args = words + w + 1; int nargs = n - w - 1;
    if (!strcmp(cmd, "protocol_version")) reply(id, 1, "2");
    else if (!strcmp(cmd, "name")) reply(id, 1, "instant");
    else if (!strcmp(cmd, "version")) reply(id, 1, "1");
    else if (!strcmp(cmd, "list_commands"))
        reply(id, 1, "protocol_version\nname\nversion\nknown_command\nlist_commands\nquit\n"
                     "boardsize\nclear_board\nplay\ngenmove\natoll-time_settings\natoll-time_left");
    else if (!strcmp(cmd, "known_command")) reply(id, 1, "false");
    else if (!strcmp(cmd, "quit")) { reply(id, 1, ""); write(1, out, outlen); exit(0); }
    else if (!strcmp(cmd, "boardsize")) {
        int s = nargs ? atoi(args[0]) : 0;
        if (s < 7 || s > 23 || s % 4 != 3) reply(id, 0, "unacceptable size");
        else { size = s; setup(size); reply(id, 1, ""); }
    }
    else if (!strcmp(cmd, "clear_board")) { setup(size); reply(id, 1, ""); }
    else if (!strcmp(cmd, "atoll-time_settings")) reply(id, 1, "");
    else if (!strcmp(cmd, "atoll-time_left")) {
        if (nargs == 2) time_left[(args[0][0] | 32) == 'w'] = atol(args[1]);
        reply(id, 1, "");
    }
    else if (!strcmp(cmd, "play")) {
        if (nargs != 2) { reply(id, 0, "syntax error"); return; }
        if (!strcasecmp(args[1], "swap")) { reply(id, 1, ""); return; }
        int c = find(args[1]);
        if (c < 0 || occupied[c]) reply(id, 0, "illegal move");
        else { occupied[c] = 1; reply(id, 1, ""); }
    }
    else if (!strcmp(cmd, "genmove")) {
        int me = nargs ? ((args[0][0] | 32) == 'w') : 0;
        if (divisor > 0 && time_left[me] > 0) {
            long ms = time_left[me] / divisor;
            struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
            nanosleep(&ts, NULL);
        }
        for (int k = 0; k < ncells; k++) {
            int c = order[k];
            if (!occupied[c]) { occupied[c] = 1; reply(id, 1, names[c]); return; }
        }
        reply(id, 0, "board is full");
    }
    else reply(id, 0, "unknown command");
}

int main(int argc, char **argv) {
    if (argc > 1) divisor = atoi(argv[1]);
    if (argc > 2) rng = (unsigned)atoi(argv[2]);
    setup(size);
    static char buf[1 << 16];
    size_t len = 0;
    for (;;) {
        ssize_t got = read(0, buf + len, sizeof buf - len - 1);
        if (got <= 0) return 0;
        len += (size_t)got;
        size_t start = 0;
        outlen = 0;
        for (size_t i = 0; i < len; i++) {
            if (buf[i] == '\n') {
                buf[i] = 0;
                char *hash = strchr(buf + start, '#');
                if (hash) *hash = 0;
                handle(buf + start);
                start = i + 1;
            }
        }
        memmove(buf, buf + start, len - start);
        len -= start;
        if (outlen) write(1, out, outlen);
    }
}
