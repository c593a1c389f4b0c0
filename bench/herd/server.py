#!/usr/bin/env python3
"""The recovering service of the herd benchmark, on 127.0.0.1 only.

Usage: server.py PORT OUTAGE_SECONDS RATE BASE LOG
From the first request on, answers 503 for OUTAGE_SECONDS; then admits RATE requests per second
through a token bucket holding one BASE's worth, a 1 s-equivalent (excess: 503). Logs every request as
"seconds_since_first client attempt status" to LOG.
"""
import http.server, socketserver, sys, threading, time

port, outage, rate, base, log_path = int(sys.argv[1]), float(sys.argv[2]), float(sys.argv[3]), float(sys.argv[4]), sys.argv[5]
depth = rate * base
lock = threading.Lock()
state = {"start": None, "tokens": depth, "refilled": None}
log = open(log_path, "w", buffering=1)


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.0"

    def do_GET(self):
        now = time.monotonic()
        with lock:
            if state["start"] is None:
                state["start"] = now
            since = now - state["start"]
            if since < outage:
                status = 503
            else:
                last = state["refilled"] if state["refilled"] is not None else state["start"] + outage
                state["tokens"] = min(depth, state["tokens"] + (now - last) * rate)
                state["refilled"] = now
                if state["tokens"] >= 1:
                    state["tokens"] -= 1
                    status = 200
                else:
                    status = 503
            log.write(f"{since:.6f} {self.headers.get('X-Client', '-')} {self.headers.get('X-Attempt', '-')} {status}\n")
        body = b"ok\n" if status == 200 else b"unavailable\n"
        self.send_response(status)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


class Server(socketserver.ThreadingMixIn, http.server.HTTPServer):
    daemon_threads = True
    request_queue_size = 1024


Server(("127.0.0.1", port), Handler).serve_forever()
