"""The sampler's fast reads of /proc (bytes, one read per file, no parser objects) say what the
core parsers say of the same text: stat, sched, numa_maps; and sched's context switches stand
in for status's only where sched prints them."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ascendtune.core.errors import ParseError
from ascendtune.core.parsers.procfs import parse_numa_maps, parse_sched_migrations, parse_stat
from ascendtune.host.watch import (
    NAMES_KEPT,
    NumaMaps,
    ProcSampler,
    _numa_bytes,
    _read_bytes,
    _sched_number,
    _stat,
)
from tests.support.children import Spawn

NAMES = st.text(alphabet=st.sampled_from("ab )(:\t\r\n\\\x1b\u00e9\u202e0"), max_size=12)
NUMS = st.one_of(st.integers(0, 10**12).map(str), st.sampled_from(["", "-1", "x", "1_0", " 7"]))


def _stat_text(comm: str, fields: list[str]) -> str:
    return f"42 ({comm}) " + " ".join(fields) + "\n"


@settings(max_examples=300)
@given(comm=NAMES, fields=st.lists(NUMS, min_size=0, max_size=45), state=st.sampled_from("RSZXx"))
def test_stat_reads_as_parse_stat(comm: str, fields: list[str], state: str) -> None:
    text = _stat_text(comm, [state, *fields])
    try:
        want = parse_stat(text.replace("\r\n", "\n").replace("\r", "\n"))
    except ParseError:
        want = None
    got = _stat(text.encode(), "utf-8")
    if want is None:
        assert got is None
    else:
        assert got == (want.comm, want.state.encode(), want.cpu_ticks, want.processor)
    # a name decoded once and remembered reads as decoding it again (first sight, then kept)
    assert _stat(text.encode(), "utf-8", _NAMES) == got
    assert _stat(text.encode(), "utf-8", _NAMES) == got


_NAMES: dict[bytes, str] = {}  # shared by the examples above: names seen in earlier ones too


def test_remembered_names_stay_bounded() -> None:
    names = {f"n{i}".encode(): f"n{i}" for i in range(NAMES_KEPT)}
    line = _stat_text("w\r\nx", ["S", *["0"] * 10, "5", "2", *["0"] * 23, "3"]).encode()
    assert _stat(line, "utf-8", names) == ("w\nx", b"S", 7, 3)
    assert names == {b"w\r\nx": "w\nx"}  # full: forgotten, then the new name kept


SCHED_LINES = st.sampled_from(
    [
        "se.nr_migrations : 17",
        "se.nr_migrations                             :                    3",
        "se.nr_migrations: x",
        "se.nr_migrations_x : 9",
        " se.nr_migrations : 5",
        "xse.nr_migrations : 6",
        "se.nr_migrations : 8 ",
        "se.nr_migrations\t:\t11",
        "se.vruntime : 3.5",
        "nr_switches : 4",
        "-------------------",
    ]
)


@settings(max_examples=300)
@given(lines=st.lists(SCHED_LINES, max_size=6), tail=st.booleans())
def test_sched_reads_as_parse_sched_migrations(lines: list[str], tail: bool) -> None:
    text = "x (1, #threads: 1)\n" + "\n".join(lines) + ("\n" if tail else "")
    assert _sched_number(text.encode(), b"se.nr_migrations") == parse_sched_migrations(text)


MAP_WORDS = st.sampled_from(
    ["anon=3", "N0=2", "N1=5", "N12=1", "N=3", "Nx=1", "N1=", "N1=2=3", "kernelpagesize_kB=2048",
     "kernelpagesize_kB=4", "kernelpagesize_kB=x", "file=/dev/hugepages/w", "huge", "dirty=1"]
)  # fmt: skip


@settings(max_examples=200)
@given(
    lines=st.lists(st.lists(MAP_WORDS, max_size=6), max_size=8), page=st.sampled_from([4096, 65536])
)
def test_numa_maps_read_as_parse_numa_maps(lines: list[list[str]], page: int) -> None:
    text = "".join("7f00 default " + " ".join(words) + "\n" for words in lines)
    assert _numa_bytes(text.encode(), page) == parse_numa_maps(text, page_size_bytes=page)


def test_a_file_of_records_is_read_to_its_end(tmp_path: Path) -> None:
    maps = tmp_path / "numa_maps"
    lines = [f"7f{i:04x} default anon=1 N{i % 2}=1 kernelpagesize_kB=4\n" for i in range(2000)]
    maps.write_text("".join(lines))
    data = _read_bytes(str(maps), records=True)
    assert data is not None and len(data) > 3 * 8192
    assert _numa_bytes(data, 4096) == {0: 1000 * 4096, 1: 1000 * 4096}
    assert _read_bytes(str(tmp_path / "gone")) is None


def _thread(proc: Path, sched: str | None, status: str | None) -> None:
    d = proc / "7/task/7"
    d.mkdir(parents=True)
    (d / "stat").write_text(_stat_text("w", ["S", *["0"] * 10, "5", "2", *["0"] * 23, "3"]))
    if sched is not None:
        (d / "sched").write_text(sched)
    if status is not None:
        (d / "status").write_text(status)


STATUS = "Name:\tw\nvoluntary_ctxt_switches:\t40\nnonvoluntary_ctxt_switches:\t41\n"


def test_sched_says_the_context_switches_status_would(tmp_path: Path) -> None:
    sched = "w (7, #threads: 1)\n---\nse.nr_migrations : 4\nnr_voluntary_switches : 9\n"
    sched += "nr_involuntary_switches : 2\n"
    _thread(tmp_path, sched, STATUS)  # status disagrees: sched was read, status was not
    t = ProcSampler(str(tmp_path), str(tmp_path)).thread(7, 7)
    assert t is not None
    assert (t.cpu_ticks, t.processor, t.nr_migrations) == (7, 3, 4)
    assert (t.ctx_voluntary, t.ctx_involuntary) == (9, 2)


def test_status_says_them_where_sched_does_not(tmp_path: Path) -> None:
    _thread(tmp_path, "w (7, #threads: 1)\n---\nse.nr_migrations : 4\n", STATUS)
    t = ProcSampler(str(tmp_path), str(tmp_path)).thread(7, 7)
    assert t is not None and (t.nr_migrations, t.ctx_voluntary, t.ctx_involuntary) == (4, 40, 41)


def test_no_sched_no_status_no_counts(tmp_path: Path) -> None:
    _thread(tmp_path, None, None)
    t = ProcSampler(str(tmp_path), str(tmp_path)).thread(7, 7)
    assert t is not None and (t.nr_migrations, t.ctx_voluntary, t.ctx_involuntary) == (None,) * 3


def test_a_crafted_threads_mask_is_its_status_cpus_allowed_list(tmp_path: Path) -> None:
    _thread(tmp_path, None, STATUS + "Cpus_allowed_list:\t2-3,8\n")
    t = ProcSampler(str(tmp_path), str(tmp_path)).thread(7, 7)
    assert t is not None and t.mask == frozenset({2, 3, 8})
    assert (t.ctx_voluntary, t.ctx_involuntary) == (40, 41)  # the same read says both


def test_a_live_threads_mask_is_the_kernels(tmp_path: Path) -> None:
    import os
    import threading

    if not hasattr(os, "sched_getaffinity"):
        return
    tid = threading.get_native_id()
    t = ProcSampler().thread(os.getpid(), tid)
    assert t is not None and t.mask == frozenset(os.sched_getaffinity(tid))
    # a neighbour's thread: no mask read
    n = ProcSampler().thread(os.getpid(), tid, detail=False)
    assert n is not None and n.mask is None


@settings(max_examples=100)
@given(
    files=st.lists(st.lists(st.lists(MAP_WORDS, max_size=6), max_size=6), min_size=1, max_size=5),
    page=st.sampled_from([4096, 65536]),
)
def test_numa_maps_parsed_sample_after_sample_read_as_each_alone(
    files: list[list[list[str]]], page: int
) -> None:
    # a process's file read again and again (lines kept, changed, dropped, the same file twice)
    numa = NumaMaps(page)
    for lines in [*files, files[-1]]:
        text = "".join("7f00 default " + " ".join(words) + "\n" for words in lines)
        got = numa.parse(text.encode())
        assert got == parse_numa_maps(text, page_size_bytes=page)
        got[99] = 1  # the caller's to keep: the next answer is not this dict
    assert 99 not in numa.parse(text.encode())


def test_live_reads_say_what_the_files_say_of_the_same_threads(spawn: Spawn) -> None:
    """This machine's /proc read the live way (masks through the kernel, the process's name
    from its leader's stat) and the crafted tree's way (every answer from a file) on the same
    still threads: the same samples."""
    if not sys.platform.startswith("linux") or not hasattr(os, "sched_getaffinity"):
        pytest.skip("needs Linux")
    cpus = sorted(os.sched_getaffinity(0))
    pid = spawn(threads=6, names=["still", "", "acl_thread"], masks=[cpus[:1], cpus])
    live = ProcSampler(live=True)
    files = ProcSampler("/proc", "/sys", live=False)
    assert live._tasks is not None and files._tasks is None
    for _ in range(3):  # the threads wait on an event: nothing of theirs moves between reads
        a = live.sample([pid], neighbours=False)
        b = files.sample([pid], neighbours=False)
        if a.workers == b.workers:
            break
    assert a.workers == b.workers
    [ps] = a.workers.values()
    assert len(ps.threads) == 7 and ps.name
    assert {t.mask for t in ps.threads} >= {frozenset(cpus[:1])}
    assert all(t.mask is not None and t.nr_migrations is not None for t in ps.threads)
    # a neighbour: its name from its leader's stat, as its comm file says
    n_live = live.process(pid, detail=False)
    n_files = files.process(pid, detail=False)
    assert n_live is not None and n_live == n_files
