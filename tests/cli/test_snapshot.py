"""`ascendtune snapshot`: what it writes replays the same host, folder or archive."""

from __future__ import annotations

import json
import tarfile
from pathlib import Path

from ascendtune.host.reader import read_host
from ascendtune.host.roots import DirRoot, open_root
from ascendtune.host.snapshot import redact_cmdline
from tests.support import schemas
from tests.support.builder import SysrootBuilder
from tests.support.cli import Cli
from tests.support.hosts import atlas_a2


def test_snapshot_folder_and_archive_replay(
    sysroot: SysrootBuilder, tmp_path: Path, cli: Cli
) -> None:
    atlas_a2(sysroot, cpuset="0-47")
    sysroot.proc(
        4242,
        comm="python3",
        cmdline=["vllm", "serve", "m", "--api-key", "sk-secret"],
        threads={4242: ("python3", "0-47"), 4243: ("acl_thread", "46")},
        fds={3: "/dev/davinci0"},
    )
    for dest in (tmp_path / "snap", tmp_path / "snap.tar.gz"):
        res = cli("snapshot", "--sysroot", str(sysroot.root), str(dest), "--json")
        assert res.exit_code == 0, res.stderr
        doc = schemas.loads("snapshot", res.stdout)
        assert doc["accelerators"] == 8 and doc["cpus_online"] == 192
        assert read_host(open_root(str(dest))) == read_host(DirRoot(sysroot.root))
    with tarfile.open(tmp_path / "snap.tar.gz") as tar:
        names = set(tar.getnames())
        assert "commands/npu-smi_info_-t_topo.txt" in names and "meta.json" in names
        assert "proc/4242/task/4243/status" in names
        link = tar.getmember("proc/4242/fd/3")
        assert link.issym() and link.linkname == "/dev/davinci0"
        cmdline = tar.extractfile("proc/4242/cmdline").read().decode()  # type: ignore[union-attr]
        assert "sk-secret" not in cmdline and "***" in cmdline


def test_doctor_replays_from_snapshot(sysroot: SysrootBuilder, tmp_path: Path, cli: Cli) -> None:
    atlas_a2(sysroot)
    sysroot.file("proc/sys/kernel/numa_balancing", "1\n").file("proc/sys/vm/swappiness", "60\n")
    dest = tmp_path / "s.tar.gz"
    assert cli("snapshot", "--sysroot", str(sysroot.root), str(dest)).exit_code == 0
    a = cli("doctor", "--sysroot", str(sysroot.root), "--json", "--section", "host")
    b = cli("doctor", "--sysroot", str(dest), "--json", "--section", "host")
    rows = lambda r: {c["id"]: c["status"] for c in schemas.loads("doctor", r.stdout)["checks"]}  # noqa: E731
    assert rows(a)["numa_balancing"] == rows(b)["numa_balancing"] == "fail"
    assert rows(a)["swappiness"] == rows(b)["swappiness"]


def test_live_snapshot_of_this_machine(tmp_path: Path, cli: Cli) -> None:
    dest = tmp_path / "live.tar.gz"
    res = cli("snapshot", str(dest))
    assert res.exit_code == 0, res.stderr
    with tarfile.open(dest) as tar:
        meta = json.loads(tar.extractfile("meta.json").read())  # type: ignore[union-attr]
    assert meta["proc_scanned"] is True and "tools" in meta and "arch" in meta
    # what it wrote reads back (nothing about this machine's hardware is asserted)
    assert read_host(open_root(str(dest))).cpus_online


def test_refuses_a_non_empty_folder(tmp_path: Path, sysroot: SysrootBuilder, cli: Cli) -> None:
    atlas_a2(sysroot)
    (tmp_path / "full").mkdir()
    (tmp_path / "full" / "x").write_text("x")
    res = cli("snapshot", "--sysroot", str(sysroot.root), str(tmp_path / "full"))
    assert res.exit_code == 5 and "not empty" in res.stderr


def test_redact() -> None:
    raw = (
        "\0".join(["vllm", "--api-key", "k", "--hf-token=t", "--port", "8000", "--password"]) + "\0"
    )
    out = redact_cmdline(raw).split("\0")
    assert out == ["vllm", "--api-key", "***", "--hf-token=***", "--port", "8000", "--password", ""]


def test_existing_target_needs_force(tmp_path: Path, sysroot: SysrootBuilder, cli: Cli) -> None:
    atlas_a2(sysroot)
    for dest in (tmp_path / "full", tmp_path / "host.tar.gz"):
        if dest.suffix == ".gz":
            dest.write_bytes(b"old")
        else:
            dest.mkdir()
            (dest / "old").write_text("x")
        args = ["snapshot", "--sysroot", str(sysroot.root), str(dest)]
        res = cli(*args)
        assert res.exit_code == 5, res.output
        assert len(res.stderr.splitlines()) == 1 and "--force" in res.stderr
        res = cli(*args, "--force", "--json")
        assert res.exit_code == 0, res.output
        doc = schemas.loads("snapshot", res.stdout)
        assert doc["accelerators"] == 8
        assert len(read_host(open_root(str(dest))).accelerators) == 8
        assert not (dest / "old").exists()


def test_snapshot_onto_a_file_is_one_line(
    tmp_path: Path, sysroot: SysrootBuilder, cli: Cli
) -> None:
    atlas_a2(sysroot)
    afile = tmp_path / "afile"
    afile.write_text("x")
    res = cli("snapshot", "--sysroot", str(sysroot.root), str(afile / "x.tar.gz"))
    assert res.exit_code == 5 and len(res.stderr.strip().splitlines()) == 1
