"""`check-config`: where the config comes from (text, file, command line, PID), the deployment
facts around it, and the checker's report."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, NamedTuple

from ascendtune.core.errors import MissingError, UsageError

if TYPE_CHECKING:
    from ascendtune.core.binders import Chain
    from ascendtune.core.errors import AscendtuneError
    from ascendtune.core.vllm_config.inputs import Cmdline
    from ascendtune.core.vllm_config.model import Facts, Report
    from ascendtune.host.roots import Root


class CheckConfigOptions(NamedTuple):
    """`check-config`: exactly one of config (the JSON text), file, cmdline or pid; the
    deployment facts around it; `strict` makes warnings problems (exit 1) too."""

    config: str | None = None
    config_source: str = "the config"  # "stdin" when the front end read it from there
    file: str | None = None
    cmdline: str | None = None
    pid: int | None = None
    target: str | None = None
    tp: int | None = None
    dp: int | None = None
    pp: int | None = None
    expert_parallel: bool | None = None
    kv_role: str | None = None
    soc: str | None = None
    hf_config: str | None = None
    env_file: str | None = None
    arch: str | None = None
    with_vllm_omni: bool | None = None  # None: as detected (else unknown)
    compilation_config: str | None = None  # vLLM's --compilation-config JSON
    sysroot: str | None = None
    env: Mapping[str, str] | None = None  # this process's environment when None
    strict: bool = False
    env_pairs: tuple[str, ...] = ()  # --env KEY=VALUE: the server's environment, for the binders
    owner: str | None = None  # --owner: the binder the switches leave in charge


@dataclass(frozen=True)
class CheckConfigReport:
    """The checker's report of one config, and the version whose rules it used."""

    report: Report
    rules_source: str  # where the version's rules come from, for the header
    target_reason: str = ""
    strict: bool = False  # warnings are problems too
    chain: Chain | None = None  # the binders a command line or PID starts with
    owner: str | None = None

    @property
    def has_errors(self) -> bool:
        return self.report.has_errors

    @property
    def has_warnings(self) -> bool:
        return self.report.has_warnings

    @property
    def exit_code(self) -> int:
        return 1 if self.has_errors or (self.strict and self.has_warnings) else 0

    @property
    def error(self) -> AscendtuneError | None:
        return None  # the findings are the report


def run(opts: CheckConfigOptions) -> CheckConfigReport:
    """`check-config`: the config opts names, checked against its version's rules."""
    from ascendtune.core import vllm_ascend
    from ascendtune.core.vllm_config import checker, inputs
    from ascendtune.core.vllm_config.model import KV_ROLES

    if opts.target not in (None, "auto"):
        vllm_ascend.get(opts.target)  # an unknown --target fails before anything is read
    given = [
        n
        for n, v in (
            ("CONFIG", opts.config),
            ("--file", opts.file),
            ("--cmdline", opts.cmdline),
            ("--pid", opts.pid),
        )
        if v is not None
    ]
    if len(given) != 1:
        raise UsageError(
            "give the config once: " + (" or ".join(given) if given else "none given"),
            "use one of CONFIG ('-' for stdin), --file, --cmdline or --pid",
        )
    if opts.kv_role is not None and opts.kv_role not in KV_ROLES:
        raise UsageError(f"unknown --kv-role {opts.kv_role!r}", "use " + ", ".join(KV_ROLES))
    soc_name = inputs.parse_soc(opts.soc) if opts.soc is not None else None

    root = _root(opts.sysroot) if (opts.sysroot is not None or opts.pid is not None) else None
    entry, reason, detected = _resolve(opts, root)
    ver = entry.config
    env: dict[str, str] | None = None
    env_source = "environment"
    parsed: Cmdline | None = None
    if opts.config is not None:
        text, source = opts.config, opts.config_source
    elif opts.file is not None:
        text, source = read_text_file(opts.file, "--file"), opts.file
    else:
        if opts.cmdline is not None:
            argv, source = inputs.split_cmdline(opts.cmdline), "--cmdline"
        else:
            assert opts.pid is not None and root is not None
            argv, source = _pid_argv(root, opts.pid), f"PID {opts.pid}"
            environ = root.read_text(f"proc/{opts.pid}/environ")
            if environ is not None and opts.env_file is None:
                env, env_source = inputs.parse_environ(environ), "pid"
        parsed = inputs.parse_cmdline(argv, source)
        if parsed.config_text is None:
            # no --additional-config: vLLM-Ascend runs with its defaults, which are checked
            text, source = "{}", f"{source} (no --additional-config: the defaults)"
        else:
            text, source = parsed.config_text, f"--additional-config of {source}"
    cfg = inputs.parse_config(text, source)
    from ascendtune.app.binders import check_owner, parse_env_pairs

    owner = check_owner(opts.owner)
    pairs = parse_env_pairs(opts.env_pairs)
    if opts.env_file is not None:
        env = inputs.parse_env_file(read_text_file(opts.env_file, "--env-file"))
        env_source = "file"
    if env is None and root is not None and not root.live:
        # a captured host: this machine's environment says nothing about that server's
        env, env_source = {}, "unknown"
    if env is None:
        env = dict(os.environ if opts.env is None else opts.env)
    if pairs:
        env, env_source = {**(env if env_source in ("file", "pid") else {}), **pairs}, "file"
    omni = opts.with_vllm_omni
    if omni is None and detected is not None:
        omni = detected.with_vllm_omni
    cc_text = opts.compilation_config or (parsed.compilation_config_text if parsed else None)
    facts = _facts(
        parsed,
        opts,
        with_vllm_omni=omni,
        compilation_config=(
            inputs.parse_config(cc_text, "--compilation-config") if cc_text is not None else None
        ),
        soc=soc_name,
        arch=opts.arch or _arch(root),
        model=(
            inputs.parse_hf_config(read_text_file(opts.hf_config, "--hf-config"), opts.hf_config)
            if opts.hf_config is not None
            else None
        ),
        env=env,
        env_source=env_source,
    )
    if opts.pid is not None and root is not None:
        facts = _process_binding(facts, root, opts.pid)
    elif opts.cmdline is not None:
        from dataclasses import replace

        from ascendtune.core.vllm_config.rules import outer_binder

        facts = replace(facts, outer_binder=outer_binder(inputs.split_cmdline(opts.cmdline)))
    report = checker.check(cfg, ver, facts)
    chain = None
    if parsed is not None:
        from ascendtune.app.binders import binders_of_check

        chain = binders_of_check(opts, root, argv, facts, entry, cfg, owner)
        report = _with_chain(report, chain)
    return CheckConfigReport(report, ver.source, reason, opts.strict, chain, owner)


def _with_chain(report: Report, chain: Chain) -> Report:
    """The chain's findings among the checker's (they name enable_cpu_binding when vLLM-Ascend
    is one of the binders)."""
    from dataclasses import replace

    from ascendtune.core.findings import Finding

    extra = tuple(
        Finding(
            f.code,
            f.severity,
            f.message,
            f.hint,
            keys=("enable_cpu_binding",) if "vllm-ascend" in f.binders else (),
        )
        for f in chain.findings
    )
    return replace(report, findings=report.findings + extra)


def _process_binding(facts: Facts, root: Root, pid: int) -> Facts:
    """The running server's mask, its cpuset and a taskset/numactl/ascendtune parent: what the
    outer-binder-narrowed rule compares (vLLM-Ascend plans inside the mask it inherits)."""
    from dataclasses import replace

    from ascendtune.core.cpulist import parse_cpulist
    from ascendtune.core.errors import ParseError
    from ascendtune.core.vllm_config.rules import outer_binder
    from ascendtune.host.cgroup import resolve_cpuset
    from ascendtune.host.reader import read_status_list

    mask = None
    raw = read_status_list(root.read_text(f"proc/{pid}/status") or "", "Cpus_allowed_list")
    if raw is not None:
        try:
            mask = parse_cpulist(raw, source=f"proc/{pid}/status")
        except ParseError:
            mask = None
    found = resolve_cpuset(root, pid)
    binder = None
    cur = pid
    for _ in range(3):  # the process itself, its parent and grandparent
        argv = [a for a in (root.read_text(f"proc/{cur}/cmdline") or "").split("\0") if a]
        binder = outer_binder(argv) if argv else None
        if binder is not None:
            break
        stat = root.read_text(f"proc/{cur}/stat") or ""
        try:
            cur = int(stat.rpartition(")")[2].split()[1])
        except (IndexError, ValueError):
            break
        if cur <= 1:
            break
    return replace(
        facts,
        process_cpus=mask,
        process_cpuset=found.cpus if found is not None else None,
        outer_binder=binder,
    )


def _resolve(opts: CheckConfigOptions, root: Root | None) -> tuple[Any, str, Any]:
    """The version whose rules apply: given, else the one the PID (or the captured host) runs,
    else the newest known."""
    from ascendtune.core import vllm_ascend

    if opts.target not in (None, "auto"):
        return vllm_ascend.get(opts.target), "given with --target", None
    if root is None:
        why = "newest known (give --target, --pid or --sysroot to detect)"
        return vllm_ascend.NEWEST, why, None
    from ascendtune.host.vllm_detect import resolve_target

    got = resolve_target(root, "auto", [opts.pid] if opts.pid is not None else [])
    return got.entry, got.reason, got.detected


def document(result: CheckConfigReport) -> dict[str, Any]:
    """`check-config --json` without schema_version (the printer adds it); described by
    documents.CheckConfigDocument (the report's to_json is typed loosely)."""
    doc = result.report.to_json()
    doc["target_reason"] = result.target_reason
    if result.chain is not None:
        doc["binders"] = result.chain.to_json(result.owner)
    _say_non_finite(doc)
    return doc


def _say_non_finite(doc: dict[str, Any]) -> None:
    """A value JSON cannot carry (NaN, Infinity, or 1e400, which reads as Infinity): the
    document writes it as a string (core/jsondoc.finite), and a finding says so."""
    from ascendtune.core.findings import CONFIG_SHAPE, Finding
    from ascendtune.core.jsondoc import non_finite_paths

    keys = sorted({p.split("[", 1)[0] for p in non_finite_paths(doc.get("effective", {}))})
    if not keys:
        return
    finding = Finding(
        code="non-finite-number",
        severity="info",
        keys=tuple(keys),
        message=f"{', '.join(keys)}: NaN or Infinity (or a number too large for a double, "
        'such as 1e400) is not JSON: this document writes it as the string "NaN", '
        '"Infinity" or "-Infinity"',
        hint="write a finite number",
    )
    doc.setdefault("findings", []).append(finding.to_json(CONFIG_SHAPE))
    counts = doc.get("counts")
    if isinstance(counts, dict):
        counts["info"] = counts.get("info", 0) + 1


def _root(sysroot: str | None) -> Root:
    from ascendtune.app.hosts import open_root
    from ascendtune.app.source import HostSource

    return open_root(HostSource(sysroot=sysroot))


def read_text_file(path: str, option: str) -> str:
    """A file the user named (--file, --env-file, --hf-config), as text: a regular file,
    bounded (SPEC exit codes: 3 absent, 4 unreadable, 5 not text)."""
    from ascendtune.host.files import read_user_file

    return read_user_file(path, what=option)


def read_stdin(what: str) -> str:
    """The config from standard input, bounded."""
    from ascendtune.host.files import read_stdin_text

    return read_stdin_text(what)


def _pid_argv(root: Root, pid: int) -> list[str]:
    from ascendtune.core.vllm_config import inputs

    text = root.read_text(f"proc/{pid}/cmdline")
    if text is None:
        raise MissingError(
            f"no process with PID {pid} (on {root.describe()})",
            "check the PID with `ps`, or give --cmdline",
        )
    argv = [a for a in text.split("\0") if a]
    if not inputs.is_vllm(argv):
        from ascendtune.core.redact import redact_args
        from ascendtune.core.text import cap_line

        # masked before it is cut: a secret cut in half is no longer recognisable
        shown = cap_line(" ".join(redact_args(argv)), 80) or "(empty command line)"
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
            except (ValueError, RecursionError):
                meta = None
            if isinstance(meta, dict) and isinstance(meta.get("arch"), str):
                return str(meta["arch"])
    from ascendtune.host.system import machine_arch

    return machine_arch()


def _facts(
    parsed: Cmdline | None,
    opts: CheckConfigOptions,
    *,
    soc: str | None,
    arch: str,
    model: Any,
    env: dict[str, str],
    env_source: str,
    with_vllm_omni: bool | None = None,
    compilation_config: Any = None,
) -> Facts:
    """Explicit options win over what the command line says; absent both, a fact is unknown."""
    from ascendtune.core.vllm_config.model import Facts

    c = parsed
    ep = opts.expert_parallel
    return Facts(
        tp=opts.tp if opts.tp is not None else c.tp if c else None,
        dp=opts.dp if opts.dp is not None else c.dp if c else None,
        pp=opts.pp if opts.pp is not None else c.pp if c else None,
        enable_expert_parallel=ep if ep is not None else c.enable_expert_parallel if c else None,
        kv_role=opts.kv_role if opts.kv_role is not None else c.kv_role if c else None,
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
        with_vllm_omni=with_vllm_omni,
        compilation_config=compilation_config if isinstance(compilation_config, dict) else None,
        gdn_prefill_backend=c.gdn_prefill_backend if c else None,
        kda_prefill_backend=c.kda_prefill_backend if c else None,
    )
