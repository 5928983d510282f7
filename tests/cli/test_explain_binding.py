"""`ascendtune explain binding`: vLLM-Ascend's steps for one rank, from the planner's own trace,
and where numa-local departs; plan's output is unchanged by the trace."""

from __future__ import annotations

from ascendtune.app.hosts import load
from ascendtune.app.options import HostSource, PlanOptions
from ascendtune.app.plan import build_request
from ascendtune.core.planner import make_plan
from ascendtune.core.planner.trace import VllmTrace
from tests.support import schemas
from tests.support.cli import Cli


def steps(doc: dict) -> dict:  # type: ignore[type-arg]
    return {s["name"]: s for s in doc["steps"]}


def test_a2_rank1_walks_from_affinity_to_pool_and_roles(cli: Cli) -> None:
    r = cli("explain", "binding", "--demo", "atlas-800i-a2", "--rank", "1", "--json")
    assert r.exit_code == 0, r.stderr
    doc = schemas.loads("explain", r.stdout)
    assert doc["rank"] == 1 and doc["mode"] == "topo_affinity"
    s = steps(doc)
    names = [x["name"] for x in doc["steps"]]
    assert (
        names.index("affinity")
        < names.index("extend_next_numa")
        < names.index("split_identical_pools")
        < names.index("roles")
    )
    assert s["affinity"]["input"]["npu_smi_affinity"] == "144-167"
    assert s["affinity"]["result"]["cpus"] == "144-167"
    assert s["extend_next_numa"]["result"]["cpus"] == "144-191"
    assert s["extend_next_numa"]["input"]["next_node"] == 7
    assert s["split_identical_pools"]["input"]["npus_with_this_pool"] == [0, 1]
    assert s["split_identical_pools"]["result"]["pool"] == "168-191"
    assert s["roles"]["result"] == {
        "irq": "168-169",
        "main": "170-189",
        "acl": "190",
        "release": "191",
    }
    assert s["interrupts"]["result"] == {"sq_send_trigger_irq": 168, "cq_update_irq": 169}
    assert s["memory"]["result"]["numa_nodes"] == [7]
    assert s["log_line"]["result"]["line"].startswith("NPU1: main=[170 171")
    for x in doc["steps"]:
        assert set(x) >= {"name", "input", "result"}
    better = doc["better"]
    assert better["policy"] == "numa-local"
    assert better["plan"]["cpus"] == "156-167" and better["plan"]["numa_nodes"] == [6]
    assert any("node 6" in d for d in better["departures"])


def test_text_output(cli: Cli) -> None:
    r = cli("explain", "binding", "--demo", "atlas-800i-a2", "--rank", "1")
    assert r.exit_code == 0
    assert (
        "144-191" in r.stdout
        and "168-191" in r.stdout
        and "[migrate] NPU:1 -> NUMA [7]" in r.stdout
    )
    assert "numa-local: 156-167" in r.stdout


def test_trace_agrees_with_plan_for_every_rank() -> None:
    got = load(HostSource(demo="atlas-800i-a2"))
    req = build_request(got.host, PlanOptions(policy="vllm-ascend", env={}), got.root)
    plain = make_plan(got.host, req)
    trace = VllmTrace()
    traced = make_plan(got.host, req, trace=trace)
    assert traced == plain  # the trace never changes the plan
    for rp in plain.ranks:
        rt = next(r for r in trace.ranks if r.rank == rp.rank)
        assert rt.logical == rp.logical_id
        assert tuple(trace.pools[rt.running].final[rt.logical]) == rp.cpus


def test_a3_global_slice(cli: Cli) -> None:
    r = cli("explain", "binding", "--demo", "atlas-800i-a3", "--rank", "2", "--json")
    assert r.exit_code == 0
    doc = schemas.loads("explain", r.stdout)
    assert doc["mode"] == "global_slice"
    s = steps(doc)
    assert "global_slice" in s and "affinity" not in s
    assert s["global_slice"]["result"]["pool"] == s["roles"]["input"]["pool"]


def test_non_ascending_devices_show_the_wrong_pool_on_old_lines(cli: Cli) -> None:
    r = cli(
        "explain",
        "binding",
        "--demo",
        "atlas-800i-a2",
        "--visible-devices",
        "6,4",
        "--target",
        "v0.23.0",
        "--json",
    )
    assert r.exit_code == 0
    doc = schemas.loads("explain", r.stdout)
    s = steps(doc)
    assert s["visible_npus"]["result"]["device"] == 6
    assert s["npu_of_rank"]["result"] == {**s["npu_of_rank"]["result"], "npu": 4}
    assert any("drives NPU 6" in d for d in doc["better"]["departures"])


def test_rank_out_of_range_and_gpu_host(cli: Cli) -> None:
    r = cli("explain", "binding", "--demo", "atlas-800i-a2", "--rank", "8")
    assert r.exit_code == 2 and "ranks 0-7" in r.stderr
    r = cli("explain", "binding", "--demo", "dgx-h100")
    assert (
        r.exit_code != 0 and "Traceback" not in r.stderr and len(r.stderr.strip().splitlines()) == 1
    )


def test_plan_request_unchanged_by_policy_override() -> None:
    got = load(HostSource(demo="atlas-800i-a2"))
    req = build_request(got.host, PlanOptions(env={}), got.root)
    assert req._replace(policy="vllm-ascend").policy == "vllm-ascend"


def test_a_release_that_refuses_the_host_stops_before_any_pool(cli: Cli) -> None:
    """The x86 300I Duo: vLLM-Ascend binds only on ARM, so the steps end at the skip (no pool,
    no roles, no log line of an empty plan) with the line the worker does log."""
    r = cli("explain", "binding", "--demo", "atlas-300i-duo", "--rank", "0", "--json")
    assert r.exit_code == 0, r.output
    s = steps(schemas.loads("explain", r.stdout))
    assert "x86_64" in s["skipped"]["result"]["skipped"]
    assert "non-ARM CPU detected" in s["skipped"]["words"]
    assert not {"affinity", "roles", "log_line"} & set(s)
