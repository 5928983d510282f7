"""A snapshot archive is written without a TarInfo per member: its bytes are still those tarfile
(PAX format) and gzip.GzipFile (at the snapshot's level) write, so every reader of the older
archives reads the new ones; and the capture reads each file of the host once."""

from __future__ import annotations

import gzip
import io
import tarfile
from collections import Counter
from dataclasses import replace

from hypothesis import given, settings
from hypothesis import strategies as st

from ascendtune.host import snapshot as snap
from ascendtune.host.roots import DirRoot, Root, open_archive
from ascendtune.synth import standard
from ascendtune.synth.spec import NpuProcess, Process, Task
from tests.support.builder import SysrootBuilder


def tarfile_bytes(cap: snap.Capture, *, compress: bool) -> bytes:
    """The archive as tarfile and gzip.GzipFile write it (the writer before issue 28, which
    compressed at level 6)."""
    raw = io.BytesIO()
    level = snap.GZIP_LEVEL
    sink = gzip.GzipFile(fileobj=raw, mode="wb", mtime=0, compresslevel=level) if compress else raw
    with tarfile.open(fileobj=sink, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for rel in sorted(set(cap.files) | set(cap.links)):
            info = tarfile.TarInfo(rel)
            info.mtime = 0
            info.uid = info.gid = 0
            info.uname = info.gname = "root"
            if rel in cap.links:
                info.type = tarfile.SYMTYPE
                info.linkname = cap.links[rel]
                tar.addfile(info)
            else:
                data = cap.files[rel].encode()
                info.size = len(data)
                info.mode = 0o600
                tar.addfile(info, io.BytesIO(data))
    if compress:
        sink.close()
    return raw.getvalue()


# names as a host has them, and the ones that need a PAX header: past 100 characters, not ASCII
part = st.text("abcxyz019_-.:", min_size=1, max_size=40).filter(lambda p: p not in (".", ".."))
name = st.one_of(
    st.lists(part, min_size=1, max_size=6).map("/".join),
    st.lists(part, min_size=4, max_size=8).map(lambda ps: "/".join(ps) + "/" + "n" * 90),
    st.tuples(part, st.text("éü中\x7f", min_size=1, max_size=3)).map("/".join),
)
text = st.one_of(st.text(max_size=40), st.text("0123456789-,\n", min_size=500, max_size=1600))


@settings(max_examples=60, deadline=None)
@given(
    st.dictionaries(name, text, max_size=12),
    st.dictionaries(name, st.one_of(part, st.just("/dev/davinci0"), name), max_size=3),
    st.booleans(),
)
def test_the_archive_is_byte_for_byte_what_tarfile_writes(
    files: dict[str, str], links: dict[str, str], compress: bool
) -> None:
    links = {k: v for k, v in links.items() if k not in files}
    cap = snap.Capture(files=files, links=links)
    assert snap.archive_bytes(cap, gzip=compress) == tarfile_bytes(cap, compress=compress)


def test_an_archive_of_many_members_is_what_tarfile_writes_and_reads_back() -> None:
    # more than one piece handed to the compressor, and the record padding at the end
    files = {f"proc/4242/task/{t}/status": f"Name:\tw-{t}\n" * 40 for t in range(3000)}
    cap = snap.Capture(files=files, links={"proc/4242/fd/3": "/dev/davinci0"})
    data = snap.archive_bytes(cap)
    assert data == tarfile_bytes(cap, compress=True)
    back = open_archive(data, "x.tar.gz")
    assert back.read_text("proc/4242/task/2999/status") == files["proc/4242/task/2999/status"]
    assert back.readlink("proc/4242/fd/3") == "/dev/davinci0"
    with tarfile.open(fileobj=io.BytesIO(data)) as tar:
        assert len(tar.getnames()) == 3001


class Counting(Root):
    """A sysroot that counts what is read of each path."""

    def __init__(self, inner: DirRoot) -> None:
        self.inner = inner
        self.label = inner.label
        self.reads: Counter[str] = Counter()

    def read_text(self, rel: str) -> str | None:
        self.reads[rel] += 1
        return self.inner.read_text(rel)

    def listdir(self, rel: str) -> list[str] | None:
        return self.inner.listdir(rel)

    def readlink(self, rel: str) -> str | None:
        return self.inner.readlink(rel)


def test_the_capture_reads_each_file_of_the_host_once(sysroot: SysrootBuilder) -> None:
    spec = standard.atlas_800i_a2()
    pid = 4242
    tasks = tuple(Task(pid + t, f"worker-{t % 3}", "0-23") for t in range(40))
    worker = Process(
        pid, "python3", tasks, cmdline=("python3", "-m", "vllm"), fds={3: "/dev/davinci0"}
    )
    assert spec.npu_smi is not None
    npu_smi = replace(spec.npu_smi, processes=(NpuProcess(0, 0, pid, "python3", 4096),))
    sysroot.spec(replace(spec, processes=(worker,), npu_smi=npu_smi))
    root = Counting(DirRoot(sysroot.root))
    cap = snap.capture(root)
    assert f"proc/{pid}/task/{pid + 39}/status" in cap.files  # the worker's threads were taken
    assert cap.links[f"proc/{pid}/fd/3"] == "/dev/davinci0"
    twice = sorted(rel for rel, n in root.reads.items() if n > 1)
    assert twice == []
    # and what it took is what a capture straight from the folder takes
    assert snap.capture(DirRoot(sysroot.root)).files == cap.files
