"""`ascendtune snapshot DIR`: capture this host (or a sysroot) for offline use and bug reports."""

from __future__ import annotations

from typing import Annotated

import typer

from ascendtune.cli.common import DemoOpt, JsonOpt, SysrootOpt, handle_errors, print_json


def register(app: typer.Typer) -> None:
    @app.command("snapshot")
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
        """Capture everything ascendtune reads from this host into DIR (or DIR.tar.gz)."""
        from ascendtune.app.snapshot import snapshot
        from ascendtune.cli.common import open_root, shown, stderr_console
        from ascendtune.core.text import inert_line

        summary = snapshot(open_root(sysroot, demo), dest, force=force)
        if json_out:
            print_json(summary)
            return
        missing = summary["missing"]
        stderr_console().print(
            f"snapshot: {summary['files']} files, {summary['links']} links, "
            f"{summary['accelerators']} accelerators, {summary['cpus_online']} CPUs -> "
            f"{shown(summary['path'])}"
            + (f" ({len(missing)} paths absent on this host)" if missing else "")
        )
        print(inert_line(summary["path"]))
