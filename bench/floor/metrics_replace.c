/* The floor under the cost of --metrics-file: the file operations that one run of
 * `retry --metrics-file FILE --retries 0 -- true` makes, and nothing else: the earlier file read
 * (for its last success), a new file of the same size written beside it and renamed over it.
 *
 *   metrics_replace FILE WRITES
 *
 * WRITES 0 does nothing, 1 makes one run's operations, so that whole processes of each can be
 * timed against each other (bench/run). Error handling is minimal: this is a measuring stick. */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char buf[4096];

int main(int argc, char **argv) {
    if (argc != 3) {
        fprintf(stderr, "usage: metrics_replace FILE WRITES\n");
        return 2;
    }
    const char *path = argv[1];
    char temporary[4096];
    snprintf(temporary, sizeof temporary, "%s.%d.tmp", path, (int)getpid());
    /* Seven gauges with their HELP and TYPE lines: about 1.2 KB, as retry writes. */
    static char text[1300];
    memset(text, 'x', sizeof text - 1);
    for (size_t i = 80; i < sizeof text; i += 80) text[i] = '\n';
    for (int n = atoi(argv[2]); n > 0; n--) {
        int fd = open(path, O_RDONLY | O_CLOEXEC);
        if (fd >= 0) {
            while (read(fd, buf, sizeof buf) > 0) {
            }
            close(fd);
        }
        fd = open(temporary, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
        if (fd < 0) return 1;
        if (write(fd, text, sizeof text - 1) < 0) return 1;
        close(fd);
        if (rename(temporary, path) != 0) return 1;
    }
    return 0;
}
