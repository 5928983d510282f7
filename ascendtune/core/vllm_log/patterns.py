"""The messages `log` reads (cpu_binding.py / worker.py on every line ascendtune knows, vLLM's
start-up lines), and the bounded readers of the numbers and Python literals they carry."""

from __future__ import annotations

import ast
import json
import math
import re
from collections.abc import Mapping
from typing import Any

from ascendtune.core.cpulist import CpuSet
from ascendtune.core.vllm_log.model import (
    MAX_CPU,
    MAX_LITERAL_CHARS,
    MAX_LITERAL_DEPTH,
    MAX_LITERAL_NODES,
)

MAX_DIGITS = 18  # no pid, rank, NPU, CPU, IRQ or date field of a real log is longer


class Junk(ValueError):
    """A line whose number fields cannot be a real log's (a 5,000-digit rank): it is skipped."""


def num(digits: str) -> int:
    """A logged number; Junk when it is longer than any real field (int() of a 5,000-digit
    string is refused by Python itself, and would be meaningless anyway)."""
    if len(digits) > MAX_DIGITS:
        raise Junk(f"a {len(digits)}-digit number")
    return int(digits)


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
# what a server prints once per start, before any worker: a new run of an appended log
_BANNER = re.compile(r"vLLM API server version |non-default args: ")
_NON_DEFAULT = re.compile(r"non-default args: (\{.*)$")
_NAMESPACE = re.compile(r"\bargs: Namespace\((.*)$")

# vLLM's parallel_state: "rank 10 in world size 32 is assigned as DP rank 0, PP rank 0, ..."
_ASSIGNED = re.compile(r"rank (\d+) in world size \d+ is assigned as DP rank (\d+)")
_STEP_NPU = re.compile(r"npu=(\d+)|NPU(\d+)")
_IDX = re.compile(r"(?:^|_)(DP|TP|PP|EP|PCP|DCP)(\d+)")


def _ints(text: str) -> tuple[int, ...]:
    out: list[int] = []
    for tok in re.split(r"[,\s]+", text.strip()):
        if tok.isascii() and tok.isdigit() and len(tok) <= MAX_DIGITS and int(tok) < MAX_CPU:
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
        out: dict[str, Any] = _str_keys(value)
        return out
    if isinstance(value, str) and len(value) <= MAX_LITERAL_CHARS:
        try:
            doc = json.loads(value)
        except ValueError:
            return None
        return doc if isinstance(doc, dict) else None
    return None


def _str_keys(value: Any) -> Any:
    """A logged dict as a config: keys are text (a repr may hold `{1: 2}`; JSON cannot), and a
    float past the double range (`-1e309` is -inf) or NaN, which no JSON holds, is None."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {str(k): _str_keys(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_str_keys(v) for v in value]
    return value


# ---------------------------------------------------------------------------------------------
# The prefilter's markers: for each message pattern, strings one of which every line the parser
# reads it from holds (its own literals, or, where parser._message gates it, the gate's). scan.py
# decodes only lines holding a marker (or a time stamp, or bytes records() removes); the tests in
# tests/core/test_vllm_log_scan.py prove every pattern here covered and every pattern listed.

_MARKS: dict[re.Pattern[str], tuple[str, ...]] = {
    _MODE: ("cpu",),
    _PLAN_HEAD: ("CPU",),
    _PLAN: ("NPU",),
    _PLAN_START: ("NPU",),
    _PLAN_950: ("NPU",),
    _IRQ: ("NPU",),
    _IRQ_START: ("NPU",),
    _MIGRATE: ("migrat",),
    _FAILED: ("cpu",),
    _FAILED_START: ("cpu",),
    _NON_ARM: ("CPU",),
    _UNKNOWN_ARCH: ("CPU",),
    _SKIP_950: ("cpu",),
    _TOPO_FALLBACK: ("NPU",),
    _NO_MIGRATEPAGES: ("migrat",),
    _IRQ_NOT_WRITABLE: ("irq",),
    _IRQBALANCE: ("irq",),
    _IRQ_SKIP: ("irq", "Can't find PCI address", "Can't find pci address"),
    _IRQ_950: ("irq",),
    _MIGRATE_SKIP: ("migrat",),
    _LEGACY_PLAN: ("cpu",),
    _LEGACY_BOUND: ("cpu",),
    _LEGACY_FAILED: (
        "Cpu",
        "Can not get device info",
        "cpu",
        "not found in device_map_info",
        "CPU",
    ),
    # read only where a gate in parser._message passes: the gate's strings
    _VLLM_VERSION: ("version", "vLLM"),
    _ASCEND_VERSION: ("version", "vLLM"),
    _BANNER: ("vLLM", "args: "),
    _NON_DEFAULT: ("args: ",),
    _NAMESPACE: ("args: ",),
    _ASSIGNED: ("world size",),
}
# read only after one of the above matched the same message (or on a worker's prefix)
_AFTER = (_MODE_VISIBLE, _MODE_NPU, _STEP_NPU, _IDX)
# a record whose prefix names a worker (`(Worker_TP0 pid=1)`) makes a worker of its pid
WORKER_MARK = "Worker"


def _fewest(strings: set[str]) -> tuple[bytes, ...]:
    """The strings, less each that holds another (a line holding it holds the shorter one)."""
    return tuple(sorted(s.encode() for s in strings if not any(o != s and o in s for o in strings)))


MARKERS: tuple[bytes, ...] = _fewest({WORKER_MARK, *(m for ms in _MARKS.values() for m in ms)})
