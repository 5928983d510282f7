"""The Typer application: global options and the command registry.

Command modules import only typer and the core at module level; heavy modules (psutil,
pyudev, torch_npu) are imported inside the commands, so `ascendtune --help` stays fast.
"""

from __future__ import annotations

import sys
from typing import Annotated

import typer

from ascendtune import __version__
from ascendtune.cli import (
    bind,
    check_config,
    doctor,
    explain,
    fleet,
    log,
    plan,
    snapshot,
    topo,
    watch,
)
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


for _module in (topo, plan, bind, check_config, doctor, snapshot, watch, log, explain, fleet):
    _module.register(app)


def _summary(doc: str) -> str:
    """A command's first sentence, whole: click would cut it at about 45 characters."""
    para = " ".join(doc.strip().split("\n\n", 1)[0].split())
    end = para.find(". ")
    return para if end < 0 else para[: end + 1]


for _info in app.registered_commands:
    _doc = _info.help or (_info.callback.__doc__ if _info.callback is not None else None)
    if _info.short_help is None and isinstance(_doc, str):
        _info.short_help = _summary(_doc)


def debug_anywhere(argv: list[str]) -> list[str]:
    """`--debug` is a root option; let it stand after the subcommand too (not after `--`,
    where a launched command's own arguments begin)."""
    cut = argv.index("--") if "--" in argv else len(argv)
    head, tail = argv[:cut], argv[cut:]
    if "--debug" not in head:
        return argv
    return ["--debug", *(a for a in head if a != "--debug"), *tail]


def _usage_line(e: Exception) -> str:
    """click's usage errors in the one form every bad option value takes:
    `ascendtune: error: --OPTION: what is wrong (see `ascendtune CMD --help`)`."""
    ctx = getattr(e, "ctx", None)
    where = ctx.command_path if ctx is not None else "ascendtune"
    param = getattr(e, "param", None)
    message = str(getattr(e, "message", "")) or e.format_message()  # type: ignore[attr-defined]
    opts = getattr(param, "opts", None)
    if opts and type(e).__name__ == "BadParameter":
        opt = max(opts, key=len)
        if not message.startswith(opt) and not any(message.startswith(o + " ") for o in opts):
            message = f"{opt}: {message}"
    else:
        message = e.format_message()  # type: ignore[attr-defined]
    return f"ascendtune: error: {message} (see `{where} --help`)"


def _silence_stdout() -> None:
    """The reader closed the pipe: send what is left nowhere, so the interpreter's last flush
    does not print "Exception ignored ... BrokenPipeError"."""
    import os

    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):
        pass


COMPLETE_VAR = "_ASCENDTUNE_COMPLETE"


def click_style_completion() -> None:
    """Accept click's spelling of the completion request (`bash_complete`, `zsh_source`) as
    well as Typer's own (`complete_bash`, `source_zsh`)."""
    import os
    import re

    m = re.fullmatch(r"(bash|zsh|fish|powershell|pwsh)_(complete|source)", os.environ.get(COMPLETE_VAR, ""))
    if m:
        os.environ[COMPLETE_VAR] = f"{m.group(2)}_{m.group(1)}"


def main() -> None:
    """The console script: `--demo` may stand alone, `--debug` may stand anywhere, usage
    errors are one line too, and a closed pipe (`| head`) ends quietly with status 0."""
    click_style_completion()
    args = debug_anywhere(demo_flag_default(sys.argv[1:]))
    try:
        code = _run(args)
        sys.stdout.flush()  # a closed pipe shows here, not at interpreter shutdown
    except BrokenPipeError:
        _silence_stdout()
        code = 0
    sys.exit(code)


def _run(args: list[str]) -> int:
    try:
        code = app(args=args, prog_name="ascendtune", standalone_mode=False)
    except BrokenPipeError:
        raise
    except Exception as e:
        # click's UsageError family (typer vendors click, so match its interface, not its class)
        if type(e).__name__ == "NoArgsIsHelpError":  # bare `ascendtune`: the help itself
            sys.stderr.write(e.format_message() + "\n")  # type: ignore[attr-defined]
            return 2
        if hasattr(e, "format_message") and isinstance(getattr(e, "exit_code", None), int):
            sys.stderr.write(_usage_line(e) + "\n")
            return int(getattr(e, "exit_code", 2))
        if type(e).__name__ == "Abort":  # Ctrl-C at a prompt
            sys.stderr.write("ascendtune: interrupted\n")
            return 130
        raise
    return code if isinstance(code, int) else 0


if __name__ == "__main__":
    main()
