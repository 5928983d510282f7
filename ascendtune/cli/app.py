"""The Typer application: global options and the command registry.

Command modules import only typer and the core at module level; heavy modules (psutil,
pyudev, torch_npu) are imported inside the commands, so `ascendtune --help` stays fast.
"""

from __future__ import annotations

import sys
from typing import Annotated

import typer

from ascendtune import __version__
from ascendtune.cli import bind, check_config, doctor, fleet, log, plan, snapshot, topo, watch
from ascendtune.cli.common import State, demo_flag_default

app = typer.Typer(
    name="ascendtune",
    help="See, predict, apply and verify CPU binding for LLM inference on Ascend NPUs and NVIDIA GPUs.",
    no_args_is_help=True,
    add_completion=True,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
    context_settings={"help_option_names": ["-h", "--help"]},
)


def _version(value: bool) -> None:
    if value:
        print(f"ascendtune {__version__}")
        raise typer.Exit(0)


@app.callback()
def _root(
    debug: Annotated[bool, typer.Option("--debug", help="Show a traceback on errors.")] = False,
    version: Annotated[
        bool,
        typer.Option("--version", callback=_version, is_eager=True, help="Print the version."),
    ] = False,
) -> None:
    State.debug = debug


for _module in (topo, plan, bind, check_config, doctor, snapshot, watch, log, fleet):
    _module.register(app)


def main() -> None:
    """The console script: `--demo` may stand alone, and usage errors are one line too."""
    args = demo_flag_default(sys.argv[1:])
    try:
        code = app(args=args, prog_name="ascendtune", standalone_mode=False)
    except Exception as e:
        # click's UsageError family (typer vendors click, so match its interface, not its class)
        if type(e).__name__ == "NoArgsIsHelpError":  # bare `ascendtune`: the help itself
            sys.stderr.write(e.format_message() + "\n")  # type: ignore[attr-defined]
            sys.exit(2)
        if hasattr(e, "format_message") and isinstance(getattr(e, "exit_code", None), int):
            ctx = getattr(e, "ctx", None)
            where = ctx.command_path if ctx is not None else "ascendtune"
            sys.stderr.write(f"ascendtune: error: {e.format_message()} (see `{where} --help`)\n")
            sys.exit(int(getattr(e, "exit_code", 2)))
        if type(e).__name__ == "Abort":  # Ctrl-C at a prompt
            sys.stderr.write("ascendtune: interrupted\n")
            sys.exit(130)
        raise
    sys.exit(code if isinstance(code, int) else 0)


if __name__ == "__main__":
    main()
