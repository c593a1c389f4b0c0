/* The floor for matching output as it streams: run COMMAND with its stdout into a 1 MiB pipe and
 * copy what arrives to our stdout in 128 KiB reads, as retry does, but look at nothing.
 * Usage: pipe_reader COMMAND [ARG...] */
#define _GNU_SOURCE
#include <fcntl.h>
#include <spawn.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

int main(int argc, char **argv) {
    if (argc < 2) return 2;
    int fds[2];
    if (pipe2(fds, O_CLOEXEC) != 0) return 1;
    fcntl(fds[0], F_SETPIPE_SZ, 1 << 20);
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_adddup2(&actions, fds[1], 1);
    pid_t pid;
    if (posix_spawnp(&pid, argv[1], &actions, NULL, argv + 1, environ) != 0) return 1;
    close(fds[1]);
    size_t size = 128 * 1024;
    char *buffer = malloc(size);
    ssize_t got;
    while ((got = read(fds[0], buffer, size)) > 0) {
        if (write(1, buffer, (size_t)got) != got) return 1;
    }
    int status;
    waitpid(pid, &status, 0);
    return 0;
}
