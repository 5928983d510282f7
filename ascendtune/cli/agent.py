"""`ascendtune agent`: the node service (keep every worker bound, export metrics), run in the
foreground under systemd or as a DaemonSet's container."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from ascendtune.cli.commands import describe
from ascendtune.cli.common import DemoOpt, SysrootOpt, handle_errors, plan_file_option
from ascendtune.cli.planopts import _complete_policy

MORE = (
    "Runs in the foreground until SIGTERM (exit 0); SIGHUP re-reads --config. Settings come "
    "from the TOML file (keys listen, textfile, interval, doctor_interval, service, mode, "
    "policy, target, plan, visible_devices, log_format; at the top level or under [agent]), "
    "then from the flags. Logs go to stderr, one logfmt (or JSON) line per event. Needs the "
    "agent extra: pip install 'ascendtune[agent]'. Against a captured host (--sysroot, --demo) "
    "it only observes: no process is bound from a captured host."
)


def register(app: typer.Typer) -> None:
    @app.command("agent", help=describe("agent", MORE))
    @handle_errors
    def agent_cmd(
        config: Annotated[
            Path | None,
            typer.Option(
                "--config", metavar="FILE", help="TOML configuration (SIGHUP re-reads it)."
            ),
        ] = None,
        listen: Annotated[
            str | None,
            typer.Option(
                "--listen",
                metavar="ADDR:PORT",
                help="Serve /metrics here (default 127.0.0.1:9477; '' for none).",
            ),
        ] = None,
        textfile: Annotated[
            str | None,
            typer.Option(
                "--textfile",
                metavar="FILE",
                help="Also write the metrics to FILE (node_exporter's textfile collector).",
            ),
        ] = None,
        interval: Annotated[
            float | None,
            typer.Option("--interval", metavar="SECONDS", help="Time between passes (default 5)."),
        ] = None,
        doctor_interval: Annotated[
            float | None,
            typer.Option(
                "--doctor-interval",
                metavar="SECONDS",
                help="Time between two runs of doctor's host checks (default 60).",
            ),
        ] = None,
        service: Annotated[
            str | None,
            typer.Option("--service", metavar="NAME", help="The service label (default vllm)."),
        ] = None,
        observe: Annotated[
            bool | None,
            typer.Option(
                "--observe/--keep",
                help="Only read and export (--observe), or keep every worker bound (--keep, the default).",
            ),
        ] = None,
        policy: Annotated[
            str | None,
            typer.Option(
                "--policy",
                metavar="POLICY",
                help="The plan's policy (default auto).",
                autocompletion=_complete_policy,
            ),
        ] = None,
        target: Annotated[
            str | None,
            typer.Option("--target", metavar="VERSION", help="vLLM-Ascend version (default auto)."),
        ] = None,
        plan: Annotated[
            str | None,
            plan_file_option("A plan file (`ascendtune plan --json`) instead of --policy."),
        ] = None,
        visible_devices: Annotated[
            str | None,
            typer.Option("--visible-devices", metavar="IDS", help="Devices the server sees."),
        ] = None,
        log_format: Annotated[
            str | None,
            typer.Option(
                "--log-format", metavar="logfmt|json", help="Log line format (default logfmt)."
            ),
        ] = None,
        once: Annotated[
            bool,
            typer.Option(
                "--once",
                help="One pass and one sample (two, an interval apart, on this host), then print "
                "the metrics on stdout (or write --textfile) and exit.",
            ),
        ] = False,
        sysroot: SysrootOpt = None,
        demo: DemoOpt = None,
    ) -> None:
        from ascendtune.app.agent import service as svc
        from ascendtune.app.agent.config import build
        from ascendtune.cli.common import host_source

        flags = {
            "listen": listen,
            "textfile": textfile,
            "interval_s": interval,
            "doctor_interval_s": doctor_interval,
            "service": service,
            "mode": None if observe is None else ("observe" if observe else "keep"),
            "policy": policy,
            "target": target,
            "plan_file": plan,
            "visible_devices": visible_devices,
            "log_format": log_format,
        }
        if once:
            flags["listen"] = ""  # --once serves nothing: it prints or writes the textfile
            flags["textfile"] = textfile or "-"
        source = host_source(sysroot, demo)
        cfg = build(config, flags)
        log = svc.Log(cfg.log_format)
        agent = svc.Agent(lambda: build(config, flags), source, log=log)
        if once:
            agent.run_once()
            return
        restore = svc.install_signals(agent.flags)
        try:
            code = agent.run()
        finally:
            restore()
        raise typer.Exit(code)
