#!/usr/bin/env python3
"""The thundering-herd benchmark: N clients released together against a recovering service.

Usage: run.py RETRY_BINARY [N] [OUTAGE_S] [RATE] [BASE_S] [POLICIES]

BASE is the policy's base delay; every other time scales with it: the cap is 30 x BASE, requests
are counted in buckets of one BASE (a 1 s-equivalent), and the outage and RATE are given at the
run's own scale. With BASE = 1 s the run is the real thing, unscaled. Each client runs
`retry POLICY -- sh -c 'curl -fsS -H "X-Client: ID" -H "X-Attempt: $RETRY_ATTEMPT" URL'`;
the shell-loop policy runs `until curl ...; do sleep BASE; done` instead.
POLICIES picks rows by a comma-separated list of words their names contain (default: all).
HERD_STATE, when set (a Redis URL), is where the fleet rows keep their budget and breaker,
instead of a state directory of each cell's own.
The fleet rows give each client the same budget (and breaker) in a state directory of the
cell's own, with the budget's window and the breaker's cooldown at the run's scale (1 minute
at a 1 s base). Prints one markdown row per policy.
"""
import json, os, socket, statistics, subprocess, sys, tempfile, time

retry = sys.argv[1]
N = int(sys.argv[2]) if len(sys.argv) > 2 else 100
OUTAGE = float(sys.argv[3]) if len(sys.argv) > 3 else 20.0
RATE = float(sys.argv[4]) if len(sys.argv) > 4 else 20.0
BASE = float(sys.argv[5]) if len(sys.argv) > 5 else 1.0
PICK = sys.argv[6].split(",") if len(sys.argv) > 6 else None
STATE = os.environ.get("HERD_STATE")
CAP = 30 * BASE
SCALE = 1.0 / BASE  # seconds here -> seconds at a 1 s base
here = os.path.dirname(os.path.abspath(__file__))

POLICIES = [
    ("shell loop", None),
    ("--jitter none", ["--jitter", "none"]),
    ("--jitter full", ["--jitter", "full"]),
    ("--jitter equal (default)", []),
    ("--jitter decorrelated", ["--jitter", "decorrelated"]),
    ("--jitter 0.2", ["--jitter", "0.2"]),
    ("--budget herd", ["--budget", "herd", "--budget-floor", f"10/{60 * BASE}s"]),
    ("--budget herd --breaker herd", ["--budget", "herd", "--budget-floor", f"10/{60 * BASE}s",
                                      "--breaker", "herd", "--breaker-cooldown", f"{60 * BASE}s"]),
]
if PICK:
    POLICIES = [p for p in POLICIES if any(word in p[0] for word in PICK)]


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def cell(name, flags, workdir):
    port = free_port()
    log = os.path.join(workdir, f"log-{port}")
    server = subprocess.Popen([sys.executable, os.path.join(here, "server.py"), str(port), str(OUTAGE), str(RATE), str(BASE), log])
    for _ in range(200):
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.1).close()
            break
        except OSError:
            time.sleep(0.02)
    url = f"http://127.0.0.1:{port}/"
    barrier_r, barrier_w = os.pipe()
    pids = {}
    for client in range(N):
        curl = f'curl -fsS -o /dev/null --max-time 5 -H "X-Client: {client}" -H "X-Attempt: ${{RETRY_ATTEMPT:-0}}" {url} 2>/dev/null'
        if flags is None:
            argv = ["sh", "-c", f"n=1; until RETRY_ATTEMPT=$n; export RETRY_ATTEMPT; {curl}; do n=$((n+1)); sleep {BASE}; done"]
        else:
            state = STATE or f"{workdir}/state-{port}"
            # Each cell's own names, so that cells sharing one Redis start afresh.
            own = [f"{f}-{port}" if previous in ("--budget", "--breaker") else f
                   for previous, f in zip([None] + flags, flags)]
            argv = [retry, "--log-format", "json", "--forever", "--max-time", f"{600 * BASE}s", "--base", f"{BASE}s",
                    "--max", f"{CAP}s", f"--state={state}", *own, "--", "sh", "-c", curl]
        pid = os.fork()
        if pid == 0:
            os.close(barrier_w)
            os.read(barrier_r, 1)  # the start barrier: all clients wait here
            devnull = os.open(os.devnull, os.O_RDWR)
            events = os.open(os.path.join(workdir, f"events-{port}-{client}"), os.O_WRONLY | os.O_CREAT, 0o600)
            for fd in (0, 1):
                os.dup2(devnull, fd)
            os.dup2(events, 2)
            os.execvp(argv[0], argv)
        pids[pid] = client
    os.close(barrier_r)
    time.sleep(0.5)  # let every client reach the barrier
    released = time.monotonic()
    os.write(barrier_w, b"x" * N)
    done = []
    while pids:
        pid, status = os.wait()
        if pid in pids:
            done.append(time.monotonic() - released)
            del pids[pid]
    os.close(barrier_w)
    server.terminate()
    server.wait()
    rows = [line.split() for line in open(log)]
    times = [float(r[0]) for r in rows]
    ok = [float(r[0]) for r in rows if r[3] == "200"]
    during = sum(1 for t in times if t < OUTAGE)
    after = len(times) - during
    buckets = {}
    for t in times:
        if t >= OUTAGE:
            bucket = int(t / BASE)
            buckets[bucket] = buckets.get(bucket, 0) + 1
    peak = max(buckets.values()) if buckets else 0
    # The first delay each retry client drew (its first "retry" event), to the microsecond.
    first_delays = set()
    if flags is not None:
        for client in range(N):
            with open(os.path.join(workdir, f"events-{port}-{client}")) as f:
                for line in f:
                    event = json.loads(line)
                    if event["event"] == "retry":
                        first_delays.add(event["delay_ms"])
                        break
    done.sort()
    all_done = done[-1]
    p50 = statistics.median(done)
    p99 = done[min(len(done) - 1, int(0.99 * (len(done) - 1) + 0.5))]
    return {
        "name": name, "total": len(times), "during": during, "after": after, "ok": len(set(r[1] for r in rows if r[3] == "200")),
        "peak": peak, "all_done": all_done, "p50": p50, "p99": p99,
        "distinct": len(first_delays) if flags is not None else "-",
    }


def main():
    results = []
    with tempfile.TemporaryDirectory() as workdir:
        for name, flags in POLICIES:
            results.append(cell(name, flags, workdir))
    loop = next((r["total"] for r in results if r["name"] == "shell loop"), None)
    full = next((r["all_done"] for r in results if "full" in r["name"]), None)
    print(f"N={N}, outage {OUTAGE}s, recovery {RATE:.0f} req/s, base {BASE}s, cap {CAP}s "
          f"(times x{SCALE:g} for a 1 s base)\n")
    print("| policy | requests | during outage | during outage / N | after recovery | peak per 1 s-equivalent after recovery | clients served | all done (s) | p50 (s) | p99 (s) | distinct first delays | vs shell loop |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    for r in results:
        vs_loop = f"{r['total'] / loop:.2f}x" if loop else "-"
        print(f"| {r['name']} | {r['total']} | {r['during']} | {r['during'] / N:.2f} | {r['after']} | {r['peak']} | {r['ok']} | {r['all_done']:.2f} | "
              f"{r['p50']:.2f} | {r['p99']:.2f} | {r['distinct']} | {vs_loop} |")
    equal = next((r for r in results if "equal" in r["name"]), None)
    if equal and full:
        print(f"\ndefault policy: all done in {equal['all_done']:.2f}s = {equal['all_done'] / full:.2f}x of full jitter's {full:.2f}s")


main()
