#!/usr/bin/env python3
"""Background writers and late readers: does every byte arrive, in order, on the right stream?

Usage: late_readers.py RETRY_BINARY SEED RUNS
Each run leaves a writer of `seq N` behind the first attempt, starting a little later, on stdout
or stderr, under a pattern or --hold-stdout or both, with or without a --timeout that later
attempts may reach, and reads retry's output only after a pause. The lines must all arrive, in order: on the watched stream; under --hold-stdout on stderr
(with one attempt, split between stdout, while the attempt's output is held, and stderr).
Prints each bad run and a count.
"""
import random, subprocess, sys, threading, time

binary, seed, runs = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
rng = random.Random(seed)
bad = 0
for _ in range(runs):
    n = rng.choice([10, 1000, 50000, 200000])
    start = rng.choice(["0", "0.05", "0.12", "0.3"])
    second = rng.choice(["0", "0.1", "0.3"])
    mode = rng.choice(["hold", "out", "err", "hold+err"])
    attempts = rng.choice([1, 2, 3])
    args = [binary, "-q", "--attempts", str(attempts), "--base", rng.choice(["0", "50ms"]),
            "--timeout", rng.choice(["0", "100ms", "1s"]), "--kill-after", "100ms"]
    redirect = ">&2" if mode == "err" else ""
    if "hold" in mode:
        args += ["--hold-stdout"]
    if mode == "out":
        args += ["--until-stdout", "^never$"]
    if "err" in mode:
        args += ["--retry-if-stderr", "^never$"]
    script = (f"[ $RETRY_ATTEMPT = 1 ] && {{ (sleep {start}; seq {n} {redirect}) & exit 1; }}; "
              f"sleep {second}; exit 1")
    pause = rng.choice([0, 0.1, 0.5, 1.0])
    p = subprocess.Popen(args + ["sh", "-c", script], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    err = []
    reader = threading.Thread(target=lambda: err.append(p.stderr.read()))
    reader.start()
    time.sleep(pause)
    out = p.stdout.read()
    p.wait(timeout=60)
    reader.join(timeout=60)
    expected = "".join(f"{k}\n" for k in range(1, n + 1)).encode()
    if mode.startswith("hold") and attempts == 1:
        got, other = out + err[0], b""
    elif mode.startswith("hold") or mode == "err":
        got, other = err[0], out
    else:
        got, other = out, err[0]
    if got != expected or other:
        bad += 1
        print("BAD", dict(n=n, start=start, second=second, mode=mode, attempts=attempts,
                          pause=pause, got=len(got), expected=len(expected), other=len(other)))
print("runs", runs, "bad", bad)
