"""The vLLM / vLLM-Ascend log parser: every fixture's plans exactly, failure causes, mangled input."""

from __future__ import annotations

import gzip
import json
from dataclasses import replace
from pathlib import Path

import pytest
from hypothesis import event, given, settings
from hypothesis import strategies as st

from ascendtune.core import vllm_log
from ascendtune.core.cpulist import format_cpulist
from ascendtune.core.vllm_log import (
    LogReport,
    WorkerLog,
    cause_of,
    check_target,
    parse_log,
    parse_text,
    records,
    safe_literal,
    split_lines,
)
from tests.support import schemas
from tests.support.cli import Cli

FIX = Path(__file__).parents[1] / "fixtures" / "vllm_log"


def load(name: str) -> LogReport:
    data = (FIX / name).read_bytes()
    # odd chunk sizes: records must not depend on where a read ends
    return parse_log(split_lines(data[i : i + 97] for i in range(0, len(data), 97)))


def plans(report: LogReport) -> list[tuple[int | None, int | None, int, str, str, str]]:
    out = []
    for w in report.workers:
        assert w.plan is not None, w
        p = w.plan
        out.append(
            (
                w.rank,
                w.pid,
                p.npu,
                format_cpulist(p.main),
                format_cpulist(p.acl),
                format_cpulist(p.release),
            )
        )
    return out


def codes(report: LogReport) -> list[str]:
    return [f.code for f in report.findings]


# -- fixtures: every rank's plan ---------------------------------------------------------------


def test_a2_tp4_bound() -> None:
    r = load("a2_tp4_bound.log")
    assert r.binding_seen and r.versions == {"vllm": "0.23.0"}
    assert plans(r) == [
        (0, 5301, 0, "146-165", "166", "167"),
        (1, 5302, 1, "170-189", "190", "191"),
        (2, 5303, 2, "98-117", "118", "119"),
        (3, 5304, 3, "122-141", "142", "143"),
    ]
    assert [w.binding for w in r.workers] == ["bound"] * 4
    assert [w.process for w in r.workers] == [f"Worker_TP{i}" for i in range(4)]
    assert [w.migrate_nodes for w in r.workers] == [(6,), (7,), (4,), (5,)]
    assert all(w.mode == "topo_affinity" and w.visible_npus == (0, 1, 2, 3) for w in r.workers)
    irqs = [
        (i.npu, i.pci, i.sq_irq, i.sq_cpu, i.cq_irq, i.cq_cpu) for w in r.workers for i in w.irqs
    ]
    assert irqs == [
        (0, "0000:c1:00.0", 600, 144, 601, 145),
        (1, "0000:c2:00.0", 640, 168, 641, 169),
        (2, "0000:81:00.0", 680, 96, 681, 97),
        (3, "0000:82:00.0", 720, 120, 721, 121),
    ]
    assert r.args is not None and r.args["tensor_parallel_size"] == 4
    assert r.additional_config == {"enable_cpu_binding": True, "enable_fused_mc2": 2}
    assert r.findings == ()
    assert r.lines == 30 and r.lines_cut == 0


def test_a3_tp8_global_slice() -> None:
    r = load("a3_tp8_global_slice.log")
    assert plans(r) == [
        (k, 7100 + k, k, f"{20 * k + 2}-{20 * k + 17}", str(20 * k + 18), str(20 * k + 19))
        for k in range(8)
    ]
    assert {w.mode for w in r.workers} == {"global_slice"}
    assert [w.migrate_nodes for w in r.workers] == [(0,), (0,), (1,), (1,), (2,), (2,), (3,), (3,)]
    # additional_config given as the JSON string of the command line
    assert r.additional_config == {
        "enable_cpu_binding": True,
        "multistream_overlap_shared_expert": True,
    }
    (f,) = r.findings
    assert f.code == "irq_not_logged" and f.ranks == tuple(range(8)) and f.severity == "info"


def test_dp2_worker_dp_prefixes_and_shared_pools() -> None:
    r = load("dp2_worker_dp.log")
    assert plans(r) == [
        (0, 9101, 4, "2-21", "22", "23"),
        (1, 9102, 5, "26-45", "46", "47"),
        (0, 9201, 4, "2-21", "22", "23"),
        (1, 9202, 5, "26-45", "46", "47"),
    ]
    assert [w.dp_rank for w in r.workers] == [0, 0, 1, 1]
    assert [w.process for w in r.workers][2] == "Worker_DP1_TP0_EP2"
    same = [f for f in r.findings if f.code == "same_npu_pool"]
    assert [(f.ranks, "NPU 4" in f.message or "NPU 5" in f.message) for f in same] == [
        ((0,), True),
        ((1,), True),
    ]
    assert "PR #15517" in same[0].hint
    assert "shared_cpus" not in codes(r)  # the same pools are said once, as same_npu_pool


def test_old_format_without_pids() -> None:
    """v0.18-era f-strings, `file.py:N]` heads, one process: plans go to the rank whose visible
    list index names the NPU, whatever order they are printed in."""
    r = load("old_format_v018.log")
    assert r.versions == {"vllm": "0.9.1"}
    assert plans(r) == [
        (0, None, 2, "98-117", "118", "119"),
        (1, None, 3, "122-141", "142", "143"),
    ]
    assert r.workers[1].skipped_steps == ("irq: Can't find pci address of NPU3 .",)
    assert r.workers[0].skipped_steps == (
        "memory: migratepages is not installed; memory was not moved",
    )
    # from `args: Namespace(...)`
    assert r.additional_config == {
        "enable_cpu_binding": True,
        "torchair_graph_config": {"enabled": False},
    }
    assert r.args is None


def test_legacy_v013_binder() -> None:
    r = load("legacy_v013.log")
    w0, w1 = r.workers
    assert (w0.rank, w0.binding, w0.plan and format_cpulist(w0.plan.main)) == (0, "bound", "0-3")
    assert (w1.rank, w1.binding, w1.cause) == (1, "failed", "no_running_npu")
    assert w1.process == "VllmWorker rank=1"


def test_bound_with_steps_skipped() -> None:
    r = load("bound_steps_skipped.log")
    (w,) = r.workers
    assert (w.binding, w.process, w.dp_rank, w.rank) == ("bound", "EngineCore_DP0", 0, 0)
    assert w.plan is not None and format_cpulist(w.plan.main) == "50-93"
    assert w.skipped_steps == (
        "memory: migratepages is not installed; memory was not moved",
        "irq: /proc/irq is not writable; IRQs were not bound",
    )
    assert codes(r) == ["irq_skipped", "memory_not_moved"]
    assert "privileged" in r.findings[0].hint


def test_non_arm_skip() -> None:
    r = load("skip_non_arm.log")
    assert [(w.rank, w.pid, w.binding) for w in r.workers] == [
        (0, 410, "skipped"),
        (1, 411, "skipped"),
    ]
    assert codes(r) == ["binding_skipped"] and r.findings[0].ranks == (0, 1)
    assert "non-ARM" in (r.workers[0].reason or "")


def test_no_binding_line() -> None:
    r = load("no_binding.log")
    assert not r.binding_seen and r.workers == ()
    assert codes(r) == ["no_binding_lines"]
    assert r.additional_config == {"enable_cpu_binding": False}


def test_mangled_log() -> None:
    """ANSI colour, CR, bad UTF-8, two records on one line, a plan line and the last line cut."""
    r = load("mangled.log")
    w0, w1 = r.workers
    assert (w0.rank, w0.pid, w0.binding, w0.mode) == (0, 61, "bound", "topo_affinity")
    assert w0.plan is not None and w0.plan.to_json() == {
        "npu": 0,
        "main": "146-165",
        "acl": "166",
        "release": "167",
    }
    assert [(i.sq_cpu, i.cq_cpu) for i in w0.irqs] == [(144, 145)]
    # the second record glued onto the first line still opened rank 1's binding
    assert (w1.rank, w1.pid, w1.mode, w1.visible_npus) == (1, 62, "topo_affinity", (0, 1))
    assert (w1.binding, w1.cause, w1.plan) == ("failed", "taskset_failed", None)
    assert w1.migrate_nodes == ()  # "[migrate] NPU:1 -> NU" is cut short
    assert "plan_line_cut" in codes(r) and r.versions == {"vllm": "0.23.0"}


# -- failures: each form its cause ---------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "cause", "reason_start"),
    [
        ("fail_too_few_cpus.log", "too_few_cpus", "The number of CPUs is insufficient."),
        ("fail_global_slice_small.log", "too_few_cpus", "Insufficient CPUs for binding"),
        ("fail_cpuset_conflict.log", "cpuset_conflict", "CPUs available in 'Cpus_allowed_list'"),
        ("fail_no_running_npu.log", "no_running_npu", "Can not get running npu info."),
        ("fail_taskset.log", "taskset_failed", "Failed to bind 3100 to CPU"),
        ("fail_lscpu.log", "lscpu_output", "invalid literal for int()"),
    ],
)
def test_failure_forms(name: str, cause: str, reason_start: str) -> None:
    r = load(name)
    assert [(w.rank, w.pid, w.binding, w.cause) for w in r.workers] == [
        (0, 3100, "failed", cause),
        (1, 3101, "failed", cause),
    ]
    w = r.workers[0]
    assert w.reason is not None and w.reason.startswith(reason_start)
    assert not w.reason.endswith("Skip binding cpu.")
    assert w.cause_text and w.fix
    (f,) = [f for f in r.findings if f.severity == "error"]
    assert f.code == f"binding_failed.{cause}" and f.ranks == (0, 1)


def test_taskset_failure_keeps_the_printed_plan() -> None:
    r = load("fail_taskset.log")
    assert [w.plan and w.plan.to_json() for w in r.workers] == [
        {"npu": 0, "main": "20,30,40,50,60", "acl": "70", "release": "80"},
        {"npu": 1, "main": "21,31,41,51,61", "acl": "71", "release": "81"},
    ]


@pytest.mark.parametrize(
    ("reason", "cause"),
    [
        ("The number of CPUs is insufficient. Each NPU requires at least 5 CPUs.", "too_few_cpus"),
        ("NPU3 got too few CPUs: 4 (<5). total_allowed=40", "too_few_cpus"),
        ("CPUs available in 'Cpus_allowed_list' conflict with NUMA affinity.", "cpuset_conflict"),
        ("Can not get running npu info.", "no_running_npu"),
        ("Failed to bind 1234 to CPU 1,2,3.", "taskset_failed"),
        ("lscpu command output error, no NUMA node available. Please check!", "lscpu_output"),
        ("invalid literal for int() with base 10: '-'", "lscpu_output"),
        (
            "Can not found specific 'Cpus_allowed_list' in the '/proc/self/status' file.",
            "no_cpus_allowed_list",
        ),
        ("Failed to get correct chip_logic_id from command 'npu-smi info -m'.", "npu_smi_map"),
        ("[Errno 13] Permission denied: '/proc/irq/77/smp_affinity'", "irq_permission"),
        ("[Errno 2] No such file or directory: 'npu-smi'", "tool_missing"),
        ("list index out of range", "rank_past_npu_list"),
        ("Invalid NPU id 9, total_npus=8.", "invalid_npu_id"),
        ("something new", "unknown"),
    ],
)
def test_cause_table(reason: str, cause: str) -> None:
    assert cause_of(reason).code == cause


def test_failure_line_cut_short_and_without_suffix() -> None:
    r = parse_text(
        "WARNING 09-23 10:00:00 [worker.py:783] Bind cpus failed in rank3: The number of CPUs is insuf\n"
    )
    (w,) = r.workers
    assert (w.rank, w.binding, w.cause) == (3, "failed", "too_few_cpus")
    r = parse_text("WARNING 09-23 10:00:00 [worker.py:783] Bind cpus failed in rank\n")
    assert r.workers[0].binding == "failed" and r.workers[0].rank is None


def test_a5_plan_and_skip() -> None:
    text = (
        "(Worker_TP0 pid=5) INFO 09-23 10:00:00 [cpu_binding.py:1] [vllm-ascend] - "
        "[cpu_bind_mode] mode=topo_affinity rank=0 visible_npus=[0]\n"
        "(Worker_TP0 pid=5) INFO 09-23 10:00:00 [cpu_binding.py:1] [vllm-ascend] - "
        "Ascend 950 NPU0: worker=[8 9 10 11 12 13 14 15]\n"
        "(Worker_TP1 pid=6) WARNING 09-23 10:00:00 [cpu_binding.py:1] [vllm-ascend] - "
        "[cpu_bind_ascend_950] insufficient CPU clusters. numa=0, clusters=1, npus=[0, 1]. "
        "action: skip worker CPU binding.\n"
    )
    r = parse_text(text)
    a, b = r.workers
    assert a.plan is not None and format_cpulist(a.plan.main) == "8-15" and a.binding == "bound"
    assert b.binding == "skipped" and "insufficient CPU clusters" in (b.reason or "")


# -- lines and records -----------------------------------------------------------------------------


def test_records_split_glued_lines_and_carriage_returns() -> None:
    line = (
        b"\x1b[36m(Worker_TP0 pid=1)\x1b[0m INFO 01-01 00:00:00 [a.py:1] one\r"
        b"(Worker_TP1 pid=2) INFO 01-01 00:00:01 [b.py:2] two"
        b"(Worker_TP2 pid=3) WARNING 01-01 00:00:02 [c.py:3] [vllm-ascend] [worker] - three \xff"
    )
    recs = records(line)
    assert [(r.pid, r.process, r.level, r.message) for r in recs] == [
        (1, "Worker_TP0", "INFO", "one"),
        (2, "Worker_TP1", "INFO", "two"),
        (3, "Worker_TP2", "WARNING", "three \ufffd"),
    ]


def test_ray_prefix_and_old_head() -> None:
    (rec,) = records(b"(RayWorkerWrapper pid=77, ip=192.0.2.1) INFO 01-01 00:00:00 x.py:9] hello")
    assert (rec.pid, rec.process, rec.message) == (77, "RayWorkerWrapper", "hello")


def test_split_lines_caps_length() -> None:
    cap = 100
    data = [b"a" * 250 + b"\nshort\n", b"b" * 90, b"b" * 90 + b"\nend"]
    out = list(split_lines(data, cap))
    assert out[0] == b"a" * 100 + b"\x00cut"
    assert out[1] == b"short"
    assert out[2] == b"b" * 100 + b"\x00cut"
    assert out[3] == b"end"


def test_long_line_counts_as_cut() -> None:
    huge = b"INFO 01-01 00:00:00 [x.py:1] " + b"z" * (vllm_log.model.MAX_LINE_BYTES * 3) + b"\n"
    r = parse_log(split_lines([huge, b"INFO 01-01 00:00:00 [x.py:1] tail\n"]))
    assert r.lines == 2 and r.lines_cut == 1 and "lines_cut" in codes(r)


def test_line_count_cap(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(vllm_log.model, "MAX_LINES", 3)
    r = parse_log([b"x"] * 10)
    assert r.truncated and r.lines == 3 and "truncated" in codes(r)


def test_worker_cap(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(vllm_log.model, "MAX_WORKERS", 2)
    lines = [
        f"(Worker_TP{i} pid={100 + i}) WARNING 01-01 00:00:00 [w.py:1] Bind cpus failed in rank{i}: x".encode()
        for i in range(5)
    ]
    r = parse_log(lines)
    assert len(r.workers) == 2 and "too_many_workers" in codes(r)


def _sound(r: LogReport, lines: int) -> None:
    """What any log gives: every line counted, each worker's facts in range, findings that say
    something, and a report that serialises."""
    assert r.lines == lines and 0 <= r.lines_cut <= r.lines and not r.truncated
    assert len(r.workers) <= vllm_log.model.MAX_WORKERS
    for w in r.workers:
        assert w.binding in ("bound", "failed", "skipped", "not seen")
        assert all(v is None or v >= 0 for v in (w.rank, w.pid, w.dp_rank, w.global_rank))
        assert 1 <= w.line <= r.lines
        if w.plan is not None:
            # -1: a legacy "bound" line whose plan line never came (the NPU is unknown)
            assert w.plan.npu >= -1
            assert all(0 <= c < vllm_log.model.MAX_CPU for c in w.plan.cpus)
        assert len(w.irqs) <= vllm_log.model.MAX_IRQS
        assert (w.cause is None) == (w.cause_text is None)
    if any(w.binding != "not seen" for w in r.workers):
        assert r.binding_seen
    for f in r.findings:
        assert f.severity in ("error", "warning", "info") and f.code and f.message
    json.dumps([f.to_json() for f in r.findings])
    json.dumps(
        [w.plan.to_json() for w in r.workers if w.plan]
        + [i.to_json() for w in r.workers for i in w.irqs]
    )


@st.composite
def mutated_logs(draw: st.DrawFn) -> list[bytes]:
    """A fixture log with lines deleted, swapped, cut or with a byte changed."""
    name = draw(st.sampled_from(sorted(p.name for p in FIX.glob("*.log"))))
    lines = (FIX / name).read_bytes().splitlines()
    for _ in range(draw(st.integers(1, 6))):
        if not lines:
            break
        i = draw(st.integers(0, len(lines) - 1))
        op = draw(st.sampled_from(["delete", "swap", "cut", "byte"]))
        if op == "delete":
            del lines[i]
        elif op == "swap":
            j = draw(st.integers(0, len(lines) - 1))
            lines[i], lines[j] = lines[j], lines[i]
        elif op == "cut":
            lines[i] = lines[i][: draw(st.integers(0, len(lines[i])))]
        elif lines[i]:
            at = draw(st.integers(0, len(lines[i]) - 1))
            lines[i] = lines[i][:at] + bytes([draw(st.integers(0, 255))]) + lines[i][at + 1 :]
    return lines


@settings(max_examples=150)
@given(mutated_logs())
def test_mutated_logs_give_sound_reports(lines: list[bytes]) -> None:
    r = parse_log(lines)
    _sound(r, len(lines))
    event("a plan read" if any(w.plan for w in r.workers) else "no plan")


@settings(max_examples=150)
@given(st.lists(st.binary(max_size=300), max_size=20))
def test_any_bytes_parse(lines: list[bytes]) -> None:
    _sound(parse_log(lines), len(lines))


@settings(max_examples=100)
@given(st.text(alphabet="NPU0123456789:[] main=acl=release=,()\r\x1b pid=Worker_TP", max_size=200))
def test_binding_like_noise_parses(text: str) -> None:
    line = "INFO 01-01 00:00:00 [cpu_binding.py:1] " + text
    r = parse_text(line)
    _sound(r, len(list(split_lines([line.encode("utf-8", errors="surrogateescape")]))))


# -- literals ----------------------------------------------------------------------------------------


def test_safe_literal() -> None:
    assert safe_literal("{'a': [1, 2.5, None, True], 'b': {'c': 'd'}}") == {
        "a": [1, 2.5, None, True],
        "b": {"c": "d"},
    }
    assert safe_literal("__import__('os').system('true')") is None
    assert safe_literal("{'a': " * 100 + "1" + "}" * 100) is None  # too deep
    assert (
        safe_literal("[" + "1," * (vllm_log.model.MAX_LITERAL_CHARS // 2) + "]") is None
    )  # too big
    assert safe_literal("{'a': 1") is None  # cut short


def test_non_default_args_cut_or_hostile() -> None:
    r = parse_text(
        "INFO 01-01 00:00:00 [utils.py:1] non-default args: {'model': '/m', 'tensor_par\n"
    )
    assert r.args is None and "args_unparsed" in codes(r)
    r = parse_text("INFO 01-01 00:00:00 [utils.py:1] non-default args: {'x': __import__('os')}\n")
    assert r.args is None
    r = parse_text(
        "INFO 01-01 00:00:00 [utils.py:1] non-default args: {'model': '/m'} trailing {junk\n"
    )
    assert r.args == {"model": "/m"}


# -- versions and the comparison --------------------------------------------------------------------


@pytest.mark.parametrize(
    ("versions", "target"),
    [
        ({"vllm": "0.23.0"}, "v0.23.0"),
        ({"vllm": "0.9.1"}, "v0.9.1"),
        ({"vllm": "0.9.2"}, "v0.9.2rc1"),
        ({"vllm": "0.8.5"}, "v0.9.1rc1"),
        ({"vllm": "0.22.1"}, "v0.22.1rc1"),
        # the release paired with that vLLM (core/vllm_ascend)
        ({"vllm": "0.25.1"}, "v0.25.1rc1"),
        ({"vllm": "0.26.0"}, "v0.26.0rc1"),
        ({"vllm": "0.27.1.dev3+gabc"}, "v0.27.1rc1"),
        ({"vllm_ascend": "0.25.1rc1"}, "v0.25.1rc1"),
        ({"vllm_ascend": "0.26.0rc2"}, "v0.26.0rc1"),
        ({"vllm_ascend": "0.18.0"}, "v0.18.0"),
        ({"vllm": "0.99.0"}, None),
        ({"vllm": "0.27.1", "vllm_ascend": "0.23.0"}, "v0.23.0"),
        ({}, None),
    ],
)
def test_check_target(versions: dict[str, str], target: str | None) -> None:
    r = LogReport((), None, None, versions, (), 0, 0, False)
    assert check_target(r)[0] == target


def _demo_plan(name: str, report: LogReport):  # type: ignore[no-untyped-def]
    from ascendtune.core.planner import make_plan
    from ascendtune.host.demos import open_demo
    from ascendtune.host.reader import read_host

    return make_plan(read_host(open_demo(name)), vllm_log.plan_request(report))


def test_compare_matches_demo_a2() -> None:
    r = load("a2_tp4_bound.log")
    found = vllm_log.compare_with_plan(r, _demo_plan("atlas-800i-a2", r))
    assert [(f.code, f.ranks) for f in found] == [("plan_matches", (0, 1, 2, 3))]


def test_compare_matches_demo_a3() -> None:
    r = load("a3_tp8_global_slice.log")
    found = vllm_log.compare_with_plan(r, _demo_plan("atlas-800i-a3", r))
    assert [(f.code, f.ranks) for f in found] == [("plan_matches", tuple(range(8)))]


def test_compare_reports_differences() -> None:
    r = load("a2_tp4_bound.log")
    moved = WorkerLog(
        rank=9,
        pid=1,
        process=None,
        dp_rank=None,
        binding="bound",
        plan=vllm_log.LoggedPlan(2, frozenset(range(100, 118)), frozenset({118}), frozenset({119})),
        irqs=(vllm_log.IrqBinding(2, "x", 1, 98, 2, 99),),
    )
    r2 = LogReport((*r.workers, moved), None, None, {}, (), 0, 0, True)
    found = vllm_log.compare_with_plan(r2, _demo_plan("atlas-800i-a2", r))
    (diff,) = [f for f in found if f.code == "plan_differs"]
    assert diff.ranks == (9,)
    assert "main 100-117 (predicted 98-117)" in diff.message
    assert "IRQ CPUs 98,99 (predicted 96,97)" in diff.message


# -- the command -----------------------------------------------------------------------------------


def test_cli_json_bound(cli: Cli) -> None:
    res = cli("log", str(FIX / "a2_tp4_bound.log"), "--json")
    assert res.exit_code == 0, res.output
    doc = schemas.loads("log", res.stdout)
    assert doc["schema_version"] == 1 and doc["binding_seen"] is True
    r0 = doc["ranks"][0]
    assert {k: r0[k] for k in ("rank", "pid", "binding", "reason", "plan")} == {
        "rank": 0,
        "pid": 5301,
        "binding": "bound",
        "reason": None,
        "plan": {"npu": 0, "main": "146-165", "acl": "166", "release": "167"},
    }
    assert r0["irqs"] == [
        {
            "npu": 0,
            "pci": "0000:c1:00.0",
            "sq_irq": 600,
            "sq_cpu": 144,
            "cq_irq": 601,
            "cq_cpu": 145,
        }
    ]
    assert doc["args"]["tensor_parallel_size"] == 4
    assert doc["versions"] == {"vllm": "0.23.0"}
    assert doc["check_config"]["target"] == "v0.23.0"
    assert doc["findings"] == [] and doc["comparison"] is None
    assert doc["summary"] == {"bound": 4, "failed": 0, "skipped": 0, "not seen": 0}


def test_cli_compare_with_demo(cli: Cli) -> None:
    res = cli("log", str(FIX / "a2_tp4_bound.log"), "--json", "--demo", "atlas-800i-a2")
    assert res.exit_code == 0, res.output
    doc = schemas.loads("log", res.stdout)
    assert doc["comparison"]["mode"] == "topo_affinity"
    assert doc["comparison"]["predicted"]["0"]["main"] == "146-165"
    assert [f["code"] for f in doc["findings"]] == ["plan_matches"]


def test_cli_failed_exit_1_and_text(cli: Cli) -> None:
    res = cli("log", str(FIX / "fail_cpuset_conflict.log"))
    assert res.exit_code == 1
    assert "failed" in res.stdout and "cause:" in res.stdout and "fix:" in res.stdout
    assert "binding_failed.cpuset_conflict" in res.stdout


def test_cli_stdin_and_gzip(tmp_path: Path, cli: Cli) -> None:
    data = (FIX / "dp2_worker_dp.log").read_bytes()
    res = cli("log", "-", "--json", input=data)
    assert res.exit_code == 0, res.output
    assert len(schemas.loads("log", res.stdout)["ranks"]) == 4
    gz = tmp_path / "server.log.gz"
    gz.write_bytes(gzip.compress(data))
    res = cli("log", str(gz), "--json")
    assert res.exit_code == 0, res.output
    assert [r["dp_rank"] for r in schemas.loads("log", res.stdout)["ranks"]] == [0, 0, 1, 1]


def test_cli_no_binding_text(cli: Cli) -> None:
    res = cli("log", str(FIX / "no_binding.log"))
    assert res.exit_code == 0
    assert "no_binding_lines" in res.stdout


def test_cli_missing_file_exit_3(tmp_path: Path, cli: Cli) -> None:
    res = cli("log", str(tmp_path / "nope.log"))
    assert res.exit_code == 3
    assert "no such log file" in res.stderr and "Traceback" not in res.output


def test_cli_unreadable_exit_5(tmp_path: Path, cli: Cli) -> None:
    res = cli("log", str(tmp_path))
    assert res.exit_code == 5 and "directory" in res.stderr
    binary = tmp_path / "core.bin"
    binary.write_bytes(b"\x00\x01\x00\x00" * 1000)
    res = cli("log", str(binary))
    assert res.exit_code == 5 and "not a text log" in res.stderr
    bad_gz = tmp_path / "bad.gz"
    bad_gz.write_bytes(b"\x1f\x8b" + b"\x00" * 50)
    res = cli("log", str(bad_gz))
    assert res.exit_code == 5


def test_cli_unknown_target_exit_2(cli: Cli) -> None:
    res = cli("log", str(FIX / "a2_tp4_bound.log"), "--target", "v9")
    assert res.exit_code == 2 and "unknown --target" in res.stderr


def test_cli_target_override(cli: Cli) -> None:
    res = cli("log", str(FIX / "a2_tp4_bound.log"), "--json", "--target", "main-2026-08")
    doc = schemas.loads("log", res.stdout)
    assert doc["check_config"]["target"] == "main-2026-08"
    assert doc["check_config"]["target_reason"] == "--target"
    # enable_fused_mc2: 2 is refused after v0.23.0
    assert any(f["severity"] == "error" for f in doc["check_config"]["findings"])


def test_plain_worker_names_multinode() -> None:
    """`(Worker pid=N)` carries no rank: binding lines give the local rank, vLLM's parallel_state
    line the global one; a worker with no binding line is "not seen"."""
    r = load("multinode_worker_plain.log")
    assert [(w.rank, w.pid, w.global_rank, w.dp_rank, w.binding) for w in r.workers] == [
        (0, 601, 8, 0, "bound"),
        (1, 602, 9, 0, "bound"),
        (None, 603, 10, 0, "not seen"),
    ]
    assert plans(LogReport(r.workers[:2], None, None, {}, (), 0, 0, True)) == [
        (0, 601, 0, "2-37", "38", "39"),
        (1, 602, 1, "42-77", "78", "79"),
    ]
    (f,) = [f for f in r.findings if f.code == "binding_not_logged"]
    assert "pid 603 (global rank 10)" in f.message and f.severity == "warning"


@settings(max_examples=150)
@given(
    st.lists(st.binary(max_size=40).map(lambda b: b.replace(b"\n", b"")), max_size=30),
    st.lists(st.integers(min_value=1, max_value=50), min_size=1, max_size=10),
)
def test_split_lines_any_chunking(lines: list[bytes], sizes: list[int]) -> None:
    data = b"\n".join(lines)
    chunks, pos, i = [], 0, 0
    while pos < len(data):
        n = sizes[i % len(sizes)]
        chunks.append(data[pos : pos + n])
        pos, i = pos + n, i + 1
    got = list(split_lines(chunks, 64))
    want = [ln for ln in lines] if data else []
    if want and want[-1] == b"":
        want = want[:-1]  # a trailing newline ends the last line, it opens none
    assert got == want


def test_mode_line_naming_the_npu_matches_its_plan() -> None:
    """Without pids, a mode line that names its NPU (as lines after PR #15517 may) takes that
    NPU's plan even when the visible list's order says otherwise."""
    head = "INFO 09-23 10:00:00 [cpu_binding.py:1] "
    text = (
        f"{head}[cpu_bind_mode] mode=topo_affinity rank=0 npu=6 visible_npus=[4, 6]\n"
        f"{head}[cpu_bind_mode] mode=topo_affinity rank=1 npu=4 visible_npus=[4, 6]\n"
        f"{head}NPU4: main=[2 3 4]  acl=[5]  release=[[6]]\n"
        f"{head}NPU6: main=[50 51 52]  acl=[53]  release=[[54]]\n"
    )
    r = parse_text(text)
    assert [(w.rank, w.plan.npu if w.plan else None) for w in r.workers] == [(0, 6), (1, 4)]


# -- findings stay linear ----------------------------------------------------------------------


def _crowded_log(n: int) -> str:
    """n workers, each on its own NPU: half share one pool (CPUs 0-9), the rest overlap their
    neighbour by 2 CPUs (a chain)."""
    head = "INFO 09-23 10:11:21 [cpu_binding.py:545] [vllm-ascend] - "
    out = []
    for i in range(n):
        base = 0 if i < n // 2 else 8 * i
        cpus = " ".join(str(c) for c in range(base, base + 8))
        p = f"(Worker_TP{i} pid={1000 + i}) {head}"
        out.append(f"{p}[cpu_bind_mode] mode=topo_affinity rank={i} visible_npus=[{i}]")
        out.append(f"{p}NPU{i}: main=[{cpus}]  acl=[{base + 8}]  release=[[{base + 9}]]")
    return "\n".join(out) + "\n"


def test_cpus_shared_by_many_ranks_are_one_finding() -> None:
    r = parse_text(_crowded_log(64))
    shared = [f for f in r.findings if f.code == "shared_cpus"]
    crowd = [f for f in shared if len(f.ranks) == 32]
    assert len(crowd) == 1, [f.message for f in shared[:5]]
    assert "share CPUs 0-9 (32 workers)" in crowd[0].message
    assert "and 24 more" in crowd[0].message and crowd[0].ranks == tuple(range(32))
    # the chain: each neighbour pair shares 2 CPUs
    pairs = [f for f in shared if len(f.ranks) == 2]
    assert len(pairs) == 31 and all("and" in f.message for f in pairs)


def test_a_thousand_workers_give_a_document_of_linear_size(cli: Cli, tmp_path: Path) -> None:
    sizes = {}
    for n in (64, 1024):
        path = tmp_path / f"w{n}.log"
        path.write_text(_crowded_log(n))
        res = cli("log", str(path), "--json")
        assert res.exit_code == 0, res.output
        sizes[n] = len(res.stdout)
        assert len(schemas.loads("log", res.stdout)["ranks"]) == n
    assert sizes[1024] / sizes[64] < 16 * 1.25, sizes


# -- runs: a log appended across restarts ------------------------------------------------------


def test_restarts_with_reused_pids_report_the_last_run() -> None:
    """Three starts in one file (the second's clock behind the first's), the same PIDs each
    time: rank 0 failed twice and bound the third time, so it is bound now."""
    r = load("restarts_pid_reuse.log")
    assert [(w.rank, w.pid, w.binding, w.migrate_nodes) for w in r.workers] == [
        (0, 61, "bound", (6,)),
        (1, 62, "bound", (7,)),
    ]
    assert [(x.run, x.first_line, x.last_line, x.failed_ranks) for x in r.runs] == [
        (1, 1, 11, (0,)),
        (2, 12, 20, (0,)),
        (3, 21, 32, ()),
    ]
    assert "server start" in r.runs[2].started
    assert codes(r) == ["earlier_runs", "irq_not_logged"] and not r.failed
    assert (
        "3 server runs" in r.findings[0].message and "run 1 (lines 1-11)" in r.findings[0].message
    )


def test_a_pid_that_binds_again_starts_a_run() -> None:
    r = load("restarts_workers_only.log")
    (w,) = r.workers
    assert (w.rank, w.binding, w.migrate_nodes, w.line) == (0, "bound", (6,), 4)
    assert [x.counts["failed"] for x in r.runs] == [1, 0]
    assert r.runs[1].started == "PID 61 began binding again"


def test_time_stamps_going_back_start_a_run() -> None:
    """No banner and new PIDs, but the clock goes back an hour: another run, judged alone.
    Records out of order by seconds (processes interleaving) stay one run."""
    head = "[cpu_binding.py:545] [vllm-ascend] -"
    text = (
        f"(Worker_TP0 pid=70) INFO 11-02 09:00:05 {head} [cpu_bind_mode] mode=topo_affinity rank=0\n"
        f"(Worker_TP0 pid=70) WARNING 11-02 09:00:06 {head} Bind cpus failed in rank0: "
        "Can not get running npu info.\n"
        f"(Worker_TP0 pid=90) INFO 11-02 08:00:05 {head} [cpu_bind_mode] mode=topo_affinity rank=0\n"
        f"(Worker_TP0 pid=90) INFO 11-02 08:00:03 {head} NPU0: main=[2 3 4]  acl=[5]  release=[[6]]\n"
    )
    r = parse_text(text)
    assert [(w.pid, w.binding) for w in r.workers] == [(90, "bound")]
    assert len(r.runs) == 2 and "time stamps go back" in r.runs[1].started
    # a year's turn is no step back
    wrap = text.replace("11-02 09:00", "12-31 23:59").replace("11-02 08:00", "01-01 00:00")
    assert len(parse_text(wrap).runs) == 1


def test_runs_in_the_document(cli: Cli) -> None:
    res = cli("log", str(FIX / "restarts_pid_reuse.log"), "--json")
    assert res.exit_code == 0, res.output  # rank 0 is bound in the current run
    doc = schemas.loads("log", res.stdout)
    assert doc["summary"] == {"bound": 2, "failed": 0, "skipped": 0, "not seen": 0}
    assert [x["summary"]["failed"] for x in doc["runs"]] == [1, 1, 0]
    assert [x["failed_ranks"] for x in doc["runs"]] == [[0], [0], []]
    assert [r["migrate_numa"] for r in doc["ranks"]] == [[6], [7]]
    one = schemas.loads("log", cli("log", str(FIX / "a2_tp4_bound.log"), "--json").stdout)
    assert [(x["run"], x["first_line"], x["last_line"]) for x in one["runs"]] == [(1, 1, 30)]


def test_logged_config_with_odd_keys_and_values(cli: Cli, tmp_path: Path) -> None:
    """A non-string key and a float past the double range in the logged dict: checked, and the
    document parses with a strict parser."""
    path = tmp_path / "server.log"
    path.write_text(
        "INFO 01-01 00:00:00 [utils.py:1] non-default args: {'model': '/m', 'x': -1e309, "
        "'additional_config': {1: 2, 'enable_cpu_binding': True, 'n': {3: -1e309}}}\n"
    )
    res = cli("log", str(path), "--json")
    assert res.exit_code == 0, res.output
    doc = schemas.loads("log", res.stdout)
    json.loads(res.stdout, parse_constant=lambda c: pytest.fail(f"bare {c} in the document"))
    assert doc["additional_config"]["1"] == 2 and doc["check_config"] is not None


@pytest.mark.parametrize(
    "name", sorted(p.name for p in FIX.glob("*.log") if not p.name.startswith("restarts_"))
)
def test_a_log_appended_to_itself_reports_its_last_run_alike(name: str) -> None:
    """Every fixture written three times over (a server restarted twice, same PIDs, same clock):
    three runs, and the last is reported exactly as the fixture alone."""
    data = (FIX / name).read_bytes()
    one, three = load(name), parse_log(split_lines([data + data + data]))
    assert len(three.runs) == 3 * len(one.runs)
    assert [replace(w, line=0) for w in three.workers] == [replace(w, line=0) for w in one.workers]
    assert [f.code for f in three.findings if f.code != "earlier_runs"] == codes(one)


def test_a_failed_run_then_a_bound_one(cli: Cli, tmp_path: Path) -> None:
    path = tmp_path / "server.log"
    path.write_bytes(
        (FIX / "fail_too_few_cpus.log").read_bytes() + (FIX / "a2_tp4_bound.log").read_bytes()
    )
    res = cli("log", str(path), "--json")
    assert res.exit_code == 0, res.output
    doc = schemas.loads("log", res.stdout)
    assert doc["summary"]["bound"] == 4 and [x["failed_ranks"] for x in doc["runs"]] == [[0, 1], []]
    res = cli("log", str(path))
    assert "earlier_runs" in res.stdout and "run 2 of 2 (lines 6-35)" in res.stdout


def test_numbers_no_real_log_prints_skip_their_line_not_the_log() -> None:
    # the campaign's input: thousands of digits in the pid, rank, NPU, date and NUMA fields
    # made int() refuse (an internal error); such a line is skipped, the good lines still count
    big = "9" * 5000
    text = "\n".join(
        [
            f"(Worker_TP0 pid={big}) INFO 09-23 10:11:03 [parallel_state.py:1400] rank {big} "
            f"in world size {big} is assigned as DP rank 0, PP rank 0, TP rank {big}",
            f"(Worker_TP0 pid=5301) INFO 09-{big} 10:11:21 [cpu_binding.py:545] [vllm-ascend] - "
            f"[cpu_bind_mode] mode=topo_affinity rank={big} visible_npus=[{big}, 1]",
            f"(Worker_TP0 pid=5301) INFO 09-23 10:11:25 [cpu_binding.py:667] [vllm-ascend] - "
            f"[migrate] NPU:{big} -> NUMA [{big}]",
            "(Worker_TP1 pid=5302) INFO 09-23 10:11:25 [cpu_binding.py:641] [vllm-ascend] - "
            "NPU1: main=[2 3 4]  acl=[5]  release=[[6]]",
        ]
    )
    report = parse_text(text)
    assert [w.pid for w in report.workers if w.plan is not None] == [5302]
