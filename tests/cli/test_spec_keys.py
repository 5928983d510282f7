"""Every key SPEC section 3 names as the stable minimum of a `--json` document is in that
document's schema, required (so always printed), and in the documents the demos print. The key
list is written out here, as the SPEC states it; a key the SPEC adds goes here too, and so do the
new names issue 22 gives two of them (`pool_device`, `card_id`; the SPEC's names stay, deprecated,
for one schema version)."""

from __future__ import annotations

import json
import os
from typing import Any

import pytest

from ascendtune import api
from ascendtune.host.demos import list_demos
from tests.support.cli import CLI
from tests.support.schemas import SCHEMA_DIR, loads

DEMOS = [name for name, _ in list_demos()]
HOST = [
    "host.source",
    "host.root",
    "host.hostname",
    "host.machine_id_sha256",
    "host.boot_id_sha256",
]
FINDING = ["code", "severity", "ranks", "message", "hint"]

# document -> the SPEC's key paths (`a[]` an item of list a, `a.*` a value of map a)
SPEC_KEYS: dict[str, list[str]] = {
    "topo": [
        "cpus_online", "cpus_allowed",
        "numa_nodes[].id", "numa_nodes[].cpus", "numa_nodes[].mem_mib",
        "accelerators[].vendor", "accelerators[].logical_id", "accelerators[].card_id",
        "accelerators[].npu_id",
        "accelerators[].chip_id", "accelerators[].name", "accelerators[].bus_id",
        "accelerators[].numa_node", "accelerators[].cpu_affinity",
        "links.*.*",
    ],
    "plan": [
        "policy", "target", "target_reason", "mode",
        "ranks[].rank", "ranks[].dp_rank", "ranks[].local_rank", "ranks[].device",
        "ranks[].pool_device", "ranks[].logical_id", "ranks[].cpus", "ranks[].numa_nodes",
        "ranks[].roles.irq", "ranks[].roles.main", "ranks[].roles.acl", "ranks[].roles.release",
        *(f"findings[].{k}" for k in FINDING),
        *HOST,
    ],
    "bind": [
        "cpus", "threads_total", "threads_bound", "threads_failed[].tid",
        "threads_failed[].error", "passes", "verified",
    ],
    "check-config": [
        "target", "effective",
        *(f"findings[].{k}" for k in ["code", "severity", "keys", "message", "hint"]),
    ],
    "doctor": ["checks[].id", "checks[].status", "checks[].value", "checks[].expected",
               "checks[].fix"],
}  # fmt: skip
SPEC_HOST_CHECKS = [
    "cpu_governor", "numa_balancing", "swappiness", "sched_migration_cost", "thp", "irqbalance",
    "cgroup_cpuset", "cap_sys_nice", "npu_smi", "numactl", "migratepages", "arch",
]  # fmt: skip
SEVERITIES = {"error", "warning", "info"}
STATUSES = {"ok", "warn", "fail", "skip"}


def _schema(name: str) -> dict[str, Any]:
    return dict(json.loads((SCHEMA_DIR / f"{name}.schema.json").read_text()))


def _forms(node: dict[str, Any], defs: dict[str, Any]) -> list[dict[str, Any]]:
    """The object schemas node may be (a $ref resolved, every branch of a choice, not null)."""
    if "$ref" in node:
        return _forms(defs[node["$ref"].rsplit("/", 1)[1]], defs)
    for choice in ("oneOf", "anyOf"):
        if choice in node:
            return [f for sub in node[choice] for f in _forms(sub, defs)]
    return [] if node.get("type") == "null" else [node]


def _missing(node: dict[str, Any], defs: dict[str, Any], path: list[str]) -> list[str]:
    """Where path is not a required key of every form of node."""
    if not path:
        return []
    step, rest = path[0], path[1:]
    out = []
    for form in _forms(node, defs):
        if step == "[]":
            out += _missing(form.get("items", {}), defs, rest)
        elif step == "*":
            out += _missing(form.get("additionalProperties", {}), defs, rest)
        elif step not in form.get("properties", {}):
            out.append(f"{step}: no such key")
        elif step not in form.get("required", []):
            out.append(f"{step}: not required")
        else:
            out += _missing(form["properties"][step], defs, rest)
    return out


def _split(path: str) -> list[str]:
    out: list[str] = []
    for part in path.split("."):
        name = part.removesuffix("[]")
        out += [name] if name != "*" else ["*"]
        out += ["[]"] if part.endswith("[]") else []
    return out


def _values(doc: Any, path: list[str]) -> list[Any]:
    """The values at path in doc (KeyError: a key is absent)."""
    if not path:
        return [doc]
    step, rest = path[0], path[1:]
    if step == "[]":
        return [v for item in doc for v in _values(item, rest)]
    if step == "*":
        return [v for item in doc.values() for v in _values(item, rest)]
    return _values(doc[step], rest)


@pytest.mark.parametrize(("name", "path"), [(n, p) for n, ps in SPEC_KEYS.items() for p in ps])
def test_spec_key_is_required_by_the_schema(name: str, path: str) -> None:
    schema = _schema(name)
    forms = schema.get("oneOf", [schema])
    if name == "bind":  # `pid` or, launching a command, `command`: the rest are common
        assert {"pid" in f["required"] or "command" in f["required"] for f in forms} == {True}
    for form in forms:
        assert not _missing(form, schema.get("$defs", {}), _split(path)), (form.get("title"), path)


def _bind_docs() -> list[dict[str, Any]]:
    out = []
    for args in (
        ["bind", "--pid", str(os.getpid()), "--cpus", "0", "--dry-run", "--json"],
        ["bind", "--cpus", "0", "--dry-run", "--json", "--", "true"],
    ):
        res = CLI(*args)
        assert res.exit_code == 0, res.stderr
        out.append(loads("bind", res.stdout))
    return out


@pytest.mark.parametrize("demo", DEMOS)
def test_every_spec_key_is_in_the_demos_documents(demo: str) -> None:
    docs: dict[str, list[dict[str, Any]]] = {
        "topo": [api.topo(demo=demo)],
        "plan": [api.plan(demo=demo, policy=p) for p in ("auto", "numa-local", "numa-slice")],
        "doctor": [api.doctor(demo=demo)],
        "check-config": [api.check_config('{"enable_fused_mc2": 1}')],
        "bind": _bind_docs(),
    }
    for name, paths in SPEC_KEYS.items():
        for doc in docs[name]:
            for path in paths:
                try:
                    _values(doc, _split(path))
                except KeyError as e:
                    raise AssertionError(f"{demo}: {name} has no {path} ({e})") from None
    for doc in docs["plan"]:
        assert doc["host"]["root"] == f"demo:{demo}"
        for f in doc["findings"]:
            assert f["severity"] in SEVERITIES and all(isinstance(r, int) for r in f["ranks"])
        for r in doc["ranks"]:
            assert all(isinstance(n, int) for n in r["numa_nodes"])
    checks = {c["id"]: c for c in docs["doctor"][0]["checks"]}
    assert set(SPEC_HOST_CHECKS) <= set(checks), set(SPEC_HOST_CHECKS) - set(checks)
    assert {c["status"] for c in checks.values()} <= STATUSES
    for acc in docs["topo"][0]["accelerators"]:
        assert acc["vendor"] in ("huawei", "nvidia")
        assert acc["bus_id"] is None or acc["bus_id"] == acc["bus_id"].lower()
    assert set(docs["topo"][0]["links"]) <= {
        str(a["logical_id"]) for a in docs["topo"][0]["accelerators"]
    }


def test_worker_and_overlap_rows() -> None:
    """One `worker:PID` row per worker found, one `overlap:PID,PID` per pair sharing CPUs."""
    checks = [c["id"] for c in api.doctor(demo="container-a2-half")["checks"]]
    workers = [c for c in checks if c.startswith("worker:")]
    assert len(workers) == 2 and all(w.split(":")[1].isdigit() for w in workers)
    pids = sorted(w.split(":")[1] for w in workers)
    assert f"overlap:{','.join(pids)}" in checks
