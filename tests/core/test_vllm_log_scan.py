"""The prefilter (core/vllm_log/scan.py): the report of a log read through the markers is the one
feeding every line gives, for every fixture, every pattern's matches, mutated real lines, any
chunking, over-long lines and the line limit; and the markers cover every pattern."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ascendtune.core import vllm_log
from ascendtune.core.vllm_log import LogReport, parse_chunks, parse_log, records, scan, split_lines
from ascendtune.core.vllm_log import patterns as pat
from ascendtune.core.vllm_log.records import STAMP_MARKS, plain_stamps

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


def test_reads_only_marked_and_stamped_lines() -> None:
    """A filler line without a stamp is counted, never decoded; a stamped one feeds the clock."""
    fed: list[bytes] = []

    class Spy(vllm_log.LogParser):
        def feed(self, line: bytes, *, stamp_only: bool = False) -> None:
            fed.append(line)
            super().feed(line, stamp_only=stamp_only)

    data = b"\n".join([FILLER[0]] * 50 + [FILLER[1]] + [FILLER[0]] * 50) + b"\n"
    p = parse_chunks([data], Spy())
    assert fed == [FILLER[1]] and p.report() == slow([data]) and p.lines == 101


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
