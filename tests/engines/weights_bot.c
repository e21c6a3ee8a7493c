/* bench/instant_bot.c with a weights file it cannot start without: the file named by
 * the WEIGHTS environment variable (not an argument, so a sandbox shows it only when
 * the engine's definition lists it in `read`).
 * Build: cc -O2 -Dmain=instant_main -c bench/instant_bot.c && cc -o weights_bot
 *        tests/engines/weights_bot.c instant_bot.o
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int instant_main(int argc, char **argv);

int main(int argc, char **argv) {
    const char *path = getenv("WEIGHTS");
    FILE *weights = path ? fopen(path, "rb") : NULL;
    if (weights == NULL) {
        fprintf(stderr, "weights_bot: cannot open %s: %s\n", path ? path : "(WEIGHTS unset)",
                strerror(errno));
        return 1;
    }
    char head[64];
    size_t got = fread(head, 1, sizeof head, weights);
    fclose(weights);
    fprintf(stderr, "weights_bot: loaded %zu bytes\n", got);
    return instant_main(argc, argv);
}
