"""The Typer application: global options and the lazy command group.

Commands are built lazily: root `--help` and command-name completion come from the command
table (`ascendtune.cli.commands`), and only the invoked command's module is imported. Command
modules import only typer and the core at module level; heavy modules (psutil, pyudev,
torch_npu) are imported inside the commands.
"""

from __future__ import annotations

import sys
from collections.abc import MutableMapping
from typing import TYPE_CHECKING, Annotated, Any

import typer
from typer.core import TyperGroup

from ascendtune import __version__
from ascendtune.cli.commands import COMMANDS

if TYPE_CHECKING:
    from collections.abc import Iterator

    from typer._click import Command, Context


def build_command(name: str) -> Command:
    """The click command for name: import its module, register it on a scratch Typer, convert."""
    import importlib

    from typer.main import get_command_from_info

    module = importlib.import_module(COMMANDS[name].module)
    scratch = typer.Typer(rich_markup_mode=None, pretty_exceptions_enable=False)
    module.register(scratch)
    group = next((g for g in scratch.registered_groups if g.name == name), None)
    if group is not None:  # a sub-app (fleet): a click group of its own commands
        from typer.main import get_group_from_info

        return get_group_from_info(
            group, pretty_exceptions_short=True, rich_markup_mode=None, suggest_commands=True
        )
    info = next(i for i in scratch.registered_commands if i.name == name)
    if info.short_help is None:  # whole: click would cut it at about 45 characters
        info.short_help = COMMANDS[name].summary
    return get_command_from_info(info, pretty_exceptions_short=True, rich_markup_mode=None)


class _LazyCommands(MutableMapping[str, "Command"]):
    """The group's commands: every name in COMMANDS, each built on first lookup."""

    def __init__(self) -> None:
        self._built: dict[str, Command] = {}

    def __getitem__(self, name: str) -> Command:
        if name not in self._built:
            if name not in COMMANDS:
                raise KeyError(name)
            self._built[name] = build_command(name)
        return self._built[name]

    def __setitem__(self, name: str, cmd: Command) -> None:
        self._built[name] = cmd

    def __delitem__(self, name: str) -> None:
        del self._built[name]

    def __iter__(self) -> Iterator[str]:
        return iter({**dict.fromkeys(COMMANDS), **self._built})

    def __len__(self) -> int:
        return len({**dict.fromkeys(COMMANDS), **self._built})

    def __contains__(self, name: object) -> bool:
        return name in COMMANDS or name in self._built


class LazyGroup(TyperGroup):
    """The root group: commands built only when invoked; help and name completion from COMMANDS."""

    def __init__(self, **attrs: Any) -> None:
        super().__init__(**attrs)
        self.commands = _LazyCommands()

    def format_commands(self, ctx: Context, formatter: Any) -> None:
        rows = [(name, c.summary) for name, c in COMMANDS.items()]
        with formatter.section("Commands"):
            formatter.write_dl(rows)

    def shell_complete(self, ctx: Context, incomplete: str) -> list[Any]:
        from typer._click import Command as ClickCommand
        from typer._click.shell_completion import CompletionItem

        results = [
            CompletionItem(name, help=c.summary)
            for name, c in COMMANDS.items()
            if name.startswith(incomplete)
        ]
        results.extend(ClickCommand.shell_complete(self, ctx, incomplete))
        return results


app = typer.Typer(
    name="ascendtune",
    help="See, predict, apply and verify CPU binding for LLM inference on Ascend NPUs and NVIDIA GPUs.",
    cls=LazyGroup,
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
    # imported here, not at the top: root `--help` (which runs no callback) needs nothing of
    # cli.common, whose import brings json with it (docs/startup.md)
    from ascendtune.cli.common import State

    State.debug = debug


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
    from ascendtune.core.text import inert_line

    # the message quotes what was typed: escape codes and overrides are shown, not obeyed
    return inert_line(f"ascendtune: error: {message} (see `{where} --help`)")


def _silence_stdout() -> None:
    """The reader closed the pipe: send what is left nowhere, so the interpreter's last flush
    does not print "Exception ignored ... BrokenPipeError"."""
    from ascendtune.cli.streams import silence

    silence(sys.stdout)


COMPLETE_VAR = "_ASCENDTUNE_COMPLETE"


def click_style_completion() -> None:
    """Accept click's spelling of the completion request (`bash_complete`, `zsh_source`) as
    well as Typer's own (`complete_bash`, `source_zsh`)."""
    import os
    import re

    m = re.fullmatch(
        r"(bash|zsh|fish|powershell|pwsh)_(complete|source)", os.environ.get(COMPLETE_VAR, "")
    )
    if m:
        os.environ[COMPLETE_VAR] = f"{m.group(2)}_{m.group(1)}"


def main() -> None:
    """The console script: `--demo` may stand alone, `--debug` may stand anywhere, usage
    errors are one line too, a closed pipe (`| head`) ends quietly with status 0, a full
    stdout is one line and 74, and SIGTERM/SIGHUP stop as Ctrl-C does (cli/streams.py)."""
    try:
        _main()
    except KeyboardInterrupt:  # Ctrl-C before the handlers below were in place (start-up)
        sys.stderr.write("ascendtune: interrupted\n")
        sys.exit(130)


def _main() -> None:
    from ascendtune.cli.streams import Stopped, guard_streams, received, reported, stop_on_signals
    from ascendtune.core.errors import AscendtuneError

    guard_streams()
    stop_on_signals()
    click_style_completion()
    args = sys.argv[1:]
    if "--demo" in args:  # cli.common only when there is a --demo to complete (see _root)
        from ascendtune.cli.common import demo_flag_default

        args = demo_flag_default(args)
    args = debug_anywhere(args)
    try:
        code = _run(args)
        if code == 130 and received and not reported():
            # Typer's own exit for a signal that came while it built or parsed the command
            raise Stopped(received[0]) if received[0] != 2 else KeyboardInterrupt
        sys.stdout.flush()  # a closed pipe or a full disk shows here, not at shutdown
    except BrokenPipeError:
        _silence_stdout()
        code = 0
    except AscendtuneError as e:  # OutputLost from --help, --version or the last flush
        _silence_stdout()
        sys.stderr.write(_error_line(e) + "\n")
        code = e.exit_code
    except KeyboardInterrupt as e:  # outside a command's own boundary (parsing, --help)
        _silence_stdout()
        signum = e.signum if isinstance(e, Stopped) else 2
        sys.stderr.write("ascendtune: interrupted\n" if signum == 2 else "ascendtune: stopped\n")
        code = 128 + signum
    # Every object still alive now (the modules' classes, functions and tables, the host read)
    # lives until the process ends: frozen, the interpreter's collections at exit do not walk
    # them all again. Objects are still freed by their reference counts (files closed, buffers
    # written); only garbage cycles among them are left to the exit, whose __del__ Python does
    # not promise to call anyway. About 25 M instructions of a 360 M `topo --json`, more for
    # the commands that import more (docs/startup.md).
    import gc

    gc.freeze()
    sys.exit(code)


def _error_line(e: Exception) -> str:
    from ascendtune.core.text import inert_line

    return inert_line(f"ascendtune: error: {e}")


def _run(args: list[str]) -> int:
    from ascendtune.core.errors import AscendtuneError

    try:
        code = app(args=args, prog_name="ascendtune", standalone_mode=False)
    except (BrokenPipeError, AscendtuneError, KeyboardInterrupt):
        raise
    except Exception as e:
        # click's UsageError family (typer vendors click, so match its interface, not its class)
        if type(e).__name__ == "NoArgsIsHelpError":  # bare `ascendtune`: the help itself
            sys.stderr.write(e.format_message() + "\n")  # type: ignore[attr-defined]
            return 2
        if hasattr(e, "format_message") and isinstance(getattr(e, "exit_code", None), int):
            sys.stderr.write(_usage_line(e) + "\n")
            return int(getattr(e, "exit_code", 2))
        if type(e).__name__ == "Abort":  # click's word for Ctrl-C (or SIGTERM) while parsing
            raise (
                e.__context__ if isinstance(e.__context__, KeyboardInterrupt) else KeyboardInterrupt
            ) from None
        raise
    return code if isinstance(code, int) else 0


if __name__ == "__main__":
    main()
