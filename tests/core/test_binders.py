"""The binder chain on workers described directly (no host): each binder's own rule, the order,
the winner, the findings and the switches (core/binders)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ascendtune.core import binders
from ascendtune.core import vllm_ascend as va
from ascendtune.core.binders import Pool, Worker, outer, torch_npu
from ascendtune.core.binders.omp import trigger
from ascendtune.core.doctor import ThreadFacts

ONLINE = frozenset(range(48))
NODE0 = frozenset(range(24))


def pool_on_node0(mask: frozenset[int] | None) -> Pool | str:
    """A vLLM-Ascend stand-in: NPU affinity 0-23; pool = affinity ∩ mask, roles as it splits."""
    got = sorted(NODE0 & (mask if mask is not None else ONLINE))
    if not got:
        return "CPUs available in 'Cpus_allowed_list' conflict with NUMA affinity"
    if len(got) < 5:
        return "The number of CPUs is insufficient"
    return Pool(frozenset(got[2:-2]), frozenset(got[-2:-1]), frozenset(got[-1:]))


def worker(**kw: object) -> Worker:
    base: dict[str, object] = {
        "argv": ("vllm", "serve", "/m"),
        "arch": "aarch64",
        "cpus_online": ONLINE,
        "npus_visible": 2,
        "card": 0,
        "vllm_ascend": va.NEWEST,
        "pool_for": pool_on_node0,
        "env_known": True,
    }
    base.update(kw)
    return Worker(**base)  # type: ignore[arg-type]


def ids(c: binders.Chain) -> list[str]:
    return [a.binder.id for a in c.actions]


def codes(c: binders.Chain) -> list[str]:
    return [f.code for f in c.findings]


def test_the_textbook_conflict_taskset_and_vllm_ascend_default() -> None:
    c = binders.run(worker(argv=("taskset", "-c", "0-9", "vllm", "serve", "/m", "-tp", "2")))
    assert ids(c) == ["outer", "vllm-ascend"]
    assert c.actions[0].masks["main"] == frozenset(range(10))
    # vLLM-Ascend re-slices inside the inherited mask
    assert c.predicted["main"] == frozenset(range(2, 8))
    assert c.winner == "vllm-ascend"
    f = next(f for f in c.findings if f.code == "binders-conflict")
    assert f.binders == ("outer", "vllm-ascend")
    assert [s.binder for s in c.switches["vllm-ascend"]] == ["outer"]
    assert 'enable_cpu_binding": false' in c.switches["outer"][0].switch


def test_vllm_ascend_off_by_config_leaves_the_wrapper_alone() -> None:
    c = binders.run(worker(argv=("taskset", "-c", "0-9", "vllm"), cpu_binding=False))
    assert ids(c) == ["outer"]
    assert "binders-conflict" not in codes(c)
    assert c.owner == "outer"


def test_omp_proc_bind_pins_main_and_later_threads_and_breaks_the_others() -> None:
    c = binders.run(worker(env={"OMP_PROC_BIND": "TRUE", "CPU_AFFINITY_CONF": "1"}))
    assert ids(c) == ["openmp", "torch_npu", "vllm-ascend"]
    assert c.actions[0].masks["main"] == frozenset({0})
    assert [a.outcome for a in c.actions] == ["pins", "skips", "fails"]
    # acl_thread is born after the pin: it inherits CPU 0
    assert c.predicted["acl"] == frozenset({0})
    assert c.winner == "openmp"
    assert {"binders-pin-first-cpu", "binders-silent-skip", "binders-fails"} <= set(codes(c))
    assert any(s.switch.startswith("OMP_PROC_BIND=false") for s in c.switches["vllm-ascend"])


def test_omp_pins_the_lowest_cpu_of_a_narrowed_mask() -> None:
    c = binders.run(worker(argv=("taskset", "-c", "4-9", "vllm"), env={"OMP_PLACES": "cores"}))
    assert c.actions[1].masks["main"] == frozenset({4})


@pytest.mark.parametrize(
    ("env", "pins"),
    [
        ({"OMP_PROC_BIND": "false", "OMP_PLACES": "cores"}, False),
        ({"OMP_PROC_BIND": "spread"}, True),
        ({"GOMP_CPU_AFFINITY": "0-3"}, True),
        ({"OMP_NUM_THREADS": "4"}, False),
    ],
)
def test_omp_trigger(env: dict[str, str], pins: bool) -> None:
    assert (trigger(env) is not None) is pins


@pytest.mark.parametrize(
    ("text", "gen", "mode", "ranges"),
    [
        ("1,mode:2", 3, 2, {}),  # G1-G3: the last mode item wins
        ("1,mode:2", 4, 1, {}),  # G4+: the first
        ("mode:3", 1, 0, {}),  # G1: mode 3 is off
        ("mode:3", 2, 2, {}),  # G2+: any other mode behaves as 2
        ("2,npu0:0-3,npu0:8-9", 3, 2, {0: {8, 9}}),  # repeated card: replaced
        ("2,npu0:0-3,npu0:8-9", 4, 2, {0: {0, 1, 2, 3, 8, 9}}),  # G4+: added up
    ],
)
def test_cpu_affinity_conf_parsing_per_generation(
    text: str, gen: int, mode: int, ranges: dict[int, set[int]]
) -> None:
    conf = torch_npu.parse(text, gen)
    assert conf.mode == mode
    assert {k: set(v) for k, v in conf.ranges.items()} == ranges


def test_torch_npu_generations_and_default_split() -> None:
    assert torch_npu.generation("2.1.0.post10")[0] == 1
    assert torch_npu.generation("2.10.0.post4")[0] == 4
    assert torch_npu.generation("2.10.0.post7")[0] == 5
    assert torch_npu.default_range(frozenset(range(10)), 3, 2, 1) == frozenset({8, 9})  # ceil
    assert torch_npu.default_range(frozenset(range(10)), 3, 2, 2) == frozenset({6, 7, 8})  # floor


def test_torch_npu_skips_under_a_taskset_and_force_overrides() -> None:
    argv = ("taskset", "-c", "0-30", "vllm")
    skip = binders.run(worker(argv=argv, env={"CPU_AFFINITY_CONF": "1"}, cpu_binding=False))
    assert [a.outcome for a in skip.actions] == ["binds", "skips"]
    assert "binders-silent-skip" in codes(skip)
    forced = binders.run(
        worker(
            argv=argv,
            env={"CPU_AFFINITY_CONF": "1,force:1"},
            cpu_binding=False,
            torch_npu="2.10.0.post4",
        )
    )
    assert forced.actions[1].outcome == "binds"
    assert forced.actions[1].masks["acl"] == frozenset(range(24))
    # G2+: an inference process keeps its main thread unbound
    assert "main" not in forced.actions[1].masks


def test_torch_npu_mode2_roles_then_vllm_ascend_undoes_them() -> None:
    c = binders.run(worker(env={"CPU_AFFINITY_CONF": "2"}, torch_npu="2.8.0"))
    assert c.actions[0].masks["acl"] == frozenset({1, 2})
    assert "binders-undone" in codes(c)
    assert [s.binder for s in c.switches["torch_npu"]] == ["vllm-ascend"]


def test_ucm_splits_vllm_ascends_main_pool() -> None:
    c = binders.run(worker(env={"VLLM_CPU_AFFINITY": "1"}, plugins={"ucm": "0.3.0"}))
    assert ids(c) == ["vllm-ascend", "ucm"]
    assert c.predicted["main"] == frozenset(range(2, 12))
    assert c.predicted["plugin"] == frozenset(range(12, 22))
    assert "binders-split-pool" in codes(c)
    assert "binders-conflict" not in codes(c)  # one family: UCM binds inside vLLM-Ascend
    assert [s.binder for s in c.switches["ascendtune"]][:2] == ["vllm-ascend", "ucm"]


@pytest.mark.parametrize(
    ("kw", "binder"),
    [
        (
            {
                "argv": ("python3", "-m", "sglang.launch_server"),
                "env": {"SGLANG_SET_CPU_AFFINITY": "1"},
                "vllm_ascend": None,
            },
            "sglang",
        ),
        (
            {"argv": ("mindieservice_daemon",), "env": {"BIND_CPU": "1"}, "vllm_ascend": None},
            "mindie",
        ),
        (
            {
                "argv": ("python3", "-m", "afd.ffn_server"),
                "plugins": {"afd_plugin": "0.1"},
                "vllm_ascend": None,
            },
            "afd-plugin",
        ),
        (
            {
                "argv": ("ascendtune", "bind", "--rank", "0", "--", "vllm", "serve"),
                "cpu_binding": False,
            },
            "ascendtune",
        ),
        (
            {"argv": ("vllm", "serve", "--numa-bind-cpus", "0-7"), "vllm_ascend": None},
            "vllm-numa-bind",
        ),
    ],
)
def test_each_other_binder_is_found_and_switched_off(kw: dict[str, object], binder: str) -> None:
    c = binders.run(worker(**kw))
    assert ids(c) == [binder]
    assert c.actions[0].outcome == "binds"
    other = next(o for o in binders.OWNERS if o != (c.actions[0].binder.family or ""))
    assert binder in [s.binder for s in c.switches[other]] or c.actions[0].binder.family == other


def test_numa_bind_on_ascend_turns_vllm_ascend_on() -> None:
    c = binders.run(worker(argv=("vllm", "serve", "--numa-bind")))
    assert ids(c) == ["vllm-numa-bind", "vllm-ascend"]
    assert c.actions[0].outcome == "unknown"
    assert "--numa-bind" in c.actions[1].config


def test_cgroup_is_the_frame_not_a_switch() -> None:
    c = binders.run(worker(cpuset=frozenset(range(24, 48)), cgroup="/kubepods/pod1/c1"))
    assert ids(c) == ["cgroup", "vllm-ascend"]
    assert c.actions[0].config.startswith("Kubernetes cpuset 24-47")
    assert c.actions[1].outcome == "fails"
    assert all(s.binder != "cgroup" for o in binders.OWNERS for s in c.switches[o])


def test_observed_single_cpu_without_a_cause() -> None:
    threads = (
        ThreadFacts(7, "python3", frozenset({3})),
        ThreadFacts(8, "acl_thread", frozenset({3})),
    )
    c = binders.run(worker(pid=7, threads=threads, vllm_ascend=None, env_known=False))
    assert c.observed == {"main": frozenset({3}), "acl": frozenset({3})}
    assert "binders-pinned-one-cpu" in codes(c)


def test_first_touch_when_binding_comes_after_warm_up() -> None:
    c = binders.run(worker())
    assert "binders-first-touch" in codes(c)
    early = binders.run(worker(argv=("taskset", "-c", "0-23", "vllm"), cpu_binding=False))
    assert "binders-first-touch" not in codes(early)


@given(st.lists(st.integers(0, 63), min_size=1, max_size=8, unique=True))
def test_taskset_wrapper_cpus_round_trip(cpus: list[int]) -> None:
    from ascendtune.core.cpulist import format_cpulist

    words = outer.wrapper_of(["taskset", "-c", format_cpulist(cpus), "vllm", "serve"])
    assert words is not None
    assert outer.cpus_of(words) == frozenset(cpus)


# ---- MindIE and afd-plugin as their public sources have them -----------------------------------


def test_mindie_binds_unless_bind_cpu_is_set_to_something_but_1() -> None:
    mindie = {"argv": ("mindieservice_daemon",), "vllm_ascend": None}
    c = binders.run(worker(**mindie, env={}))
    assert ids(c) == ["mindie"] and c.actions[0].config == "BIND_CPU unset (on by default)"
    assert c.actions[0].when == "device init" and c.actions[0].main_only
    assert c.winners["acl"] == "mindie"  # acl_thread starts after it: inherits the mask
    for off in ("0", "true", "True"):  # compared with "1" only
        assert ids(binders.run(worker(**mindie, env={"BIND_CPU": off}))) == []
    # the variable means nothing to a process that is not MindIE's
    assert "mindie" not in ids(binders.run(worker(env={"BIND_CPU": "1"})))


def test_vllm_ascends_binding_after_warm_up_never_runs_in_an_afd_ffn_worker() -> None:
    ffn = {
        "argv": ("vllm", "serve", "/m", "--worker-cls", "afd_plugin.v1.worker.npu.ffn_worker.X"),
        "plugins": {"vllm_afd_plugin": "0.1.0"},  # the distribution's own name
    }
    c = binders.run(worker(**ffn))
    assert va.NEWEST.binding.runs == va.RUNS_AFTER_WARMUP
    assert ids(c) == ["afd-plugin", "vllm-ascend"]
    assert c.actions[1].outcome == "skips" and "compile_or_warm_up_model" in c.actions[1].note
    assert "binders-silent-skip" in codes(c)
    # a release that binds at device set-up binds the FFN worker (it calls _init_device)
    early = next(e for e in va.ENTRIES if e.binding.ships and e.binding.runs == va.RUNS_AT_DEVICE)
    c = binders.run(worker(**ffn, vllm_ascend=early, cpu_binding=True))
    assert c.actions[-1].binder.id == "vllm-ascend" and c.actions[-1].outcome == "binds"
    # an Attention worker of the same server is bound as any worker
    attention = {**ffn, "argv": ("vllm", "serve", "/m")}
    assert binders.run(worker(**attention)).actions[-1].outcome == "binds"
