"""A captured folder is a closed world: links resolve inside it, only regular files are read,
every read and archive is bounded (issue 18, items 1 and 2)."""

from __future__ import annotations

import gzip
import io
import json
import os
import stat
import subprocess
import sys
import tarfile
import zlib
from pathlib import Path

import pytest

from ascendtune.core.errors import InvalidInput, MissingError, PermissionDenied
from ascendtune.host.files import read_plan_json, read_user_file
from ascendtune.host.roots import DirRoot, archive, open_archive, open_root, walker
from ascendtune.host.snapshot import capture
from tests.support.builder import SysrootBuilder
from tests.support.cli import CLI, Cli
from tests.support.hosts import atlas_a2
from tests.support.tars import tar_of

SECRET = "OUTSIDE-SECRET-7f3a"
ONLINE = "sys/devices/system/cpu/online"


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    """A folder beside the sysroot holding a secret that must never be read through it."""
    out = tmp_path / "outside"
    out.mkdir()
    (out / "secret").write_text(SECRET + "\n")
    (out / "sub").mkdir()
    (out / "sub" / "online").write_text(SECRET + "\n")
    return out


def _commands(root: Path) -> list[list[str]]:
    s = str(root)
    return [
        ["topo", "--sysroot", s],
        ["topo", "--sysroot", s, "--json"],
        ["plan", "--sysroot", s],
        ["plan", "--sysroot", s, "--json"],
        ["doctor", "--sysroot", s, "--json"],
        ["check-config", "--sysroot", s, "{}"],
    ]


def _no_leak(root: Path, tmp_path: Path) -> None:
    for argv in _commands(root):
        res = CLI(*argv)
        assert res.exit_code in (0, 1, 3, 4, 5), (argv, res.output)
        assert SECRET not in res.stdout + res.stderr, argv
        assert "Traceback" not in res.stdout + res.stderr
        assert len(res.stderr.strip().splitlines()) <= 1, (argv, res.stderr)
    dest = tmp_path / f"snap-{len(list(tmp_path.iterdir()))}.tar.gz"
    res = CLI("snapshot", "--sysroot", str(root), str(dest))
    assert res.exit_code in (0, 3, 4, 5), res.output
    if dest.exists():
        assert SECRET.encode() not in gzip.decompress(dest.read_bytes())


LINKS = {
    "absolute file": lambda out: str(out / "secret"),
    "relative escape": lambda out: "../../../../../outside/secret",
    "absolute dir": lambda out: str(out / "sub"),
    "proc environ": lambda out: "/proc/self/environ",
    "etc shadow": lambda out: "/etc/shadow",
    "dev zero": lambda out: "/dev/zero",
}


@pytest.mark.parametrize("kind", sorted(LINKS))
def test_a_link_out_of_the_sysroot_reads_nothing_outside(
    kind: str,
    sysroot: SysrootBuilder,
    outside: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("HF_TOKEN", SECRET)  # what /proc/self/environ would leak
    atlas_a2(sysroot)
    target = LINKS[kind](outside)
    (sysroot.root / ONLINE).unlink()
    if kind == "absolute dir":
        # a folder link: sys/devices/system/cpu -> outside/sub (holds an "online" file)
        cpu = sysroot.root / "sys/devices/system/cpu"
        os.rename(cpu, sysroot.root / "cpu-moved")
        cpu.symlink_to(target)
    else:
        (sysroot.root / ONLINE).symlink_to(target)
    root = DirRoot(sysroot.root)
    got = root.read_text("sys/devices/system/cpu/online")
    assert got is None or SECRET not in got
    _no_leak(sysroot.root, tmp_path)


def test_links_resolve_inside_the_root(sysroot: SysrootBuilder) -> None:
    # an absolute link means the same path inside the root, as under chroot
    sysroot.file("etc/shadow", "inside\n")
    sysroot.link("sys/x", "/etc/shadow")
    sysroot.link("sys/y", "../../../../../../etc/shadow")  # .. stops at the root
    sysroot.link("sys/dirlink", "/etc")
    root = DirRoot(sysroot.root)
    assert root.read_text("sys/x") == "inside\n"
    assert root.read_text("sys/y") == "inside\n"
    assert root.read_text("sys/dirlink/shadow") == "inside\n"
    assert root.listdir("sys/dirlink") == ["shadow"]
    assert root.readlink("sys/x") == "/etc/shadow"
    assert root.read_text("../outside") is None


def test_a_link_loop_is_refused(sysroot: SysrootBuilder, tmp_path: Path, cli: Cli) -> None:
    atlas_a2(sysroot)
    (sysroot.root / ONLINE).unlink()
    sysroot.link(ONLINE, "online2")
    sysroot.link("sys/devices/system/cpu/online2", "online")
    with pytest.raises(InvalidInput, match="link loop"):
        DirRoot(sysroot.root).read_text(ONLINE)
    res = cli("topo", "--sysroot", str(sysroot.root))
    assert res.exit_code == 5 and "link loop" in res.stderr
    assert len(res.stderr.strip().splitlines()) == 1


def test_a_fifo_or_device_in_a_sysroot_is_refused_at_once(
    sysroot: SysrootBuilder, tmp_path: Path, cli: Cli
) -> None:
    atlas_a2(sysroot)
    (sysroot.root / ONLINE).unlink()
    os.mkfifo(sysroot.root / ONLINE)
    with pytest.raises(InvalidInput, match="is a FIFO"):
        DirRoot(sysroot.root).read_text(ONLINE)
    res = cli("topo", "--sysroot", str(sysroot.root))
    assert res.exit_code == 5 and "FIFO" in res.stderr
    _no_leak(sysroot.root, tmp_path)


def test_a_huge_sysroot_file_names_the_cap(
    sysroot: SysrootBuilder, monkeypatch: pytest.MonkeyPatch, cli: Cli
) -> None:
    monkeypatch.setattr(walker, "MAX_FILE_BYTES", 1000)
    atlas_a2(sysroot)
    sysroot.file(ONLINE, "0-3," * 1000)
    res = cli("topo", "--sysroot", str(sysroot.root))
    assert res.exit_code == 5 and "1000 bytes limit" in res.stderr


def test_an_unreadable_sysroot_file_is_exit_4(sysroot: SysrootBuilder) -> None:
    if os.geteuid() == 0:
        pytest.skip("root reads every file")
    atlas_a2(sysroot)
    (sysroot.root / ONLINE).chmod(0)
    with pytest.raises(PermissionDenied):
        DirRoot(sysroot.root).read_text(ONLINE)


def _bomb(inflated: int, member: int) -> bytes:
    """A .tar.gz of zero-filled members of `member` bytes, `inflated` in all, built in pieces."""
    z = zlib.compressobj(9, zlib.DEFLATED, 31)  # 31: gzip framing
    out = []
    zeros = bytes(min(member, 1 << 20))
    for i in range(inflated // member):
        info = tarfile.TarInfo(f"sys/devices/system/cpu/cpu{i}/pad")
        info.size = member
        out.append(z.compress(info.tobuf(format=tarfile.PAX_FORMAT)))
        for _ in range(member // len(zeros)):
            out.append(z.compress(zeros))
    out.append(z.flush())
    return b"".join(out)


@pytest.mark.parametrize("member", [1 << 30, 4 << 20])
def test_an_archive_bomb_fails_fast_and_small(tmp_path: Path, member: int) -> None:
    # 1 GiB of zeros in about 1 MB (one huge member, or many under the per-file cap)
    bomb = tmp_path / "bomb.tar.gz"
    bomb.write_bytes(_bomb(1 << 30, member))
    assert bomb.stat().st_size < 2 << 20
    # a small launcher runs the command and reports its child's peak memory: measured from
    # pytest itself, the peak would start at pytest's own size (exec keeps the old high-water)
    launcher = (
        "import resource, subprocess, sys, time\n"
        "t0 = time.monotonic()\n"
        "p = subprocess.run([sys.executable, '-m', 'ascendtune', 'topo', '--sysroot', sys.argv[1]],"
        " capture_output=True, text=True)\n"
        "took = time.monotonic() - t0\n"
        "peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024\n"
        "sys.stdout.write(f'{p.returncode} {took} {peak}\\n' + p.stderr)\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", launcher, str(bomb)], capture_output=True, text=True, check=True
    ).stdout
    head, _, stderr = out.partition("\n")
    code, took_s, peak_s = head.split()
    took, peak_mib = float(took_s), float(peak_s)
    res = subprocess.CompletedProcess([], int(code), "", stderr)
    assert res.returncode == 5 and len(res.stderr.strip().splitlines()) == 1, res.stderr
    assert "limit" in res.stderr
    assert peak_mib < 200, peak_mib
    # figures for the closing note (no timed assertion on a shared machine)
    print(
        f"bomb ({member} B members): {bomb.stat().st_size} B, {took:.2f} s, peak {peak_mib:.0f} MiB"
    )


def test_archive_bounds(monkeypatch: pytest.MonkeyPatch) -> None:
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w") as tar:
        for i in range(50):
            info = tarfile.TarInfo(f"f{i}")
            tar.addfile(info, io.BytesIO(b""))
    monkeypatch.setattr(archive, "MAX_ARCHIVE_MEMBERS", 10)
    with pytest.raises(InvalidInput, match="more than 10 members"):
        open_archive(raw.getvalue(), "x.tar")
    monkeypatch.setattr(archive, "MAX_ARCHIVE_MEMBERS", 100)
    assert len(open_archive(raw.getvalue(), "x.tar").files) == 50
    with pytest.raises(InvalidInput, match=r"x\.tar"):
        open_archive(b"\x1f\x8b" + os.urandom(100), "x.tar")
    with pytest.raises(InvalidInput):
        open_archive(gzip.compress(os.urandom(3000)), "x.tar")


def test_a_fifo_as_sysroot_is_refused(tmp_path: Path) -> None:
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    with pytest.raises(InvalidInput, match="FIFO"):
        open_root(str(fifo))
    with pytest.raises(MissingError):
        open_root(str(tmp_path / "absent"))


def test_user_files_regular_only_and_bounded(tmp_path: Path) -> None:
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    for path, match in (
        (str(fifo), "is a FIFO"),
        ("/dev/zero", "is a device"),
        (str(tmp_path), "folder"),
    ):
        with pytest.raises(InvalidInput, match=match):
            read_user_file(path, what="--file")
    with pytest.raises(MissingError):
        read_user_file(str(tmp_path / "absent"), what="--file")
    big = tmp_path / "big"
    big.write_bytes(b"x" * 5000)
    with pytest.raises(InvalidInput, match="limit"):
        read_user_file(str(big), what="--file", cap=4000)
    binary = tmp_path / "bin"
    binary.write_bytes(b"\x00\xff\xfe")
    with pytest.raises(InvalidInput, match="binary"):
        read_user_file(str(binary), what="--plan")
    latin = tmp_path / "latin"
    latin.write_bytes(b"caf\xe9")
    with pytest.raises(InvalidInput, match="UTF-8"):
        read_user_file(str(latin), what="--env-file")
    if os.geteuid() != 0:
        secret = tmp_path / "secret"
        secret.write_text("{}")
        secret.chmod(0)
        with pytest.raises(PermissionDenied) as e:
            read_user_file(str(secret), what="--plan")
        assert e.value.exit_code == 4


def test_plan_json_is_read_safely(tmp_path: Path) -> None:
    p = tmp_path / "plan.json"
    p.write_text("[" * 100_000 + "]" * 100_000)
    with pytest.raises(InvalidInput, match="nests deeper"):
        read_plan_json(str(p))
    p.write_text('{"a": ' + "9" * 5000 + "}")
    with pytest.raises(InvalidInput, match="not usable JSON"):
        read_plan_json(str(p))
    p.write_text('{"a": "\\ud800"}')
    with pytest.raises(InvalidInput, match="surrogate"):
        read_plan_json(str(p))
    p.write_text(json.dumps({"ranks": []}))
    assert read_plan_json(str(p)) == {"ranks": []}


def test_snapshot_of_a_linked_sysroot_copies_only_what_is_inside(
    sysroot: SysrootBuilder, outside: Path
) -> None:
    atlas_a2(sysroot)
    sysroot.link("proc/1/cmdline", str(outside / "secret"))
    sysroot.link("proc/1/environ", "/proc/self/environ")
    cap = capture(DirRoot(sysroot.root))
    assert not any(SECRET in text for text in cap.files.values())


def test_a_device_node_inside_a_sysroot_is_never_opened(sysroot: SysrootBuilder, cli: Cli) -> None:
    atlas_a2(sysroot)
    (sysroot.root / ONLINE).unlink()
    try:
        os.mknod(sysroot.root / ONLINE, 0o644 | stat.S_IFCHR, os.makedev(1, 5))  # /dev/zero
    except PermissionError:
        pytest.skip("making a device node needs CAP_MKNOD")
    with pytest.raises(InvalidInput, match="is a device"):
        DirRoot(sysroot.root).read_text(ONLINE)
    res = cli("topo", "--sysroot", str(sysroot.root))
    assert res.exit_code == 5 and "is a device" in res.stderr


def test_stdin_is_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    import io as _io

    from ascendtune.host.files import read_stdin_text

    monkeypatch.setattr(sys, "stdin", _io.StringIO("x" * 100))
    with pytest.raises(InvalidInput, match="larger than"):
        read_stdin_text("--file -", cap=50)
    monkeypatch.setattr(sys, "stdin", _io.StringIO('{"a": 1}'))
    assert read_stdin_text("--file -") == '{"a": 1}'


def test_tool_budget_is_the_runner_timeout() -> None:
    # host/roots/walker.py writes the number out so that reading a sysroot does not import the runner
    from ascendtune.host import runner

    assert DirRoot.tool_budget_s == runner.DEFAULT_TIMEOUT_S


MEMBERS = [
    ("sys/devices/system/cpu", "dir", ""),
    ("sys/devices/system/cpu/online", "file", "0-3\n"),
    ("sys/big", "file", "x" * 5000),  # data past one block, and past no chunk boundary
    ("sys/" + "d" * 120 + "/long", "file", "long name"),  # GNU ././@LongLink or PAX path
    ("sys/link", "link", "../" + "t" * 120),  # a long link name
    ("../../etc/escape", "file", "inside"),  # leading ../ and / are dropped, as tar does
    ("sys/a/../../../up", "file", "never kept"),
    ("sys//twice/./x", "file", "normalized"),
    ("meta.json", "file", '{"hostname": "é"}'),
]


@pytest.mark.parametrize("fmt", [tarfile.GNU_FORMAT, tarfile.PAX_FORMAT])
@pytest.mark.parametrize("top", ["", "wrapper/"])
@pytest.mark.parametrize("gz", [True, False])
def test_archive_members_read_as_tarfile_reads_them(fmt: int, top: str, gz: bool) -> None:
    raw = tar_of(fmt, MEMBERS, top)
    root = open_archive(gzip.compress(raw) if gz else raw, "x.tar.gz")
    with tarfile.open(fileobj=io.BytesIO(raw)) as tar:
        names = tar.getnames()
        assert len(names) == len(MEMBERS)
    assert root.read_text("sys/devices/system/cpu/online") == "0-3\n"
    assert root.read_text("sys/big") == "x" * 5000
    assert root.read_text("sys/" + "d" * 120 + "/long") == "long name"
    assert root.readlink("sys/link") == "../" + "t" * 120
    assert root.read_text("sys/twice/x") == "normalized"
    assert root.read_text("meta.json") == '{"hostname": "é"}'
    # under a wrapper folder, wrapper/../../etc/escape names a .. and is left out
    assert root.read_text("etc/escape") == (None if top else "inside")
    assert not any(".." in k.split("/") for k in root.files)
    assert "never kept" not in root.files.values()
    assert root.listdir("sys/devices/system") == ["cpu"]
    assert root.listdir(".") == ["meta.json", "sys"] if top else ["etc", "meta.json", "sys"]


def test_archive_stream_damage_is_one_clear_error() -> None:
    raw = tar_of(tarfile.GNU_FORMAT, MEMBERS)
    good = gzip.compress(raw)
    # two gzip members one after the other read as one stream, as gzip reads them
    half = len(raw) // 1024 * 512
    joined = gzip.compress(raw[:half]) + gzip.compress(raw[half:])
    assert open_archive(joined, "x").files == open_archive(good, "x").files
    cases = {
        "cut inside the last bytes": good[:-5],  # every member there, the CRC trailer gone
        "cut in half": good[: len(good) // 2],
        "junk after the stream": good + b"junk",
        "cut inside a member": raw[: 4 * 512 + 100],  # inside sys/big's data
        "a header damaged": raw[:1] + b"\xff" + raw[2:],
    }
    for why, data in cases.items():
        with pytest.raises(InvalidInput, match=r"^x is (a damaged archive|neither)") as e:
            open_archive(data, "x")
        assert "\n" not in str(e.value), why


def test_read_files_answers_as_read_text_does(
    sysroot: SysrootBuilder, outside: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # the batch read of a capture (kept folders, an openat per folder) against read_text's
    # own walk, path by path: links inside and out, absent files and folders, odd names
    monkeypatch.setattr(DirRoot, "MAX_OPEN_DIRS", 3)  # folders dropped and reopened as it goes
    sysroot.file("etc/shadow", "inside\n")
    for i in (0, 3, 5):
        sysroot.file(f"sys/devices/system/cpu/cpu{i}/topology/core_id", f"{i}\n")
    sysroot.file("sys/devices/system/cpu/cpu1/topology/x", "")
    sysroot.link("sys/devices/system/cpu/cpu1/topology/core_id", "/etc/shadow")
    sysroot.link("sys/devices/system/cpu/cpu2", "/etc")  # a folder that is a link
    sysroot.link("sys/devices/system/cpu/cpu3/topology/out", str(outside / "secret"))
    sysroot.link("sys/devices/system/cpu/cpu4/topology", str(outside / "sub"))
    paths = [
        f"sys/devices/system/cpu/cpu{i}/{f}"
        for i in range(7)
        for f in ("topology/core_id", "topology/out", "cpufreq/x", "shadow", "topology/../online")
    ] + [
        "etc/shadow",
        "etc//shadow",
        "/etc/shadow",
        "sys/devices/system/cpu/./cpu0/topology/core_id",
    ]
    want = [DirRoot(sysroot.root).read_text(p) for p in paths]
    assert DirRoot(sysroot.root).read_files(paths) == want
    assert want[paths.index("sys/devices/system/cpu/cpu1/topology/core_id")] == "inside\n"
    assert want[paths.index("sys/devices/system/cpu/cpu2/shadow")] == "inside\n"
    assert not any(SECRET in (text or "") for text in want)
    root = DirRoot(sysroot.root)
    folders = [p.rsplit("/", 1)[0] for p in paths] + ["sys/devices/system/cpu/cpu2"]
    assert [root.listdir(f) for f in folders] == [DirRoot(sysroot.root).listdir(f) for f in folders]
    os.mkfifo(sysroot.root / "sys/devices/system/cpu/cpu5/topology/fifo")
    with pytest.raises(InvalidInput, match="is a FIFO"):
        root.read_files(["sys/devices/system/cpu/cpu5/topology/fifo"])
