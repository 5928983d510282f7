"""The prefilter (core/vllm_log/scan.py): the report of a log read through the markers is the one
feeding every line gives, for every fixture, every pattern's matches, mutated real lines, any
chunking, over-long lines and the line limit; and the markers cover every pattern."""

from __future__ import annotations

import ctypes
import mmap
import os
import re
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ascendtune.core import vllm_log
from ascendtune.core.vllm_log import LogReport, parse_chunks, parse_log, records, scan, split_lines
from ascendtune.core.vllm_log import patterns as pat
from ascendtune.core.vllm_log.parser import RUN_CLOCK_BACK_S
from ascendtune.core.vllm_log.records import DIRTY, STAMP_MARKS, plain_stamps
from tests.support.compiler import skip_without_cc

FIX = Path(__file__).parents[1] / "fixtures" / "vllm_log"
LOGS = sorted(FIX.glob("*.log"))
FIXTURE_LINES = [ln for p in LOGS for ln in p.read_bytes().splitlines()]

# the lines that fill a real log between the binding lines (benchmarks/bench_log.py's shapes)
FILLER = [
    b'(APIServer pid=5200) INFO:     10.0.3.7:40123 - "POST /v1/chat/completions HTTP/1.1" 200 OK',
    b"(APIServer pid=5200) INFO 09-23 11:07:41 [loggers.py:123] Engine 000: Avg prompt "
    b"throughput: 31.0 tokens/s, Avg generation throughput: 7.4 tokens/s, Running: 3 reqs, "
    b"Waiting: 0 reqs, GPU KV cache usage: 12.1%, Prefix cache hit rate: 12.5%",
    b"(EngineCore_DP0 pid=5250) DEBUG 2026-09-23 11:07:42,123 [core.py:88] step done",
]


def slow(chunks: list[bytes], cap: int = vllm_log.MAX_LINE_BYTES) -> LogReport:
    """The oracle: every line fed to the parser."""
    return parse_log(split_lines(chunks, cap))


def fast(chunks: list[bytes], cap: int = vllm_log.MAX_LINE_BYTES) -> LogReport:
    return parse_chunks(chunks, max_bytes=cap).report()


def pieces(data: bytes, sizes: list[int]) -> list[bytes]:
    out, pos, i = [], 0, 0
    while pos < len(data):
        n = sizes[i % len(sizes)]
        out.append(data[pos : pos + n])
        pos, i = pos + n, i + 1
    return out


@pytest.fixture
def tiny_blocks(monkeypatch: pytest.MonkeyPatch) -> None:
    """Blocks of a few bytes: every line of a fixture crosses a block boundary somewhere."""
    monkeypatch.setattr(scan, "BLOCK", 1)


@pytest.mark.parametrize("path", LOGS, ids=[p.name for p in LOGS])
def test_every_fixture_reads_alike(path: Path, tiny_blocks: None) -> None:
    data = path.read_bytes()
    want = slow([data])
    assert fast([data]) == want
    for size in (1, 7, 97, 4096):
        assert fast(pieces(data, [size])) == want, size
    # appended to itself, with and without its last newline, and between filler
    twice = data + data.rstrip(b"\n")
    assert fast(pieces(twice, [61])) == slow([twice])
    padded = b"\n".join(FILLER * 30) + b"\n" + data + b"\n".join(FILLER * 30)
    assert fast(pieces(padded, [333])) == slow([padded])


@pytest.mark.parametrize("junk", [b"\x1b[0m", b"\x1b[32;1m", b"\x01", b"\x00", b"\x7f", b"\x1f"])
def test_markers_hidden_by_colour_or_control_bytes_read_alike(junk: bytes) -> None:
    """records() drops colour and control bytes before matching: a marker or level split by
    them is no marker in the raw line, and the line must still be read."""
    marks = sorted({*pat.MARKERS, *STAMP_MARKS}, key=len, reverse=True)
    for path in LOGS:
        data = path.read_bytes()
        for m in marks:
            data = data.replace(m, m[:2] + junk + m[2:])
        assert not any(m in data for m in marks)
        assert fast([data]) == slow([data]), path.name


def test_a_big_log_reads_alike() -> None:
    """Megabytes of filler around restarts, in blocks of many lines: line numbers and runs."""
    parts = [b"\n".join(FILLER * 4000)]
    for path in LOGS:
        parts += [path.read_bytes(), b"\n".join(FILLER * 700)]
    data = b"\n".join(parts) + b"\n"
    assert len(data) > 3 * scan.BLOCK
    want = slow([data])
    assert fast(pieces(data, [65536])) == want and len(want.runs) > 3


def oracle(data: bytes) -> vllm_log.LogParser:
    """The parser fed every line (its clock too, which a report shows only at a new run)."""
    p = vllm_log.LogParser()
    for line in split_lines([data]):
        p.feed(line)
    return p


def test_reads_only_marked_lines() -> None:
    """A filler line is counted, never decoded, a stamped one too: the stamps move the clock
    where feeding them would."""
    fed: list[bytes] = []

    class Spy(vllm_log.LogParser):
        def feed(self, line: bytes, *, stamp_only: bool = False) -> None:
            fed.append(line)
            super().feed(line, stamp_only=stamp_only)

    data = b"\n".join([FILLER[0]] * 50 + [FILLER[1]] + [FILLER[0]] * 50) + b"\n"
    p = parse_chunks([data], Spy())
    assert fed == [] and p.report() == slow([data]) and p.lines == 101
    assert p.clock_state() == oracle(data).clock_state() == ((None, 9, 2027261), "09-23 11:07:41")


# -- the markers cover the patterns ---------------------------------------------------------------


def test_every_pattern_has_markers_or_is_read_after_one() -> None:
    """A pattern added to patterns.py must get its markers (or say it is read after another)."""
    compiled = {v for v in vars(pat).values() if isinstance(v, re.Pattern)}
    assert compiled == set(pat._MARKS) | set(pat._AFTER)
    assert not set(pat._MARKS) & set(pat._AFTER)


# patterns read only behind a gate in parser._message: their matches need not hold the gate's
# strings (the end-to-end tests below cover them)
GATED = {pat._VLLM_VERSION, pat._ASCEND_VERSION}


@pytest.mark.parametrize(
    "pattern", [p for p in pat._MARKS if p not in GATED], ids=lambda p: p.pattern[:40]
)
@settings(max_examples=60)
@given(data=st.data())
def test_every_match_of_a_pattern_holds_a_marker(
    pattern: re.Pattern[str], data: st.DataObject
) -> None:
    text = data.draw(st.from_regex(pattern))
    assert any(m in text for m in pat._MARKS[pattern]), text
    assert any(m.decode() in text for m in pat.MARKERS), text


HEADS = [
    "(Worker_TP0 pid=61) INFO 09-23 10:11:05 [cpu_binding.py:545] [vllm-ascend] - ",
    "(Worker_TP1 pid=62) WARNING 09-23 10:11:06 [worker.py:783] ",
    "(APIServer pid=60) INFO 09-23 10:11:00 [api_server.py:1903] ",
    "INFO 09-23 10:11:05 [cpu_binding.py:545] ",
    "(VllmWorker rank=2 pid=9) ERROR 2026-09-23 10:11:05,123 [x.py:1] ",
    "",
]


@pytest.mark.parametrize("pattern", list(pat._MARKS), ids=lambda p: p.pattern[:40])
@settings(max_examples=40)
@given(data=st.data())
def test_a_line_matching_any_pattern_reads_alike(
    pattern: re.Pattern[str], data: st.DataObject
) -> None:
    """Each pattern's matches, after each real head, after a log that has workers and before
    filler: the same report read through the markers as line by line."""
    text = data.draw(st.from_regex(pattern).map(lambda s: s.replace("\n", " ")))
    head = data.draw(st.sampled_from(HEADS))
    before = (FIX / data.draw(st.sampled_from([p.name for p in LOGS]))).read_bytes()
    line = (head + text).encode("utf-8", errors="surrogateescape")
    log = before + line + b"\n" + b"\n".join(FILLER) + b"\n"
    assert fast([log]) == slow([log])


# -- mutated real lines ---------------------------------------------------------------------------

INSERTS = [
    *(m.decode() for m in pat.MARKERS),
    *(m.decode() for m in STAMP_MARKS),
    "INFO 09-23 10:11:05 [x.py:1] ",
    "INFO 01-01 00:00:00 [x.py:1] ",
    "(Worker_TP3 pid=99) ",
    "\x1b[0m",
    "\x1b[32m",
    "\r",
    "\x00",
    "\x01",
    "\t",
    "\xff",
    "  ",
]


@st.composite
def mutated(draw: st.DrawFn) -> bytes:
    """Real lines (every fixture's, the filler's) with markers, stamps, colour, control bytes
    and heads spliced in, characters deleted or their case flipped, lines glued."""
    lines = draw(st.lists(st.sampled_from(FIXTURE_LINES + FILLER), min_size=1, max_size=25))
    for _ in range(draw(st.integers(0, 8))):
        i = draw(st.integers(0, len(lines) - 1))
        ln = lines[i].decode("utf-8", errors="surrogateescape")
        at = draw(st.integers(0, len(ln)))
        op = draw(st.sampled_from(["insert", "delete", "case", "glue"]))
        if op == "insert":
            ln = ln[:at] + draw(st.sampled_from(INSERTS)) + ln[at:]
        elif op == "delete":
            ln = ln[:at] + ln[at + draw(st.integers(1, 4)) :]
        elif op == "case" and at < len(ln):
            ln = ln[:at] + ln[at].swapcase() + ln[at + 1 :]
        elif op == "glue":
            ln = ln + draw(st.sampled_from(FIXTURE_LINES)).decode(errors="surrogateescape")
        lines[i] = ln.encode("utf-8", errors="surrogateescape")
    return b"\n".join(lines) + draw(st.sampled_from([b"", b"\n"]))


@settings(max_examples=300)
@given(mutated(), st.lists(st.integers(1, 400), min_size=1, max_size=6))
def test_mutated_real_lines_read_alike(log: bytes, sizes: list[int]) -> None:
    assert fast(pieces(log, sizes)) == slow([log])


@settings(max_examples=200)
@given(
    mutated(),
    st.lists(st.integers(1, 200), min_size=1, max_size=6),
    st.integers(2, 120),
    st.integers(1, 300),
)
def test_over_long_lines_and_block_boundaries_read_alike(
    log: bytes, sizes: list[int], cap: int, block: int
) -> None:
    """Lines past the cap (cut, their tail dropped) anywhere, blocks of any size."""
    old = scan.BLOCK
    scan.BLOCK = block
    try:
        assert fast(pieces(log, sizes), cap) == slow(pieces(log, sizes), cap)
    finally:
        scan.BLOCK = old


def test_a_line_split_across_blocks(tiny_blocks: None) -> None:
    line = (FIX / "a2_tp4_bound.log").read_bytes()
    # the marker itself cut between two blocks, and a newline alone in a block
    at = line.index(b"NPU0: main=") + 2
    chunks = [line[:at], line[at:], b"\n", FILLER[1], b"\n"]
    want = slow([b"".join(chunks)])
    assert fast(chunks) == want and any(w.plan for w in want.workers)


def test_the_line_limit_holds(monkeypatch: pytest.MonkeyPatch) -> None:
    data = b"\n".join(FILLER * 4 + [(FIX / "a2_tp4_bound.log").read_bytes()]) + b"\nend"
    for limit in (1, 3, 5, 12, 13, 14, 200):
        monkeypatch.setattr(vllm_log.model, "MAX_LINES", limit)
        got, want = fast(pieces(data, [50])), slow([data])
        assert got == want and got.lines == min(limit, want.lines), limit


@settings(max_examples=300)
@given(mutated())
def test_plain_stamps_are_the_records_stamps(log: bytes) -> None:
    for line in log.split(b"\n"):
        if len(line.translate(None, scan._DIRTY)) != len(line):
            continue  # plain_stamps is only asked about lines without such bytes
        got = plain_stamps(line)
        if got is None:
            continue
        assert got == [r.stamp for r in records(line) if r.stamp is not None]


# -- the clock: stamped lines judged by blocks, never fed -----------------------------------------

MONTH_S = 28 * 86400  # the generated clock's months have 28 days, its year 12 months


def stamp_text(t: int, form: str) -> str:
    """The stamp of second t of the generated year, in one of the forms a log holds."""
    month, rest = divmod(t % (12 * MONTH_S), MONTH_S)
    day, rest = divmod(rest, 86400)
    hms = f"{rest // 3600:02d}:{rest // 60 % 60:02d}:{rest % 60:02d}"
    if form == "year":
        return f"2026-{month + 1:02d}-{day + 1:02d} {hms},123"
    if form == "bad":  # an hour no clock has: its seconds still count, its bytes do not sort
        return f"{month + 1:02d}-{day + 1:02d} 2{rest % 10}:{rest // 60 % 60:02d}:{rest % 60:02d}"
    frac = ".5" if form == "fraction" else ""
    return f"{month + 1:02d}-{day + 1:02d} {hms}{frac}"


@st.composite
def clocked(draw: st.DrawFn) -> bytes:
    """Stamped lines whose clock steps forward, a little back, back by 599, 600 or 601 s, across
    a month and the year's end, in every level and form; binding lines (so a new run shows),
    stamps inside messages, lines without any."""
    t = draw(st.integers(0, 12 * MONTH_S - 1))
    steps = st.sampled_from(
        [0, 1, 1, 5, 59, 599, 601, 3600, -1, -5, -599, -600, -601, -3600, MONTH_S, -MONTH_S]
    )
    lines: list[str] = []
    for _ in range(draw(st.integers(1, 40))):
        t += draw(steps)
        form = draw(st.sampled_from(["plain"] * 6 + ["fraction", "year", "bad"]))
        level = draw(st.sampled_from(["INFO"] * 4 + ["WARNING", "WARN", "DEBUG", "ERROR"]))
        stamp = stamp_text(t, form)
        kinds = ["filler"] * 5 + ["bind", "inside", "bare", "none", "mention", "glued"]
        kind = draw(st.sampled_from(kinds))
        other = stamp_text(t + draw(steps), form)
        if kind == "filler":
            lines.append(f"(APIServer pid=5200) {level} {stamp} [loggers.py:123] Engine 000: x")
        elif kind == "bind":
            rank = draw(st.integers(0, 3))
            lines.append(
                f"(Worker_TP{rank} pid={61 + rank}) {level} {stamp} [cpu_binding.py:545] "
                f"[vllm-ascend] - [cpu_bind_mode] mode=topo_affinity rank={rank} "
                "visible_npus=[0, 1, 2, 3]"
            )
        elif kind == "inside":  # no head: records() reads no stamp here
            lines.append(f"(APIServer pid=5200) said {level} {stamp} [x.py:1] in a message")
        elif kind == "mention":  # another time in the message, with no level: no stamp
            lines.append(
                f"{level} {stamp} [x.py:1] next at {other} [y.py:2] or {stamp_text(t, 'fraction')}"
            )
        elif kind == "glued":  # two records on one line, each its stamp (the same second too)
            lines.append(
                f"(APIServer pid=5200) {level} {stamp} [x.py:1] a (Worker_TP0 pid=61) "
                f"INFO {other} [y.py:2] b"
            )
            if form == "plain":
                lines[-1] += f" WARNING {stamp_text(t, 'fraction')} [z.py:3] c"
        elif kind == "bare":
            lines.append(f"{level} {stamp} [x.py:1] a record without a prefix")
        else:
            lines.append('(APIServer pid=5200) INFO:     10.0.0.1:4 - "GET /health" 200 OK')
    return ("\n".join(lines) + draw(st.sampled_from(["", "\n"]))).encode()


@settings(max_examples=150)
@given(
    clocked(),
    st.integers(1, 600),
    st.lists(st.integers(1, 300), min_size=1, max_size=4),
    st.sampled_from([0, 0, 2, scan.SLOW_BLOCKS]),
)
def test_the_clock_splits_runs_as_line_by_line(
    log: bytes, block: int, sizes: list[int], slow_blocks: int
) -> None:
    """Runs split where the clock goes back by more than 600 s, not 600; the clock ends where
    feeding every line leaves it (its second and text), whatever the blocks, and whichever
    blocks feed their stamped lines one by one."""
    old = scan.BLOCK, scan.SLOW_BLOCKS
    scan.BLOCK, scan.SLOW_BLOCKS = block, slow_blocks
    try:
        p = parse_chunks(pieces(log, sizes))
    finally:
        scan.BLOCK, scan.SLOW_BLOCKS = old
    want = oracle(log)
    assert p.report() == want.report()
    assert p.clock_state() == want.clock_state()


def test_a_step_back_of_601_s_starts_a_run_and_599_does_not() -> None:
    head = (FIX / "a2_tp4_bound.log").read_bytes()
    for back, runs in ((599, 1), (600, 1), (601, 2)):
        t = 9 * MONTH_S
        tail = [
            f"(APIServer pid=5200) INFO {stamp_text(t + s, 'plain')} [x.py:1] y" for s in (0, 700)
        ]
        tail.append(f"(APIServer pid=5200) INFO {stamp_text(t + 700 - back, 'plain')} [x.py:1] y")
        data = head.replace(b"09-23", b"01-01") + "\n".join(tail).encode() + b"\n"
        got = fast([data])
        assert got == slow([data]) and len(got.runs) == runs, back


def test_the_clock_text_is_the_last_stamp_of_its_latest_second() -> None:
    """Two records glued on one line in the same second, an earlier second after them, a time
    named in a message: the clock's text is the latest second's last stamp as records() reads
    it (a new run's reason quotes it)."""
    data = (
        b"INFO 09-23 10:00:00 [x.py:1] a INFO 09-23 10:00:00.5 [y.py:2] b\n"
        b"(APIServer pid=5200) INFO 09-23 09:59:00 [x.py:1] until 09-23 10:00:00 or 09-23 11:00:00\n"
    )
    want = oracle(data).clock_state()
    assert want == ((None, 9, 2023200), "09-23 10:00:00.5")
    for block in (1, 70, 4096):
        scan.BLOCK, old = block, scan.BLOCK
        try:
            assert parse_chunks([data]).clock_state() == want, block
        finally:
            scan.BLOCK = old


# -- the two searches: ahocorasick_rs's one pass, bytes.find marker by marker ---------------------


@pytest.fixture
def find_only(monkeypatch: pytest.MonkeyPatch) -> None:
    """The search without ahocorasick_rs (as where it is not installed)."""
    monkeypatch.setattr(scan, "_AC", [None])


def test_ahocorasick_is_used_where_installed() -> None:
    pytest.importorskip("ahocorasick_rs")
    assert scan._automata() is not None


@pytest.mark.parametrize("path", LOGS, ids=[p.name for p in LOGS])
def test_every_fixture_reads_alike_searched_marker_by_marker(path: Path, find_only: None) -> None:
    data = path.read_bytes()
    padded = b"\n".join(FILLER * 30) + b"\n" + data + b"\n".join(FILLER * 30)
    for log in (data, padded):
        assert fast(pieces(log, [333])) == slow([log])


def read_every_way(
    log: bytes, sizes: list[int], block: int, cap: int = vllm_log.MAX_LINE_BYTES
) -> dict[str, vllm_log.LogParser]:
    """The log read by the compiled loops (where built) and by the Python alone, each with
    ahocorasick_rs (where installed) and without it, and with each chunk's plain flag given as
    a reader gives it."""
    chunks = pieces(log, sizes)
    old = scan.BLOCK, scan._AC, scan._C
    c, ac = scan.native(), scan._automata()
    ways = {
        "C": (c, ac),
        "C, no ahocorasick": (c, None),
        "Python": (None, ac),
        "Python, no ahocorasick": (None, None),
    }
    got = {}
    scan.BLOCK = block
    try:
        for way, (c_way, ac_way) in ways.items():
            scan._C, scan._AC = [c_way], [ac_way]
            got[way] = parse_chunks(chunks, max_bytes=cap)
            if way in ("C", "Python"):
                got[f"{way}, plain flags"] = vllm_log.parse_blocks(
                    (
                        (ch, ch.isascii() and len(ch.translate(None, DIRTY)) == len(ch))
                        for ch in chunks
                    ),
                    max_bytes=cap,
                )
    finally:
        scan.BLOCK, scan._AC, scan._C = old
    return got


@settings(max_examples=300)
@given(
    st.one_of(mutated(), clocked()),
    st.lists(st.integers(1, 300), min_size=1, max_size=4),
    st.integers(1, 600),
)
def test_both_searches_and_plain_blocks_read_alike(
    log: bytes, sizes: list[int], block: int
) -> None:
    """Markers, stamps and control bytes found by the compiled loops or the Python, in one pass
    or marker by marker, blocks a reader called plain or not: the report and the clock are
    those of feeding every line."""
    want = oracle(log)
    for way, p in read_every_way(log, sizes, block).items():
        assert p.report() == want.report(), way
        assert p.clock_state() == want.clock_state(), way


def test_overlapping_markers_and_levels_are_each_found() -> None:
    """One pass reports no overlapping matches: a line whose marker overlaps another, or a
    level's mark, is still read (`WARNPU`, `CPUCpu`, `INFO INFO 09-23 ...`)."""
    head = (FIX / "a2_tp4_bound.log").read_bytes()
    lines = [
        b"(Worker_TP0 pid=61) WARNPU0: main=[1 2]  acl=[3]  release=[[4]]",
        b"(Worker_TP0 pid=61) INFO 09-23 10:11:07 [x.py:1] WARNPU0: main=[1 2]  acl=[3]",
        b"(Worker_TP1 pid=62) INFO 09-23 10:11:08 [x.py:1] CPUCpucpu [cpu_bind_mode] mode=x rank=1",
        b"INFO INFO 09-23 09:00:00 [x.py:1] back an hour",
        b"WARNWARNING 09-23 08:00:00 [x.py:1] back again",
    ]
    log = head + b"\n".join(lines + FILLER) + b"\n"
    for way, p in read_every_way(log, [4096], 1 << 20).items():
        assert p.report() == oracle(log).report(), way


# -- the compiled loops (_scanc.c) against the Python they stand for ------------------------------

needs_c = pytest.mark.skipif(scan.native() is None, reason="installed without a C compiler")


def test_the_compiled_loops_are_built_where_a_compiler_is() -> None:
    skip_without_cc()
    assert scan.native() is not None, "pip install -e . builds ascendtune/core/vllm_log/_scanc.c"


# bytes a log's scan tells apart: newlines, tab, the removed ones (NUL, ESC, CR, DEL), past ASCII
ALPHABET = b"\n\t\x00\x01\x08\x0b\x0c\r\x1b\x1f\x7f\x80\xff -:0123456789INFOWARNG"
odd_bytes = st.lists(st.sampled_from(list(ALPHABET)), max_size=300).map(bytes)


@needs_c
@settings(max_examples=300)
@given(st.one_of(odd_bytes, st.binary(max_size=100), mutated(), clocked()), st.data())
def test_the_compiled_counts_answer_as_python(data: bytes, draw: st.DataObject) -> None:
    c = scan.native()
    begin = draw.draw(st.integers(0, len(data)))
    end = draw.draw(st.integers(begin, len(data)))
    assert c.newlines(data, begin, end) == data.count(b"\n", begin, end)
    assert c.plain(data) is (data.isascii() and len(data.translate(None, DIRTY)) == len(data))
    m = scan._DIRTY_RE.search(data, begin, end)
    assert c.first_dirty(data, begin, end) == (m.start() if m else -1)


def python_stamps(data: bytes, begin: int, end: int, clock: tuple[int | None, int, int] | None):
    """(verdict, latest key) as the Python judges data[begin:end]'s stamps (regex search)."""
    p = vllm_log.LogParser()
    p.set_clock(clock, "")
    old = scan._C, scan._AC
    scan._C, scan._AC = [None], [None]
    try:
        keys = scan._Scan(p, vllm_log.MAX_LINE_BYTES)._stamps(data, begin, end)
    finally:
        scan._C, scan._AC = old
    if keys is None:
        return -1, None
    return (1, max(keys)) if keys else (0, None)


CLOCKS = [None, (None, 9, 22 * 86400 + 36600), (2026, 9, 0), (None, 100, 0), (None, 1, 0)]


@needs_c
@settings(max_examples=300)
@given(st.one_of(clocked(), mutated(), odd_bytes), st.sampled_from(CLOCKS), st.data())
def test_the_compiled_stamps_are_judged_as_python(
    data: bytes, clock: tuple[int | None, int, int] | None, draw: st.DataObject
) -> None:
    """Every level's stamp found from its '-' (each form, any bytes around it, cut at either
    end), judged from any clock: the verdict and the latest stamp are the Python's."""
    begin = draw.draw(st.integers(0, len(data)))
    end = draw.draw(st.integers(begin, len(data)))
    start = None if clock is None else (scan._clock_key(clock) or b"")
    got = scan.native().stamps(data, begin, end, scan._HEADS, start, RUN_CLOCK_BACK_S)
    assert got == python_stamps(data, begin, end, clock)


def test_the_heads_are_the_windowed_regex_alternatives() -> None:
    assert scan._HEADS == (b"DEBUG ", b"INFO ", b"WARNING ", b"WARN ", b"ERROR ", b"CRITICAL ")
    for head in scan._HEADS:
        assert scan._WINDOWED_RE.match(b"\x00" + head + b"09-23 10:11:05")


@needs_c
def test_the_compiled_loops_refuse_spans_outside_the_data() -> None:
    c = scan.native()
    for begin, end in ((-1, 3), (0, 5), (3, 2)):
        with pytest.raises(ValueError):
            c.newlines(b"a\nb\n", begin, end)
        with pytest.raises(ValueError):
            c.stamps(b"a\nb\n", begin, end, scan._HEADS, None, RUN_CLOCK_BACK_S)
    with pytest.raises(ValueError):
        c.stamps(b"x\n", 0, 2, scan._HEADS, b"25-99", RUN_CLOCK_BACK_S)


def stamped(t: int, form: str = "plain", level: str = "INFO") -> bytes:
    return f"(APIServer pid=5200) {level} {stamp_text(t, form)} [loggers.py:123] Engine 000: x".encode()


T0 = 9 * MONTH_S + 10 * 86400 + 11 * 3600  # 10-11 11:00:00, after BOUND's stamps
BOUND = (FIX / "a2_tp4_bound.log").read_bytes().replace(b"09-23", b"10-11")


def edges() -> dict[str, tuple[bytes, int]]:
    """Logs at the scan's edges, each with the line cap to read it under."""
    cap = vllm_log.MAX_LINE_BYTES
    lines = [stamped(T0 + s) for s in range(0, 4000, 7)]
    out = {
        "stamps at every block end": (b"\n".join(lines) + b"\n", cap),
        "a block of one line": (stamped(T0) + b"\n", cap),
        "one line, no newline": (stamped(T0), cap),
        "hour 24": (b"\n".join([stamped(T0), b"INFO 10-11 24:00:00 [x.py:1] y", stamped(T0)]), cap),
        "a year stamp": (
            b"\n".join([BOUND, stamped(T0, "year"), stamped(T0 - 700), stamped(T0, "year")]),
            cap,
        ),
        "NUL and DEL": (
            b"\n".join(
                [BOUND, stamped(T0), b"\x00INFO 10-11 09:00:00 [x.py:1] \x7f", stamped(T0 - 601)]
            ),
            cap,
        ),
        "lines past the cap": (
            b"\n".join(
                [BOUND, stamped(T0) * 40, stamped(T0 - 5), b"NPU0" * 300, stamped(T0 - 700)]
            ),
            200,
        ),
    }
    # the latest stamp only inside a message (records() reads none there): every key is asked
    inside = b"(APIServer pid=5200) said INFO 10-11 11:01:00 [x.py:1] in a message"
    out["the latest stamp inside a message"] = (
        b"\n".join([BOUND, stamped(T0), inside, stamped(T0 + 5), stamped(T0 - 3)]) + b"\n",
        cap,
    )
    for back in (599, 600, 601):
        tail = [stamped(T0), stamped(T0 + 700), stamped(T0 + 700 - back)]
        out[f"back {back} s"] = (BOUND + b"\n".join(tail) + b"\n", cap)
    return out


@pytest.mark.parametrize("name", list(edges()))
def test_the_edges_read_alike_every_way(name: str) -> None:
    log, cap = edges()[name]
    want = vllm_log.LogParser()
    for line in split_lines([log], cap):
        want.feed(line)
    for block in (1, 23, 150, 4096, 1 << 20):
        for sizes in ([len(log) or 1], [1], [150], [61, 7]):
            for way, p in read_every_way(log, sizes, block, cap).items():
                assert p.report() == want.report(), (way, block, sizes)
                assert p.clock_state() == want.clock_state(), (way, block, sizes)
    if name.startswith("back"):
        assert len(want.report().runs) == (2 if name == "back 601 s" else 1)


@needs_c
def test_the_compiled_loops_read_nothing_outside_the_data() -> None:
    """Data between two pages no process may read (a read past either end would kill the test
    run): cut stamps, heads and control bytes at the very first and last byte."""
    page = mmap.PAGESIZE
    area = mmap.mmap(-1, 3 * page)
    libc = ctypes.CDLL(None, use_errno=True)
    libc.mprotect.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
    base = ctypes.addressof(ctypes.c_char.from_buffer(area))
    for at in (base, base + 2 * page):
        assert libc.mprotect(at, page, 0) == 0, os.strerror(ctypes.get_errno())  # PROT_NONE
    c = scan.native()
    view = memoryview(area)
    tails = [b"INFO 10-11 11:0", b"INFO 2026-10-11 11:00:0", b"WARNING 10-1", b"-", b"5-", b"\x7f"]
    for tail in tails:
        for data in (tail, b"x" * 40 + tail, tail + b"\nINFO "):
            for start in (page, 2 * page - len(data)):  # against the page before, the page after
                view[start : start + len(data)] = data
                buf = view[start : start + len(data)]
                n = len(data)
                assert c.newlines(buf, 0, n) == data.count(b"\n")
                assert c.plain(buf) is (b"\x7f" not in data)
                assert c.first_dirty(buf, 0, n) == data.find(b"\x7f")
                assert c.stamps(buf, 0, n, scan._HEADS, None, RUN_CLOCK_BACK_S)[0] in (-1, 0)
                view[start : start + len(data)] = bytes(len(data))
