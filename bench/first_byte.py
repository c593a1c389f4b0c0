#!/usr/bin/env python3
"""Latency from a child's write to the reader, bare and through retry with a stdout predicate.

Usage: first_byte.py RETRY_BINARY [ROUNDS]
The child prints its clock (ns) after a short pause; the reader notes its own on receipt.
"""
import statistics, subprocess, sys, time

binary = sys.argv[1]
rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 30
child = ["python3", "-c", "import time,sys; time.sleep(0.05); sys.stdout.write(str(time.time_ns())); sys.stdout.flush(); time.sleep(0.3)"]

def latency(command):
    samples = []
    for _ in range(rounds):
        p = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
        data = p.stdout.read1(64)
        received = time.time_ns()
        samples.append((received - int(data)) / 1e6)
        p.wait()
    samples.sort()
    return statistics.median(samples), samples[int(0.9 * (len(samples) - 1))]

bare = latency(child)
through = latency([binary, "--until-stdout", "never", "-r", "0", "--"] + child)
print(f"first byte, bare: median {bare[0]:.3f}ms p90 {bare[1]:.3f}ms")
print(f"first byte, through retry --until-stdout: median {through[0]:.3f}ms p90 {through[1]:.3f}ms")
