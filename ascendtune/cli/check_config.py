"""`ascendtune check-config`: validate a vLLM-Ascend --additional-config before launch."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

import typer

from ascendtune.cli.commands import describe
from ascendtune.cli.common import JsonOpt, SysrootOpt, handle_errors, pid_option

if TYPE_CHECKING:
    from rich.console import Console

    from ascendtune.app.check_config import CheckConfigReport
    from ascendtune.core.vllm_config.model import Report

HELP = """Give the JSON as CONFIG ('-' reads stdin), --file, --cmdline (a whole `vllm serve ...`
line) or --pid (a running vLLM). Exit 0 when there is no error, 1 with errors (or warnings under
--strict), 2 usage, 3 PID missing or not vLLM, 5 malformed JSON."""


# the parallel sizes and --target as `plan` spells them (-tp/--tensor-parallel-size, --tp, ...)
from ascendtune.cli.planopts import DpOpt, PpOpt, TargetOpt, TpOpt  # noqa: E402


def register(app: typer.Typer) -> None:
    @app.command("check-config", help=describe("check-config", HELP, paragraph=False))
    @handle_errors
    def _cmd(
        config: Annotated[
            str | None,
            typer.Argument(
                help="The additional-config JSON object, or '-' to read stdin.",
                metavar="CONFIG",
                show_default=False,
            ),
        ] = None,
        file: Annotated[
            str | None,
            typer.Option("--file", "-f", help="Read the JSON from FILE.", metavar="FILE"),
        ] = None,
        cmdline: Annotated[
            str | None,
            typer.Option(
                "--cmdline",
                help="A `vllm serve MODEL ... --additional-config '{...}'` "
                "command line; its vLLM flags (-tp, -dp, -pp, --enable-expert-parallel, "
                "--kv-transfer-config, --enforce-eager, ...) become deployment facts.",
                metavar="TEXT",
            ),
        ] = None,
        pid: Annotated[
            int | None,
            pid_option(
                "Check the command line of running vLLM process PID "
                "(proc/PID/cmdline under the root; its environment too)."
            ),
        ] = None,
        target: TargetOpt = "auto",
        json_out: JsonOpt = False,
        show_effective: Annotated[
            bool,
            typer.Option("--show-effective", help="Also print the config as vLLM-Ascend runs it."),
        ] = False,
        strict: Annotated[bool, typer.Option("--strict", help="Exit 1 on warnings too.")] = False,
        with_vllm_omni: Annotated[
            bool | None,
            typer.Option(
                "--with-vllm-omni/--without-vllm-omni",
                help="Whether vLLM-Omni is installed where the server runs (main from PR 15515: "
                "an unknown top-level key then only warns); default: detected from --pid, "
                "else unknown.",
                show_default=False,
            ),
        ] = None,
        tp: TpOpt = None,
        dp: DpOpt = None,
        pp: PpOpt = None,
        expert_parallel: Annotated[
            bool | None,
            typer.Option(
                "--enable-expert-parallel/--no-enable-expert-parallel",
                help="Whether vLLM runs with expert parallel.",
                show_default=False,
            ),
        ] = None,
        kv_role: Annotated[
            str | None,
            typer.Option(
                "--kv-role",
                help="PD role: kv_producer, kv_consumer, kv_both, none.",
                metavar="ROLE",
            ),
        ] = None,
        soc: Annotated[
            str | None,
            typer.Option(
                "--soc",
                help="Ascend SoC: A2, A3, A5, 310P (or a chip name like 910B3).",
                metavar="SOC",
            ),
        ] = None,
        hf_config: Annotated[
            str | None,
            typer.Option(
                "--hf-config", help="The model's Hugging Face config.json.", metavar="FILE"
            ),
        ] = None,
        env_file: Annotated[
            str | None,
            typer.Option(
                "--env-file",
                help="The server's environment (KEY=VALUE lines); "
                "default: the --pid process's environment, else this shell's.",
                metavar="FILE",
            ),
        ] = None,
        arch: Annotated[
            str | None,
            typer.Option(
                "--arch",
                help="CPU architecture of the serving host (default: "
                "meta.json under --sysroot, else this machine's).",
                metavar="ARCH",
            ),
        ] = None,
        env_pair: Annotated[
            list[str] | None,
            typer.Option(
                "--env",
                help="KEY=VALUE of the server's environment (repeatable): what the binders "
                "of --cmdline read (OMP_PROC_BIND, CPU_AFFINITY_CONF, VLLM_CPU_AFFINITY, ...).",
                metavar="KEY=VALUE",
            ),
        ] = None,
        owner: Annotated[
            str | None,
            typer.Option(
                "--owner",
                help="The binder to keep: vllm-ascend, torch_npu, ascendtune or outer; the "
                "switches turn the others off (default: the one that binds last).",
                metavar="OWNER",
            ),
        ] = None,
        sysroot: SysrootOpt = None,
    ) -> None:
        from ascendtune.app import check_config
        from ascendtune.cli.common import respond

        opts = check_config.CheckConfigOptions(
            config=_stdin() if config == "-" else config,
            config_source="stdin" if config == "-" else "the config",
            file=file,
            cmdline=cmdline,
            pid=pid,
            target=target,
            tp=tp,
            dp=dp,
            pp=pp,
            expert_parallel=expert_parallel,
            kv_role=kv_role,
            soc=soc,
            hf_config=hf_config,
            env_file=env_file,
            arch=arch,
            sysroot=sysroot,
            strict=strict,
            env_pairs=tuple(env_pair or ()),
            owner=owner,
            with_vllm_omni=with_vllm_omni,
        )

        def shown(result: CheckConfigReport) -> None:
            from ascendtune.cli.common import stdout_console

            con = stdout_console()
            render(con, result.report, result.rules_source, show_effective, result.target_reason)
            if result.chain is not None:
                from ascendtune.cli.binders import print_chain

                print_chain(
                    lambda line: con.print(line, soft_wrap=True, markup=False, highlight=False),
                    result.chain.to_json(result.owner),
                )

        respond(check_config.run(opts), json_out, check_config.document, shown)


def _stdin() -> str:
    from ascendtune.app.check_config import read_stdin

    return read_stdin("CONFIG -")


_STYLE = {"error": ("✗", "bold red"), "warning": ("!", "yellow"), "info": ("i", "cyan")}
_TITLE = {"error": "errors", "warning": "warnings", "info": "info"}


def render(
    console: Console,
    report: Report,
    source: str,
    show_effective: bool,
    reason: str | None = None,
) -> None:
    """Findings grouped by severity, each with its keys, the rewrite, the message and a hint."""
    import functools
    import json

    from rich.text import Text

    from ascendtune.cli.common import plain
    from ascendtune.core.vllm_config.model import SEVERITIES

    # one finding line per line of output (no wrapping), so the output greps and diffs cleanly
    out = functools.partial(console.print, soft_wrap=True)
    # the header says why this version: given, detected from a PID or a snapshot, or newest
    why = f"{plain(reason)}; " if reason else ""
    out(
        Text.assemble(
            ("target ", "dim"), (report.target, "bold"), (f"  ({why}rules: {source})", "dim")
        )
    )
    for severity in SEVERITIES:
        group = [f for f in report.findings if f.severity == severity]
        if not group:
            continue
        mark, style = _STYLE[severity]
        out(Text(f"{_TITLE[severity]} ({len(group)})", style=style))
        for f in group:
            out(
                Text.assemble(
                    f"  {mark} ", (f.code, style), "  ", (plain(", ".join(f.keys)), "bold")
                )
            )
            # key names and values come from the user's config: one inert line each
            if f.rewrite is not None:
                out(Text("    " + plain(f.rewrite.render()), style="bold"))
            out(Text("    " + plain(f.message)))
            if f.hint:
                out(Text("    → " + plain(f.hint), style="dim"))
    counts = ", ".join(
        f"{report.count(s)} {_TITLE[s] if report.count(s) != 1 else s}" for s in SEVERITIES
    )
    out(Text("no findings" if not report.findings else counts, style="bold"))
    if show_effective:
        out(Text("effective:", style="bold"))
        out(Text(json.dumps(report.effective, indent=2, ensure_ascii=False)))
