#!/usr/bin/env python3
"""A simulated fleet against a service that is down, its budget and breaker kept in one Redis.

Usage: fleet.py RETRY_BINARY REDIS_URL REDIS_PID [RUNS] [SPREAD_S] [RETRIES] [LIMITS]

RUNS runs of `retry --state=REDIS_URL --budget fleet-P --breaker fleet-P --retries RETRIES
--base 100ms -- curl -fsS URL` start at random times over SPREAD_S seconds, as the cron jobs of
many hosts would (LIMITS "budget": the budget alone, no breaker), against a server on 127.0.0.1 that answers 503 to everything (bench/herd's
server with an outage longer than the run). Prints the requests the server saw, the first
attempts (one per run), their ratio, how the runs ended, and the Redis server's CPU time
(from /proc/REDIS_PID/stat) over the whole of it.
"""
import collections, os, random, socket, subprocess, sys, tempfile, time

retry, url_state, redis_pid = sys.argv[1], sys.argv[2], int(sys.argv[3])
RUNS = int(sys.argv[4]) if len(sys.argv) > 4 else 500
SPREAD = float(sys.argv[5]) if len(sys.argv) > 5 else 10.0
RETRIES = sys.argv[6] if len(sys.argv) > 6 else "5"
LIMITS = sys.argv[7] if len(sys.argv) > 7 else "both"
here = os.path.dirname(os.path.abspath(__file__))


def cpu_seconds(pid):
    fields = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


with tempfile.TemporaryDirectory() as workdir:
    port = free_port()
    log = os.path.join(workdir, "log")
    server = subprocess.Popen([sys.executable, os.path.join(here, "herd", "server.py"), str(port), "100000", "20", "1", log])
    for _ in range(200):
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.1).close()
            break
        except OSError:
            time.sleep(0.02)
    names = f"fleet-{port}"
    starts = sorted(random.uniform(0, SPREAD) for _ in range(RUNS))
    cpu_before = cpu_seconds(redis_pid)
    began = time.monotonic()
    children = []
    for at in starts:
        delay = began + at - time.monotonic()
        if delay > 0:
            time.sleep(delay)
        curl = f"curl -fsS -o /dev/null --max-time 5 http://127.0.0.1:{port}/"
        limits = ["--budget", names] + (["--breaker", names] if LIMITS == "both" else [])
        children.append(subprocess.Popen(
            [retry, f"--state={url_state}", *limits, "--retries", RETRIES,
             "--base", "100ms", "--quiet", "--", "sh", "-c", curl],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
    statuses = collections.Counter(child.wait() for child in children)
    took = time.monotonic() - began
    cpu = cpu_seconds(redis_pid) - cpu_before
    server.terminate()
    server.wait()
    requests = sum(1 for _ in open(log))
    print(f"{RUNS} runs over {SPREAD:g}s (--retries {RETRIES}, {LIMITS}), all ended in {took:.1f}s")
    print(f"requests {requests}, first attempts at most {RUNS}: requests / runs = {requests / RUNS:.2f}")
    print(f"exit statuses: {dict(sorted(statuses.items()))} (75: the breaker was open before the first attempt)")
    print(f"Redis server CPU time: {cpu * 1000:.0f} ms in all, {cpu * 1e6 / RUNS:.0f} us per run")
