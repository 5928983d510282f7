"""The one way tests run a command in process: Typer's CliRunner on the real app, at a pinned
terminal width, with no colour, and with none of the variables the tool reads from the
environment (a developer's ASCEND_RT_VISIBLE_DEVICES or ASCENDTUNE_SYSROOT must not change
what a test sees). Tests take it as the `cli` fixture (tests/conftest.py); helpers in
tests/support use `CLI`."""

from __future__ import annotations

from collections.abc import Mapping

from click.testing import Result
from typer.testing import CliRunner

from ascendtune.cli.app import app

WIDTH = 200
# what the tool reads from its environment, unset unless a test says otherwise
UNSET = ("ASCENDTUNE_SYSROOT", "ASCEND_RT_VISIBLE_DEVICES", "CUDA_VISIBLE_DEVICES")


class Cli:
    """`cli("topo", "--demo", "atlas-800i-a2")`: the Result (exit_code, stdout, stderr)."""

    def __init__(self) -> None:
        self.runner = CliRunner()

    def env(
        self, width: int = WIDTH, extra: Mapping[str, str | None] | None = None
    ) -> dict[str, str | None]:
        """The environment of one run: the pinned one, then `extra` (None unsets)."""
        return {**dict.fromkeys(UNSET), "NO_COLOR": "1", "COLUMNS": str(width), **(extra or {})}

    def __call__(
        self,
        *args: str,
        input: str | bytes | None = None,
        width: int = WIDTH,
        env: Mapping[str, str | None] | None = None,
    ) -> Result:
        return self.runner.invoke(app, list(args), input=input, env=self.env(width, env))


CLI = Cli()
