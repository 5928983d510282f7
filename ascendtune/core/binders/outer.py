"""A wrapper that sets the mask before exec: `taskset -c LIST`, `numactl --physcpubind=LIST` or
`--cpunodebind=NODES`, systemd `CPUAffinity=`. Every thread the worker creates inherits it; the
in-process binders then meet a mask that is already narrower."""

from __future__ import annotations

from ascendtune.core.binders.model import Action, Binder, Evidence, Masks, Worker
from ascendtune.core.cpulist import CpuSet, format_cpulist, parse_cpulist
from ascendtune.core.errors import ParseError

INFO = Binder(
    id="outer",
    name="outer launcher (taskset, numactl, systemd CPUAffinity=)",
    family="outer",
    configured=(
        "taskset -c LIST in front of the command",
        "numactl --physcpubind=LIST / --cpunodebind=NODES",
        "systemd CPUAffinity=",
    ),
    acts="launch",
    threads=("main", "acl", "omp", "plugin", "rest"),
    on_narrower="narrow",
    narrower_note="inside a cgroup cpuset the kernel keeps the intersection; none in common: "
    "taskset fails with EINVAL and the worker never starts",
    off="drop the wrapper from the command line (or CPUAffinity= from the unit)",
    evidence=(
        Evidence(
            "taskset(1), numactl(8): the mask is set before exec and inherited",
            "util-linux, numactl",
            "doc",
        ),
    ),
)

WRAPPERS = ("taskset", "numactl")


def _prog(word: str) -> str:
    return word.rsplit("/", 1)[-1]


def wrapper_of(argv: tuple[str, ...] | list[str]) -> tuple[str, ...] | None:
    """The taskset/numactl words in front of argv (after NAME=VALUE words), up to the program
    they start; None when argv starts with neither."""
    i = 0
    while i < len(argv) and "=" in argv[i] and not argv[i].startswith("-"):
        i += 1
    if i >= len(argv) or _prog(argv[i]) not in WRAPPERS:
        return None
    prog = _prog(argv[i])
    j = i + 1
    while j < len(argv):
        a = argv[j]
        if a == "--":
            j += 1
            break
        if not a.startswith("-"):
            if prog == "taskset" and j == i + 2 and argv[i + 1] in ("-c", "--cpu-list"):
                j += 1
                continue
            if prog == "numactl" and argv[j - 1] in ("-C", "-N", "-m", "-p", "-i"):
                j += 1
                continue
            break
        j += 1
    return tuple(argv[i:j])


def cpus_of(words: tuple[str, ...], numa: dict[int, CpuSet] | None = None) -> CpuSet | None:
    """The CPUs a taskset/numactl wrapper gives (None: it sets none, or they cannot be read)."""
    prog = _prog(words[0])
    args = list(words[1:])
    try:
        if prog == "taskset":
            if args and args[0] in ("-c", "--cpu-list") and len(args) > 1:
                return parse_cpulist(args[1])
            for a in args:
                if a.startswith("--cpu-list="):
                    return parse_cpulist(a.partition("=")[2])
            return None  # a hex mask form: not modelled
        for k, a in enumerate(args):
            name, eq, val = a.partition("=")
            if not eq and k + 1 < len(args):
                val = args[k + 1]
            if name in ("--physcpubind", "-C"):
                return parse_cpulist(val)
            if name in ("--cpunodebind", "-N") and numa:
                nodes = parse_cpulist(val)
                return frozenset(c for n in nodes for c in numa.get(n, ()))
    except ParseError:
        return None
    return None


def act(w: Worker, m: Masks) -> Action | None:
    found = [wr for wr in (wrapper_of(w.argv), *w.wrappers) if wr and _prog(wr[0]) in WRAPPERS]
    if not found:
        return None
    words = found[0]
    cpus = cpus_of(words, dict(w.numa))
    shown = " ".join(words)
    if cpus is None:
        return Action(INFO, shown, "unknown", {}, "it sets no CPU list ascendtune can read")
    base = m["main"]
    got = cpus if base is None else cpus & base
    if base is not None and not got:
        return Action(
            INFO,
            shown,
            "fails",
            {},
            f"none of {format_cpulist(cpus)} is in the worker's cpuset {format_cpulist(base)}: "
            "the launch fails with EINVAL",
        )
    note = f"every thread starts on {format_cpulist(got)}"
    if base is not None and got != cpus:
        note += f" (the cpuset keeps {format_cpulist(got)} of {format_cpulist(cpus)})"
    return Action(INFO, shown, "binds", dict.fromkeys(m, got), note)
