"""`ascendtune check-config`: validate a vLLM-Ascend --additional-config before launch."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any

import typer

from ascendtune.cli.common import JsonOpt, SysrootOpt, handle_errors

if TYPE_CHECKING:
    from rich.console import Console

    from ascendtune.core.vllm_config.inputs import Cmdline
    from ascendtune.core.vllm_config.model import Facts, Report
    from ascendtune.host.sysroot import Root

HELP = """Validate a vLLM-Ascend --additional-config JSON against the rules of one vLLM-Ascend
version: what makes it refuse to start (error), what it silently changes or ignores (warning), what
depends on the host or deployment (info). Give the JSON as CONFIG ('-' reads stdin), --file,
--cmdline (a whole `vllm serve ...` line) or --pid (a running vLLM). Exit 0 when there is no error,
1 with errors (or warnings under --strict), 2 usage, 3 PID missing or not vLLM, 5 malformed JSON."""


def register(app: typer.Typer) -> None:
    @app.command("check-config", help=HELP)
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
            typer.Option(
                "--pid",
                help="Check the command line of running vLLM process PID "
                "(proc/PID/cmdline under the root; its environment too).",
                metavar="PID",
            ),
        ] = None,
        target: Annotated[
            str | None,
            typer.Option(
                "--target",
                help="vLLM-Ascend version whose rules apply: v0.23.0, "
                "main-2026-08, main-2026-09 (default: the newest).",
                metavar="VERSION",
            ),
        ] = None,
        json_out: JsonOpt = False,
        show_effective: Annotated[
            bool,
            typer.Option("--show-effective", help="Also print the config as vLLM-Ascend runs it."),
        ] = False,
        strict: Annotated[bool, typer.Option("--strict", help="Exit 1 on warnings too.")] = False,
        tp: Annotated[int | None, typer.Option("--tp", help="Tensor parallel size.")] = None,
        dp: Annotated[int | None, typer.Option("--dp", help="Data parallel size.")] = None,
        pp: Annotated[int | None, typer.Option("--pp", help="Pipeline parallel size.")] = None,
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
        sysroot: SysrootOpt = None,
    ) -> None:
        from ascendtune.core.errors import UsageError
        from ascendtune.core.vllm_config import checker, inputs
        from ascendtune.core.vllm_config.model import KV_ROLES

        ver = checker.version(target)  # an unknown --target fails before anything is read
        given = [
            n
            for n, v in (
                ("CONFIG", config),
                ("--file", file),
                ("--cmdline", cmdline),
                ("--pid", pid),
            )
            if v is not None
        ]
        if len(given) != 1:
            raise UsageError(
                "give the config once: " + (" or ".join(given) if given else "none given"),
                "use one of CONFIG ('-' for stdin), --file, --cmdline or --pid",
            )
        if kv_role is not None and kv_role not in KV_ROLES:
            raise UsageError(f"unknown --kv-role {kv_role!r}", "use " + ", ".join(KV_ROLES))
        soc_name = inputs.parse_soc(soc) if soc is not None else None

        root = _root(sysroot) if (sysroot is not None or pid is not None) else None
        env, env_source = None, "environment"
        parsed: Cmdline | None = None
        if config is not None:
            text, source = (_stdin(), "stdin") if config == "-" else (config, "the config")
        elif file is not None:
            text, source = _read(file, "--file"), file
        else:
            if cmdline is not None:
                argv, source = inputs.split_cmdline(cmdline), "--cmdline"
            else:
                assert pid is not None and root is not None
                argv, source = _pid_argv(root, pid), f"PID {pid}"
                environ = root.read_text(f"proc/{pid}/environ")
                if environ is not None and env_file is None:
                    env, env_source = inputs.parse_environ(environ), "pid"
            parsed = inputs.parse_cmdline(argv, source)
            if parsed.config_text is None:
                from ascendtune.core.errors import InvalidInput

                raise InvalidInput(
                    f"{source} has no --additional-config",
                    "vLLM-Ascend then runs with its defaults; check '{}' to see them",
                )
            text, source = parsed.config_text, f"--additional-config of {source}"
        cfg = inputs.parse_config(text, source)

        if env_file is not None:
            env, env_source = inputs.parse_env_file(_read(env_file, "--env-file")), "file"
        if env is None and root is not None and not root.live:
            # a captured host: this machine's environment says nothing about that server's
            env, env_source = {}, "unknown"
        if env is None:
            import os

            env = dict(os.environ)
        facts = _facts(
            parsed,
            tp=tp,
            dp=dp,
            pp=pp,
            ep=expert_parallel,
            kv_role=kv_role,
            soc=soc_name,
            arch=arch or _arch(root),
            model=(
                inputs.parse_hf_config(_read(hf_config, "--hf-config"), hf_config)
                if hf_config is not None
                else None
            ),
            env=env,
            env_source=env_source,
        )
        report = checker.check(cfg, ver.name, facts)

        if json_out:
            from ascendtune.cli.common import print_json

            print_json(report.to_json())
        else:
            from ascendtune.cli.common import stdout_console

            render(stdout_console(), report, ver.source, show_effective)
        if report.has_errors or (strict and report.has_warnings):
            raise typer.Exit(1)


def _root(sysroot: str | None) -> Root:
    from ascendtune.cli.common import open_root

    return open_root(sysroot, None)


def _stdin() -> str:
    import sys

    return sys.stdin.read()


def _read(path: str, option: str) -> str:
    from pathlib import Path

    from ascendtune.core.errors import InvalidInput, MissingError

    p = Path(path)
    try:
        return p.read_text()
    except FileNotFoundError:
        raise MissingError(f"{option} {path} does not exist", "check the path") from None
    except (OSError, UnicodeDecodeError) as e:
        raise InvalidInput(f"{option} {path} cannot be read: {e}") from None


def _pid_argv(root: Root, pid: int) -> list[str]:
    from ascendtune.core.errors import MissingError
    from ascendtune.core.vllm_config import inputs

    text = root.read_text(f"proc/{pid}/cmdline")
    if text is None:
        raise MissingError(
            f"no process with PID {pid} (on {root.describe()})",
            "check the PID with `ps`, or give --cmdline",
        )
    argv = [a for a in text.split("\0") if a]
    if not inputs.is_vllm(argv):
        shown = " ".join(argv)[:80] or "(empty command line)"
        raise MissingError(
            f"PID {pid} is not vLLM: {shown}",
            "give the PID of a `vllm serve` process (the API server)",
        )
    return argv


def _arch(root: Root | None) -> str:
    """meta.json's arch on a captured host, else this machine's."""
    if root is not None and not root.live:
        import json

        text = root.read_text("meta.json")
        if text:
            try:
                meta = json.loads(text)
            except ValueError:
                meta = None
            if isinstance(meta, dict) and isinstance(meta.get("arch"), str):
                return str(meta["arch"])
    import platform

    return platform.machine()


def _facts(
    parsed: Cmdline | None,
    *,
    tp: int | None,
    dp: int | None,
    pp: int | None,
    ep: bool | None,
    kv_role: str | None,
    soc: str | None,
    arch: str,
    model: Any,
    env: dict[str, str],
    env_source: str,
) -> Facts:
    """Explicit options win over what the command line says; absent both, a fact is unknown."""
    from ascendtune.core.vllm_config.model import Facts

    c = parsed
    return Facts(
        tp=tp if tp is not None else c.tp if c else None,
        dp=dp if dp is not None else c.dp if c else None,
        pp=pp if pp is not None else c.pp if c else None,
        enable_expert_parallel=ep if ep is not None else c.enable_expert_parallel if c else None,
        kv_role=kv_role if kv_role is not None else c.kv_role if c else None,
        enforce_eager=c.enforce_eager if c else None,
        num_speculative_tokens=c.num_speculative_tokens if c else None,
        max_num_batched_tokens=c.max_num_batched_tokens if c else None,
        block_size=c.block_size if c else None,
        scheduling_policy=c.scheduling_policy if c else None,
        enable_eplb=c.enable_eplb if c else None,
        numa_bind=c.numa_bind if c else None,
        soc=soc,
        arch=arch,
        model=model,
        env=env,
        env_source=env_source,
    )


_STYLE = {"error": ("✗", "bold red"), "warning": ("!", "yellow"), "info": ("i", "cyan")}
_TITLE = {"error": "errors", "warning": "warnings", "info": "info"}


def render(console: Console, report: Report, source: str, show_effective: bool) -> None:
    """Findings grouped by severity, each with its keys, the rewrite, the message and a hint."""
    import functools
    import json

    from rich.text import Text

    from ascendtune.core.vllm_config.model import SEVERITIES

    # one finding line per line of output (no wrapping), so the output greps and diffs cleanly
    out = functools.partial(console.print, soft_wrap=True)
    out(Text.assemble(("target ", "dim"), (report.target, "bold"), (f"  ({source})", "dim")))
    for severity in SEVERITIES:
        group = [f for f in report.findings if f.severity == severity]
        if not group:
            continue
        mark, style = _STYLE[severity]
        out(Text(f"{_TITLE[severity]} ({len(group)})", style=style))
        for f in group:
            out(Text.assemble(f"  {mark} ", (f.code, style), "  ", (", ".join(f.keys), "bold")))
            if f.rewrite is not None:
                out(Text("    " + f.rewrite.render(), style="bold"))
            out(Text("    " + f.message))
            if f.hint:
                out(Text("    → " + f.hint, style="dim"))
    counts = ", ".join(
        f"{report.count(s)} {_TITLE[s] if report.count(s) != 1 else s}" for s in SEVERITIES
    )
    out(Text("no findings" if not report.findings else counts, style="bold"))
    if show_effective:
        out(Text("effective:", style="bold"))
        out(Text(json.dumps(report.effective, indent=2, ensure_ascii=False)))
