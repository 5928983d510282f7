"""A real Prometheus (the distribution's package: /usr/bin/prometheus and promtool) for the agent
tests: started on loopback in tmp_path with a scrape configuration pointing at the agent, asked
through its HTTP query API, stopped by its own PID. Marked `prometheus`: the tier skips where the
binaries are missing, unless ASCENDTUNE_PROMETHEUS_TIER=required (.ci/run's own run of it)."""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import time
import urllib.parse
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

PROMETHEUS = shutil.which("prometheus") or "/usr/bin/prometheus"
PROMTOOL = shutil.which("promtool") or "/usr/bin/promtool"
HAVE = os.access(PROMETHEUS, os.X_OK) and os.access(PROMTOOL, os.X_OK)
REQUIRED = os.environ.get("ASCENDTUNE_PROMETHEUS_TIER") == "required"
DEFERRED = os.environ.get("ASCENDTUNE_PROMETHEUS_TIER") == "separate"
DEPLOY = Path(__file__).resolve().parents[2] / "deploy"
RULES = DEPLOY / "prometheus" / "ascendtune-rules.yml"
RULE_TESTS = DEPLOY / "prometheus" / "ascendtune-rules.test.yml"

# the marks of every test that runs Prometheus or promtool
tier = [
    pytest.mark.prometheus,
    pytest.mark.skipif(
        not HAVE and not REQUIRED,
        reason="Prometheus is not installed (apt-get install prometheus; .ci/run does)",
    ),
    pytest.mark.skipif(DEFERRED, reason="the Prometheus tier runs on its own in .ci/run"),
]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def promtool(*args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [PROMTOOL, *args],
        input=stdin,
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "LC_ALL": "C"},
        check=False,
    )


def get(url: str, timeout: float = 5.0) -> str:
    assert url.startswith("http://127.0.0.1:"), url  # loopback only
    with urllib.request.urlopen(url, timeout=timeout) as r:
        return str(r.read().decode())


@dataclass
class Prometheus:
    proc: subprocess.Popen[bytes]
    port: int
    log: Path

    def api(self, path: str, **params: str) -> Any:
        url = f"http://127.0.0.1:{self.port}/api/v1/{path}?{urllib.parse.urlencode(params)}"
        doc = json.loads(get(url))
        assert doc["status"] == "success", doc
        return doc["data"]

    def query(self, expr: str) -> list[tuple[dict[str, str], float]]:
        data = self.api("query", query=expr)
        return [(r["metric"], float(r["value"][1])) for r in data["result"]]

    def wait(
        self,
        expr: str,
        ok: Callable[[list[tuple[dict[str, str], float]]], bool],
        timeout: float = 40.0,
    ) -> list[tuple[dict[str, str], float]]:
        """Poll expr until ok(result); the last result in the failure message."""
        end = time.monotonic() + timeout
        got: list[tuple[dict[str, str], float]] = []
        while time.monotonic() < end:
            assert self.proc.poll() is None, self.log.read_text()[-2000:]
            got = self.query(expr)
            if ok(got):
                return got
            time.sleep(0.5)
        raise AssertionError(f"{expr}: still {got} after {timeout}s")

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()  # its own PID, nothing else
            try:
                self.proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=10)


def start(tmp: Path, target: str, *, rule_files: tuple[Path, ...] = ()) -> Prometheus:
    """Prometheus scraping `target` (host:port on loopback) every second."""
    assert target.startswith("127.0.0.1:"), target
    tmp.mkdir(parents=True, exist_ok=True)
    cfg = tmp / "prometheus.yml"
    lines = [
        "global:",
        "  scrape_interval: 1s",
        "  evaluation_interval: 1s",
        "scrape_configs:",
        "  - job_name: ascendtune",
        "    static_configs:",
        f"      - targets: ['{target}']",
    ]
    if rule_files:
        lines += ["rule_files:", *(f"  - '{p}'" for p in rule_files)]
    cfg.write_text("\n".join(lines) + "\n")
    port = free_port()
    log = tmp / "prometheus.log"
    with open(log, "wb") as out:
        proc = subprocess.Popen(
            [
                PROMETHEUS,
                f"--config.file={cfg}",
                f"--storage.tsdb.path={tmp / 'tsdb'}",
                f"--web.listen-address=127.0.0.1:{port}",
                "--log.level=warn",
            ],
            stdout=out,
            stderr=subprocess.STDOUT,
            env={**os.environ, "LC_ALL": "C"},
        )
    p = Prometheus(proc, port, log)
    end = time.monotonic() + 30
    while time.monotonic() < end:
        assert proc.poll() is None, log.read_text()[-2000:]
        try:
            get(f"http://127.0.0.1:{port}/-/ready", timeout=1)
            return p
        except OSError:
            time.sleep(0.2)
    p.stop()
    raise AssertionError("Prometheus did not become ready in 30 s: " + log.read_text()[-2000:])
