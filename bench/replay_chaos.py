#!/usr/bin/env python3
"""--stdin replay under random producers: does every attempt that reads all get every byte?

Usage: replay_chaos.py RETRY_BINARY SEED RUNS
Each run pipes 0 B to 5 MiB, in 1 to 100 pieces with pauses, into 2 to 4 attempts that each read
all (and record a SHA-256), read 1000 bytes, or read nothing, and fail. Prints each bad run and
a count.
"""
import hashlib, os, random, subprocess, sys, tempfile, time

binary, seed, runs = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
rng = random.Random(seed)
bad = 0
scratch = tempfile.mkdtemp()
for _ in range(runs):
    data = os.urandom(rng.choice([0, 1, 4095, 65536, 1 << 20, 5 << 20]))
    want = hashlib.sha256(data).hexdigest()
    attempts = rng.choice([2, 3, 4])
    behaviours = [rng.choice(["all", "head", "none", "all"]) for _ in range(attempts)]
    actions = {"all": "sha256sum > {dir}/a{k}; exit 1;;",
               "head": "head -c 1000 > /dev/null; exit 1;;",
               "none": "exit 1;;"}
    script = "case $RETRY_ATTEMPT in " + " ".join(
        f"{k}) " + actions[b].format(dir=scratch, k=k) for k, b in enumerate(behaviours, 1)) + " esac"
    for k in range(1, attempts + 1):
        if os.path.exists(f"{scratch}/a{k}"):
            os.unlink(f"{scratch}/a{k}")
    step = max(rng.choice([1, 4096, 65536]), len(data) // 100 or 1)
    pause = rng.choice([0, 0.001, 0.02])
    p = subprocess.Popen([binary, "-q", "--stdin", "replay", "--attempts", str(attempts),
                          "--base", "0", "--", "sh", "-c", script],
                         stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        for offset in range(0, len(data), step):
            p.stdin.write(data[offset:offset + step])
            p.stdin.flush()
            time.sleep(pause)
        p.stdin.close()
    except BrokenPipeError:
        pass
    p.wait(timeout=60)
    for k, behaviour in enumerate(behaviours, 1):
        if behaviour != "all":
            continue
        path = f"{scratch}/a{k}"
        got = open(path).read().split()[0] if os.path.exists(path) else None
        if got != want:
            bad += 1
            print("BAD", len(data), behaviours, k, step, pause, got, p.stderr.read()[:200])
print("runs", runs, "bad", bad)
