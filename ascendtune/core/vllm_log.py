"""Read a vLLM / vLLM-Ascend server log: per worker, the CPU binding it printed or why it failed.

Pure: `parse_log` takes byte lines (`split_lines` cuts a byte stream into capped lines) and returns
a frozen `LogReport`; `compare_with_plan` sets the logged pools beside ascendtune's prediction.
The formats are those of vLLM-Ascend's `cpu_binding.py` and `worker.py` on v0.13.0 … main and the
release lines v0.18.0 … v0.26.0rc, and vLLM's record prefixes and start-up lines. A line this
module does not know is skipped, never an error.
"""

from __future__ import annotations

import ast
import json
import re
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field, replace
from typing import Any, Literal

from ascendtune.core.cpulist import CpuSet, format_cpulist
from ascendtune.core.planner.model import Plan, PlanRequest

# Bounded memory: a log may be gigabytes, a line megabytes (a pasted tensor), or never end.
MAX_LINE_BYTES = 64 * 1024
MAX_LINES = 20_000_000
MAX_WORKERS = 1024
MAX_IRQS = 64  # per worker
MAX_LITERAL_CHARS = 256 * 1024  # a `non-default args` dict
MAX_LITERAL_DEPTH = 32
MAX_LITERAL_NODES = 100_000
MAX_CPU = 1 << 16

Binding = Literal["bound", "failed", "skipped", "not seen"]
Severity = Literal["error", "warning", "info"]


@dataclass(frozen=True)
class LoggedPlan:
    """`NPUn: main=[...]  acl=[...]  release=[[...]]` (or `Ascend 950 NPUn: worker=[...]`)."""

    npu: int
    main: CpuSet
    acl: CpuSet = frozenset()
    release: CpuSet = frozenset()

    @property
    def cpus(self) -> CpuSet:
        return self.main | self.acl | self.release

    def to_json(self) -> dict[str, Any]:
        return {
            "npu": self.npu,
            "main": format_cpulist(self.main),
            "acl": format_cpulist(self.acl),
            "release": format_cpulist(self.release),
        }


@dataclass(frozen=True)
class IrqBinding:
    """`NPUn(PCI addr): sq_send_trigger_irq IRQ_ID=a -> CPUx, cq_update_irq IRQ_ID=b -> CPUy`."""

    npu: int
    pci: str
    sq_irq: int
    sq_cpu: int
    cq_irq: int
    cq_cpu: int

    def to_json(self) -> dict[str, Any]:
        return {
            "npu": self.npu,
            "pci": self.pci,
            "sq_irq": self.sq_irq,
            "sq_cpu": self.sq_cpu,
            "cq_irq": self.cq_irq,
            "cq_cpu": self.cq_cpu,
        }


@dataclass(frozen=True)
class WorkerLog:
    """What one worker process (one rank) logged about CPU binding."""

    rank: int | None  # vLLM-Ascend's rank_id (the worker's local rank), or from the prefix
    pid: int | None
    process: str | None  # the record prefix's name: "Worker_TP3", "VllmWorker rank=1", ...
    dp_rank: int | None
    binding: Binding
    reason: str | None = None  # the exception text of "Bind cpus failed", or why it was skipped
    cause: str | None = None  # a stable code for the reason ("too_few_cpus", ...)
    cause_text: str | None = None  # the cause in words
    fix: str | None = None
    mode: str | None = None  # topo_affinity, global_slice (from `[cpu_bind_mode]`)
    visible_npus: tuple[int, ...] = ()  # the running NPU list it printed
    plan: LoggedPlan | None = None
    irqs: tuple[IrqBinding, ...] = ()
    migrate_nodes: tuple[int, ...] = ()
    skipped_steps: tuple[str, ...] = ()  # "irq: ...", "memory: ..." (binding ran, a step did not)
    line: int = 0  # the first line that named this worker
    global_rank: int | None = None  # vLLM's "rank R in world size W is assigned as ..." line


@dataclass(frozen=True)
class LogFinding:
    code: str
    severity: Severity
    ranks: tuple[int, ...]
    message: str
    hint: str = ""

    def to_json(self) -> dict[str, Any]:
        return {
            "code": self.code,
            "severity": self.severity,
            "ranks": list(self.ranks),
            "message": self.message,
            "hint": self.hint,
        }


@dataclass(frozen=True)
class LogReport:
    workers: tuple[WorkerLog, ...]
    args: Mapping[str, Any] | None  # vLLM's `non-default args: {...}`
    additional_config: Mapping[str, Any] | None
    versions: Mapping[str, str]  # "vllm", "vllm_ascend" when the log names them
    findings: tuple[LogFinding, ...]
    lines: int  # lines read
    lines_cut: int  # longer than MAX_LINE_BYTES, or ending mid-record
    binding_seen: bool  # any CPU-binding line at all
    truncated: bool = False  # stopped after MAX_LINES

    @property
    def ranks(self) -> tuple[WorkerLog, ...]:
        return self.workers

    @property
    def failed(self) -> tuple[WorkerLog, ...]:
        return tuple(w for w in self.workers if w.binding == "failed")


# ---------------------------------------------------------------------------------------------
# Failure reasons: the exception texts bind_cpus raises, their cause and fix (data, one place)


@dataclass(frozen=True)
class Cause:
    code: str
    pattern: re.Pattern[str]
    cause: str
    fix: str


def _c(code: str, pattern: str, cause: str, fix: str) -> Cause:
    return Cause(code, re.compile(pattern, re.IGNORECASE), cause, fix)


CAUSES: tuple[Cause, ...] = (
    _c(
        "too_few_cpus",
        r"number of CPUs is insuf|Insufficient CPUs for bind|got too few CPUs|"
        r"Cpu num in numa .* is not enough",
        "an NPU's CPU pool has fewer than 5 CPUs (2 for IRQs, main, acl, release): the cpuset is "
        "too small for the NPUs sharing it (global_slice divides it by every NPU on the host)",
        "give the container more CPUs (`docker --cpuset-cpus`, the pod's CPU limit with the static "
        "CPU manager), or fewer NPUs per cpuset; `ascendtune plan` shows each pool",
    ),
    _c(
        "cpuset_conflict",
        r"conflict with NUMA affinity",
        "the cpuset (Cpus_allowed_list) holds none of an NPU's affinity CPUs (`npu-smi info -t "
        "topo`): the container was given CPUs on other NUMA nodes than its NPUs",
        "give the container CPUs on its NPUs' NUMA nodes; `ascendtune topo` shows each NPU's "
        "affinity beside the cpuset",
    ),
    _c(
        "no_running_npu",
        r"Can not get running npu info|Can not get device info",
        "`npu-smi info` showed no process on any visible NPU: the container has its own PID "
        "namespace, npu-smi is missing or of another format, or ASCEND_RT_VISIBLE_DEVICES names "
        "NPUs without a process",
        "run the container with `--pid=host` and check that `npu-smi info` lists the worker "
        "processes; check ASCEND_RT_VISIBLE_DEVICES",
    ),
    _c(
        "rank_past_npu_list",
        r"list index out of range",
        "the rank's index is past the running NPU list: `npu-smi info` listed fewer busy NPUs "
        "than there are ranks (some worker processes missing from its table)",
        "run the container with `--pid=host`; check that every worker shows in `npu-smi info`",
    ),
    _c(
        "taskset_failed",
        r"Failed to bind \S+ to CPU",
        "`taskset` could not set a thread's affinity: taskset missing, CPUs outside the cpuset, "
        "or no CAP_SYS_NICE",
        "install util-linux (taskset) in the image and check the cpuset; `ascendtune doctor` checks "
        "CAP_SYS_NICE",
    ),
    _c(
        "lscpu_output",
        r"lscpu command output error|invalid literal for int\(\) with base 10: '-'|"
        r"not enough values to unpack|too many values to unpack",
        "`lscpu -e=CPU,NODE` gave no usable NUMA node (an offline CPU prints `-` as its node, or "
        "lscpu is missing or localized)",
        "bring offline CPUs online (or boot without them), and check `LC_ALL=C lscpu -e=CPU,NODE`",
    ),
    _c(
        "no_cpus_allowed_list",
        r"Cpus_allowed_list",
        "/proc/self/status has no Cpus_allowed_list line (an unusual kernel or sandbox)",
        "run on a standard Linux kernel; check `grep Cpus_allowed_list /proc/self/status`",
    ),
    _c(
        "npu_smi_map",
        r"chip_logic_id|Device \d+ not found in device_map_info",
        "`npu-smi info -m` gave no usable Chip Logic ID for a running NPU",
        "check `npu-smi info -m`; update the NPU driver so npu-smi prints the mapping",
    ),
    _c(
        "invalid_npu_id",
        r"Invalid NPU id",
        "global_slice got an NPU id at or past the number of NPUs it counted",
        "check `npu-smi info -m` and ASCEND_RT_VISIBLE_DEVICES",
    ),
    _c(
        "irq_permission",
        r"Permission denied.*/proc/irq|/proc/irq.*Permission denied|Read-only file system.*irq",
        "/proc/irq is not writable in the container",
        "start the container with `--privileged=true`, or bind IRQs on the host",
    ),
    _c(
        "tool_missing",
        r"No such file or directory: '(npu-smi|taskset|lscpu|migratepages|ps|systemctl)'",
        "a tool the binding runs is missing from the image",
        "install it in the image (npu-smi from the driver, taskset and lscpu from util-linux, "
        "migratepages from numactl, ps from procps)",
    ),
)
UNKNOWN_CAUSE = Cause(
    "unknown",
    re.compile(r"$^"),
    "a step of the binding raised an error this tool does not know",
    "read the reason; check `taskset`, `lscpu`, `npu-smi`, the cpuset size and /proc/irq "
    "permissions (vLLM-Ascend's CPU binding guide)",
)


def cause_of(reason: str) -> Cause:
    for c in CAUSES:
        if c.pattern.search(reason):
            return c
    return UNKNOWN_CAUSE


# ---------------------------------------------------------------------------------------------
# Lines and records

_ANSI = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b[@-Z\\-_]")
_CTRL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f]")
# vLLM's process prefix: `(Worker_TP3 pid=123)`, `(VllmWorker rank=1 pid=9)`, Ray's `pid=9, ip=`
_PREFIX = (
    r"\((?P<proc>[A-Za-z_][\w.\-]*(?: rank=(?P<prank>\d+))?) pid=(?P<pid>\d+)(?:, ip=[^)]*)?\)\s*"
)
_LEVEL = r"(?P<level>DEBUG|INFO|WARNING|WARN|ERROR|CRITICAL)"
_STAMP = r"(?:\d{2}-\d{2} \d{2}:\d{2}:\d{2}(?:\.\d+)?|\d{4}-\d{2}-\d{2}[ T]\d{2}:\d{2}:\d{2}(?:[.,]\d+)?)"
# `[file.py:123]` (vLLM ≥ 0.8), `file.py:123]` (older), `[file.py:123 pid]` seen too
_WHERE = r"(?:\[[^\]\s]+:\d+\]|[^\s\[\]]+:\d+\])"
_HEAD = re.compile(rf"(?:{_PREFIX})?{_LEVEL} {_STAMP} {_WHERE} ?")
_LEVEL_STAMP = re.compile(rf"{_LEVEL} {_STAMP} ")
_PREFIX_TAIL = re.compile(_PREFIX + r"$")
CUT_MARK = b"\x00cut"
_ONLY_PREFIX = re.compile(_PREFIX)
# vLLM-Ascend's own formatter (logger.py): `[vllm-ascend] - msg`, `[vllm-ascend] [module] - msg`
_ASCEND_TAG = re.compile(r"^\[vllm-ascend\](?: \[[\w.\-]+\])? - ")


@dataclass(frozen=True)
class Record:
    message: str
    pid: int | None = None
    process: str | None = None
    level: str | None = None
    cut: bool = False


def split_lines(chunks: Iterable[bytes], max_bytes: int = MAX_LINE_BYTES) -> Iterator[bytes]:
    """Cut a byte stream into lines of at most max_bytes (+ the newline); the rest of a longer
    line is dropped, and the kept part ends with b"\\x00cut" so the parser can say so."""
    buf = b""
    dropping = False  # inside the dropped tail of an over-long line
    for chunk in chunks:
        buf = buf + chunk if buf else chunk
        pos = 0
        while True:
            nl = buf.find(b"\n", pos)
            if nl < 0:
                break
            if dropping:
                dropping = False
            elif nl - pos > max_bytes:
                yield buf[pos : pos + max_bytes] + CUT_MARK
            else:
                yield buf[pos:nl]
            pos = nl + 1
        buf = buf[pos:]
        if len(buf) > max_bytes:
            if not dropping:
                yield buf[:max_bytes] + CUT_MARK
                dropping = True
            buf = b""
    if buf and not dropping:
        yield buf[:max_bytes]


def records(line: bytes) -> list[Record]:
    """The log records one physical line holds: ANSI colour, carriage returns (progress bars)
    and two records glued together are split apart; bad UTF-8 becomes U+FFFD."""
    cut = line.endswith(CUT_MARK)
    if cut:
        line = line[: -len(CUT_MARK)]
    text = line.decode("utf-8", errors="replace")
    if "\x1b" in text:
        text = _ANSI.sub("", text)
    out: list[Record] = []
    for seg in text.replace("\r\n", "\n").replace("\r", "\n").split("\n"):
        if not seg.isprintable():
            seg = _CTRL.sub("", seg)
        seg = seg.strip()
        if not seg:
            continue
        starts = [0]
        stamps = list(_LEVEL_STAMP.finditer(seg))
        if len(stamps) > 1:  # rare: records glued together; each starts at its prefix, if any
            for m in stamps[1:]:
                p = m.start()
                before = _PREFIX_TAIL.search(seg, max(0, p - 200), p)
                starts.append(before.start() if before else p)
        for i, s in enumerate(starts):
            end = starts[i + 1] if i + 1 < len(starts) else len(seg)
            out.append(_record(seg[s:end].strip()))
    if cut and out:
        out[-1] = replace(out[-1], cut=True)
    return out


def _record(text: str) -> Record:
    m = _HEAD.match(text)
    if m:
        msg = text[m.end() :]
        pid = int(m.group("pid")) if m.group("pid") else None
        proc = m.group("proc")
        level = m.group("level")
    else:
        p = _ONLY_PREFIX.match(text)
        msg = text[p.end() :] if p else text
        pid = int(p.group("pid")) if p else None
        proc = p.group("proc") if p else None
        level = None
    msg = _ASCEND_TAG.sub("", msg.strip())
    return Record(msg, pid, proc, level)


# ---------------------------------------------------------------------------------------------
# The messages (cpu_binding.py / worker.py on every line ascendtune knows)

_NUMS = r"[\d,\s]*"
# lenient past `rank=`: lines after the binding fix (PR #15517) may name the NPU too
_MODE = re.compile(r"\[cpu_bind_mode\] mode=(\w+) rank=(\d+)")
_MODE_VISIBLE = re.compile(rf"visible_npus=\[({_NUMS})\]")
_MODE_NPU = re.compile(r"\b(?:npu|npu_id|current_npu)=(\d+)")
_PLAN_HEAD = re.compile(r"The CPU allocation plan is as follows:")
_PLAN = re.compile(
    rf"NPU(\d+): main=\[({_NUMS})\]\s+acl=\[({_NUMS})\]\s+release=\[(?:\[({_NUMS})\])?\]"
)
_PLAN_START = re.compile(r"NPU(\d+): main=\[")
_PLAN_950 = re.compile(rf"Ascend 950 NPU(\d+): worker=\[({_NUMS})\]")
_IRQ = re.compile(
    r"NPU(\d+)\(PCI ([^)]*)\): sq_send_trigger_irq IRQ_ID=(\d+) -> CPU(\d+), "
    r"cq_update_irq IRQ_ID=(\d+) -> CPU(\d+)"
)
_IRQ_START = re.compile(r"NPU(\d+)\(PCI [^)]*\): sq_send_trigger_irq")
_MIGRATE = re.compile(rf"\[migrate\] NPU:(\d+) -> NUMA \[({_NUMS})\]")
_FAILED = re.compile(r"Bind cpus failed in rank\s*(\d+): (.*?)(?:\s*Skip binding cpu\.?)?$")
_FAILED_START = re.compile(r"Bind cpus failed in rank\s*(\d*)")
_NON_ARM = re.compile(r"CPU binding skipped: non-ARM CPU detected")
_UNKNOWN_ARCH = re.compile(
    r"Unknown CPU architecture(?:\. arch=(\S+?),| '([^']*)')?.*(?:disabl|will be disabled)"
)
_SKIP_950 = re.compile(r"\[cpu_bind_ascend_950\] (.*?)\s*action: skip worker CPU binding")
_TOPO_FALLBACK = re.compile(r"NPU topo affinity not found.*fallback to global-slice")
_NO_MIGRATEPAGES = re.compile(r"The 'migratepages' command is not available")
_IRQ_NOT_WRITABLE = re.compile(r"/proc/irq is not writable")
_IRQBALANCE = re.compile(r"The irqbalance service is running and has been stopped")
_IRQ_SKIP = re.compile(
    r"\[irq\] NPU has no CPU pool|\[irq\] CPU pool too small|\[irq\] rank:\d+ -> NPU\d+ has no cpu pool|"
    r"\[irq\] NPU\d+ cpu pool too small|Can't find PCI address|Can't find pci address|"
    r"The msi_irqs folder cannot be found|The sq_send_trigger_irq (?:of NPU\d+ )?is not found"
)
_IRQ_950 = re.compile(r"\[irq\] IRQ binding skipped on Ascend 950")
_MIGRATE_SKIP = re.compile(
    r"\[migrate\] NPU has no CPU pool|\[migrate\] NUMA node not found|"
    r"\[migrate\] NPU:\d+ -> NUMA \d+ not found|\[migrate\] rank:\d+ -> NPU\d+ has no CPU pool"
)
# v0.13.0's older binder
_LEGACY_PLAN = re.compile(
    rf"rank_id: (\d+), device_id: (\d+), numa_id: (\S+), shard_devices: \[({_NUMS})\], cpus: \[({_NUMS})\]"
)
_LEGACY_BOUND = re.compile(rf"process (\d+), new_affinity is \[({_NUMS})\], cpu count (\d+)")
_LEGACY_FAILED = re.compile(
    r"^(.*(?:Cpu num in numa|Can not get device info|lscpu command output error|"
    r"not found in device_map_info|CPU_BINDING_NUM should not).*) in (\d+)$"
)
# vLLM start-up lines
_VLLM_VERSION = re.compile(
    r"vLLM API server version (\S+)|Initializing a V1 LLM engine \(v([^)\s]+)\)|"
    r"\bvLLM version:? v?(\d+\.\d+\S*)"
)
_ASCEND_VERSION = re.compile(
    r"vllm[-_]ascend(?:'s)? version(?: is)?:? v?(\d+\.\d+[\w.+\-]*)|vllm[-_]ascend[= ]=?v?(\d+\.\d+\.\d+[\w.+\-]*)",
    re.IGNORECASE,
)
_NON_DEFAULT = re.compile(r"non-default args: (\{.*)$")
_NAMESPACE = re.compile(r"\bargs: Namespace\((.*)$")

# vLLM's parallel_state: "rank 10 in world size 32 is assigned as DP rank 0, PP rank 0, ..."
_ASSIGNED = re.compile(r"rank (\d+) in world size \d+ is assigned as DP rank (\d+)")
_STEP_NPU = re.compile(r"npu=(\d+)|NPU(\d+)")
_IDX = re.compile(r"(?:^|_)(DP|TP|PP|EP|PCP|DCP)(\d+)")


def _ints(text: str) -> tuple[int, ...]:
    out: list[int] = []
    for tok in re.split(r"[,\s]+", text.strip()):
        if (tok.isascii() and tok.isdigit()) and int(tok) < MAX_CPU:
            out.append(int(tok))
    return tuple(out)


def _cpus(text: str) -> CpuSet:
    return frozenset(_ints(text))


# ---------------------------------------------------------------------------------------------
# Python literals (`non-default args` is a dict repr): ast.literal_eval under caps, never eval


def safe_literal(text: str) -> Any:
    """The Python literal in text, or None when it is too big, too deep, cut, or not a literal."""
    if len(text) > MAX_LITERAL_CHARS:
        return None
    try:
        tree = ast.parse(text, mode="eval")
    except (SyntaxError, ValueError, MemoryError, RecursionError):
        return None
    count = 0

    def depth(node: ast.AST, d: int) -> bool:
        nonlocal count
        count += 1
        if d > MAX_LITERAL_DEPTH or count > MAX_LITERAL_NODES:
            return False
        return all(depth(child, d + 1) for child in ast.iter_child_nodes(node))

    try:
        if not depth(tree, 0):
            return None
        return ast.literal_eval(tree)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return None


def _balanced(text: str) -> str | None:
    """The bracketed literal text starts with ({...}, [...], '...' or "..."), quote-aware."""
    if not text:
        return None
    if text[0] in "'\"":
        q = text[0]
        i = 1
        while i < len(text):
            if text[i] == "\\":
                i += 2
                continue
            if text[i] == q:
                return text[: i + 1]
            i += 1
        return None
    pairs = {"{": "}", "[": "]", "(": ")"}
    if text[0] not in pairs:
        return None
    stack: list[str] = []
    quote: str | None = None
    i = 0
    while i < len(text):
        ch = text[i]
        if quote:
            if ch == "\\":
                i += 2
                continue
            if ch == quote:
                quote = None
        elif ch in "'\"":
            quote = ch
        elif ch in pairs:
            stack.append(pairs[ch])
        elif ch in "}])":
            if not stack or stack.pop() != ch:
                return None
            if not stack:
                return text[: i + 1]
        i += 1
    return None


def _config_value(value: Any) -> Mapping[str, Any] | None:
    """additional_config as vLLM holds it: a dict, or the JSON string given on the command line."""
    if isinstance(value, dict):
        return value
    if isinstance(value, str) and len(value) <= MAX_LITERAL_CHARS:
        try:
            doc = json.loads(value)
        except ValueError:
            return None
        return doc if isinstance(doc, dict) else None
    return None


# ---------------------------------------------------------------------------------------------
# The parser


@dataclass
class _Worker:
    key: object
    line: int
    pid: int | None = None
    process: str | None = None
    rank: int | None = None
    dp_rank: int | None = None
    binding: Binding = "not seen"
    reason: str | None = None
    mode: str | None = None
    visible: tuple[int, ...] = ()
    plan: LoggedPlan | None = None
    plan_expected: bool = False  # "The CPU allocation plan" seen, the NPU line not yet
    irqs: list[IrqBinding] = field(default_factory=list)
    migrate: list[int] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)
    cut_plan: bool = False
    global_rank: int | None = None
    npu_hint: int | None = None  # the NPU a mode line names, where it does

    def freeze(self) -> WorkerLog:
        cause = cause_of(self.reason) if self.binding == "failed" and self.reason else None
        if self.binding == "failed" and cause is None:
            cause = UNKNOWN_CAUSE
        return WorkerLog(
            rank=self.rank,
            pid=self.pid,
            process=self.process,
            dp_rank=self.dp_rank,
            binding=self.binding,
            reason=self.reason,
            cause=cause.code if cause else None,
            cause_text=cause.cause if cause else None,
            fix=cause.fix if cause else None,
            mode=self.mode,
            visible_npus=self.visible,
            plan=self.plan,
            irqs=tuple(self.irqs),
            migrate_nodes=tuple(self.migrate),
            skipped_steps=tuple(self.skipped),
            line=self.line,
            global_rank=self.global_rank,
        )

    def expected_npu(self) -> int | None:
        if self.npu_hint is not None:
            return self.npu_hint
        if self.rank is not None and 0 <= self.rank < len(self.visible):
            return self.visible[self.rank]
        return None


def _name_ranks(proc: str | None, prank: int | None) -> tuple[int | None, int | None]:
    """(local rank, dp rank) from a prefix name: `Worker_DP1_TP0_EP1`, `VllmWorker rank=2`."""
    if prank is not None:
        return prank, None
    if not proc:
        return None, None
    idx = {k: int(v) for k, v in _IDX.findall(proc)}
    return idx.get("TP"), idx.get("DP")


def _is_worker_name(proc: str | None) -> bool:
    return bool(proc) and proc is not None and (proc.startswith("Worker") or "Worker" in proc)


class LogParser:
    """Feed byte lines, then `report()`; holds at most MAX_WORKERS workers and small state."""

    def __init__(self) -> None:
        self.lines = 0
        self.cut = 0
        self.truncated = False
        self.workers: dict[object, _Worker] = {}
        self.order: list[object] = []
        self.current: dict[object, object] = {}  # source (pid or None) -> key of its open worker
        self.anon = 0
        self.binding_seen = False
        self.args: dict[str, Any] | None = None
        self.args_unparsed = False
        self.additional: Mapping[str, Any] | None = None
        self.versions: dict[str, str] = {}
        self.fallback_ranks: set[int] = set()
        self.irqbalance_stopped = False
        self.dropped_workers = 0
        self.cut_failures = 0

    # -- workers --------------------------------------------------------------------------

    def _new(self, key: object, rec: Record) -> _Worker | None:
        if len(self.workers) >= MAX_WORKERS:
            self.dropped_workers += 1
            return None
        w = _Worker(key=key, line=self.lines, pid=rec.pid, process=rec.process)
        prank = None
        if rec.process and " rank=" in rec.process:
            prank = int(rec.process.rsplit("=", 1)[1])
        w.rank, w.dp_rank = _name_ranks(rec.process, prank)
        self.workers[key] = w
        self.order.append(key)
        return w

    def _by_pid(self, rec: Record) -> _Worker | None:
        key = ("pid", rec.pid)
        w = self.workers.get(key)
        return w if w is not None else self._new(key, rec)

    def _anon(self, rec: Record) -> _Worker | None:
        self.anon += 1
        return self._new(("anon", self.anon), rec)

    def _for_rank(self, rec: Record, rank: int | None, *, opening: bool) -> _Worker | None:
        """The worker a record naming `rank` belongs to. With a pid, the pid's worker. Without
        one (single-process logs, stripped prefixes), the latest worker of that rank that has not
        finished; `opening` (a `[cpu_bind_mode]` line) starts a new one once it has."""
        if rec.pid is not None:
            w = self._by_pid(rec)
            if w is not None and rank is not None:
                w.rank = rank
            return w
        for key in reversed(self.order):
            w = self.workers[key]
            if w.pid is not None or (rank is not None and w.rank not in (rank, None)):
                continue
            done = w.binding in ("failed", "skipped") or (opening and w.mode is not None)
            if not done:
                if rank is not None:
                    w.rank = rank
                return w
            break
        w = self._anon(rec)
        if w is not None:
            w.rank = rank
        return w

    def _current(self, rec: Record) -> _Worker | None:
        if rec.pid is not None:
            return self._by_pid(rec)
        key = self.current.get(None)
        if key is not None:
            return self.workers.get(key)
        return self._anon(rec)

    def _for_npu(self, rec: Record, npu: int) -> _Worker | None:
        """The worker an `NPUn: main=[...]` line belongs to (without a pid: the open worker
        whose rank indexes NPU n in its visible list, else the latest open one)."""
        if rec.pid is not None:
            return self._by_pid(rec)
        pending = [
            self.workers[k]
            for k in self.order
            if self.workers[k].pid is None
            and self.workers[k].plan is None
            and self.workers[k].binding not in ("failed", "skipped")
            and (self.workers[k].mode is not None or self.workers[k].plan_expected)
        ]
        for w in pending:
            if w.expected_npu() == npu:
                return w
        if pending:
            return pending[-1]
        return self._anon(rec)

    def _for_irq(self, rec: Record, npu: int) -> _Worker | None:
        if rec.pid is not None:
            return self._by_pid(rec)
        for key in reversed(self.order):
            w = self.workers[key]
            if w.pid is None and w.plan is not None and w.plan.npu == npu:
                return w
        return self._current(rec)

    # -- lines ----------------------------------------------------------------------------

    def feed(self, line: bytes) -> None:
        if self.truncated:
            return
        if self.lines >= MAX_LINES:
            self.truncated = True
            return
        self.lines += 1
        recs = records(line)
        if recs and recs[-1].cut:
            self.cut += 1
        for rec in recs:
            self._message(rec)

    def _message(self, rec: Record) -> None:
        msg = rec.message
        if _is_worker_name(rec.process) and rec.pid is not None:
            w = self._by_pid(rec)  # a worker that never logs binding shows as "not seen"
            m = _ASSIGNED.search(msg) if w is not None and "world size" in msg else None
            if w is not None and m:
                w.global_rank = int(m.group(1))
                if w.dp_rank is None:
                    w.dp_rank = int(m.group(2))
        maybe = "NPU" in msg or "cpu" in msg.lower() or "irq" in msg or "migrat" in msg
        if maybe and self._binding(rec, msg):
            self.binding_seen = True
            return
        if "version" in msg or "vLLM" in msg:
            self._version(msg)
        if "args: " in msg:
            self._args(msg, rec.cut)

    def _binding(self, rec: Record, msg: str) -> bool:
        m = _MODE.search(msg)
        if m:
            w = self._for_rank(rec, int(m.group(2)), opening=True)
            if w is not None:
                vis = _MODE_VISIBLE.search(msg, m.end())
                hint = _MODE_NPU.search(msg, m.end())
                w.mode, w.visible = m.group(1), _ints(vis.group(1)) if vis else ()
                w.npu_hint = int(hint.group(1)) if hint else None
                self.current[rec.pid] = w.key
            return True
        if _PLAN_HEAD.search(msg):
            w = self._current(rec)
            if w is not None:
                w.plan_expected = True
                self.current[rec.pid] = w.key
            return True
        m = _PLAN.search(msg)
        if m:
            npu = int(m.group(1))
            w = self._for_npu(rec, npu)
            if w is not None:
                w.plan = LoggedPlan(
                    npu, _cpus(m.group(2)), _cpus(m.group(3)), _cpus(m.group(4) or "")
                )
                w.plan_expected = False
                if w.binding == "not seen":
                    w.binding = "bound"
                self.current[rec.pid] = w.key
            return True
        m = _PLAN_950.search(msg)
        if m:
            w = self._for_npu(rec, int(m.group(1)))
            if w is not None:
                w.plan = LoggedPlan(int(m.group(1)), _cpus(m.group(2)))
                w.mode = w.mode or "a5_clusters"
                if w.binding == "not seen":
                    w.binding = "bound"
            return True
        m = _PLAN_START.search(msg)
        if m:  # a plan line cut short: the worker printed a plan, its CPUs are lost
            w = self._for_npu(rec, int(m.group(1)))
            if w is not None:
                w.cut_plan = True
                if w.binding == "not seen":
                    w.binding = "bound"
            return True
        m = _IRQ.search(msg)
        if m:
            npu = int(m.group(1))
            w = self._for_irq(rec, npu)
            if w is not None and len(w.irqs) < MAX_IRQS:
                g = m.groups()
                w.irqs.append(
                    IrqBinding(npu, g[1].strip(), int(g[2]), int(g[3]), int(g[4]), int(g[5]))
                )
            return True
        if _IRQ_START.search(msg):
            return True
        m = _MIGRATE.search(msg)
        if m:
            w = self._current(rec)
            if w is not None:
                w.migrate.extend(_ints(m.group(2))[:8])
            return True
        m = _FAILED.search(msg) or None
        if m is not None or _FAILED_START.search(msg):
            if m is None:
                sm = _FAILED_START.search(msg)
                assert sm is not None
                rank = int(sm.group(1)) if sm.group(1) else None
                reason = msg[sm.end() :].lstrip(": ").strip() or "(the line is cut short)"
                self.cut_failures += 1
            else:
                rank, reason = int(m.group(1)), m.group(2).strip()
            w = self._for_rank(rec, rank, opening=False)
            if w is not None:
                w.binding, w.reason = "failed", reason[:2000]
            return True
        if _NON_ARM.search(msg):
            w = self._for_rank(rec, None, opening=False) if rec.pid is None else self._by_pid(rec)
            if w is not None and w.binding != "failed":
                w.binding, w.reason = (
                    "skipped",
                    "non-ARM CPU: vLLM-Ascend binds CPUs on ARM hosts only",
                )
            return True
        m = _UNKNOWN_ARCH.search(msg)
        if m:
            w = self._for_rank(rec, None, opening=False) if rec.pid is None else self._by_pid(rec)
            arch = m.group(1) or m.group(2) or "?"
            if w is not None and w.binding != "failed":
                w.binding, w.reason = (
                    "skipped",
                    f"unknown CPU architecture {arch}: binding disabled",
                )
            return True
        m = _SKIP_950.search(msg)
        if m:
            w = self._current(rec)
            if w is not None and w.binding != "failed":
                w.binding, w.reason = "skipped", "Ascend 950: " + m.group(1).rstrip(". ")
            return True
        if _TOPO_FALLBACK.search(msg):
            w = self._current(rec)
            if w is not None and w.rank is not None:
                self.fallback_ranks.add(w.rank)
            return True
        if _NO_MIGRATEPAGES.search(msg):
            self._step(rec, "memory: migratepages is not installed; memory was not moved")
            return True
        if _IRQ_NOT_WRITABLE.search(msg):
            self._step(rec, "irq: /proc/irq is not writable; IRQs were not bound")
            return True
        if _IRQ_950.search(msg):
            self._step(rec, "irq: not bound on Ascend 950 (by design)")
            return True
        if _IRQ_SKIP.search(msg):
            self._step(rec, "irq: " + msg.strip()[:300])
            return True
        if _MIGRATE_SKIP.search(msg):
            self._step(rec, "memory: " + msg.strip()[:300])
            return True
        if _IRQBALANCE.search(msg):
            self.irqbalance_stopped = True
            return True
        m = _LEGACY_PLAN.search(msg)
        if m:
            w = self._for_rank(rec, int(m.group(1)), opening=True)
            if w is not None:
                w.mode = "legacy_numa_shard"
                w.visible = _ints(m.group(4))
                w.plan_expected = True
                self.current[rec.pid] = w.key
                w.plan = LoggedPlan(int(m.group(2)), frozenset())
            return True
        m = _LEGACY_BOUND.search(msg)
        if m:
            w = self._current(rec)
            if w is not None:
                npu = w.plan.npu if w.plan else -1
                w.plan = LoggedPlan(npu, _cpus(m.group(2)))
                if w.binding == "not seen":
                    w.binding = "bound"
            return True
        m = _LEGACY_FAILED.search(msg)
        if m:
            w = self._for_rank(rec, int(m.group(2)), opening=False)
            if w is not None:
                w.binding, w.reason = "failed", m.group(1).strip()[:2000]
            return True
        return False

    def _step(self, rec: Record, text: str) -> None:
        m = _STEP_NPU.search(rec.message)
        w = self._for_irq(rec, int(m.group(1) or m.group(2))) if m else self._current(rec)
        if w is not None and text not in w.skipped and len(w.skipped) < 16:
            w.skipped.append(text)

    def _version(self, msg: str) -> None:
        m = _VLLM_VERSION.search(msg)
        if m and "vllm" not in self.versions:
            self.versions["vllm"] = next(g for g in m.groups() if g)
        m = _ASCEND_VERSION.search(msg)
        if m and "vllm_ascend" not in self.versions:
            self.versions["vllm_ascend"] = next(g for g in m.groups() if g)

    def _args(self, msg: str, cut: bool) -> None:
        m = _NON_DEFAULT.search(msg)
        if m:
            text = _balanced(m.group(1))
            value = safe_literal(text) if text else None
            if isinstance(value, dict):
                self.args = {str(k): v for k, v in value.items()}
                self.additional = _config_value(self.args.get("additional_config"))
                self.args_unparsed = False
            elif self.args is None:
                self.args_unparsed = True
            return
        m = _NAMESPACE.search(msg)
        if m and self.additional is None:
            body = m.group(1)
            at = body.find("additional_config=")
            if at >= 0:
                text = _balanced(body[at + len("additional_config=") :])
                value = safe_literal(text) if text else None
                self.additional = _config_value(value)

    # -- the report -----------------------------------------------------------------------

    def report(self) -> LogReport:
        workers = tuple(self.workers[k].freeze() for k in self.order)
        # a worker whose only record is its prefix, in a log with no binding line at all,
        # says nothing: keep the list for logs that show binding somewhere
        if not self.binding_seen:
            workers = ()
        return LogReport(
            workers=workers,
            args=self.args,
            additional_config=self.additional,
            versions=dict(self.versions),
            findings=tuple(self._findings(workers)),
            lines=self.lines,
            lines_cut=self.cut,
            binding_seen=self.binding_seen,
            truncated=self.truncated,
        )

    def _findings(self, workers: tuple[WorkerLog, ...]) -> list[LogFinding]:
        out: list[LogFinding] = []

        def ranks(ws: Iterable[WorkerLog]) -> tuple[int, ...]:
            return tuple(sorted({w.rank for w in ws if w.rank is not None}))

        if not self.binding_seen:
            out.append(
                LogFinding(
                    "no_binding_lines",
                    "info",
                    (),
                    "the log holds no CPU-binding line of vLLM-Ascend",
                    "binding is off (additional-config enable_cpu_binding false), the log starts "
                    "after the workers warmed up, or it is not a vLLM-Ascend log",
                )
            )
        by_cause: dict[str, list[WorkerLog]] = {}
        for w in workers:
            if w.binding == "failed":
                by_cause.setdefault(w.cause or "unknown", []).append(w)
        for code, ws in by_cause.items():
            w0 = ws[0]
            out.append(
                LogFinding(
                    f"binding_failed.{code}",
                    "error",
                    ranks(ws),
                    f"CPU binding failed ({w0.reason}): {w0.cause_text}",
                    w0.fix or "",
                )
            )
        skipped = [w for w in workers if w.binding == "skipped"]
        if skipped:
            out.append(
                LogFinding(
                    "binding_skipped",
                    "warning",
                    ranks(skipped),
                    f"CPU binding was skipped: {skipped[0].reason}",
                    "bind the workers yourself: `ascendtune bind --workers`",
                )
            )
        unseen = [w for w in workers if w.binding == "not seen"]
        if unseen and self.binding_seen:
            who = ", ".join(
                f"pid {w.pid}"
                + (f" (global rank {w.global_rank})" if w.global_rank is not None else "")
                for w in unseen[:8]
            )
            out.append(
                LogFinding(
                    "binding_not_logged",
                    "warning",
                    ranks(unseen),
                    f"{len(unseen)} worker(s) printed no CPU-binding line while others did: {who}",
                    "binding runs after warm-up; a worker that died or hung before it, or a log "
                    "cut early, shows so; check that worker's own lines",
                )
            )
        for prefix, code, hint in (
            (
                "irq:",
                "irq_skipped",
                "start the container with `--privileged=true`, or bind "
                "the NPU IRQs on the host (`ascendtune plan` gives the IRQ CPUs)",
            ),
            ("memory:", "memory_not_moved", "install numactl (migratepages) in the image"),
        ):
            texts: dict[str, list[WorkerLog]] = {}
            for w in workers:
                for s in w.skipped_steps:
                    if s.startswith(prefix) and "by design" not in s:
                        texts.setdefault(s, []).append(w)
            for text, ws in texts.items():
                out.append(LogFinding(code, "warning", ranks(ws), text, hint))
        silent = [
            w
            for w in workers
            if w.binding == "bound"
            and w.plan is not None
            and w.mode in ("topo_affinity", "global_slice")
            and not w.irqs
            and not any(s.startswith("irq:") for s in w.skipped_steps)
        ]
        if silent:
            out.append(
                LogFinding(
                    "irq_not_logged",
                    "info",
                    ranks(silent),
                    "no IRQ binding line after the plan: vLLM-Ascend up to v0.26.0rc returns "
                    "silently when /proc/irq is not writable (or the log was cut)",
                    "check `/proc/irq/*/smp_affinity_list` of the NPU's sq_send_trigger_irq",
                )
            )
        if self.fallback_ranks:
            out.append(
                LogFinding(
                    "topo_fallback",
                    "warning",
                    tuple(sorted(self.fallback_ranks)),
                    "npu-smi gave no topology affinity: binding fell back to global_slice, "
                    "which ignores NUMA",
                    "check `npu-smi info -t topo` (driver version)",
                )
            )
        if self.irqbalance_stopped:
            out.append(
                LogFinding(
                    "irqbalance_stopped",
                    "info",
                    (),
                    "vLLM-Ascend stopped the irqbalance service to bind NPU IRQs; it stays stopped",
                    "`systemctl start irqbalance` after the server exits, if the host needs it",
                )
            )
        out.extend(_overlaps(workers))
        cut_plans = [w for w in self.workers.values() if w.cut_plan and w.plan is None]
        if cut_plans:
            out.append(
                LogFinding(
                    "plan_line_cut",
                    "warning",
                    tuple(sorted({w.rank for w in cut_plans if w.rank is not None})),
                    f"{len(cut_plans)} plan line(s) are cut short: those workers' CPUs are unknown",
                    "read the full log (not a truncated copy)",
                )
            )
        if self.cut:
            out.append(
                LogFinding(
                    "lines_cut",
                    "info",
                    (),
                    f"{self.cut} line(s) longer than {MAX_LINE_BYTES} bytes were cut",
                )
            )
        if self.truncated:
            out.append(
                LogFinding(
                    "truncated",
                    "warning",
                    (),
                    f"stopped after {MAX_LINES} lines; later lines were not read",
                    "cut the log to the server start-up (binding happens after warm-up)",
                )
            )
        if self.dropped_workers:
            out.append(
                LogFinding(
                    "too_many_workers",
                    "warning",
                    (),
                    f"more than {MAX_WORKERS} workers: the rest were not tracked",
                )
            )
        if self.args_unparsed:
            out.append(
                LogFinding(
                    "args_unparsed",
                    "info",
                    (),
                    "the `non-default args` line could not be read (cut short, too large, or not "
                    "a Python literal)",
                )
            )
        return out


def _overlaps(workers: tuple[WorkerLog, ...]) -> list[LogFinding]:
    """Workers of one log bound to the same NPU's pool or to shared CPUs (vLLM ≥ 0.24 with DP
    before vLLM-Ascend PR #15517: every DP engine indexes the unnarrowed NPU list by local rank)."""
    out: list[LogFinding] = []
    planned = [w for w in workers if w.plan is not None and w.plan.cpus]
    same_npu: dict[int, list[WorkerLog]] = {}
    for w in planned:
        assert w.plan is not None
        same_npu.setdefault(w.plan.npu, []).append(w)
    for npu, ws in sorted(same_npu.items()):
        if len(ws) > 1:
            who = ", ".join(_who(w) for w in ws)
            out.append(
                LogFinding(
                    "same_npu_pool",
                    "warning",
                    tuple(sorted({w.rank for w in ws if w.rank is not None})),
                    f"{who} were all bound to NPU {npu}'s CPUs "
                    f"{format_cpulist(ws[0].plan.cpus if ws[0].plan else ())}",
                    "data parallel on vLLM ≥ 0.24 with vLLM-Ascend before the binding fix "
                    "(PR #15517): each DP engine binds to the first NPUs' pools; upgrade, or "
                    "rebind with `ascendtune bind --workers`",
                )
            )
    seen_pairs = {id(w) for ws in same_npu.values() if len(ws) > 1 for w in ws}
    for i, a in enumerate(planned):
        for b in planned[i + 1 :]:
            if id(a) in seen_pairs and id(b) in seen_pairs:
                continue
            assert a.plan is not None and b.plan is not None
            shared = a.plan.cpus & b.plan.cpus
            if shared:
                out.append(
                    LogFinding(
                        "shared_cpus",
                        "warning",
                        tuple(sorted({r for r in (a.rank, b.rank) if r is not None})),
                        f"{_who(a)} and {_who(b)} share CPUs {format_cpulist(shared)}",
                        "pools of one job should not overlap; `ascendtune plan --policy compare` "
                        "shows disjoint alternatives",
                    )
                )
    return out


def _who(w: WorkerLog) -> str:
    name = f"rank {w.rank}" if w.rank is not None else "a worker"
    if w.dp_rank is not None:
        name = f"DP{w.dp_rank} " + name
    return name + (f" (pid {w.pid})" if w.pid is not None else "")


def parse_log(lines: Iterable[bytes]) -> LogReport:
    """Parse a log given as byte lines (no newline needed); never raises on content."""
    p = LogParser()
    for line in lines:
        p.feed(line)
        if p.truncated:
            break
    return p.report()


def parse_text(text: str) -> LogReport:
    return parse_log(split_lines([text.encode("utf-8", errors="surrogateescape")]))


# ---------------------------------------------------------------------------------------------
# Versions and the comparison with ascendtune's prediction


def check_target(report: LogReport) -> tuple[str | None, str]:
    """The vLLM-Ascend version the log names (ascendtune.core.vllm_ascend), or the release that
    pairs with the vLLM it names, and why (None: the log names neither, or a vLLM newer than any
    release pairs with)."""
    from ascendtune.core import vllm_ascend
    from ascendtune.core.vllm_ascend import pep440

    raw = report.versions.get("vllm_ascend")
    if raw:
        got = vllm_ascend.package_version(raw)
        if got is not None:
            said = f"the log names vLLM-Ascend {raw}"
            return got.entry.name, f"{said} ({raw} {got.how})" if got.how else said
    vllm = report.versions.get("vllm")
    parsed = pep440.parse(vllm) if vllm else None
    if vllm and parsed is not None:
        lines = [e for e in vllm_ascend.ENTRIES if e.is_release]
        release = parsed.key[1]

        def paired(e: vllm_ascend.VllmAscendVersion, n: int) -> bool:
            p = pep440.parse(e.vllm)
            return p is not None and p.key[1][:n] == release[:n]

        # a release pairs with one vLLM: the release of the same number, else the newest release
        # paired with that vLLM, else with its minor version
        same = [e for e in lines if e.package_versions[0] == parsed.public]
        for n in (len(release), 2):
            hits = same or [e for e in lines if paired(e, n)]
            if hits:
                return hits[-1].name, f"the log names vLLM {vllm}, which {hits[-1].name} pairs with"
        oldest = pep440.parse(lines[0].vllm)
        if oldest is not None and parsed.key < oldest.key:
            return lines[0].name, (
                f"the log names vLLM {vllm}, older than any release ascendtune knows pairs with: "
                f"{lines[0].name} is the oldest"
            )
    if raw or vllm:
        named = f"vLLM-Ascend {raw}" if raw else f"vLLM {vllm}"
        return None, f"the log names {named}, which is not a version ascendtune knows"
    return None, "the log names no vLLM or vLLM-Ascend version"


def plan_request(report: LogReport) -> PlanRequest:
    """What to ask the planner so its vllm-ascend prediction covers the logged workers, on the
    version the log names when it is known."""
    from ascendtune.core import vllm_ascend

    name, _ = check_target(report)
    visible: list[int] = []
    for w in report.workers:
        for n in w.visible_npus:
            if n not in visible:
                visible.append(n)
    return PlanRequest(
        policy="vllm-ascend",
        visible=tuple(visible) if visible else None,
        visible_source="the log's visible_npus" if visible else "all",
        target=vllm_ascend.get(name) if name else None,
    )


def compare_with_plan(report: LogReport, plan: Plan) -> tuple[LogFinding, ...]:
    """Logged pools beside the predicted ones, NPU by NPU: each difference becomes a finding."""
    by_npu = {rp.logical_id: rp for rp in plan.ranks}
    out: list[LogFinding] = []
    matched: list[int] = []
    for w in report.workers:
        if w.plan is None or not w.plan.cpus:
            continue
        rank = (w.rank,) if w.rank is not None else ()
        rp = by_npu.get(w.plan.npu)
        if rp is None:
            out.append(
                LogFinding(
                    "plan_npu_unpredicted",
                    "warning",
                    rank,
                    f"{_who(w)} was bound for NPU {w.plan.npu}, which ascendtune's plan does not "
                    f"give a pool (planned NPUs: {format_cpulist(by_npu)})",
                    "the host given (--sysroot/--demo) may not be the one that wrote the log",
                )
            )
            continue
        diffs: list[str] = []
        for role, logged, predicted in (
            ("main", w.plan.main, frozenset(rp.roles.main)),
            ("acl", w.plan.acl, frozenset(rp.roles.acl)),
            ("release", w.plan.release, frozenset(rp.roles.release)),
        ):
            if w.mode == "a5_clusters" and role != "main":
                continue
            if logged != predicted:
                diffs.append(
                    f"{role} {format_cpulist(logged) or '(none)'} "
                    f"(predicted {format_cpulist(predicted) or '(none)'})"
                )
        for irq in w.irqs[:1]:
            got = (irq.sq_cpu, irq.cq_cpu)
            want = tuple(rp.roles.irq[:2])
            if want and got != want:
                diffs.append(f"IRQ CPUs {got[0]},{got[1]} (predicted {','.join(map(str, want))})")
        if diffs:
            out.append(
                LogFinding(
                    "plan_differs",
                    "warning",
                    rank,
                    f"{_who(w)} on NPU {w.plan.npu}: " + "; ".join(diffs),
                    "the host changed since the log (cpuset, visible NPUs, busy NPUs), or the "
                    "log comes from another host or version",
                )
            )
        elif w.rank is not None:
            matched.append(w.rank)
    if matched:
        out.append(
            LogFinding(
                "plan_matches",
                "info",
                tuple(sorted(set(matched))),
                "the logged pools are the ones ascendtune predicts for this host",
            )
        )
    return tuple(out)
