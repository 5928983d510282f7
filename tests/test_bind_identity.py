"""bind names the process it acts on (psutil), and refuses a zombie."""

from __future__ import annotations

import subprocess
import sys
import time

from typer.testing import CliRunner

from ascendtune.cli.app import app
from tests import schemas

runner = CliRunner()


def test_json_names_the_process() -> None:
    child = subprocess.Popen(
        [sys.executable, "-c", "import time; time.sleep(30)", "--api-key", "s3cret"]
    )
    try:
        res = runner.invoke(
            app, ["bind", "--cpus", "0", "--pid", str(child.pid), "--dry-run", "--json"]
        )
        assert res.exit_code == 0, res.stderr
        proc = schemas.loads("bind", res.stdout)["process"]
        assert proc["name"].startswith("python")
        assert proc["status"] in ("sleeping", "running")
        assert "s3cret" not in " ".join(proc["cmdline"]) and "***" in proc["cmdline"]
    finally:
        child.kill()
        child.wait()


def test_zombie_is_refused() -> None:
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    deadline = time.monotonic() + 10
    # wait until it has exited but do not reap it: a zombie
    while time.monotonic() < deadline:
        with open(f"/proc/{child.pid}/stat") as f:
            if f.read().split(") ", 1)[1].startswith("Z"):
                break
        time.sleep(0.02)
    try:
        res = runner.invoke(app, ["bind", "--cpus", "0", "--pid", str(child.pid)])
        assert res.exit_code == 3
        assert "zombie" in res.stderr and len(res.stderr.strip().splitlines()) == 1
    finally:
        child.wait()
