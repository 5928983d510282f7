"""bind names the process it acts on (read from /proc as psutil reads it), and refuses a zombie."""

from __future__ import annotations

import os
import pwd
import subprocess
import sys
import time
from pathlib import Path

from ascendtune.host import affinity
from tests.support import schemas
from tests.support.cli import Cli


def test_json_names_the_process(cli: Cli) -> None:
    child = subprocess.Popen(
        [sys.executable, "-c", "import time; time.sleep(30)", "--api-key", "s3cret"]
    )
    try:
        res = cli("bind", "--cpus", "0", "--pid", str(child.pid), "--dry-run", "--json")
        assert res.exit_code == 0, res.stderr
        proc = schemas.loads("bind", res.stdout)["process"]
        assert proc["name"].startswith("python")
        assert proc["status"] in ("sleeping", "running")
        assert "s3cret" not in " ".join(proc["cmdline"]) and "***" in proc["cmdline"]
    finally:
        child.kill()
        child.wait()


def test_zombie_is_refused(cli: Cli) -> None:
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    deadline = time.monotonic() + 10
    # wait until it has exited but do not reap it: a zombie
    while time.monotonic() < deadline:
        with open(f"/proc/{child.pid}/stat") as f:
            if f.read().split(") ", 1)[1].startswith("Z"):
                break
        time.sleep(0.02)
    try:
        res = cli("bind", "--cpus", "0", "--pid", str(child.pid))
        assert res.exit_code == 3
        assert "zombie" in res.stderr and len(res.stderr.strip().splitlines()) == 1
    finally:
        child.wait()


def _fake_proc(tmp_path: Path, stat: bytes, cmdline: bytes, uid: int) -> str:
    d = tmp_path / "4242"
    d.mkdir()
    line = b"4242 (" + stat + b") S 1 4242 4242 0 -1 4194560 100 0 0 0\n"
    (d / "stat").write_bytes(line)
    (d / "task" / "4242").mkdir(parents=True)  # as /proc has it: the leader's own stat too
    (d / "task" / "4242" / "stat").write_bytes(line)
    (d / "cmdline").write_bytes(cmdline)
    (d / "status").write_bytes(
        f"Name:\tx\nUmask:\t0022\nUid:\t{uid}\t{uid}\t{uid}\t{uid}\n".encode()
    )
    return str(tmp_path)


def test_identity_is_read_as_psutil_reads_it(tmp_path: Path) -> None:
    """The fields psutil gave, without psutil: a 15-character name completed from the command
    line, a uid without a passwd entry named by number, a title rewritten with spaces."""
    free = next(u for u in range(60000, 65000) if not _has_user(u))
    proc = _fake_proc(tmp_path, b"vllm-worker-ran", b"/opt/bin/vllm-worker-rank0 --x\x00", free)
    ident = affinity.process_identity(4242, proc)
    assert ident is not None
    assert ident.name == "vllm-worker-rank0" and ident.status == "sleeping"
    assert ident.user == str(free)
    assert ident.cmdline == ("/opt/bin/vllm-worker-rank0", "--x")
    (tmp_path / "4242" / "cmdline").write_bytes(b"VLLM::Worker rank 0")
    ident = affinity.process_identity(4242, proc)
    assert ident is not None and ident.cmdline == ("VLLM::Worker", "rank", "0")
    assert ident.name == "vllm-worker-ran"  # the command line does not start with it
    (tmp_path / "4242" / "cmdline").write_bytes(b"")
    (tmp_path / "4242" / "status").unlink()
    ident = affinity.process_identity(4242, proc)
    assert ident is not None and ident.cmdline == () and ident.user is None
    assert affinity.process_identity(4243, proc) is None


def test_identity_names_the_owner_by_passwd() -> None:
    code = "import time; print('ready', flush=True); time.sleep(30)"
    child = subprocess.Popen([sys.executable, "-c", code, "a b"], stdout=subprocess.PIPE, text=True)
    try:
        assert child.stdout is not None and child.stdout.readline().strip() == "ready"
        ident = affinity.process_identity(child.pid)
        assert ident is not None
        assert ident.user == pwd.getpwuid(os.getuid()).pw_name
        assert ident.cmdline == (sys.executable, "-c", code, "a b")
    finally:
        child.kill()
        child.wait()


def _has_user(uid: int) -> bool:
    try:
        pwd.getpwuid(uid)
    except KeyError:
        return False
    return True
