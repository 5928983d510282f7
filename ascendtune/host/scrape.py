"""One HTTP GET of an agent's `/metrics` (`fleet agent-status`): plain http.client to exactly
the address given, under a deadline, bounded in size; no proxy from the environment and no
redirect followed, so only the address Ray reported is ever contacted."""

from __future__ import annotations

import http.client
import time
from typing import NamedTuple

MAX_BYTES = 16 * 1024 * 1024  # an agent's exposition is tens of KiB; more is no agent's


class Fetched(NamedTuple):
    text: str | None  # the body (None: no answer, see why)
    why: str | None  # why there is no body: "connection refused", "no answer in 2 s", ...
    seconds: float


def fetch_metrics(host: str, port: int, timeout: float, path: str = "/metrics") -> Fetched:
    t0 = time.monotonic()

    def done(text: str | None, why: str | None) -> Fetched:
        return Fetched(text, why, round(time.monotonic() - t0, 3))

    conn = http.client.HTTPConnection(host, port, timeout=timeout)
    try:
        conn.request("GET", path, headers={"Accept": "text/plain"})
        resp = conn.getresponse()
        if resp.status != 200:
            return done(None, f"HTTP {resp.status} {resp.reason}".strip())
        # piece by piece under one deadline for the whole answer: the socket's timeout is per
        # read, and an endpoint that drips a byte at a time would otherwise never be done
        pieces: list[bytes] = []
        got = 0
        while True:
            if time.monotonic() - t0 > timeout:
                return done(None, f"answer not complete in {timeout:g} s")
            piece = resp.read1(65536)
            if not piece:
                break
            pieces.append(piece)
            got += len(piece)
            if got > MAX_BYTES:
                return done(None, f"answer larger than {MAX_BYTES // (1024 * 1024)} MiB")
        body = b"".join(pieces)
        try:
            return done(body.decode("utf-8"), None)
        except UnicodeDecodeError:
            return done(None, "answer is not UTF-8 text")
    except ConnectionRefusedError:
        return done(None, "connection refused")
    except TimeoutError:
        return done(None, f"no answer in {timeout:g} s")
    except http.client.HTTPException as e:
        return done(None, f"not an HTTP answer ({type(e).__name__})")
    except (OSError, UnicodeError) as e:
        why = (e.strerror if isinstance(e, OSError) else None) or type(e).__name__
        return done(None, why.lower() if why else "unreachable")
    finally:
        conn.close()
