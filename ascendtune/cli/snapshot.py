"""`ascendtune snapshot DIR`: capture this host (or a sysroot) for offline use and bug reports."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

import typer

from ascendtune.cli.commands import describe
from ascendtune.cli.common import DemoOpt, JsonOpt, SysrootOpt, handle_errors

if TYPE_CHECKING:
    from ascendtune.app.snapshot import SnapshotReport


def render(report: SnapshotReport) -> None:
    """What was captured on stderr; the path alone on stdout (for `$(ascendtune snapshot D)`)."""
    from ascendtune.cli.common import shown, stderr_console
    from ascendtune.core.text import inert_line

    missing = report.missing
    stderr_console().print(
        f"snapshot: {report.files} files, {report.links} links, "
        f"{report.accelerators} accelerators, {report.cpus_online} CPUs -> "
        f"{shown(report.path)}"
        + (f" ({len(missing)} paths absent on this host)" if missing else "")
    )
    print(inert_line(report.path))


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
