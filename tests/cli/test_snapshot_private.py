"""snapshot is atomic and private, and masks every form of secret (issue 18, item 6)."""

from __future__ import annotations

import gzip
import io
import os
import stat
from pathlib import Path

import pytest

from ascendtune.core.errors import AscendtuneError, InvalidInput
from ascendtune.core.redact import redact_args, redact_environ
from ascendtune.host import reader, snapshot
from ascendtune.host.roots import DirRoot
from tests.support.builder import SysrootBuilder
from tests.support.cli import Cli
from tests.support.hosts import atlas_a2

# each form of secret, planted in a worker's command line (and environment), by a unique value
ARGS = {
    "short flag -k": ["-k", "sk-AAAAshortflag111"],
    "long flag": ["--api-key", "LONGFLAG222"],
    "long flag =": ["--hf-token=EQFLAG333"],
    "json api_key": ["--additional-config", '{"api_key": "JSONKEY444", "x": 1}'],
    "json nested token": ["--kv-transfer-config", '{"extra": {"auth_token": "NESTED555"}}'],
    "bearer": ["--header", "Authorization: Bearer BEARER666.abc"],
    "url credentials": ["--model", "https://user:URLTOK777@hub.example/m"],
    "hf token shape": ["--note", "hf_AAAAAAAAAAHFSHAPE888"],
}
ENVIRON = {
    "HF_TOKEN": "ENVTOK901",
    "OPENAI_API_KEY": "sk-ENVKEY902xxxxxx",
    "DB_PASSWORD": "ENVPW903",
    "MY_SECRET": "ENVSECRET904",
    "PROXY_URL": "http://u:ENVURL905@proxy:3128",
    "AUTH_HEADER": "Bearer ENVBEARER906",
}
VALUES = [
    "AAAAshortflag111",
    "LONGFLAG222",
    "EQFLAG333",
    "JSONKEY444",
    "NESTED555",
    "BEARER666",
    "URLTOK777",
    "HFSHAPE888",
    *[v.split("@")[0].split(":")[-1].split()[-1].removeprefix("sk-") for v in ENVIRON.values()],
]


def _worker(sysroot: SysrootBuilder) -> None:
    atlas_a2(sysroot, cpuset="0-47")
    argv = ["vllm", "serve", "m"] + [a for args in ARGS.values() for a in args]
    sysroot.proc(
        4242,
        cmdline=argv,
        threads={4242: ("python3", "0-47")},
        fds={3: "/dev/davinci0"},
    )
    env = "\0".join(f"{k}={v}" for k, v in {"PATH": "/usr/bin", **ENVIRON}.items()) + "\0"
    sysroot.file("proc/4242/environ", env)


def test_every_form_of_secret_is_masked_in_the_archive(
    sysroot: SysrootBuilder, tmp_path: Path, cli: Cli
) -> None:
    _worker(sysroot)
    dest = tmp_path / "s.tar.gz"
    res = cli("snapshot", "--sysroot", str(sysroot.root), str(dest))
    assert res.exit_code == 0, res.stderr
    raw = gzip.decompress(dest.read_bytes())
    assert b"proc/4242/cmdline" in raw and b"proc/4242/environ" in raw
    leaked = [v for v in VALUES if v.encode() in raw]
    assert leaked == []
    assert b"PATH=/usr/bin" in raw and b'"x": 1' in raw  # what is not secret stays


def test_redaction_keeps_what_is_not_secret() -> None:
    argv = [
        "--speculative-config",
        '{"num_speculative_tokens": 3}',
        "--max-num-batched-tokens",
        "8",
    ]
    assert redact_args(argv) == argv
    assert (
        redact_environ("TOKENIZERS_PARALLELISM=false\0PWD=/x")
        == "TOKENIZERS_PARALLELISM=false\0PWD=/x"
    )
    assert redact_environ("PATH=/bin\0LANG=C") == "PATH=/bin\0LANG=C"


def _modes(root: Path) -> set[str]:
    out = set()
    for dirpath, dirs, files in os.walk(root):
        for d in dirs:
            out.add(f"d{stat.S_IMODE(os.lstat(os.path.join(dirpath, d)).st_mode):o}")
        for f in files:
            st = os.lstat(os.path.join(dirpath, f))
            if not stat.S_ISLNK(st.st_mode):
                out.add(f"f{stat.S_IMODE(st.st_mode):o}")
    return out


def test_snapshot_is_private(sysroot: SysrootBuilder, tmp_path: Path) -> None:
    _worker(sysroot)
    tmp_path = tmp_path / "out"
    tmp_path.mkdir()
    old = os.umask(0o022)
    try:
        cap = snapshot.capture(DirRoot(sysroot.root))
        folder = snapshot.write(cap, str(tmp_path / "snap"))
        archive = snapshot.write(cap, str(tmp_path / "snap.tar.gz"))
    finally:
        os.umask(old)
    assert _modes(folder) <= {"d700", "f600"}
    assert stat.S_IMODE(folder.stat().st_mode) == 0o700
    assert stat.S_IMODE(archive.stat().st_mode) == 0o600
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []


def test_an_existing_target_needs_force(sysroot: SysrootBuilder, tmp_path: Path) -> None:
    atlas_a2(sysroot)
    cap = snapshot.capture(DirRoot(sysroot.root))
    tmp_path = tmp_path / "out"
    tmp_path.mkdir()
    dest = tmp_path / "s.tar.gz"
    dest.write_bytes(b"precious")
    with pytest.raises(InvalidInput, match="exists"):
        snapshot.write(cap, str(dest))
    assert dest.read_bytes() == b"precious"
    snapshot.write(cap, str(dest), force=True)
    assert dest.read_bytes()[:2] == b"\x1f\x8b"
    folder = tmp_path / "f"
    folder.mkdir()
    (folder / "x").write_text("x")
    with pytest.raises(InvalidInput, match="not empty"):
        snapshot.write(cap, str(folder))
    snapshot.write(cap, str(folder), force=True)
    assert not (folder / "x").exists() and (folder / "meta.json").exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["f", "s.tar.gz"]


def test_a_failed_read_back_or_write_leaves_nothing(
    sysroot: SysrootBuilder, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    atlas_a2(sysroot)
    cap = snapshot.capture(DirRoot(sysroot.root))
    tmp_path = tmp_path / "out"
    tmp_path.mkdir()

    # a writer that loses a file: the written snapshot answers the capture's read_host
    # otherwise, so the host is read from it again, and refused
    lost = dict(cap.files)
    del lost["sys/devices/system/cpu/online"]
    monkeypatch.setattr(cap, "files", lost)
    for name in ("a.tar.gz", "folder"):
        with pytest.raises(AscendtuneError, match=r"does not read back: .*online is missing"):
            snapshot.write(cap, str(tmp_path / name))
    monkeypatch.undo()

    def refuse(root: object) -> None:
        raise InvalidInput("no CPUs")

    # a capture the reader refused is read back in full
    monkeypatch.setattr(reader, "read_host", refuse)
    monkeypatch.setattr(cap, "asked", None)
    for name in ("a2.tar.gz", "folder2"):
        with pytest.raises(InvalidInput, match="does not read back"):
            snapshot.write(cap, str(tmp_path / name))
    monkeypatch.undo()

    class Full(io.RawIOBase):  # the archive's file: every write finds the disk full
        def __init__(self, fd: int, mode: str, closefd: bool = True) -> None:
            super().__init__()

        def writable(self) -> bool:
            return True

        def write(self, data: object) -> int:
            raise OSError(28, "No space left on device")

    def full(fd: int, data: object) -> int:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(snapshot.io, "FileIO", Full)
    monkeypatch.setattr(snapshot.os, "write", full)  # a folder's files
    for name in ("b.tar.gz", "b"):
        with pytest.raises(InvalidInput, match="No space left"):
            snapshot.write(cap, str(tmp_path / name))
    assert list(tmp_path.iterdir()) == []


def test_the_read_back_reads_the_host_again_only_when_an_answer_differs(
    sysroot: SysrootBuilder, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    atlas_a2(sysroot)
    # the reader resolves this process's cpuset from these (doctor captures them too)
    sysroot.file("proc/self/cgroup", "0::/user.slice\n")
    sysroot.file("sys/fs/cgroup/user.slice/cpuset.cpus.effective", "0-3\n")
    cap = snapshot.capture(DirRoot(sysroot.root))
    assert cap.host is not None and cap.asked
    read_host = reader.read_host
    roots: list[object] = []

    def counted(root: object) -> object:
        roots.append(root)
        return read_host(root)  # type: ignore[arg-type]

    monkeypatch.setattr(reader, "read_host", counted)
    for name in ("a.tar.gz", "a.tar", "folder"):
        snapshot.write(cap, str(tmp_path / name))
    assert roots == []  # the written snapshots answered as the capture did
    # the NPU table a replay reads, changed in what is written: read again (and still a host)
    smi = next(k for k in cap.files if k.startswith("commands/npu-smi_info") and "-t" not in k)
    monkeypatch.setitem(cap.files, smi, cap.files[smi] + "\n")
    snapshot.write(cap, str(tmp_path / "b.tar.gz"))
    assert len(roots) == 1
