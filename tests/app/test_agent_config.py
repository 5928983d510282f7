"""The agent's configuration: a TOML file, then the flags; every bad value one clear error."""

from __future__ import annotations

from pathlib import Path

import pytest

from ascendtune.app.agent.config import AgentConfig, build, listen_address
from ascendtune.core.errors import InvalidInput, UsageError


def write(tmp_path: Path, text: str) -> Path:
    p = tmp_path / "agent.toml"
    p.write_text(text)
    return p


def test_the_file_then_the_flags(tmp_path: Path) -> None:
    path = write(tmp_path, '[agent]\nservice = "qwen"\ninterval = 2\npolicy = "numa-local"\n')
    cfg = build(path, {"interval_s": 0.5, "policy": None})
    assert cfg == AgentConfig(service="qwen", interval_s=0.5, policy="numa-local")
    top = write(tmp_path, 'mode = "observe"\nlisten = ":9100"\n')
    assert build(top, {}).mode == "observe"
    assert listen_address(build(top, {}).listen) == ("0.0.0.0", 9100)


@pytest.mark.parametrize(
    ("text", "error", "says"),
    [
        ("interval = ", InvalidInput, "not valid TOML"),
        ('colour = "red"\n', InvalidInput, "unknown key 'colour'"),
        ('interval = "5s"\n', InvalidInput, "expected a number"),
        ("service = 3\n", InvalidInput, "expected a string"),
        ('mode = "fix"\n', UsageError, "expected one of keep, observe"),
        ("interval = 0\n", UsageError, "expected more than 0"),
        ('listen = "localhost"\n', UsageError, "expected ADDRESS:PORT"),
        ('listen = ""\n', UsageError, "export nowhere"),
    ],
)
def test_a_bad_value_is_one_clear_error(
    tmp_path: Path, text: str, error: type[Exception], says: str
) -> None:
    with pytest.raises(error, match=says):
        build(write(tmp_path, text), {})


def test_an_unreadable_file_says_which(tmp_path: Path) -> None:
    with pytest.raises(InvalidInput, match="cannot read it"):
        build(tmp_path / "missing.toml", {})
