"""Compare the documents of many nodes (pure): group them by topology class and say, within each
class, what differs from the majority.

The input is one `NodeInput` per node: the `--json` documents ascendtune made from that node's
snapshot (`topo`, and `doctor` or `plan` for those views), or the reason there are none. The
output says, per node, its group, its status (`ok`, `differs`, `failed`, `no answer`) and the
keys that differ; the same code judges a Ray gather and `fleet compare` over saved snapshots.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from ascendtune.core import vendors

VIEWS = ("snapshot", "topo", "doctor", "plan")
OK, DIFFERS, FAILED, NO_ANSWER = "ok", "differs", "failed", "no answer"
STATUSES = (OK, DIFFERS, FAILED, NO_ANSWER)

_PIDS = re.compile(r"\bPIDs? \d+(?:(?:, | and )\d+)*|\(PID \d+\)")
_DEVICE = re.compile(r"^(NPU|GPU) (\d+)")


@dataclass(frozen=True)
class NodeInput:
    """One node as gathered: its documents, or why there are none."""

    node: str  # hostname (as captured), else as the cluster names it
    node_id: str | None = None
    docs: dict[str, dict[str, Any]] | None = None  # view -> document, "topo" always when answered
    reason: str | None = None  # why there are no documents
    status: str | None = None  # FAILED or NO_ANSWER when docs is None
    extra: dict[str, Any] = field(default_factory=dict)  # source, seconds, bytes, ray_version ...


@dataclass(frozen=True)
class Difference:
    key: str
    value: str
    majority: str

    def to_json(self) -> dict[str, str]:
        return {"key": self.key, "value": self.value, "majority": self.majority}


@dataclass(frozen=True)
class NodeResult:
    node: str
    node_id: str | None
    group: str | None
    status: str
    differs: tuple[Difference, ...]
    fails: tuple[str, ...]  # doctor checks that fail on this node
    reason: str | None
    facts: dict[str, str]
    input: NodeInput


@dataclass(frozen=True)
class Group:
    name: str
    nodes: tuple[str, ...]
    majority: dict[str, str]


@dataclass(frozen=True)
class FleetResult:
    view: str
    nodes: tuple[NodeResult, ...]
    groups: tuple[Group, ...]
    keys: tuple[str, ...]  # every compared key, in a stable order (the table's columns)

    def counts(self) -> dict[str, int]:
        c = Counter(n.status for n in self.nodes)
        return {s: c.get(s, 0) for s in STATUSES}

    @property
    def exit_code(self) -> int:
        """1 when a node fails a check, failed or did not answer."""
        return 1 if any(n.status in (FAILED, NO_ANSWER) or n.fails for n in self.nodes) else 0


def topology_class(topo: dict[str, Any]) -> tuple[str, str]:
    """(label, signature) of a host's topology: accelerators, CPUs, sockets, SMT, NUMA layout."""
    accs = topo.get("accelerators") or []
    chips = Counter(str(a.get("name") or a.get("vendor") or "?") for a in accs)
    numa = topo.get("numa_nodes") or []
    layout = ";".join(f"{_count(n.get('cpus'))}:{len(n.get('accelerators') or [])}" for n in numa)
    cpus = _count(topo.get("cpus_online"))
    acc_text = "+".join(f"{n}x {chip}" for chip, n in sorted(chips.items())) or "no accelerators"
    label = (
        f"{acc_text}, {cpus} CPUs, {topo.get('sockets', '?')} sockets, "
        f"{len(numa)} NUMA nodes, SMT {topo.get('smt_threads_per_core', '?')}"
    )
    sig = f"{topo.get('arch')}|{sorted(chips.items())}|{cpus}|{topo.get('sockets')}|" + layout
    return label, sig


def _count(cpulist: object) -> int:
    """Number of CPUs in a cpulist string ("0-3,8" -> 5), 0 when absent."""
    n = 0
    for part in str(cpulist or "").split(","):
        part = part.strip()
        if not part:
            continue
        lo, _, hi = part.partition("-")
        try:
            n += int(hi or lo) - int(lo) + 1
        except ValueError:
            continue
    return n


def normalize(text: object) -> str:
    """A value as compared across nodes: process ids say nothing about the node's tuning."""
    return _PIDS.sub("PID", str(text if text is not None else "-")).strip()


def check_key(check: dict[str, Any]) -> str:
    """A doctor check's key across nodes: worker checks by their device, not their PID."""
    cid = str(check.get("id"))
    kind, sep, rest = cid.partition(":")
    if not sep or not re.fullmatch(r"[\d,]+", rest):
        return cid
    m = _DEVICE.match(str(check.get("value") or ""))
    return f"{kind}:{m.group(1).lower()}{m.group(2)}" if m else kind


def facts_of(view: str, docs: dict[str, dict[str, Any]]) -> dict[str, str]:
    """The values a node is compared on, for a view (key -> comparable text)."""
    topo = docs.get("topo") or {}
    out: dict[str, str] = {
        "cpuset": f"{topo.get('cpus_allowed')} mems {topo.get('mems_allowed')}",
        "cpus_offline": str(topo.get("cpus_offline") or "-"),
    }
    for tool in (p.tool_key for p in vendors.profiles()):
        info = topo.get(tool) or {}
        if info.get("found"):
            out[tool] = str(info.get("version") or "found")
    out.update(k8s_facts(topo.get("kubernetes")))
    if view == "doctor":
        doc = docs.get("doctor") or {}
        out["vllm_ascend"] = str(doc.get("target"))
        for c in doc.get("checks") or []:
            if str(c.get("id")).startswith("pod:"):
                continue  # pods differ by name from node to node: counted in k8s_pods
            key = "check:" + check_key(c)
            value = f"{c.get('status')}: {normalize(c.get('value'))}"
            # two workers on one device: both values, in a stable order
            out[key] = f"{out[key]} | {value}" if key in out else value
    elif view == "plan":
        doc = docs.get("plan") or {}
        out["vllm_ascend"] = str(doc.get("target"))
        out["plan_mode"] = str(doc.get("mode"))
        for r in doc.get("ranks") or []:
            roles = r.get("roles") or {}
            role_text = " ".join(f"{k}={v}" for k, v in roles.items() if v)
            out[f"rank:{r.get('rank')}"] = (
                f"device {r.get('device')} cpus {r.get('cpus')} {role_text}"
            )
    elif view == "topo":
        out["warnings"] = str(len(topo.get("warnings") or []))
        out["visible"] = ",".join(str(a.get("logical_id")) for a in topo.get("accelerators") or [])
    return out


def k8s_facts(k8s: object) -> dict[str, str]:
    """A Kubernetes node's kubelet settings and how its pods sit, as compared across nodes: the
    policies and reserved CPUs, then the pods with accelerators counted by status (their names
    differ from node to node, their counts say whether a node places pods worse)."""
    if not isinstance(k8s, dict):
        return {}
    options = k8s.get("cpu_manager_options")
    opts = (
        ",".join(f"{k}={v}" for k, v in sorted(options.items()))
        if isinstance(options, dict)
        else ""
    )
    kubelet = (
        f"cpu manager {k8s.get('cpu_manager_policy')}{f' ({opts})' if opts else ''}, "
        f"topology manager {k8s.get('topology_manager_policy')} "
        f"({k8s.get('topology_manager_scope')} scope), "
        f"reserved {k8s.get('reserved_cpus') or '-'}"
    )
    pods = [c for c in k8s.get("containers") or [] if isinstance(c, dict) and c.get("devices")]
    status = Counter(str(c.get("status")) for c in pods)
    findings = k8s.get("findings") or []
    return {
        "k8s_kubelet": kubelet,
        "k8s_pods": f"{status.get('fail', 0)} fail, {status.get('warn', 0)} warn "
        f"(of {len(pods)} with accelerators)"
        if status.get("fail") or status.get("warn")
        else "all ok",
        "k8s_findings": str(len(findings) if isinstance(findings, list) else 0),
    }


def _fails(docs: dict[str, dict[str, Any]]) -> tuple[str, ...]:
    doc = docs.get("doctor") or {}
    return tuple(str(c.get("id")) for c in doc.get("checks") or [] if c.get("status") == "fail")


def _majority(values: list[str]) -> str | None:
    """The most common value; None when the top is a tie (no majority to differ from)."""
    ranked = Counter(values).most_common()
    if not ranked:
        return None
    if len(ranked) > 1 and ranked[0][1] == ranked[1][1]:
        return None
    return ranked[0][0]


def compare(view: str, nodes: list[NodeInput]) -> FleetResult:
    """Group answered nodes by topology class; flag what differs from each class's majority."""
    names = _unique_names(nodes)
    sigs: dict[str, str] = {}  # signature -> group name
    labels: Counter[str] = Counter()
    per_node: list[tuple[NodeInput, str, str | None, dict[str, str]]] = []
    for n, name in zip(nodes, names, strict=True):
        if n.docs is None or "topo" not in n.docs:
            per_node.append((n, name, None, {}))
            continue
        label, sig = topology_class(n.docs["topo"])
        if sig not in sigs:
            labels[label] += 1
            sigs[sig] = label if labels[label] == 1 else f"{label} #{labels[label]}"
        per_node.append((n, name, sigs[sig], facts_of(view, n.docs)))
    keys: list[str] = []
    for _, _, _, facts in per_node:
        keys += [k for k in facts if k not in keys]
    groups: list[Group] = []
    majority_of: dict[str, dict[str, str]] = {}
    for gname in dict.fromkeys(sigs.values()):
        members = [(name, facts) for _, name, g, facts in per_node if g == gname]
        majority: dict[str, str] = {}
        for k in keys:
            # a key a node lacks (no such check there) counts as "-" against the others
            m = _majority([f.get(k, "-") for _, f in members])
            if m is not None:
                majority[k] = m
        majority_of[gname] = majority
        groups.append(Group(gname, tuple(sorted(name for name, _ in members)), majority))
    with_accelerators = sum(
        1 for n in nodes if ((n.docs or {}).get("topo") or {}).get("accelerators")
    )
    results: list[NodeResult] = []
    for n, name, g, facts in per_node:
        if g is None:
            results.append(
                NodeResult(name, n.node_id, None, n.status or FAILED, (), (), n.reason, {}, n)
            )
            continue
        size = len(next(gr for gr in groups if gr.name == g).nodes)
        diffs: list[Difference] = []
        if size > 1:
            for k in keys:
                value = facts.get(k, "-")
                m = majority_of[g].get(k)
                if m is None:
                    others = {f.get(k, "-") for _, nm, gg, f in per_node if gg == g and nm != name}
                    if others and others != {value}:
                        diffs.append(Difference(k, value, "no majority"))
                elif value != m:
                    diffs.append(Difference(k, value, m))
        topo = (n.docs or {}).get("topo") or {}
        peers = with_accelerators - (1 if topo.get("accelerators") else 0)
        lacking = missing_view(topo, peers > 0)
        if lacking:
            count = len(topo.get("accelerators") or [])
            diffs.insert(
                0,
                Difference(
                    "accelerator_view",
                    f"missing: {' and '.join(lacking)} not found"
                    + (f" ({count} accelerators seen on PCI only)" if count else ""),
                    "present",
                ),
            )
        status = DIFFERS if diffs else OK
        results.append(
            NodeResult(
                name, n.node_id, g, status, tuple(diffs), _fails(n.docs or {}), None, facts, n
            )
        )
    order = {g.name: i for i, g in enumerate(groups)}  # groups as first met; unanswered last
    results.sort(key=lambda r: (order.get(r.group or "", len(order)), r.node))
    return FleetResult(view, tuple(results), tuple(groups), tuple(keys))


def _unique_names(nodes: list[NodeInput]) -> list[str]:
    """Node names, made unique (several snapshots of one host, or one machine's Ray nodes) by
    the shortest tail of their source paths, or head of their node ids, that tells them apart;
    two rows, or two columns, never carry the same name."""
    seen = Counter(n.node for n in nodes)
    tags: dict[int, str] = {}
    for name in (name for name, k in seen.items() if k > 1):
        same = [i for i, n in enumerate(nodes) if n.node == name]
        sources = {i: str(nodes[i].extra.get("source") or "") for i in same}
        ids = {i: nodes[i].node_id or "" for i in same}
        if all(ids.values()):
            tags.update(_distinct_heads(ids))
        elif all(sources.values()):
            tags.update(_distinct_tails(sources))
        else:
            tags.update({i: ids[i][:8] or _tail(sources[i], 1) for i in same})
    out: list[str] = []
    used: Counter[str] = Counter()
    for i, n in enumerate(nodes):
        tag = tags.get(i, "")
        name = f"{n.node} [{tag}]" if tag else n.node
        used[name] += 1
        out.append(name if used[name] == 1 else f"{name} #{used[name]}")
    return out


def _tail(path: str, k: int) -> str:
    parts = [p for p in path.replace("\\", "/").split("/") if p]
    return "/".join(parts[-k:]) if parts else path


def _distinct_tails(sources: dict[int, str]) -> dict[int, str]:
    """The fewest trailing path components that tell every source apart."""
    longest = max(len([p for p in s.split("/") if p]) for s in sources.values())
    for k in range(1, longest + 1):
        tails = {i: _tail(s, k) for i, s in sources.items()}
        if len(set(tails.values())) == len(tails):
            return tails
    return {i: _tail(s, longest) for i, s in sources.items()}


def _distinct_heads(ids: dict[int, str]) -> dict[int, str]:
    """The shortest head (8 characters at least) that tells every node id apart."""
    longest = max(len(v) for v in ids.values())
    for k in range(min(8, longest), longest + 1):
        heads = {i: v[:k] for i, v in ids.items()}
        if len(set(heads.values())) == len(heads):
            return heads
    return dict(ids)


def missing_view(topo: dict[str, Any], others_have_accelerators: bool) -> list[str]:
    """The vendor tools a node lacks while it has (or, like the other nodes, should have) that
    vendor's accelerators: its accelerator view (ids, health, links, processes) is missing."""
    accs = topo.get("accelerators") or []
    vendors_seen = {str(a.get("vendor")) for a in accs}
    out = []
    for p in vendors.profiles():
        found = bool((topo.get(p.tool_key) or {}).get("found"))
        if not found and p.vendor.value in vendors_seen:
            out.append(p.tool)
    if (
        not accs
        and others_have_accelerators
        and not any((topo.get(p.tool_key) or {}).get("found") for p in vendors.profiles())
    ):
        out += [p.tool for p in vendors.profiles()]
    return out


def result_json(result: FleetResult, reports: bool = True) -> dict[str, Any]:
    """The fleet document's body: summary, groups, keys and one row per node."""
    rows = []
    for r in result.nodes:
        view_doc = (r.input.docs or {}).get(result.view if result.view != "snapshot" else "topo")
        rows.append(
            {
                "node": r.node,
                "node_id": r.node_id,
                "group": r.group,
                "status": r.status,
                "differs": [d.key for d in r.differs],
                "differences": [d.to_json() for d in r.differs],
                "fails": list(r.fails),
                "reason": r.reason,
                **{k: v for k, v in r.input.extra.items() if k != "archive"},
                "report": view_doc if reports else None,
            }
        )
    return {
        "view": result.view,
        "summary": {"nodes": len(result.nodes), **result.counts(), "groups": len(result.groups)},
        "groups": [
            {"group": g.name, "nodes": list(g.nodes), "majority": g.majority} for g in result.groups
        ],
        "keys": list(result.keys),
        "nodes": rows,
    }
