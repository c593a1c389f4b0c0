/* A command as cheap as true(1) that ends a restart loop: exits 0 while $RETRY_ATTEMPT is at
 * most N, then 1. `retry --restart --retries 0 -- succeed_until 200` makes 200 successes and
 * one failure; spawn_loop 201 succeed_until 200 makes the same 201 spawns and nothing else.
 * Usage: succeed_until N */
#include <stdlib.h>

int main(int argc, char **argv) {
    const char *attempt = getenv("RETRY_ATTEMPT");
    if (argc < 2) return 2;
    return attempt != NULL && atol(attempt) > atol(argv[1]);
}
