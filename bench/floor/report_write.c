/* The floor under the cost of --report: the file operations that one run of
 * `retry --report FILE --retries 0 -- true` makes, and nothing else. Under json, a new file of
 * the report's size written beside FILE and renamed over it; under github, the six lines
 * appended to FILE in one write.
 *
 *   report_write FILE json|github WRITES
 *
 * WRITES 0 does nothing, 1 makes one run's operations, so that whole processes of each can be
 * timed against each other (bench/run). Error handling is minimal: this is a measuring stick. */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int main(int argc, char **argv) {
    if (argc != 4) {
        fprintf(stderr, "usage: report_write FILE json|github WRITES\n");
        return 2;
    }
    const char *path = argv[1];
    int github = strcmp(argv[2], "github") == 0;
    char temporary[4096];
    snprintf(temporary, sizeof temporary, "%s.%d.tmp", path, (int)getpid());
    /* A one-attempt JSON report is about 220 bytes; the github lines about 90. */
    static char text[221];
    memset(text, 'x', sizeof text - 1);
    size_t length = github ? 90 : sizeof text - 1;
    for (int n = atoi(argv[3]); n > 0; n--) {
        if (github) {
            int fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
            if (fd < 0 || write(fd, text, length) < 0) return 1;
            close(fd);
            continue;
        }
        int fd = open(temporary, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
        if (fd < 0) return 1;
        if (write(fd, text, length) < 0) return 1;
        close(fd);
        if (rename(temporary, path) != 0) return 1;
    }
    return 0;
}
