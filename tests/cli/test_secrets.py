"""No secret reaches any output (issue 27 item 3): every form of the catalogue
(tests/support/secrets.py) is planted in a worker's command line and environment, a server log
or a launched command, and each output path is read whole (stdout, stderr, files written)."""

from __future__ import annotations

import gzip
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support import secrets
from tests.support.builder import SysrootBuilder
from tests.support.children import CHILD, assert_ready, popen_child
from tests.support.cli import Cli
from tests.support.hosts import atlas_a2

TOP = Path(__file__).resolve().parents[2]
API_SERVER = 4200
WORKER = 4242


@pytest.fixture
def planted(tmp_path: Path) -> Path:
    """An Atlas A2 whose vLLM API server and NPU worker carry every form of secret."""
    b = atlas_a2(SysrootBuilder(tmp_path / "host"))
    argv = secrets.argv()
    b.proc(API_SERVER, comm="vllm", cmdline=argv)
    b.proc(
        WORKER,
        comm="VLLMWorker",
        cmdline=argv,
        cpus_allowed="144-167",
        threads={WORKER: ("VLLMWorker", "144-167"), WORKER + 1: ("acl_thread", "144-167")},
        fds={3: "/dev/davinci0"},
    )
    b.file(f"proc/{WORKER}/stat", f"{WORKER} (VLLMWorker) S {API_SERVER} {WORKER} 1 0 -1 0 1 0\n")
    b.file(f"proc/{API_SERVER}/stat", f"{API_SERVER} (vllm) S 1 {API_SERVER} 1 0 -1 0 1 0\n")
    for pid in (API_SERVER, WORKER):
        b.file(f"proc/{pid}/environ", secrets.environ_text())
    # an older snapshot's meta.json recorded the environment unmasked
    meta = json.loads((b.root / "meta.json").read_text())
    b.file("meta.json", json.dumps({**meta, "env": secrets.environ()}))
    # a tool that failed saying what it was given
    b.file("commands/npu-smi_info_-t_topo.err", "npu-smi: bad header Bearer LEAK90tool\n")
    return b.root


def assert_no_leak(res: object, *files: Path) -> None:
    out, err = getattr(res, "stdout", ""), getattr(res, "stderr", "")
    assert secrets.leaks(out, err) == [], (out[-2000:], err[-2000:])
    for f in files:
        assert secrets.leaks_in_files(f) == {}


@pytest.mark.parametrize(
    "args",
    [
        ["doctor"],
        ["doctor", "--json"],
        ["doctor", "--section", "workers", "--json"],
        ["bind", "--workers", "--dry-run"],
        ["bind", "--workers", "--dry-run", "--json"],
    ],
    ids=" ".join,
)
def test_doctor_and_bind_workers(planted: Path, args: list[str], cli: Cli) -> None:
    res = cli(*args, "--sysroot", str(planted))
    assert res.exit_code in (0, 1), res.output
    assert str(WORKER) in res.stdout  # the worker was found, so its command line was read
    assert_no_leak(res)


def test_check_config_pid(planted: Path, cli: Cli) -> None:
    for json_out in ([], ["--json"]):
        res = cli("check-config", "--pid", str(API_SERVER), "--sysroot", str(planted), *json_out)
        assert res.exit_code in (0, 1, 5), res.output
        assert_no_leak(res)


def test_check_config_pid_error_line(tmp_path: Path, cli: Cli) -> None:
    # not vLLM: the error line quotes the command line
    b = atlas_a2(SysrootBuilder(tmp_path / "host"))
    b.proc(77, cmdline=secrets.argv(head=["python3", "server.py"]))
    res = cli("check-config", "--pid", "77", "--sysroot", str(b.root))
    assert res.exit_code == 3 and "is not vLLM" in res.stderr, res.output
    assert_no_leak(res)
    # vLLM, with a config that does not parse: the error names the argument
    bad = ["vllm", "serve", "m", *secrets.argv(head=[]), "--additional-config", "{bad"]
    b.proc(78, cmdline=bad)
    res = cli("check-config", "--pid", "78", "--sysroot", str(b.root))
    assert res.exit_code == 5, res.output
    assert_no_leak(res)


@pytest.mark.parametrize("dest", ["snap", "snap.tar.gz"])
def test_snapshot(planted: Path, tmp_path: Path, dest: str, cli: Cli) -> None:
    out = tmp_path / "out"
    res = cli("snapshot", "--sysroot", str(planted), str(out / dest))
    assert res.exit_code == 0, res.output
    assert_no_leak(res, out)
    # what is not secret stays, so the replay sees the same server
    snap = out / dest
    if snap.is_dir():
        cmdline = (snap / f"proc/{WORKER}/cmdline").read_text()
        assert "--max-num-batched-tokens\x008192" in cmdline
        assert "TOKENIZERS_PARALLELISM=false" in (snap / f"proc/{WORKER}/environ").read_text()


def test_log(tmp_path: Path, cli: Cli) -> None:
    log = tmp_path / "server.log"
    log.write_text("\n".join(secrets.LOG_LINES) + "\n")
    for json_out in ([], ["--json"]):
        res = cli("log", str(log), *json_out)
        assert res.exit_code in (0, 1), res.output
        assert_no_leak(res)


def test_launch_dry_run(cli: Cli) -> None:
    cpu = str(min(os.sched_getaffinity(0)))
    for json_out in ([], ["--json"]):
        res = cli("bind", "--cpus", cpu, "--dry-run", *json_out, "--", *secrets.argv(head=["true"]))
        assert res.exit_code == 0, res.output
        assert "true" in res.stdout
        assert_no_leak(res)


def test_launch_stderr(tmp_path: Path) -> None:
    # the real launch: ascendtune says what it starts on stderr, then becomes the command
    cpu = str(min(os.sched_getaffinity(0)))
    res = subprocess.run(
        [sys.executable, "-m", "ascendtune", "bind", "--cpus", cpu, "--",
         *secrets.argv(head=["true"])],
        capture_output=True, text=True, timeout=120, cwd=TOP,
        env=dict(os.environ, PYTHONPATH=str(TOP)), check=False,
    )  # fmt: skip
    assert res.returncode == 0, res.stderr
    assert "running `true" in res.stderr
    assert_no_leak(res)


@pytest.fixture
def live_child() -> object:
    """A process of this machine whose command line carries every form."""
    p = popen_child(CHILD, json.dumps({"threads": 1}), *secrets.argv(head=[]))
    assert_ready(p)
    yield p
    assert p.stdin is not None
    p.stdin.close()
    p.wait(timeout=30)


def test_bind_pid(live_child: subprocess.Popen[str], cli: Cli) -> None:
    cpus = ",".join(str(c) for c in sorted(os.sched_getaffinity(live_child.pid)))
    for extra in (["--json"], [], ["--show", "--json"], ["--show"]):
        res = cli("bind", "--pid", str(live_child.pid), "--cpus", cpus, "--dry-run", *extra)
        assert res.exit_code == 0, res.output
        assert_no_leak(res)
    doc = json.loads(cli("bind", "--pid", str(live_child.pid), "--cpus", cpus, "--json").stdout)
    assert "--max-num-batched-tokens" in json.dumps(doc)  # the command line is there, masked
    assert secrets.leaks(json.dumps(doc)) == []


def test_watch_pid(live_child: subprocess.Popen[str], cli: Cli) -> None:
    for extra in (["--json"], []):
        res = cli("watch", "--pid", str(live_child.pid), "--once", "--interval", "0.1", *extra)
        assert res.exit_code == 0, res.output
        assert_no_leak(res)


def test_fleet_compare(
    planted: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, cli: Cli
) -> None:
    folder = tmp_path / "fleet"
    monkeypatch.chdir(tmp_path)  # relative labels (an absolute one hits issue 26 item 7)
    for node in ("a", "b"):
        res = cli("snapshot", "--sysroot", str(planted), str(folder / f"{node}.tar.gz"))
        assert res.exit_code == 0, res.output
    for json_out in ([], ["--json"]):
        res = cli("fleet", "compare", "fleet", *json_out)
        assert res.exit_code in (0, 1), res.output
        assert_no_leak(res, folder)


@pytest.mark.parametrize("dest", ["snap", "snap.tar.gz"])
def test_snapshot_keeps_a_digest_of_machine_id(tmp_path: Path, dest: str, cli: Cli) -> None:
    # issue 26 item 12: the id stays on the host; the snapshot carries the digest JSON
    # documents carry, and a replay reports it as the host's
    machine_id = "5f1d3c0a9b8e4d7f8a6b5c4d3e2f1a0b"
    b = atlas_a2(SysrootBuilder(tmp_path / "host"))
    b.file("etc/machine-id", machine_id + "\n")
    snap = tmp_path / "out" / dest
    assert cli("snapshot", "--sysroot", str(b.root), str(snap)).exit_code == 0
    for f in (snap.parent).rglob("*"):
        if f.is_file():
            raw = f.read_bytes()
            data = gzip.decompress(raw) if f.name.endswith(".gz") else raw
            assert machine_id.encode() not in data, f
    digests = []
    for root in (b.root, snap):
        doc = json.loads(cli("topo", "--json", "--sysroot", str(root)).stdout)
        digests.append(doc["host"]["machine_id_sha256"])
    assert digests[0] is not None and digests[0] == digests[1]
