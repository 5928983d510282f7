"""Plan options shared by plan, bind and doctor: device lists and the auto policy."""

from __future__ import annotations

import pytest

from ascendtune.app.plan import visible_list
from ascendtune.core.errors import InvalidInput
from tests.support.cli import Cli


def test_visible_list_keeps_order() -> None:
    assert visible_list("6,4", "--visible-devices") == (6, 4)
    assert visible_list("0-3", "x") == (0, 1, 2, 3)


@pytest.mark.parametrize(
    ("text", "words"), [("GPU-5f2a,GPU-77", "UUID"), ("0,0", "twice"), ("a", "not a number")]
)
def test_visible_list_refuses(text: str, words: str) -> None:
    with pytest.raises(InvalidInput, match=words):
        visible_list(text, "CUDA_VISIBLE_DEVICES")


@pytest.mark.parametrize(
    ("demo", "policy"), [("atlas-800i-a2", "vllm-ascend"), ("dgx-h100", "numa-local")]
)
def test_auto_policy_follows_the_vendor(
    demo: str, policy: str, monkeypatch: pytest.MonkeyPatch, cli: Cli
) -> None:
    for var in ("ASCEND_RT_VISIBLE_DEVICES", "CUDA_VISIBLE_DEVICES"):
        monkeypatch.delenv(var, raising=False)
    res = cli("plan", "--demo", demo, "--json")
    assert res.exit_code == 0, res.stderr
    assert f'"policy": "{policy}"' in res.stdout


def test_uuid_in_environment_is_one_line(monkeypatch: pytest.MonkeyPatch, cli: Cli) -> None:
    res = cli("plan", "--demo", "dgx-h100", env={"CUDA_VISIBLE_DEVICES": "GPU-1234"})
    assert res.exit_code == 5 and len(res.stderr.strip().splitlines()) == 1
