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
        json_out: JsonOpt = False,
        sysroot: SysrootOpt = None,
        demo: DemoOpt = None,
    ) -> None:
        """Capture everything ascendtune reads from this host into DIR (or DIR.tar.gz)."""
        from ascendtune.cli.common import open_root, stderr_console
        from ascendtune.host import snapshot
        from ascendtune.host.reader import read_host

        root = open_root(sysroot, demo)
        cap = snapshot.capture(root)
        path = snapshot.write(cap, dest)
        # read it back: a snapshot that does not replay is worse than none
        from ascendtune.host.sysroot import open_root as open_sysroot

        host = read_host(open_sysroot(str(path)))
        summary = {
            "path": str(path),
            "files": len(cap.files),
            "links": len(cap.links),
            "missing": cap.missing,
            "accelerators": len(host.accelerators),
            "cpus_online": len(host.cpus_online),
        }
        if json_out:
            print_json(summary)
            return
        stderr_console().print(
            f"snapshot: {len(cap.files)} files, {len(cap.links)} links, {len(host.accelerators)} "
            f"accelerators, {len(host.cpus_online)} CPUs -> {path}"
            + (f" ({len(cap.missing)} paths absent on this host)" if cap.missing else "")
        )
        print(path)
