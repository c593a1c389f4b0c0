#!/usr/bin/env python3
"""Soak: process and temporary-file leaks under timeouts and signals.

Usage: soak.py RETRY_BINARY [RUNS]

1. RUNS runs with a per-attempt timeout around a command that forks grandchildren (one of them
   ignoring SIGTERM): processes left behind afterwards.
2. RUNS runs where retry itself gets SIGTERM mid-attempt: processes left behind.
3. RUNS runs of --hold-stdout and --stdin replay (spilling to temporary files) where retry gets
   SIGKILL: files left in TMPDIR.
Each run's processes carry a unique environment marker, found again through /proc.
"""
import os, signal, subprocess, sys, tempfile, time, uuid

binary = sys.argv[1]
runs = int(sys.argv[2]) if len(sys.argv) > 2 else 100
FAMILY = "sleep 30 & sleep 30 & (trap '' TERM; sleep 30) & wait"


def alive_with(marker):
    """Pids (not zombies) whose environment holds the marker."""
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{pid}/environ", "rb") as f:
                if marker.encode() not in f.read():
                    continue
            with open(f"/proc/{pid}/stat") as f:
                state = f.read().rsplit(")", 1)[1].split()[0]
            if state not in ("Z", "X"):
                found.append(int(pid))
        except OSError:
            pass
    return found


def settle(marker, within=1.0):
    """Survivors once reaping had `within` seconds to happen."""
    end = time.time() + within
    while time.time() < end and alive_with(marker):
        time.sleep(0.01)
    return alive_with(marker)


def env(marker):
    return dict(os.environ, SOAK_MARKER=marker)


left_timeout = left_signal = 0
for _ in range(runs):
    marker = f"soak-{uuid.uuid4()}"
    subprocess.run([binary, "-q", "-r", "0", "--timeout", "100ms", "--kill-after", "200ms",
                    "sh", "-c", FAMILY], env=env(marker), stdin=subprocess.DEVNULL, timeout=30)
    survivors = settle(marker)
    left_timeout += len(survivors)
    for pid in survivors:
        os.kill(pid, signal.SIGKILL)

for _ in range(runs):
    marker = f"soak-{uuid.uuid4()}"
    child = subprocess.Popen([binary, "-q", "--kill-after", "200ms", "sh", "-c", FAMILY],
                             env=env(marker), stdin=subprocess.DEVNULL)
    time.sleep(0.1)
    child.send_signal(signal.SIGTERM)
    child.wait(timeout=30)
    assert child.returncode in (-15, 143), child.returncode
    survivors = settle(marker)
    left_signal += len(survivors)
    for pid in survivors:
        os.kill(pid, signal.SIGKILL)

files_left = 0
with tempfile.TemporaryDirectory() as tmp:
    for i in range(runs):
        marker = f"soak-{uuid.uuid4()}"
        mode = ["--hold-stdout"] if i % 2 == 0 else ["--stdin", "replay"]
        child = subprocess.Popen([binary, "-q", *mode, "sh", "-c", "head -c 8000000 /dev/zero; cat >/dev/null; sleep 30"],
                                 env=dict(env(marker), TMPDIR=tmp), stdin=subprocess.PIPE,
                                 stdout=subprocess.DEVNULL)
        if "--stdin" in mode:
            child.stdin.write(b"x" * 8_000_000)
            child.stdin.flush()
        time.sleep(0.3)
        child.kill()
        child.wait(timeout=30)
        files_left += len(os.listdir(tmp))
        for pid in alive_with(marker):  # SIGKILL leaves retry no chance to clean up its children
            os.kill(pid, signal.SIGKILL)

print(f"timeout soak: {runs} runs, {left_timeout} processes left")
print(f"SIGTERM soak: {runs} runs, {left_signal} processes left")
print(f"SIGKILL soak: {runs} runs, {files_left} temporary files left")
sys.exit(1 if left_timeout or left_signal or files_left else 0)
