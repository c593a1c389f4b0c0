/* The floor for "200 failing attempts": posix_spawn (vfork + exec, in a new process group, as
 * retry does) and wait, N times, with nothing else. No retry tool can go below this.
 * Usage: spawn_loop N COMMAND [ARG...] */
#include <spawn.h>
#include <stdlib.h>
#include <sys/wait.h>

extern char **environ;

int main(int argc, char **argv) {
    if (argc < 3) return 2;
    int n = atoi(argv[1]);
    posix_spawnattr_t attr;
    posix_spawnattr_init(&attr);
    posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP);
    posix_spawnattr_setpgroup(&attr, 0);
    for (int i = 0; i < n; i++) {
        pid_t pid;
        int status;
        if (posix_spawnp(&pid, argv[2], NULL, &attr, argv + 2, environ) != 0) return 1;
        waitpid(pid, &status, 0);
    }
    return 0;
}
