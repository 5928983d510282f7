"""A /metrics endpoint on loopback for `fleet agent-status` tests: serves whatever body the test
sets (or a status, or nothing at all for a while), in a thread, stopped by the test."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


@dataclass
class Endpoint:
    port: int
    body: bytes = b""
    status: int = 200
    delay: float = 0.0  # seconds before answering (a hung agent)
    drip: float = 0.0  # seconds between the body's bytes (an endpoint that never finishes)
    hits: int = 0


@contextmanager
def metrics_endpoint() -> Iterator[Endpoint]:
    ep = Endpoint(0)

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            ep.hits += 1
            if ep.delay:
                time.sleep(ep.delay)
            try:
                self.send_response(ep.status)
                self.send_header("Content-Type", "text/plain; version=0.0.4")
                self.send_header("Content-Length", str(len(ep.body)))
                self.end_headers()
                if not ep.drip:
                    self.wfile.write(ep.body)
                for i in range(len(ep.body) if ep.drip else 0):
                    self.wfile.write(ep.body[i : i + 1])
                    self.wfile.flush()
                    time.sleep(ep.drip)
            except OSError:  # the client gave up first (the hung endpoint's test)
                pass

        def log_message(self, *args: object) -> None:
            pass

    srv = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    srv.daemon_threads = True
    ep.port = srv.server_address[1]
    t = threading.Thread(target=srv.serve_forever, daemon=True)
    t.start()
    try:
        yield ep
    finally:
        srv.shutdown()
        srv.server_close()
