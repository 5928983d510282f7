"""`plan --emit systemd-unit` and `--emit daemonset`: the unit passes `systemd-analyze verify`
with no complaint, the manifest passes the Kubernetes OpenAPI schema (kubernetes-validate,
strict: no unknown field), and each asks for CAP_SYS_NICE and the /proc read and nothing more."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from ascendtune.app.agent.install import agent_args, daemonset, unit_text
from tests.support.cli import Cli

SYSTEMD_ANALYZE = shutil.which("systemd-analyze")


def heredoc(lines: list[str]) -> str:
    start = next(i for i, ln in enumerate(lines) if ln.endswith("<<'EOF'"))
    end = lines.index("EOF", start)
    return "\n".join(lines[start + 1 : end]) + "\n"


def emitted(cli: Cli, kind: str, *more: str) -> list[str]:
    res = cli("plan", "--demo", "atlas-800i-a2", "--policy", "numa-local", *more, "--emit", kind)
    assert res.exit_code == 0, res.stderr
    return res.stdout.splitlines()


def verify(unit: Path) -> subprocess.CompletedProcess[str]:
    assert SYSTEMD_ANALYZE is not None
    return subprocess.run(
        [SYSTEMD_ANALYZE, "verify", str(unit)],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "LC_ALL": "C", "SYSTEMD_LOG_COLOR": "0"},
        check=False,
    )


@pytest.mark.skipif(SYSTEMD_ANALYZE is None, reason="systemd-analyze is not installed")
def test_the_unit_passes_systemd_analyze_verify_and_a_broken_one_does_not(
    cli: Cli, tmp_path: Path
) -> None:
    text = heredoc(emitted(cli, "systemd-unit"))
    # the ExecStart binary must exist for verify: this test's own ascendtune
    exe = str(Path(sys.executable).parent / "ascendtune")
    assert "ExecStart=/usr/local/bin/ascendtune agent --policy numa-local" in text
    unit = tmp_path / "ascendtune-agent.service"
    unit.write_text(text.replace("/usr/local/bin/ascendtune", exe))
    res = verify(unit)
    assert res.returncode == 0 and res.stderr.strip() == "", res.stderr
    unit.write_text(unit.read_text().replace("CPUQuota=50%", "CPUQuota=half"))
    res = verify(unit)
    assert "Invalid CPU quota" in res.stderr  # verify does complain where it should


def test_the_unit_grants_cap_sys_nice_and_the_proc_read_only() -> None:
    lines = unit_text(["--policy", "numa-local"]).splitlines()
    assert "CapabilityBoundingSet=CAP_SYS_NICE CAP_SYS_PTRACE" in lines
    assert "AmbientCapabilities=CAP_SYS_NICE CAP_SYS_PTRACE" in lines
    assert "NoNewPrivileges=yes" in lines and "ProtectSystem=strict" in lines
    assert "ExecReload=/bin/kill -HUP $MAINPID" in lines
    assert not any(ln.startswith("ExecStart=") and "0.0.0.0" in ln for ln in lines)


def test_the_daemonset_passes_the_kubernetes_openapi_schema(cli: Cli) -> None:
    kv = pytest.importorskip("kubernetes_validate")
    doc = json.loads(heredoc(emitted(cli, "daemonset")))
    kv.validate(doc, kv.latest_version(), strict=True)
    spec = doc["spec"]["template"]["spec"]
    assert spec["hostPID"] is True
    [c] = spec["containers"]
    assert c["securityContext"]["capabilities"] == {
        "drop": ["ALL"],
        "add": ["SYS_NICE", "SYS_PTRACE"],
    }
    assert c["securityContext"]["privileged"] is False
    assert all(m["readOnly"] for m in c["volumeMounts"])
    assert {m["mountPath"] for m in c["volumeMounts"]} >= {"/var/lib/kubelet"}
    assert c["resources"]["limits"] == {"cpu": "500m", "memory": "256Mi"}
    assert c["ports"] == [{"name": "metrics", "containerPort": 9477, "protocol": "TCP"}]
    assert c["args"][:3] == ["agent", "--policy", "numa-local"]
    # and the validator does reject what the schema forbids
    bad = daemonset([])
    bad["spec"]["template"]["spec"]["containers"][0]["ports"][0]["containerPort"] = "metrics"
    with pytest.raises(kv.ValidationError):
        kv.validate(bad, kv.latest_version(), strict=True)


def test_plan_options_the_agent_does_not_take_are_named_with_what_to_do(cli: Cli) -> None:
    lines = emitted(cli, "systemd-unit", "--reserve", "0-1")
    assert lines[0].startswith("# --reserve 0-1: not an agent option") and "--plan" in lines[0]
    assert agent_args(["--policy", "p", "--no-irq-reserve", "--target", "v1"]) == (
        ["--policy", "p", "--target", "v1"],
        ["--no-irq-reserve"],
    )
