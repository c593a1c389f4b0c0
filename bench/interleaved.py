#!/usr/bin/env python3
"""Medians of commands run in turn, A B C A B C ..., so that the machine's drift hits them alike.

Usage: interleaved.py RUNS COMMAND...   (each COMMAND one shell-quoted string, run without a
shell, stdout to /dev/null). Prints each median and its ratio to the first command's.
hyperfine runs all of one command's runs before the next command's, which on a shared machine
that drifts by several percent a minute skews ratios of long runs; this does not.
"""
import os, shlex, statistics, sys, time

runs = int(sys.argv[1])
commands = sys.argv[2:]
argvs = [shlex.split(c) for c in commands]
devnull = os.open(os.devnull, os.O_RDWR)
samples = [[] for _ in argvs]
for _ in range(runs):
    for argv, times in zip(argvs, samples):
        start = time.perf_counter_ns()
        pid = os.posix_spawnp(argv[0], argv, os.environ, file_actions=[(os.POSIX_SPAWN_DUP2, devnull, 1)])
        os.waitpid(pid, 0)
        times.append(time.perf_counter_ns() - start)
base = statistics.median(samples[0])
for command, times in zip(commands, samples):
    median = statistics.median(times)
    print(f"  {median / 1e6:9.3f} ms  x{median / base:5.2f}   {command}")
