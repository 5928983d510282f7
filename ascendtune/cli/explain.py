"""`ascendtune explain`: what an additional-config key does on every known vLLM-Ascend version,
every key by concern, or (`explain binding`) the steps of vLLM-Ascend's binding on a host."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any

import typer

from ascendtune.cli.commands import describe
from ascendtune.cli.common import (
    DemoOpt,
    JsonOpt,
    SysrootOpt,
    handle_errors,
    rank_option,
)
from ascendtune.cli.planopts import (
    BusyOpt,
    CmdlineOpt,
    DeviceIdsOpt,
    DpOpt,
    NoIrqReserveOpt,
    PpOpt,
    ReserveOpt,
    SocOpt,
    SpillOpt,
    TargetOpt,
    TpOpt,
    VisibleDevicesOpt,
    plan_options,
)

if TYPE_CHECKING:
    from ascendtune.app.explain import ExplainReport

HELP = """Without KEY: every key of --target grouped by concern (--search WORD filters;
--markdown prints the reference page). `explain binding [--rank R]` walks through the steps
vLLM-Ascend's CPU binding takes for rank R on this host (or --demo / --sysroot), each with its
input and result, then where numa-local departs. `explain versions` lists every version --target
takes, with its binding and its default. `explain binders` lists every binder that can act on a
worker and the chain of --pid, --cmdline (with --env) or every worker of the host."""


def _render_key(doc: dict[str, Any], target: str | None) -> None:
    from ascendtune.cli.common import stdout_console

    con = stdout_console()
    _out(con, f"{doc['key']}: {doc['summary']}")
    _out(
        con,
        f"concern: {doc['concern_title']}; side: {doc['side']}; when: {doc['when']} ({doc['when_words']})",
    )
    if doc["detail"]:
        _out(con)
        _out(con, doc["detail"])
    _out(con)
    _out(con, "versions:")
    # consecutive versions that treat the key alike share a line
    groups: list[tuple[list[str], str]] = []
    for name, row in doc["versions"].items():
        text = _row_text(row)
        if groups and groups[-1][1] == text:
            groups[-1][0].append(name)
        else:
            groups.append(([name], text))
    labels = [g[0] if len(g) == 1 else f"{g[0]} … {g[-1]}" for g, _ in groups]
    width = max(map(len, labels), default=0)
    for (names, text), label in zip(groups, labels, strict=True):
        mark = "*" if target in names else " "
        _out(con, f" {mark} {label:{width}}  {text}")
    if doc["interactions"]:
        _out(con)
        _out(con, "interactions:")
        for i in doc["interactions"]:
            keys = ", ".join(i["keys"]) or "alone"
            where = _where(i["versions"], list(doc["versions"]))
            _out(con, f"  - [{i['rule'] or 'not checked'}] with {keys}: {i['what']}{where}")
    if doc["per_version"]:
        _out(con)
        _out(con, "per version:")
        for pv in doc["per_version"]:
            _out(con, f"  - {pv['versions']}: {pv['what']}")
    if doc.get("history"):
        _out(con)
        _out(con, "across releases (read from each release's source):")
        for e in doc["history"]:
            _out(con, f"  {e['release']:14} {_event(e)}")
    _out(con)
    _out(con, "how to verify:")
    for v in doc["verify"]:
        _out(con, f"  - {v}")
    if doc["failure"]:
        _out(con)
        _out(con, "failure modes:")
        for f in doc["failure"]:
            _out(con, f"  - {f}")


def _event(e: dict[str, Any]) -> str:
    if e["event"] == "added":
        text = f"appears, {e.get('type', '?')}"
        if "default" in e:
            text += ", default " + ("unknown" if e.get("default_unknown") else _show(e["default"]))
        return text
    if e["event"] == "default":
        new = "unknown" if e.get("default_unknown") else _show(e["default"])
        return f"default {_show(e['before'])} -> {new}"
    if e["event"] == "type":
        return f"type {e['before']} -> {e.get('type')}"
    return "gone"


def _row_text(row: dict[str, Any]) -> str:
    if row["present"] or row["status"] == "elsewhere":
        text = f"{row['status']}, {row.get('type', '?')}, default {_show(row['default'])}"
        if row.get("choices") is not None:
            text += f", one of {_show(row['choices'])}"
        if row.get("env"):
            text += f", else ${row['env']}"
        if row.get("default_from"):
            text += f" (defaults to {row['default_from']})"
    else:
        text = row["status"]
    if row.get("note"):
        text += f": {row['note']}"
    return str(text)


def _out(con: Any, text: str = "") -> None:
    # log lines and rule codes are in brackets: print them as text, not as Rich markup
    con.print(text, markup=False, soft_wrap=True)


def _where(versions: list[str], every: list[str]) -> str:
    from ascendtune.core.vllm_ascend import spans

    return "" if versions == every else f" (on {spans(versions)})"


def _show(v: Any) -> str:
    import json

    return json.dumps(v, ensure_ascii=False, sort_keys=True)


def _render_listing(doc: dict[str, Any]) -> None:
    from rich.padding import Padding
    from rich.text import Text

    from ascendtune.cli.cells import Wrapped, fitted_table, prose, show
    from ascendtune.cli.common import plain, stdout_console

    con = stdout_console()
    if not doc["groups"]:
        _out(con, f"no key of {doc['target']} matches {doc['search']!r}")
        return
    for g in doc["groups"]:
        rows: list[list[Any]] = []
        for k in g["keys"]:
            default = "object" if k["type"] == "section" else _show(k["default"])
            rows.append(
                [
                    # the name a user passes to `explain KEY`: whole, never cut or broken
                    Wrapped(plain(k["key"]), ""),
                    Wrapped(plain(default), ", "),
                    Text(plain(k["side"])),
                    Text(plain(k["summary"])),
                ]
            )
        head = ("key", "default", "side", "what it does")
        title = plain(f"{g['title']} ({doc['target']})")
        table = fitted_table(con, title, head, rows)
        longest = max((len(k["key"]) for k in g["keys"]), default=0)
        if table.widths[0] >= longest and table.needed_width <= con.width:
            show(con, table)
            continue
        # too narrow for a table whose key column holds every name whole: one entry per key,
        # its name alone on a line (never wrapped), what it does indented below
        con.print(Text(title, style="italic"))
        for k, row in zip(g["keys"], rows, strict=True):
            prose(con, Text("  " + plain(k["key"]), style="bold"))
            what = Text(f"{row[1].text}, {row[2].plain}: {row[3].plain}", overflow="fold")
            con.print(Padding(what, (0, 0, 0, 6)))


def _render_binding(doc: dict[str, Any]) -> None:
    from ascendtune.cli.common import stdout_console

    con = stdout_console()
    _out(
        con,
        f"vLLM-Ascend {doc['target']} ({doc['target_reason']}): binding of rank {doc['rank']}, "
        f"mode {doc['mode']}",
    )
    for i, s in enumerate(doc["steps"], 1):
        _out(con, f"{i:2}. {s['name']}: {s['words']}")
        if s["name"] == "log_line":
            _out(con, f"    {s['result']['line']}")
    b = doc["better"]
    if b["plan"] is not None or b["departures"]:
        _out(con)
        if b["plan"] is not None:
            p = b["plan"]
            r = p["roles"]
            _out(
                con,
                f"{b['policy']}: {p['cpus']} on node(s) {','.join(map(str, p['numa_nodes']))} "
                f"(IRQ {r['irq'] or '-'}, main {r['main'] or '-'}, acl {r['acl'] or '-'}, "
                f"release {r['release'] or '-'})",
            )
        for d in b["departures"]:
            _out(con, f"- {d}")


def _render_versions(doc: dict[str, Any]) -> None:
    from ascendtune.cli.cells import fitted_table, show
    from ascendtune.cli.common import stdout_console

    rows = []
    for v in doc["versions"]:
        if v["binding_impl"] is None:
            binding, default = "none", "-"
        else:
            binding, default = v["binding_impl"], "on" if v["binding_default"] else "off"
            if v["binding_impl_evidence"] == "inferred":
                binding += " (inferred)"
        npu = v["npu_of_rank"] or "-"
        runs = v["binding_runs"] or "-"
        rows.append([v["name"], v["released"] or "", v["vllm"], binding, default, runs, npu])
    con = stdout_console()
    head = ("version", "released", "vLLM", "cpu_binding.py", "default", "runs", "rank -> NPU")
    show(con, fitted_table(con, "vLLM-Ascend versions", head, rows))
    _out(
        con, f"newest: {doc['newest']}; `--target NAME` takes a name or a package version (0.18.0)"
    )
    _out(con, "cpu_binding.py: git blob of the release's file (none: it ships no CPU binding)")


def _binders(
    pid: int | None,
    cmdline: str | None,
    env: list[str] | None,
    owner: str | None,
    target: str,
    sysroot: str | None,
    demo: str | None,
    json_out: bool,
) -> None:
    """`explain binders`: every binder modelled, and the chain of a PID, a command line or
    every worker of the host."""
    from ascendtune.app import binders
    from ascendtune.cli.common import respond

    opts = binders.BindersOptions(
        pid=pid,
        cmdline=cmdline,
        env=tuple(env or ()),
        owner=owner,
        target=target,
        sysroot=sysroot,
        demo=demo,
    )

    def shown(report: binders.BindersReport) -> None:
        from ascendtune.cli.binders import print_chain
        from ascendtune.cli.common import stdout_console

        con = stdout_console()
        doc = binders.document(report)
        _out(con, "binders ascendtune models (stage they act at; threads; on a narrower mask):")
        for b in doc["binders"]:
            _out(
                con, f"  {b['id']:15} {b['acts']:13} {','.join(b['threads']):24} {b['on_narrower']}"
            )
            _out(con, f"  {'':15} configured by: {'; '.join(b['configured'])}")
            _out(con, f"  {'':15} off: {b['off']}")
        for w in doc["workers"]:
            _out(con)
            print_chain(lambda line: _out(con, line), w)
        if not doc["workers"]:
            _out(con)
            _out(con, f"no worker found on {doc['root']} (give --pid or --cmdline)")

    respond(binders.run(opts), json_out, binders.document, shown)


def register(app: typer.Typer) -> None:
    @app.command("explain", help=describe("explain", HELP, paragraph=False))
    @handle_errors
    def explain_cmd(
        key: Annotated[
            str | None,
            typer.Argument(
                help="An additional-config key (dotted for nested keys), `binding`, `binders` or `versions`.",
                metavar="KEY",
                show_default=False,
            ),
        ] = None,
        search: Annotated[
            str | None,
            typer.Option("--search", metavar="WORD", help="List only keys whose text has WORD."),
        ] = None,
        markdown: Annotated[
            bool,
            typer.Option("--markdown", help="Print the reference page of every key (Markdown)."),
        ] = False,
        rank: Annotated[int, rank_option("explain binding: the rank to follow.", metavar=None)] = 0,
        target: TargetOpt = "auto",
        visible_devices: VisibleDevicesOpt = None,
        soc: SocOpt = None,
        reserve: ReserveOpt = None,
        no_irq_reserve: NoIrqReserveOpt = False,
        spill: SpillOpt = False,
        dp: DpOpt = None,
        tp: TpOpt = None,
        pp: PpOpt = None,
        device_ids: DeviceIdsOpt = None,
        busy: BusyOpt = None,
        cmdline: CmdlineOpt = None,
        pid: Annotated[
            int | None,
            typer.Option(
                "--pid", help="explain binders: the chain of this process.", metavar="PID"
            ),
        ] = None,
        env_pair: Annotated[
            list[str] | None,
            typer.Option(
                "--env",
                help="explain binders --cmdline: KEY=VALUE of its environment (repeatable).",
                metavar="KEY=VALUE",
            ),
        ] = None,
        owner: Annotated[
            str | None,
            typer.Option(
                "--owner",
                help="explain binders: the binder to keep (vllm-ascend, torch_npu, ascendtune, "
                "outer).",
                metavar="OWNER",
            ),
        ] = None,
        json_out: JsonOpt = False,
        sysroot: SysrootOpt = None,
        demo: DemoOpt = None,
    ) -> None:
        from ascendtune.app import explain as app_explain
        from ascendtune.cli.common import host_source, respond

        if key == "binders":
            _binders(pid, cmdline, env_pair, owner, target, sysroot, demo, json_out)
            return
        if markdown:
            print(app_explain.markdown(), end="")
            return
        if key == app_explain.VERSIONS:
            from ascendtune.cli.common import print_json

            doc = app_explain.versions_document()
            if json_out:
                print_json(doc)
            else:
                _render_versions(doc)
            return
        from ascendtune.app.source import HostSource

        binding = key == app_explain.BINDING
        opts = app_explain.ExplainOptions(
            key=key,
            search=search,
            rank=rank,
            source=host_source(sysroot, demo) if binding else HostSource(sysroot, demo),
            plan=plan_options(**locals()),
        )

        def shown(report: ExplainReport) -> None:
            doc = app_explain.document(report)
            if isinstance(report, app_explain.BindingReport):
                _render_binding(doc)
            elif isinstance(report, app_explain.ListingReport):
                _render_listing(doc)
            else:
                _render_key(doc, None if target == "auto" else app_explain.resolve_target(target))

        respond(app_explain.run(opts), json_out, app_explain.document, shown)
