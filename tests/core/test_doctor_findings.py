"""doctor repeats the plan's findings about the cpuset in its cgroup_cpuset check, chosen by
their code (planner.findings.CPUSET_CODES), never by the words of their message."""

from __future__ import annotations

from ascendtune.core.doctor import HOST_RULES, DoctorInput, HostFacts, PlanFacts
from ascendtune.core.findings import Finding
from ascendtune.core.planner import PlanRequest, make_plan
from ascendtune.core.planner.findings import CPUSET_CODES
from ascendtune.host.demos import open_demo
from ascendtune.host.reader import read_host

CPUSET_RULE = next(r for r in HOST_RULES if r.id == "cgroup_cpuset")


def cpuset_check(*findings: Finding) -> tuple[str, str | None]:
    host = read_host(open_demo("atlas-800i-a2"))  # cpuset = every online CPU: no note of its own
    plan = make_plan(host, PlanRequest(policy="numa-local"))._replace(findings=findings)
    facts = HostFacts(
        root="/x", live=False, files={}, irqbalance_pids=None, cgroup_version=2,
        cgroup_cpuset=None, tools=None, arch=None, env=None,
    )  # fmt: skip
    check = CPUSET_RULE.check(DoctorInput(facts, host, None, PlanFacts("numa-local", plan=plan)))
    return check.status, check.detail


def test_a_cpuset_finding_is_taken_by_its_code() -> None:
    assert cpuset_check() == ("ok", None)
    for code in sorted(CPUSET_CODES):
        assert cpuset_check(Finding(code, "warning", "CPUs 96-191 of it go unused")) == (
            "warn",
            "CPUs 96-191 of it go unused",
        )


def test_words_alone_do_not_make_a_cpuset_finding() -> None:
    talk = Finding("overlap", "warning", "ranks 0 and 1 share CPUs of the cpuset; 4 idle")
    assert cpuset_check(talk) == ("ok", None)
    mixed = cpuset_check(talk, Finding("idle_cpuset", "warning", "half the cpuset idles"))
    assert mixed == ("warn", "half the cpuset idles")
