"""--target on plan, doctor, bind and check-config: the version used and why, DP in plan."""

from __future__ import annotations

from typing import Any

import pytest

from ascendtune.core import vllm_ascend as versions
from tests.support import schemas
from tests.support.cli import CLI, Cli

DP_ARGS = ["--policy", "vllm-ascend", "--visible-devices", "4,5,6,7", "--json"]


def run_json(*args: str) -> dict[str, Any]:
    res = CLI(*args)
    assert res.exit_code in (0, 1), res.output
    doc = schemas.loads_cli(args, res.stdout)
    assert isinstance(doc, dict)
    return doc


def engine(doc: dict[str, Any], dp_rank: int) -> list[str]:
    return [r["cpus"] for r in doc["ranks"] if r["dp_rank"] == dp_rank]


@pytest.mark.parametrize(
    "spelling",
    [
        ["--dp", "2", "--tp", "2"],
        ["-dp", "2", "-tp", "2"],
        ["--data-parallel-size", "2", "--tensor-parallel-size", "2"],
    ],
)
def test_dp_overlap_on_a_line_without_the_fix(spelling: list[str]) -> None:
    doc = run_json("plan", "--demo", "atlas-800i-a2", *DP_ARGS, *spelling, "--target", "v0.25.1rc1")
    assert doc["target"] == "v0.25.1rc1" and doc["target_reason"] == "given with --target"
    assert engine(doc, 1) == ["0-23", "24-47"] == engine(doc, 0)
    assert [(r["dp_rank"], r["local_rank"], r["device"]) for r in doc["ranks"]] == [
        (0, 0, 4),
        (0, 1, 5),
        (1, 0, 6),
        (1, 1, 7),
    ]
    [f] = [f for f in doc["findings"] if f["code"] == "dp_overlap"]
    assert (
        "v0.25.1rc1" in f["message"] and f["ranks"] == [2, 3] and "enable_cpu_binding" in f["hint"]
    )


@pytest.mark.parametrize("target", ["main-2026-09", "v0.23.0"])
def test_dp_engine_1_on_its_own_npus(target: str) -> None:
    doc = run_json(
        "plan", "--demo", "atlas-800i-a2", *DP_ARGS, "--dp", "2", "--tp", "2", "--target", target
    )
    assert engine(doc, 1) == ["48-71", "72-95"]
    assert not [f for f in doc["findings"] if f["code"] == "dp_overlap"]


def test_dp_from_a_vllm_command_line() -> None:
    cmd = "vllm serve /m -dp 2 --tensor-parallel-size 2"
    doc = run_json(
        "plan", "--demo", "atlas-800i-a2", *DP_ARGS, "--cmdline", cmd, "--target", "v0.24.0rc1"
    )
    assert engine(doc, 1) == ["0-23", "24-47"]


def test_auto_names_the_version_and_why() -> None:
    doc = run_json("plan", "--demo", "atlas-800i-a2", "--json")
    assert doc["target"] == versions.NEWEST.name
    assert doc["target_reason"].startswith("newest known")
    doc = run_json("doctor", "--demo", "atlas-800i-a2", "--json")
    assert doc["target"] == versions.NEWEST.name and doc["target_reason"].startswith("newest known")


def test_unknown_target_is_a_usage_error(cli: Cli) -> None:
    demo = ["--demo", "atlas-800i-a2"]
    for cmd in (["plan", *demo], ["doctor", *demo], ["check-config", "{}"]):
        res = cli(*cmd, "--target", "v9.9")
        assert res.exit_code == 2, (cmd, res.output)
        assert "unknown --target" in res.output


def test_fused_mc2_2_per_line(cli: Cli) -> None:
    res = cli("check-config", "--target", "v0.24.0rc1", '{"enable_fused_mc2": 2}')
    assert res.exit_code == 1
    doc = run_json("check-config", "--target", "v0.23.0", '{"enable_fused_mc2": 2}', "--json")
    assert doc["target"] == "v0.23.0"
    assert not [f for f in doc["findings"] if f["severity"] == "error"]


def test_check_config_reads_the_compilation_config_of_a_command_line() -> None:
    cmd = (
        'vllm serve /m --compilation-config \'{"cudagraph_mode": "PIECEWISE"}\' '
        '--additional-config \'{"ascend_compilation_config": {"enable_npugraph_ex": true}}\''
    )
    doc = run_json("check-config", "--target", "main-2026-09", "--cmdline", cmd, "--json")
    assert doc["effective"]["ascend_compilation_config"]["enable_npugraph_ex"] is False
    assert any(f["code"] == "compilation-piecewise" for f in doc["findings"])
