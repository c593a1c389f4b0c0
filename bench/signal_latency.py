#!/usr/bin/env python3
"""Time from SIGTERM to retry's exit while it waits in a one-hour back-off.

Usage: signal_latency.py RETRY_BINARY [ROUNDS]
"""
import os, signal, statistics, subprocess, sys, time

binary = sys.argv[1]
rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 30
latencies = []
for _ in range(rounds):
    child = subprocess.Popen([binary, "--base", "1h", "--", "false"],
                             stdin=subprocess.DEVNULL, stderr=subprocess.PIPE)
    line = child.stderr.readline()  # "attempt 1/6 failed ...; next attempt in ..."
    assert b"next attempt in" in line, line
    sent = time.perf_counter()
    child.send_signal(signal.SIGTERM)
    child.wait(timeout=10)
    latencies.append((time.perf_counter() - sent) * 1000)
    assert child.returncode in (-15, 143), child.returncode
latencies.sort()
p99 = latencies[min(len(latencies) - 1, round(0.99 * (len(latencies) - 1)))]
print(f"SIGTERM during a 1h back-off -> exit, x{rounds}: median {statistics.median(latencies):.2f}ms p99 {p99:.2f}ms max {latencies[-1]:.2f}ms")
