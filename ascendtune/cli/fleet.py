"""`ascendtune fleet`: the same answers for every node of a Ray cluster (snapshot, topo, doctor,
plan) or for snapshots gathered any other way (compare); which node differs, and how."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any

import typer

from ascendtune.cli.commands import COMMANDS, describe
from ascendtune.cli.common import ForcePlanOpt, JsonOpt, MaxPassesOpt, NoRolesOpt, handle_errors
from ascendtune.cli.planopts import (
    NoIrqReserveOpt,
    PolicyOpt,
    RanksOpt,
    ReserveOpt,
    SocOpt,
    SpillOpt,
    TargetOpt,
    VisibleDevicesOpt,
    plan_options,
)

if TYPE_CHECKING:
    from ascendtune.app.fleet import FleetReport
    from ascendtune.app.fleet_agents import AgentStatusReport
    from ascendtune.app.fleet_bind import FleetBindReport

EPILOG = (
    "Exit status: 0 every node answered and no check failed; 1 a node failed a check, "
    "failed or did not answer; 2 usage; 3 no cluster at the address, or Ray not installed."
)
_STYLE = {"ok": "green", "differs": "yellow", "failed": "bold red", "no answer": "bold red"}
_CELL = {"ok": "green", "warn": "yellow", "fail": "bold red", "skip": "dim"}

AddressOpt = Annotated[
    str | None,
    typer.Option(
        "--ray-address",
        metavar="auto|HOST:PORT",
        help="The Ray cluster's GCS address (default: RAY_ADDRESS, else auto: the cluster "
        "`ray start` left on this machine). Never starts a cluster.",
        show_default=False,
    ),
]
TimeoutOpt = Annotated[
    float, typer.Option("--timeout", metavar="S", help="Seconds to wait for the nodes' answers.")
]
NodesOpt = Annotated[
    list[str] | None,
    typer.Option(
        "--nodes",
        metavar="NAME[,NAME...]",
        help="Only these nodes (hostnames, IPs or node id prefixes); repeatable.",
        show_default=False,
    ),
]
SaveOpt = Annotated[
    str | None,
    typer.Option(
        "--save",
        metavar="DIR",
        help="Keep each node's snapshot as DIR/NODE-ID.tar.gz (replay "
        "them with `fleet compare DIR`).",
        show_default=False,
    ),
]
NoShipOpt = Annotated[
    bool,
    typer.Option(
        "--no-ship",
        help="Do not ship ascendtune to the nodes (runtime_env py_modules); use theirs.",
    ),
]
ViewOpt = Annotated[
    str, typer.Option("--view", metavar="doctor|topo|plan", help="What to compare.")
]


def render(report: FleetReport) -> None:
    from rich.table import Table
    from rich.text import Text

    from ascendtune.cli.common import stdout_console

    res = report.result
    doc = report.body
    con = stdout_console()
    group_no = {g.name: str(i) for i, g in enumerate(res.groups, 1)}
    for g in res.groups:
        con.print(
            Text(f"group {group_no[g.name]}: {g.name} ({len(g.nodes)} nodes)", style="bold"),
            soft_wrap=True,
        )
    t = Table(title=f"Nodes ({res.view})", title_justify="left")
    for col in ("node", "group", "status", "differs from the majority", "failing checks"):
        t.add_column(col)
    for n in res.nodes:
        t.add_row(
            Text(n.node),
            Text(group_no.get(n.group or "", "-")),
            Text(n.status, style=_STYLE[n.status]),
            Text(", ".join(d.key for d in n.differs) or ("-" if n.group else n.reason or "-")),
            Text(str(len(n.fails)) if n.fails else "-"),
        )
    con.print(t)
    _matrix(con, res)
    for n in res.nodes:
        for d in n.differs:
            line = Text(f"  {n.node}: ", style="yellow")
            line.append(f"{d.key} = {d.value}  (majority: {d.majority})")
            con.print(line, soft_wrap=True)
        if n.group is None:
            con.print(Text(f"  {n.node}: {n.status}: {n.reason}", style="bold red"), soft_wrap=True)
    for note in report.notes:
        con.print(Text(f"note: {note}", style="dim"), soft_wrap=True)
    s = doc["summary"]
    where = f"Ray cluster {doc['ray']['address']}" if doc.get("ray") else "snapshots"
    con.print(
        Text(
            f"fleet {res.view} ({where}): {s['nodes']} nodes in {s['groups']} groups: "
            f"{s['ok']} ok, {s['differs']} differ, {s['failed']} failed, "
            f"{s['no answer']} no answer"
            + (f"; saved to {doc['saved']}" if doc.get("saved") else "")
        ),
        soft_wrap=True,
    )


def _matrix(con: Any, res: Any) -> None:
    """Checks x nodes (a node's cell is its status, `*` where it differs from the majority);
    past 12 nodes, nodes x the checks that are not the same everywhere."""
    from rich.table import Table
    from rich.text import Text

    answered = [n for n in res.nodes if n.group is not None]
    checks = [k for k in res.keys if k.startswith("check:")]
    if not checks or not answered:
        return

    def cell(n: Any, k: str) -> Text:
        value = n.facts.get(k)
        status = value.split(":", 1)[0] if value else "-"
        mark = "*" if any(d.key == k for d in n.differs) else ""
        return Text(status + mark, style=("reverse " if mark else "") + _CELL.get(status, ""))

    if len(answered) <= 12:
        t = Table(title="Checks x nodes (* differs from the majority)", title_justify="left")
        t.add_column("check")
        for n in answered:
            t.add_column(Text(n.node))  # a label is text, never Rich markup
        for k in checks:
            t.add_row(Text(k.split(":", 1)[1]), *(cell(n, k) for n in answered))
    else:
        varied = [k for k in checks if len({n.facts.get(k) for n in answered}) > 1]
        if not varied:
            return
        t = Table(title="Nodes x the checks that vary (* differs)", title_justify="left")
        t.add_column("node")
        for k in varied:
            t.add_column(Text(k.split(":", 1)[1]))
        for n in answered:
            t.add_row(Text(n.node), *(cell(n, k) for k in varied))
    con.print(t)


def _nodes(values: list[str] | None) -> tuple[str, ...]:
    return tuple(v.strip() for raw in values or [] for v in raw.split(",") if v.strip())


def _gather(
    view: str,
    address: str | None,
    timeout: float,
    nodes: list[str] | None,
    save: str | None,
    no_ship: bool,
    json_out: bool,
    **plan: Any,
) -> None:
    from ascendtune.app import fleet
    from ascendtune.cli.common import respond

    opts = fleet.FleetOptions(
        view=view,
        ray_address=address,
        timeout=timeout,
        nodes=_nodes(nodes),
        save=save,
        ship=not no_ship,
        plan=plan_options(**plan),
    )
    respond(fleet.run(opts), json_out, fleet.document, render)


def _gather_command(fleet: typer.Typer, view: str, doc: str, *, planned: bool = False) -> None:
    """One `fleet VIEW` command over the Ray cluster; `planned` views (doctor, plan) also take
    --policy and --target."""
    if planned:

        def cmd(
            ray_address: AddressOpt = None,
            timeout: TimeoutOpt = 60.0,
            nodes: NodesOpt = None,
            save: SaveOpt = None,
            no_ship: NoShipOpt = False,
            policy: PolicyOpt = "auto",
            target: TargetOpt = "auto",
            json_out: JsonOpt = False,
        ) -> None:
            _gather(
                view,
                ray_address,
                timeout,
                nodes,
                save,
                no_ship,
                json_out,
                policy=policy,
                target=target,
            )

    else:

        def cmd(  # type: ignore[misc]  # the same command without the plan options
            ray_address: AddressOpt = None,
            timeout: TimeoutOpt = 60.0,
            nodes: NodesOpt = None,
            save: SaveOpt = None,
            no_ship: NoShipOpt = False,
            json_out: JsonOpt = False,
        ) -> None:
            _gather(view, ray_address, timeout, nodes, save, no_ship, json_out)

    cmd.__doc__ = doc
    fleet.command(view, epilog=EPILOG)(handle_errors(cmd))


def register(app: typer.Typer) -> None:
    fleet = typer.Typer(
        help=describe("fleet", "Read-only.", paragraph=False),
        short_help=COMMANDS["fleet"].summary,
        no_args_is_help=True,
    )

    _gather_command(
        fleet,
        "snapshot",
        "Capture every node (one pinned Ray task each); with --save keep the archives.",
    )
    _gather_command(
        fleet, "topo", "Every node's topology, grouped by class (accelerators, CPUs, NUMA layout)."
    )
    _gather_command(
        fleet,
        "doctor",
        "`doctor` on every node, judged on the driver; which checks differ from the majority.",
        planned=True,
    )
    _gather_command(
        fleet,
        "plan",
        "`plan` on every node; which ranks' CPUs differ from the majority of their class.",
        planned=True,
    )

    @fleet.command("compare", epilog=EPILOG.replace(", or Ray not installed", ""))
    @handle_errors
    def compare_cmd(
        paths: Annotated[
            list[str],
            typer.Argument(
                metavar="DIR|FILE...",
                help="Snapshots (folders or .tar.gz from `ascendtune snapshot`), or folders of them.",
            ),
        ],
        view: ViewOpt = "doctor",
        policy: PolicyOpt = "auto",
        target: TargetOpt = "auto",
        json_out: JsonOpt = False,
    ) -> None:
        """The fleet view over snapshots gathered any other way (Ansible, clush, srun, kubectl);
        needs no Ray."""
        from ascendtune.app import fleet
        from ascendtune.cli.common import respond

        opts = fleet.FleetCompareOptions(
            tuple(paths), view, plan_options(policy=policy, target=target)
        )
        respond(fleet.run(opts), json_out, fleet.document, render)

    register_bind(fleet)
    register_agent_status(fleet)
    app.add_typer(fleet, name="fleet")


# ---- fleet bind --workers -----------------------------------------------------------------------

BIND_EPILOG = (
    "Exit status: 0 every node verified (--apply) or planned (dry run), or has no worker; 1 a "
    "node failed, refused, was not verified or did not answer (its row says why); 2 usage; 3 no "
    "cluster at the address, or Ray not installed."
)
_BIND_STYLE = {
    "verified": "green",
    "planned": "green",
    "nothing to bind": "dim",
    "refused": "bold red",
    "failed": "bold red",
    "no answer": "bold red",
}


def render_bind(report: FleetBindReport) -> None:
    from rich.table import Table
    from rich.text import Text

    from ascendtune.cli.common import plain, stdout_console

    con = stdout_console()
    head = "bind --workers" if report.apply else "Dry run: bind --workers --dry-run"
    con.print(Text(f"{head} on every node of Ray cluster {report.ray['address']}"), soft_wrap=True)
    t = Table(box=None, pad_edge=False, show_edge=False)
    for col in ("NODE", "HOST", "WORKERS", "THREADS BOUND", "VERIFIED", "STATUS", "REASON"):
        t.add_column(col)
    for r in report.rows:
        threads = "-" if r.threads_total is None else f"{r.threads_bound}/{r.threads_total}"
        verified = "-" if r.verified is None else ("yes" if r.verified else "no")
        t.add_row(
            Text(plain(f"{r.node} {r.node_id[:8]}")),
            Text(plain(r.host or r.address)),
            "-" if r.workers is None else str(r.workers),
            threads,
            verified,
            Text(r.status, style=_BIND_STYLE.get(r.status, "")),
            Text(plain(r.reason or "")),
        )
    con.print(t)
    for note in report.notes:
        con.print(Text(plain(f"note: {note}"), style="dim"), soft_wrap=True)
    s = report.summary()
    bad = [
        r.node for r in report.rows if r.status not in ("verified", "planned", "nothing to bind")
    ]
    done = f"{s['verified']} verified" if report.apply else f"{s['planned']} planned"
    line = (
        f"fleet bind: {s['nodes']} nodes: {done}, {s['nothing to bind']} nothing to bind, "
        f"{s['failed'] + s['refused']} failed, {s['no answer']} no answer; "
        f"{s['threads_bound']}/{s['threads_total']} threads of {s['workers']} workers on target"
    )
    if bad:
        line += f"; not bound: {', '.join(bad)}"
    if not report.apply:
        line += ". Nothing was changed (give --apply to bind)."
    con.print(Text(plain(line)), soft_wrap=True)


def register_bind(fleet: typer.Typer) -> None:
    @fleet.command("bind", epilog=BIND_EPILOG)
    @handle_errors
    def bind_cmd(
        workers: Annotated[
            bool,
            typer.Option(
                "--workers",
                help="Every NPU/GPU worker of each node, each to the rank of the device it "
                "drives (required: what `bind --workers` does, on every node).",
            ),
        ] = False,
        apply: Annotated[
            bool,
            typer.Option(
                "--apply", help="Bind, and verify from each node's kernel (default: a dry run)."
            ),
        ] = False,
        ray_address: AddressOpt = None,
        timeout: Annotated[
            float,
            typer.Option("--timeout", metavar="S", help="Seconds each node has to answer."),
        ] = 60.0,
        nodes: NodesOpt = None,
        no_ship: NoShipOpt = False,
        plan: Annotated[
            str | None,
            typer.Option(
                "--plan",
                metavar="FILE",
                help="A plan file (`ascendtune plan --json`), read on each node at this path "
                "(else each node computes its own).",
                show_default=False,
            ),
        ] = None,
        force: ForcePlanOpt = False,
        no_roles: NoRolesOpt = False,
        max_passes: MaxPassesOpt = 16,
        policy: PolicyOpt = "auto",
        visible_devices: VisibleDevicesOpt = None,
        ranks: RanksOpt = None,
        soc: SocOpt = None,
        reserve: ReserveOpt = None,
        no_irq_reserve: NoIrqReserveOpt = False,
        spill: SpillOpt = False,
        target: TargetOpt = "auto",
        json_out: JsonOpt = False,
    ) -> None:
        """`bind --workers` on every node of a Ray cluster (one pinned task each): a dry run
        unless --apply; one row per node. ASCENDTUNE_FLEET_PIDS on a node limits it to those
        processes (docs/agent.md)."""
        from ascendtune.app import fleet_bind
        from ascendtune.cli.common import respond
        from ascendtune.core.errors import UsageError

        if not workers:
            raise UsageError("say what to bind: --workers (every worker of each node)")
        given = [
            name
            for name, on in (
                ("--policy", policy != "auto"),
                ("--visible-devices", visible_devices is not None),
                ("--ranks", ranks is not None),
                ("--soc", soc is not None),
                ("--reserve", reserve is not None),
                ("--no-irq-reserve", no_irq_reserve),
                ("--spill", spill),
            )
            if on
        ]
        if plan is not None and given:
            raise UsageError(f"{', '.join(given)} compute a plan; --plan FILE already is one")
        if force and plan is None:
            raise UsageError("--force applies a --plan FILE: give --plan")
        opts = fleet_bind.FleetBindOptions(
            ray_address=ray_address,
            apply=apply,
            timeout=timeout,
            nodes=_nodes(nodes),
            ship=not no_ship,
            plan=plan_options(**locals()),
            plan_file=plan,
            force=force,
            use_roles=not no_roles,
            max_passes=max_passes,
        )
        respond(fleet_bind.run(opts), json_out, fleet_bind.document, render_bind)


# ---- fleet agent-status ---------------------------------------------------------------------------

AGENT_EPILOG = (
    "Exit status: 0 every node's agent answered; 1 an agent is down (its row says why); 2 "
    "usage; 3 no cluster at the address, Ray or prometheus_client not installed."
)


def _share(v: float | None) -> str:
    return "-" if v is None else f"{v:.1%}"


def render_agents(report: AgentStatusReport) -> None:
    from rich.table import Table
    from rich.text import Text

    from ascendtune.cli.common import plain, stdout_console

    con = stdout_console()
    con.print(
        Text(f"ascendtune agents on port {report.port} of every node of {report.address}"),
        soft_wrap=True,
    )
    t = Table(box=None, pad_edge=False, show_edge=False)
    cols = ("NODE", "ADDRESS", "AGENT", "VERSION", "WORKERS", "THREADS BOUND", "OFF PLAN")
    for col in (*cols, "RESTARTS", "LAST SAMPLE", "DOCTOR FAILS"):
        t.add_column(col)
    for r in report.rows:
        name = f"{r.node} {r.node_id[:8]}"
        if not r.up:
            state = Text(plain(f"down: {r.reason}"), style="bold red")
            t.add_row(Text(plain(name)), Text(plain(r.address)), state, *(["-"] * 7))
            continue
        mode = f"up ({r.mode})" if r.mode else "up"
        if r.plan_ok is False:
            mode += ", no plan"
        t.add_row(
            Text(plain(name)),
            Text(plain(r.address)),
            Text(plain(mode), style="green" if r.plan_ok is not False else "yellow"),
            Text(plain(r.version or "?")),
            str(r.workers),
            f"{r.threads_bound}/{r.threads_total}",
            _share(r.off_plan_share),
            str(r.restarts),
            "-" if r.last_sample_age_s is None else f"{r.last_sample_age_s:g} s ago",
            Text(plain(", ".join(r.doctor_failures) or "-")),
        )
    con.print(t)
    up = sum(1 for r in report.rows if r.up)
    down = [r.node for r in report.rows if not r.up]
    line = f"fleet agent-status: {len(report.rows)} nodes: {up} up, {len(down)} down"
    if down:
        line += f" ({', '.join(down)})"
    con.print(Text(plain(line)), soft_wrap=True)


def register_agent_status(fleet: typer.Typer) -> None:
    @fleet.command("agent-status", epilog=AGENT_EPILOG)
    @handle_errors
    def agent_status_cmd(
        ray_address: AddressOpt = None,
        port: Annotated[
            int,
            typer.Option(
                "--port", min=1, max=65535, metavar="PORT", help="The agents' /metrics port."
            ),
        ] = 9477,
        timeout: Annotated[
            float,
            typer.Option("--timeout", metavar="S", help="Seconds each agent has to answer."),
        ] = 2.0,
        nodes: NodesOpt = None,
        json_out: JsonOpt = False,
    ) -> None:
        """What `ascendtune agent` says on every node of a Ray cluster: its /metrics read at
        the node's address (as Ray reports it) and PORT; needs `ascendtune[agent]`. Read-only."""
        from ascendtune.app import fleet_agents
        from ascendtune.cli.common import respond

        opts = fleet_agents.AgentStatusOptions(ray_address, port, timeout, _nodes(nodes))
        respond(fleet_agents.run(opts), json_out, fleet_agents.document, render_agents)
