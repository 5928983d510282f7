"""Why vLLM-Ascend's binding failed: the exception texts bind_cpus raises, each with its cause
and fix (data, one place)."""

from __future__ import annotations

import re
from dataclasses import dataclass


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
