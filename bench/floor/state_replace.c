/* The floor under the cost of a state directory: the file operations that one run of
 * `retry --state DIR --budget x --breaker x --retries 0 -- true` makes, and nothing else.
 *
 *   state_replace DIR RUNS
 *
 * Per run: a lock-free read of the record (the breaker's admission); under the lock file, a
 * read, a temporary file written and renamed over the record (the first attempt earns for the
 * budget); after the attempt, a read under the lock. With RUNS > 1, prints the median time of
 * one run's operations in microseconds; with RUNS 0 or 1, prints nothing, so that whole
 * processes of each can be timed against each other (bench/run). Error handling is minimal: this is a measuring stick. */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <time.h>
#include <unistd.h>

static char buf[4096];
static const char record[] =
    "retry-state 1\nbudget 6000 2992604 1 0 2992610 1 0\nbreaker 0 - 0 -\n"
    "padding to the size of a real record, about 120 bytes\n";

static void read_record(const char *path) {
    int fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
    if (fd >= 0) {
        while (read(fd, buf, sizeof buf) > 0) {
        }
        close(fd);
    }
}

static double now_us(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

static int cmp(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

int main(int argc, char **argv) {
    if (argc != 3) {
        fprintf(stderr, "usage: state_replace DIR RUNS\n");
        return 2;
    }
    int runs = atoi(argv[2]);
    char state[4096], lock[4096], tmp[4096];
    snprintf(state, sizeof state, "%s/x.state", argv[1]);
    snprintf(lock, sizeof lock, "%s/x.lock", argv[1]);
    snprintf(tmp, sizeof tmp, "%s/x.%d.tmp", argv[1], (int)getpid());
    double *took = malloc(sizeof(double) * (size_t)runs);
    for (int i = 0; i < runs; i++) {
        double start = now_us();
        read_record(state);
        int lk = open(lock, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
        flock(lk, LOCK_EX);
        read_record(state);
        int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600);
        if (fd < 0 || write(fd, record, sizeof record - 1) < 0) {
            perror("temporary file");
            return 1;
        }
        close(fd);
        if (rename(tmp, state) != 0) {
            perror("rename");
            return 1;
        }
        flock(lk, LOCK_UN);
        flock(lk, LOCK_EX);
        read_record(state);
        flock(lk, LOCK_UN);
        close(lk);
        took[i] = now_us() - start;
    }
    if (runs > 1) {
        qsort(took, (size_t)runs, sizeof(double), cmp);
        printf("%.1f\n", took[runs / 2]);
    }
    return 0;
}
