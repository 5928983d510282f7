"""`ascendtune snapshot DIR`: capture this host (or a sysroot) for offline use and bug reports."""

from __future__ import annotations

import os
import sys
from typing import TYPE_CHECKING, Annotated

import typer

from ascendtune.cli.commands import describe
from ascendtune.cli.common import DemoOpt, JsonOpt, SysrootOpt, handle_errors

if TYPE_CHECKING:
    from ascendtune.app.snapshot import SnapshotReport


def render(report: SnapshotReport) -> None:
    """What was captured on stderr; the path alone on stdout (for `$(ascendtune snapshot D)`)."""
    from ascendtune.core.text import inert_line

    missing = report.missing
    head = (
        f"snapshot: {report.files} files, {report.links} links, "
        f"{report.accelerators} accelerators, {report.cpus_online} CPUs -> "
    )
    tail = f" ({len(missing)} paths absent on this host)" if missing else ""
    path = inert_line(report.path)
    line = head + path + tail
    width = _rich_width()
    if width is not None and line.isascii() and line.isprintable() and "[" not in line:
        # the line as the stderr console prints it (no markup in it, wrapped as Rich wraps),
        # without importing Rich for one line: about 55 ms of a snapshot's CPU time
        from ascendtune.core.text import wrap_as_rich

        sys.stderr.write("\n".join(wrap_as_rich(line, width)) + "\n")
        sys.stderr.flush()
    else:
        from ascendtune.cli.common import shown, stderr_console

        stderr_console().print(head + shown(report.path) + tail)
    print(path)


# what Rich reads that may change where its stderr console wraps, or make it a terminal
_RICH_ENV = ("COLUMNS", "FORCE_COLOR", "TTY_COMPATIBLE", "TTY_INTERACTIVE", "JUPYTER_COLUMNS")


def _rich_width() -> int | None:
    """The width Rich's stderr console wraps at, found as Rich finds it (the first of stdin,
    stdout and stderr that is a terminal, else 80; 80 on a dumb terminal); None when the
    environment holds a variable Rich reads for it (Rich then decides)."""
    if any(k in os.environ for k in _RICH_ENV):
        return None
    if os.environ.get("TERM", "").lower() in ("dumb", "unknown") and sys.stderr.isatty():
        return 80
    for fd in (0, 1, 2):
        try:
            return os.get_terminal_size(fd).columns or 80
        except (AttributeError, ValueError, OSError):
            continue
    return 80


def register(app: typer.Typer) -> None:
    @app.command("snapshot", help=describe("snapshot"))
    @handle_errors
    def snapshot_cmd(
        dest: Annotated[
            str, typer.Argument(metavar="DIR", help="Folder to create, or DIR.tar.gz.")
        ],
        force: Annotated[
            bool,
            typer.Option("--force", help="Replace DIR (or the archive) if it exists."),
        ] = False,
        json_out: JsonOpt = False,
        sysroot: SysrootOpt = None,
        demo: DemoOpt = None,
    ) -> None:
        from ascendtune.app import snapshot
        from ascendtune.cli.common import host_source, respond

        opts = snapshot.SnapshotOptions(dest, force, host_source(sysroot, demo))
        respond(snapshot.run(opts), json_out, snapshot.document, render)
