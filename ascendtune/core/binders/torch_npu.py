"""torch_npu's own binding, `CPU_AFFINITY_CONF` (NPUAffinityController.cpp): modes 0/1/2,
per-card ranges `npuK:a-b`, `npu_affine:1`, `lazy_bind`, `force:1`, `bind_irq:1`, in five
generations of the wheel (/work/shared/BINDERS.md). Its default range ignores NUMA; it checks
once, at device init, that the current mask holds every visible card's range and otherwise
binds nothing, with a WARN that the default log level hides."""

from __future__ import annotations

import re
from typing import NamedTuple

from ascendtune.core.binders.model import Action, Binder, Evidence, Masks, Worker
from ascendtune.core.cpulist import CpuSet, format_cpulist

INFO = Binder(
    id="torch_npu",
    name="torch_npu CPU_AFFINITY_CONF",
    family="torch_npu",
    configured=("CPU_AFFINITY_CONF=<mode>[,npuK:a-b][,npu_affine:1][,lazy_bind:0][,force:1]",),
    acts="device init",
    threads=("main", "acl"),
    on_narrower="skip",
    narrower_note="the mask at device init must hold every CPU of every visible card's range, "
    "else nothing is bound (a WARN hidden at ASCEND_GLOBAL_LOG_LEVEL=3); G1 checks mode 1 only; "
    "force:1 (G4+) overrides",
    off="unset CPU_AFFINITY_CONF (or CPU_AFFINITY_CONF=0)",
    off_env=("unset CPU_AFFINITY_CONF",),
    evidence=(
        Evidence(
            "torch_npu/csrc/core/npu/NPUAffinityController.cpp", "2.1.0.post10-2.14.0", "source"
        ),
        Evidence(
            "torch_npu/csrc/core/npu/GetAffinityCPUInfo.cpp (npu_affine)", "2.5.1.post1+", "source"
        ),
        Evidence("Ascend PyTorch docs: CPU_AFFINITY_CONF", "CANN 8.x", "doc"),
    ),
    versions=(
        (
            "G1 2.1.0.post10",
            "last mode wins; ceil split; mode 1 checked, mode 2 overrides; mode 3 off; main bound at init",
        ),
        ("G2 2.5.1.post1", "rewrite, npu_affine; main thread bound only at first backward"),
        ("G3 2.8.0, 2.10.0.post2", "lazy_bind; check once at device init on the main thread"),
        ("G4 2.10.0.post4", "first mode wins; force:1; repeated npuK: ranges add up"),
        ("G5 2.14.0, 2.7.1.post11, 2.10.0.post7", "bind_irq:1 (root): two CPUs per card for IRQs"),
    ),
)

# wheel version -> generation (BINDERS.md); others: the nearest modelled rule below
GENERATIONS = {
    "2.1.0.post10": 1,
    "2.5.1.post1": 2,
    "2.8.0": 3,
    "2.10.0.post2": 3,
    "2.10.0.post4": 4,
    "2.14.0": 5,
    "2.7.1.post11": 5,
    "2.10.0.post7": 5,
}


def generation(version: str | None) -> tuple[int, str]:
    """The generation of a torch_npu wheel and how it was decided."""
    if not version:
        return 4, "torch_npu's version unknown: modelled as G4"
    v = version.split("+")[0]
    if v in GENERATIONS:
        return GENERATIONS[v], f"torch_npu {version} is G{GENERATIONS[v]}"
    nums = [int(x) for x in re.findall(r"\d+", v)[:2]] + [0, 0]
    if (nums[0], nums[1]) < (2, 5):
        g = 1
    elif (nums[0], nums[1]) < (2, 10):
        g = 3
    else:
        g = 4
    return g, f"torch_npu {version} is not a modelled wheel: read as G{g}"


class Conf(NamedTuple):
    mode: int
    ranges: dict[int, CpuSet]
    npu_affine: bool = False
    force: bool = False
    lazy_bind: bool = True
    bind_irq: bool = False


def parse(text: str, gen: int) -> Conf:
    """CPU_AFFINITY_CONF as generation `gen` reads it."""
    modes: list[int] = []
    ranges: dict[int, set[int]] = {}
    flags: dict[str, str] = {}
    for item in (x.strip() for x in text.split(",")):
        if not item:
            continue
        key, colon, val = item.partition(":")
        if not colon:
            if item.isdigit():
                modes.append(int(item))
            continue
        if key == "mode" and val.isdigit():
            modes.append(int(val))
        elif re.fullmatch(r"npu\d+", key):
            m = re.fullmatch(r"(\d+)-(\d+)", val) or re.fullmatch(r"(\d+)", val)
            if m is None:
                continue
            lo = int(m.group(1))
            hi = int(m.group(2)) if m.lastindex == 2 else lo
            card = int(key[3:])
            cpus = set(range(lo, hi + 1))
            if gen >= 4:
                ranges.setdefault(card, set()).update(cpus)
            else:
                ranges[card] = cpus
        else:
            flags[key] = val
    if not modes:
        mode = 0
    else:
        mode = modes[0] if gen >= 4 else modes[-1]
    if mode not in (0, 1):
        mode = 0 if (gen == 1 and mode == 3) else 2
    return Conf(
        mode,
        {k: frozenset(v) for k, v in ranges.items()},
        npu_affine=gen >= 2 and flags.get("npu_affine") == "1",
        force=gen >= 4 and flags.get("force") == "1",
        lazy_bind=flags.get("lazy_bind", "1") != "0",
        bind_irq=gen >= 5 and flags.get("bind_irq") == "1",
    )


def default_range(online: CpuSet, visible: int, card: int, gen: int) -> CpuSet:
    """Card `card`'s default range: the host's online CPUs split evenly over the visible NPUs,
    in CPU id order, NUMA ignored (G1 rounds up, G2+ down)."""
    cpus = sorted(online)
    n = len(cpus)
    per = -(-n // visible) if gen == 1 else n // visible
    return frozenset(cpus[card * per : (card + 1) * per])


def act(w: Worker, m: Masks) -> Action | None:
    raw = (w.env.get("CPU_AFFINITY_CONF") or "").strip()
    if not raw:
        return None
    gen, how = generation(w.torch_npu or w.plugins.get("torch_npu"))
    conf = parse(raw, gen)
    shown = f"CPU_AFFINITY_CONF={raw}"
    if conf.mode == 0:
        return None
    visible = w.npus_visible
    card = w.card if w.card is not None else 0
    online = w.cpus_online
    if conf.npu_affine:
        note = f"{how}; npu_affine:1 takes each card's range from DCMI (not modelled here)"
        return Action(INFO, shown, "unknown", {"acl": None}, note)
    ranges: dict[int, CpuSet] = {}
    if visible and online:
        ranges = {d: default_range(online, visible, d, gen) for d in range(visible)}
    ranges.update(conf.ranges)
    mine = ranges.get(card)
    base = m["main"]
    if mine is None or base is None:
        return Action(
            INFO, shown, "unknown", {"acl": None}, f"{how}; the card's range needs the host's CPUs"
        )
    needed = frozenset().union(*ranges.values())
    if gen in (2, 3):  # they never check the last CPU of each range
        needed = frozenset().union(*(r - {max(r)} for r in ranges.values() if r))
    checks = not conf.force and not (gen == 1 and conf.mode == 2)
    if checks and not needed <= base:
        return Action(
            INFO,
            shown,
            "skips",
            {},
            f"{how}; the mask at device init ({format_cpulist(base)}) does not hold every "
            f"visible card's range ({format_cpulist(needed)}): torch_npu binds nothing, and says "
            "so only at ASCEND_GLOBAL_LOG_LEVEL<=2",
        )
    target = mine if w.cpuset is None else (mine & w.cpuset)
    if not target:
        return Action(INFO, shown, "fails", {}, f"{how}; the range is outside the cpuset: EINVAL")
    order = sorted(target)
    if conf.bind_irq and len(order) > 2:
        order = order[2:]
    main_bound = gen == 1 or not conf.lazy_bind
    if conf.mode == 1:
        masks: dict[str, CpuSet | None] = {"acl": frozenset(order)}
        if main_bound:
            masks["main"] = frozenset(order)
    else:
        small = len(order) < 5
        acl = frozenset(order) if small else frozenset(order[1:3])
        masks = {"acl": acl}
        if main_bound:
            masks["main"] = frozenset(order) if small else frozenset(order[:1])
    note = f"{how}; card {card} range {format_cpulist(mine)}"
    if not main_bound:
        note += (
            "; the main thread stays unbound (from G2 it is bound at the first backward pass, "
            "never in inference, unless lazy_bind:0)"
        )
    if conf.force:
        note += "; force:1 skips the check"
    return Action(INFO, shown, "binds", masks, note)
