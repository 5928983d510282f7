"""What every command shares: the host options, JSON output, consoles and the error boundary."""

from __future__ import annotations

import functools
import os
import sys
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Annotated, Any, TypeVar

import typer

from ascendtune.core.errors import AscendtuneError
from ascendtune.core.jsondoc import SCHEMA_VERSION

if TYPE_CHECKING:
    from rich.console import Console

    from ascendtune.app.outcome import Outcome
    from ascendtune.app.source import HostSource

R = TypeVar("R", bound="Outcome")


class State:
    debug = False


SysrootOpt = Annotated[
    str | None,
    typer.Option(
        "--sysroot",
        envvar="ASCENDTUNE_SYSROOT",
        help="Read a captured host (folder or .tar.gz from `ascendtune snapshot`) instead of this one.",
        metavar="DIR",
    ),
]


def complete_demo(incomplete: str) -> list[str]:
    """`--demo`: the embedded demo hosts, and list."""
    from ascendtune.app.hosts import demo_names

    return [n for n in ("list", *(name for name, _ in demo_names())) if n.startswith(incomplete)]


def complete_pid(incomplete: str) -> list[tuple[str, str]]:
    """`--pid`: the accelerator workers running on this host (pid, and its name as help)."""
    from ascendtune.app.hosts import worker_pids

    return [(str(pid), name) for pid, name in worker_pids() if str(pid).startswith(incomplete)]


def pid_option(help: str, *short: str) -> Any:
    """`--pid PID` (1 or more), completed with this host's accelerator workers."""
    return typer.Option(
        "--pid", *short, min=1, metavar="PID", help=help, autocompletion=complete_pid
    )


def plan_file_option(help: str) -> Any:
    """`--plan FILE`: a plan `ascendtune plan --json` wrote (an existing file, not a folder)."""
    return typer.Option("--plan", metavar="FILE", exists=True, dir_okay=False, help=help)


def rank_option(help: str, metavar: str | None = "RANK") -> Any:
    """`--rank RANK` (0 or more): a rank of the plan."""
    return typer.Option("--rank", min=0, metavar=metavar, help=help)


def checked(
    parse: Callable[[Any, str], object],
) -> Callable[[typer.Context, typer.CallbackParam, Any], Any]:
    """A callback that refuses a malformed value while the options are parsed, so it is a usage
    error (exit 2) in the same form as every other bad option value, in every command."""

    def check(ctx: typer.Context, param: typer.CallbackParam, value: Any) -> Any:
        if value is None or ctx.resilient_parsing:  # completion parses without values
            return value
        name = max(param.opts, key=len) if param.opts else str(param.name)
        try:
            parse(value, name)
        except AscendtuneError as e:
            raise typer.BadParameter(str(e)) from None
        return value

    return check


def _cpulist(text: str, source: str) -> object:
    from ascendtune.core.cpulist import parse_cpulist

    return parse_cpulist(text, source=source)


# a pause or a run longer than this is a typo, and time.sleep() refuses far less than 1e308
MAX_SECONDS = 366 * 86400.0


def _seconds(value: float, source: str) -> object:
    import math

    from ascendtune.core.errors import UsageError

    if not math.isfinite(value) or value > MAX_SECONDS:
        raise UsageError(f"{source} {value}: expected a number of seconds up to a year")
    return value


def cpus_option(help: str, *short: str) -> Any:
    """`--cpus CPULIST`, checked while the options are parsed."""
    return typer.Option("--cpus", *short, metavar="CPULIST", help=help, callback=checked(_cpulist))


def interval_option(help: str, metavar: str) -> Any:
    """`--interval SECONDS`: at least 0.05, finite, at most a year."""
    return typer.Option(
        "--interval", min=0.05, metavar=metavar, help=help, callback=checked(_seconds)
    )


DemoOpt = Annotated[
    str | None,
    typer.Option(
        "--demo",
        help="Read an embedded demo host (`--demo list` lists them; `--demo` alone picks atlas-800i-a2).",
        metavar="NAME",
        show_default=False,
        autocompletion=complete_demo,
    ),
]
JsonOpt = Annotated[
    bool, typer.Option("--json", help=f"Print JSON for scripts (schema_version {SCHEMA_VERSION}).")
]

# what `bind` and `fleet bind` share beyond the plan options (cli.planopts)
NoRolesOpt = Annotated[
    bool,
    typer.Option(
        "--no-roles",
        help="Bind every thread to the whole pool, not acl_thread/release_thread/main "
        "to their role CPUs.",
    ),
]
ForcePlanOpt = Annotated[
    bool, typer.Option("--force", help="Apply a --plan FILE made for another host.")
]
MaxPassesOpt = Annotated[
    int,
    typer.Option("--max-passes", min=1, metavar="N", help="Give up after this many passes."),
]

DEFAULT_DEMO = "atlas-800i-a2"


def demo_flag_default(argv: list[str]) -> list[str]:
    """Let `--demo` stand alone (no NAME): insert the default demo host name."""
    out: list[str] = []
    for i, a in enumerate(argv):
        if a == "--":  # a launched command's own arguments pass through untouched
            return out + argv[i:]
        out.append(a)
        if a == "--demo":
            nxt = argv[i + 1] if i + 1 < len(argv) else None
            if nxt is None or nxt.startswith("-"):
                out.append(DEFAULT_DEMO)
    return out


PIPE_WIDTH = 200


def stdout_console() -> Console:
    """The console for human output: the terminal's width (or COLUMNS); piped, tables get
    PIPE_WIDTH columns and lines of text are never wrapped (grep and less see whole lines)."""

    tty = sys.stdout.isatty()
    no_color = bool(os.environ.get("NO_COLOR")) or not tty
    columns = _columns()
    sized = tty or columns is not None

    class _Console(_inert_console_class()):  # type: ignore[misc]
        def on_broken_pipe(self) -> None:
            # Rich would exit 1 ("problems found"); the error boundary and main() make a
            # closed pipe (`| head`) a quiet exit 0 instead
            self.quiet = True
            raise BrokenPipeError

    return _Console(
        no_color=no_color,
        highlight=False,
        soft_wrap=not sized,
        width=(columns or _terminal_columns()) if sized else PIPE_WIDTH,
    )


def _columns() -> int | None:
    """COLUMNS when it is a usable width (Rich would print nothing at all at `COLUMNS=0`)."""
    text = os.environ.get("COLUMNS", "").strip()
    return int(text) if text.isdigit() and len(text) <= 5 and 0 < int(text) <= 10_000 else None


def _terminal_columns() -> int:
    try:
        return os.get_terminal_size(sys.stdout.fileno()).columns or 80
    except (OSError, ValueError, AttributeError):
        return 80


def host_line(identity: dict[str, Any]) -> str:
    """Which host a report was read from, in words: live hostname, sysroot path, or demo."""
    from ascendtune.core.text import inert_line

    # both come from the host (meta.json) or the command line: inert, for any renderer
    name = inert_line(str(identity["hostname"])) if identity.get("hostname") else None
    root = inert_line(str(identity.get("root") or ""))
    source = identity.get("source")
    if source == "live":
        return f"this host ({name or '?'})"
    if source == "demo":
        where = "demo " + root.removeprefix("demo:")
    else:
        where = f"sysroot {root}"
    return where + (f" (hostname {name})" if name else "")


def stderr_console() -> Console:
    no_color = bool(os.environ.get("NO_COLOR")) or not sys.stderr.isatty()
    return _inert_console_class()(stderr=True, no_color=no_color, highlight=False)


def shown(s: object) -> str:
    """A string from a host or a file as a markup string may hold it: inert, on one line, with
    Rich markup escaped (a hostname `[red]x` prints as written, never as red)."""
    from rich.markup import escape

    from ascendtune.core.text import inert_line

    return escape(inert_line(str(s)))


def plain(s: object) -> str:
    """A string from a host or a file for a place that reads no markup (Text, print): inert."""
    from ascendtune.core.text import inert_line

    return inert_line(str(s))


@functools.cache
def _inert_console_class() -> type[Console]:
    """A Console whose every printed text segment is inert: whatever a renderer forgot to clean,
    no escape sequence or control character from a host reaches the terminal (Rich's own style
    codes are added after this, so colours still work)."""
    from rich.console import Console
    from rich.segment import Segment

    from ascendtune.core.text import inert

    class InertConsole(Console):
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            # `:smile:` in a hostname or a log line is text, not an emoji code
            kwargs.setdefault("emoji", False)
            super().__init__(*args, **kwargs)

        def render(self, renderable: Any, options: Any = None) -> Any:
            for seg in super().render(renderable, options):
                if seg.control is None and seg.text:
                    clean = inert(seg.text)
                    if clean != seg.text:
                        seg = Segment(clean, seg.style)
                yield seg

    return InertConsole


def print_json(doc: Mapping[str, Any]) -> None:
    """The one printer of `--json` documents: schema_version first, then the document."""
    from ascendtune.core.jsondoc import dumps

    sys.stdout.write(dumps(doc) + "\n")


def respond(
    report: R,
    json_out: bool,
    document: Callable[[R], Mapping[str, Any]],
    render: Callable[[R], None],
) -> None:
    """How every command ends: the report's document (`--json`) or its rendering, then the
    exit status the report says (conclude)."""
    if json_out:
        print_json(document(report))
    else:
        render(report)
    conclude(report)


def conclude(report: Outcome) -> None:
    """The exit status from the report alone: its error's line on stderr when it ends with one,
    then its exit code (0 returns)."""
    error = report.error
    if error is not None:
        raise fail(error)
    if report.exit_code:
        raise typer.Exit(report.exit_code)


def host_source(sysroot: str | None, demo: str | None) -> HostSource:
    """The host a read command looks at; `--demo list` prints the demos and exits."""
    from ascendtune.app.hosts import demo_names
    from ascendtune.app.source import HostSource

    if demo == "list" and sysroot is None:
        for name, about in demo_names():
            print(f"{name:20} {about}")
        raise typer.Exit(0)
    return HostSource(sysroot=sysroot, demo=demo)


F = TypeVar("F", bound=Callable[..., Any])


# The issue asks for about 300; `plan --policy compare` joins one reason per policy into a
# legitimate line of ~350, so the cap sits above that: it is there against floods (a tool's
# megabytes of stderr, a huge input quoted back), not against a long honest sentence.
MAX_ERROR_LINE = 500


def fail(err: AscendtuneError) -> typer.Exit:
    """Print one line for err on stderr and return the Exit carrying its code.

    The line is inert (input may carry escape codes) and at most MAX_ERROR_LINE characters: a
    tool's megabytes of stderr, or a huge input quoted back, never flood the terminal.
    """
    from ascendtune.core.redact import redact_text
    from ascendtune.core.text import cap_line, inert, inert_line

    line = f"ascendtune: error: {err.message}"
    if err.hint:
        line += f" ({err.hint})"
    if err.exit_code == 2:  # a usage error: the same form as click's (see cli/app.py)
        ctx = _current_context()
        line += f" (see `{ctx.command_path if ctx else 'ascendtune'} --help`)"
    # an error may quote its input (a command line, a config): secrets masked before the cut
    line = redact_text(inert_line(line)[: 4 * MAX_ERROR_LINE])
    line = cap_line(line, MAX_ERROR_LINE, " (cut; rerun with --debug for all of it)")
    sys.stderr.write(line + "\n")
    if State.debug and len(err.message) + len(err.hint or "") > MAX_ERROR_LINE:
        sys.stderr.write(redact_text(inert(str(err))) + "\n")
    return typer.Exit(err.exit_code)


def _current_context() -> Any:
    """The running command's click context (typer vendors its own click, so ask that one)."""
    try:
        from typer._click.globals import get_current_context
    except ImportError:  # a typer that uses the click package itself
        from click import get_current_context  # type: ignore[no-redef]
    return get_current_context(silent=True)


def handle_errors(func: F) -> F:
    """The one error boundary: AscendtuneError -> one stderr line and its exit code."""

    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return func(*args, **kwargs)
        except AscendtuneError as e:
            if State.debug:
                import traceback

                traceback.print_exc()
            raise fail(e) from None
        except (typer.Exit, typer.Abort, SystemExit):
            raise
        except KeyboardInterrupt as e:  # Ctrl-C, or SIGTERM/SIGHUP (cli/streams.py's Stopped)
            from ascendtune.cli.streams import mark_reported

            signum = getattr(e, "signum", 2)
            mark_reported()
            sys.stderr.write(
                "ascendtune: interrupted\n" if signum == 2 else "ascendtune: stopped\n"
            )
            raise typer.Exit(128 + signum) from None
        except BrokenPipeError:
            raise typer.Exit(0) from None
        except Exception as e:
            if State.debug:
                raise
            from ascendtune.core.redact import redact_text
            from ascendtune.core.text import cap_line, inert_line

            # the message may quote input (escape codes, secrets, megabytes): one capped line
            tail = " (rerun with --debug for a traceback, and report it)"
            line = cap_line(
                redact_text(
                    inert_line(f"ascendtune: internal error: {type(e).__name__}: {e}")[
                        : 4 * MAX_ERROR_LINE
                    ]
                ),
                MAX_ERROR_LINE - len(tail),
            )
            sys.stderr.write(line + tail + "\n")
            from ascendtune.core.errors import INTERNAL_ERROR_EXIT

            raise typer.Exit(INTERNAL_ERROR_EXIT) from None

    return wrapper  # type: ignore[return-value]
