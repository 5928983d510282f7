"""Cross-key rules of vLLM-Ascend's additional-config, one small function each, registered here.

Each rule reads the effective config (defaults filled, earlier rewrites applied) and the facts,
and reports through the Context: an error where vLLM-Ascend refuses to start, a rewrite where it
silently changes a value, `needs` where the outcome depends on facts nobody gave. Which rules apply
to which version, and in what order, is listed in each version's table (ascendtune.core.vllm_ascend.tables).
Sources: vllm_ascend/ascend_config.py (AscendConfig) and vllm_ascend/platform.py
(NPUPlatform.check_and_update_config), v0.23.0 and main; the docstring names the place.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ascendtune.core.cpulist import format_cpulist
from ascendtune.core.vllm_config.model import (
    RUNNER_ENV,
    Facts,
    Finding,
    ModelFacts,
    Rewrite,
    Severity,
    show,
)
from ascendtune.core.vllm_config.schema import Version, get_path, set_path

ARM_ARCHES = ("aarch64", "arm64")
# options whose facts a `vllm serve` command line also carries
DEPLOYMENT_OPTIONS = ("--tp", "--dp", "--pp", "--enable-expert-parallel", "--kv-role")
X86_ARCHES = ("x86_64", "amd64", "i386", "i686")


def is_arm(arch: str) -> bool:
    """vllm_ascend/cpu_binding.py is_arm_cpu(): an unknown architecture counts as not ARM."""
    a = arch.lower()
    return a not in X86_ARCHES and (a in ARM_ARCHES or a.startswith("arm"))


@dataclass
class Context:
    """What a rule sees, and how it reports."""

    version: Version
    facts: Facts
    user: dict[str, Any]  # the config as given (after legacy keys were moved)
    eff: dict[str, Any]  # the effective config, rewritten in place
    findings: list[Finding] = field(default_factory=list)
    undecided: set[str] = field(default_factory=set)  # keys whose effective value needs facts
    code: str = ""  # the rule running now

    # reading
    def get(self, path: str) -> Any:
        return get_path(self.eff, path)

    def on(self, path: str) -> bool:
        """Truthiness, the way vLLM-Ascend tests these switches (`if cfg.x:`)."""
        return bool(self.get(path))

    def num(self, path: str) -> int | float | None:
        v = self.get(path)
        return v if isinstance(v, (int, float)) else None

    def given(self, path: str) -> bool:
        """Whether the user wrote this key (not a default)."""
        node: Any = self.user
        for p in path.split("."):
            if not isinstance(node, dict) or p not in node:
                return False
            node = node[p]
        return True

    def sched(self, name: str) -> str:
        return self.version.scheduler + name

    @property
    def role(self) -> str | None:
        return self.facts.kv_role

    @property
    def model(self) -> ModelFacts | None:
        return self.facts.model

    # reporting
    def report(
        self, severity: Severity, keys: tuple[str, ...], message: str, hint: str = ""
    ) -> None:
        self.findings.append(Finding(self.code, severity, message, hint, keys=keys))

    def error(self, keys: tuple[str, ...], message: str, hint: str = "") -> None:
        self.report("error", keys, message, hint)

    def info(self, keys: tuple[str, ...], message: str, hint: str = "") -> None:
        self.report("info", keys, message, hint)

    def needs(self, keys: tuple[str, ...], what: str, needs: tuple[str, ...]) -> None:
        """The rule cannot decide: say what it checks and which facts would settle it."""
        given = " and ".join(needs)
        flags = any(n in DEPLOYMENT_OPTIONS for n in needs)
        self.findings.append(
            Finding(
                self.code,
                "info",
                f"{what}; not checked without {given}",
                f"give {given}"
                + (" (or --cmdline / --pid, which carry vLLM's flags)" if flags else "")
                + " to check it",
                keys=keys,
                needs=needs,
            )
        )

    def rewrite(
        self,
        path: str,
        value: Any,
        because: str,
        message: str,
        hint: str = "",
        keys: tuple[str, ...] = (),
        severity: Severity | None = None,
    ) -> None:
        """vLLM-Ascend replaces the value: apply it to `effective` and report it.

        By default a warning when the user wrote the key, info when only a default changes.
        """
        before = self.get(path)
        set_path(self.eff, path, value)
        if severity is None:
            severity = "warning" if self.given(path) else "info"
        self.findings.append(
            Finding(
                self.code,
                severity,
                message,
                hint,
                keys=keys or (path,),
                rewrite=Rewrite(path, before, value, because),
            )
        )


RuleFn = Callable[[Context], None]


@dataclass(frozen=True)
class Rule:
    code: str
    fn: RuleFn
    doc: str


RULES: dict[str, Rule] = {}


def rule(code: str) -> Callable[[RuleFn], RuleFn]:
    def register(fn: RuleFn) -> RuleFn:
        if code in RULES:
            raise ValueError(f"rule {code} registered twice")
        RULES[code] = Rule(code, fn, (fn.__doc__ or "").strip())
        return fn

    return register


def run(ctx: Context) -> None:
    for code in ctx.version.rules:
        ctx.code = code
        RULES[code].fn(ctx)


# --- xlite graph (XliteGraphConfig, v0.23.0 and main) ------------------------------------------

XLITE = "xlite_graph_config.enabled"


@rule("xlite-speculative")
def _xlite_speculative(ctx: Context) -> None:
    """XliteGraphConfig: RuntimeError when speculative decoding uses num_speculative_tokens != 1."""
    if not ctx.on(XLITE):
        return
    n = ctx.facts.num_speculative_tokens
    if n is None:
        ctx.needs(
            (XLITE,),
            "xlite graph mode allows only num_speculative_tokens = 1",
            ("--cmdline (its --speculative-config)",),
        )
    elif n not in (0, 1):
        ctx.error(
            (XLITE,),
            f"xlite graph mode refuses speculative decoding with "
            f"num_speculative_tokens = {n} (only 1 is supported)",
            "set num_speculative_tokens to 1 in --speculative-config, or disable xlite",
        )


@rule("xlite-pipeline-parallel")
def _xlite_pp(ctx: Context) -> None:
    """XliteGraphConfig: RuntimeError with pipeline parallelism (PP > 1)."""
    if not ctx.on(XLITE):
        return
    pp = ctx.facts.pp
    if pp is None:
        ctx.needs((XLITE,), "xlite graph mode refuses pipeline parallelism", ("--pp",))
    elif pp > 1:
        ctx.error(
            (XLITE,),
            f"xlite graph mode refuses pipeline parallelism (PP = {pp})",
            "use --pipeline-parallel-size 1, or disable xlite_graph_config.enabled",
        )


@rule("xlite-block-size")
def _xlite_block_size(ctx: Context) -> None:
    """XliteGraphConfig: only a log warning when the KV block size is not 128."""
    bs = ctx.facts.block_size
    if ctx.on(XLITE) and bs is not None and bs != 128:
        ctx.info(
            (XLITE,),
            f"xlite graph mode runs best with --block-size 128 (got {bs})",
            "vLLM-Ascend only logs this; use --block-size 128",
        )


# --- ascend_compilation_config (AscendCompilationConfig; platform._setup_compile_backend) -------

NPUGRAPH = "ascend_compilation_config.enable_npugraph_ex"
STATIC_KERNEL = "ascend_compilation_config.enable_static_kernel"


@rule("compilation-310p")
def _compilation_310p(ctx: Context) -> None:
    """AscendCompilationConfig: on 310P, npugraph_ex and static kernel are switched off (warning)."""
    soc = ctx.facts.soc
    keys = [k for k in (NPUGRAPH, STATIC_KERNEL) if ctx.on(k)]
    if not keys:
        return
    if soc is None:
        if any(ctx.given(k) for k in keys):
            ctx.needs(tuple(keys), "on Ascend 310P vLLM-Ascend switches these off", ("--soc",))
        return
    if soc == "310P":
        for k in keys:
            ctx.rewrite(
                k,
                False,
                "the SoC is 310P",
                f"{k} is not supported on Ascend 310P; vLLM-Ascend turns it off",
            )


@rule("static-kernel-needs-npugraph-ex")
def _static_kernel(ctx: Context) -> None:
    """AscendCompilationConfig: assert enable_static_kernel implies enable_npugraph_ex."""
    if ctx.on(STATIC_KERNEL) and not ctx.on(NPUGRAPH):
        ctx.error(
            (STATIC_KERNEL, NPUGRAPH),
            "enable_static_kernel requires enable_npugraph_ex; vLLM-Ascend refuses to start",
            "set ascend_compilation_config.enable_npugraph_ex to true, or drop static kernel",
        )


XLITE_FULL = "xlite_graph_config.full_mode"


@dataclass(frozen=True)
class Eager:
    """Whether the model runs eagerly (cudagraph mode NONE), and why; `on` None = unknown."""

    on: bool | None
    why: str  # what makes it eager (when on), or what would (when unknown)
    needs: tuple[str, ...] = ()
    by_xlite: bool = False  # set by platform after AscendConfig was built (workers see it)


def eager(ctx: Context) -> Eager:
    """--enforce-eager, or what platform._update_compilation_modes derives: xlite enabled with
    full_mode and no speculative decoding sets model_config.enforce_eager and cudagraph NONE."""
    forced = ctx.facts.enforce_eager
    if forced:
        return Eager(True, "--enforce-eager is set")
    if ctx.facts.cudagraph_mode == "NONE":
        return Eager(True, "--compilation-config sets cudagraph_mode NONE")
    xlite_full = ctx.on(XLITE) and ctx.on(XLITE_FULL)
    spec = ctx.facts.num_speculative_tokens
    if xlite_full and spec == 0:
        return Eager(
            True,
            "xlite_graph_config.full_mode without speculative decoding makes vLLM-Ascend set "
            "enforce_eager (ACL graph off)",
            by_xlite=True,
        )
    if forced is None or (xlite_full and spec is None):
        what = ["--enforce-eager"]
        if xlite_full and spec is None:
            what.append("--speculative-config")
        why = "--enforce-eager" + (
            " (or xlite full_mode without speculative decoding)" if xlite_full else ""
        )
        return Eager(None, why, (f"--cmdline (its {', '.join(what)})",))
    return Eager(False, "")


@rule("compilation-eager")
def _compilation_eager(ctx: Context) -> None:
    """platform._setup_compile_backend: with cudagraph mode NONE (--enforce-eager, or xlite
    full_mode without speculative decoding) both are forced off."""
    keys = [k for k in ctx.version.piecewise_off if ctx.on(k)]
    if not keys:
        return
    e = eager(ctx)
    if e.on is None:
        if any(ctx.given(k) for k in keys):
            ctx.needs(tuple(keys), f"with {e.why} vLLM-Ascend switches these off", e.needs)
        return
    if e.on:
        for k in keys:
            ctx.rewrite(
                k,
                False,
                e.why,
                f"{k} needs graph capture; in eager mode (cudagraph NONE) vLLM-Ascend turns it off",
                "turn xlite full_mode off (or use speculative decoding) to keep ACL graph"
                if e.by_xlite
                else "drop --enforce-eager to use graph mode",
            )


# vLLM's CUDAGraphMode values whose requires_piecewise_compilation() is true
PIECEWISE_MODES = ("PIECEWISE", "FULL_AND_PIECEWISE")


@rule("compilation-piecewise")
def _compilation_piecewise(ctx: Context) -> None:
    """platform.py, piecewise graph modes: vLLM-Ascend writes enable_npugraph_ex and
    enable_static_kernel back to false in additional_config, silently (v0.24.0rc1: only its own
    enable_npugraph_ex). Decided from --compilation-config's cudagraph_mode only: vLLM's default
    mode depends on the model and the compilation level, which ascendtune does not model."""
    keys = [k for k in ctx.version.piecewise_off if ctx.on(k)]
    mode = ctx.facts.cudagraph_mode
    if not keys or mode is None or mode not in PIECEWISE_MODES:
        return
    for k in keys:
        ctx.rewrite(
            k,
            False,
            f"--compilation-config cudagraph_mode {mode}",
            f"{k} is switched off in piecewise graph mode ({mode}): vLLM-Ascend writes false "
            "back without a log line",
            'use "cudagraph_mode": "FULL_DECODE_ONLY" or "FULL" to keep it',
        )


# --- finegrained_tp_config (FinegrainedTPConfig; AscendConfig.__init__) -------------------------

FTP = "finegrained_tp_config."
FTP_SIZES = ("oproj", "lmhead", "embedding", "mlp", "olora")


def _ftp(ctx: Context, which: str) -> int | float:
    v = ctx.num(f"{FTP}{which}_tensor_parallel_size")
    return v if v is not None else 0


@rule("finegrained-oproj-tp")
def _ftp_oproj_tp(ctx: Context) -> None:
    """FinegrainedTPConfig: oproj_tensor_parallel_size > 0 requires tensor_parallel_size == 1."""
    key = FTP + "oproj_tensor_parallel_size"
    if _ftp(ctx, "oproj") <= 0:
        return
    tp = ctx.facts.tp
    if tp is None:
        ctx.needs((key,), "oproj tensor parallel requires TP = 1", ("--tp",))
    elif tp > 1:
        ctx.error(
            (key,),
            f"oproj_tensor_parallel_size requires TP = 1, got TP = {tp}",
            "use --tensor-parallel-size 1 with oproj TP (it splits the DP group instead)",
        )


@rule("finegrained-graph-mode")
def _ftp_graph(ctx: Context) -> None:
    """FinegrainedTPConfig: oproj / olora TP only in graph mode (not with --enforce-eager, nor
    with xlite full_mode without speculation, which the workers' AscendConfig sees as eager)."""
    keys = tuple(FTP + f"{w}_tensor_parallel_size" for w in ("oproj", "olora") if _ftp(ctx, w) > 0)
    if not keys:
        return
    e = eager(ctx)
    if e.on is None:
        ctx.needs(keys, f"oproj/olora tensor parallel refuses {e.why}", e.needs)
    elif e.on and e.by_xlite:
        ctx.error(
            (*keys, XLITE_FULL),
            f"oproj/olora tensor parallel is only supported in graph mode: {e.why} after "
            "AscendConfig was built, and the workers, which rebuild AscendConfig from that "
            "config, fail its graph-mode assertion",
            "turn xlite_graph_config.full_mode off, or use speculative decoding",
        )
    elif e.on:
        ctx.error(
            keys,
            "oproj/olora tensor parallel is only supported in graph mode, and "
            "--enforce-eager is set",
            "drop --enforce-eager",
        )


@rule("finegrained-decode-only")
def _ftp_decode(ctx: Context) -> None:
    """FinegrainedTPConfig: oproj / olora TP only on a PD-disaggregated decode node (kv_consumer)."""
    keys = tuple(FTP + f"{w}_tensor_parallel_size" for w in ("oproj", "olora") if _ftp(ctx, w) > 0)
    if not keys:
        return
    if ctx.role is None:
        ctx.needs(
            keys,
            "oproj/olora tensor parallel runs only on decode nodes (kv_consumer)",
            ("--kv-role",),
        )
    elif ctx.role != "kv_consumer":
        ctx.error(
            keys,
            f"oproj/olora tensor parallel runs only on PD-disaggregated decode nodes "
            f"(kv_role kv_consumer), this node is {ctx.role}",
            "use it only in the decode instance's config",
        )


@rule("finegrained-moe-only")
def _ftp_moe(ctx: Context) -> None:
    """FinegrainedTPConfig: any finegrained TP size > 0 only for MoE models."""
    keys = tuple(FTP + f"{w}_tensor_parallel_size" for w in FTP_SIZES if _ftp(ctx, w) > 0)
    if not keys:
        return
    if ctx.model is None:
        ctx.needs(keys, "finegrained tensor parallel is only for MoE models", ("--hf-config",))
    elif not ctx.model.is_moe:
        ctx.error(
            keys,
            "finegrained tensor parallel can be enabled only for MoE models, and "
            "this model has no experts",
            "remove finegrained_tp_config for dense models",
        )


@rule("finegrained-dp-divisible")
def _ftp_dp(ctx: Context) -> None:
    """FinegrainedTPConfig: data_parallel_size % size == 0 for every size > 0."""
    sizes = [(FTP + f"{w}_tensor_parallel_size", _ftp(ctx, w)) for w in FTP_SIZES]
    sizes = [(k, s) for k, s in sizes if s > 0]
    if not sizes:
        return
    dp = ctx.facts.dp
    if dp is None:
        ctx.needs(
            tuple(k for k, _ in sizes), "finegrained TP sizes must divide the DP size", ("--dp",)
        )
        return
    bad = [(k, s) for k, s in sizes if dp % s != 0]
    if bad:
        ctx.error(
            tuple(k for k, _ in bad),
            "finegrained TP sizes must divide data_parallel_size "
            f"({dp}): " + ", ".join(f"{k.split('.')[-1]} = {show(s)}" for k, s in bad),
            "pick sizes that divide --data-parallel-size",
        )


@rule("finegrained-needs-recompute")
def _ftp_recompute(ctx: Context) -> None:
    """AscendConfig.__init__: oproj / embedding TP require recompute_scheduler_enable (AssertionError)."""
    keys = tuple(
        FTP + f"{w}_tensor_parallel_size" for w in ("oproj", "embedding") if _ftp(ctx, w) > 0
    )
    rec = ctx.sched("recompute_scheduler_enable")
    if keys and not ctx.on(rec):
        ctx.error(
            (*keys, rec),
            "oproj/embedding tensor parallel require the recompute scheduler "
            "(their cross-DP collectives need equal token counts)",
            f"set {rec} to true",
        )


# --- eplb_config (EplbConfig._validate_config) -------------------------------------------------

EPLB = "eplb_config."


@rule("eplb-path-not-json")
def _eplb_json(ctx: Context) -> None:
    """EplbConfig: expert_map_path / expert_map_record_path must end in .json (TypeError)."""
    for name in ("expert_map_path", "expert_map_record_path"):
        v = ctx.get(EPLB + name)
        if isinstance(v, str) and not v.endswith(".json"):
            ctx.error(
                (EPLB + name,),
                f"{name} must be a .json file, got {show(v)}",
                "point it at the expert map JSON file",
            )


@rule("eplb-record-enables-dynamic")
def _eplb_record(ctx: Context) -> None:
    """EplbConfig: expert_map_record_path set turns dynamic_eplb on."""
    if ctx.get(EPLB + "expert_map_record_path") is not None and not ctx.on(EPLB + "dynamic_eplb"):
        ctx.rewrite(
            EPLB + "dynamic_eplb",
            True,
            "eplb_config.expert_map_record_path is set",
            "recording the expert map turns dynamic EPLB on",
            keys=(EPLB + "dynamic_eplb", EPLB + "expert_map_record_path"),
            severity="warning",
        )


@rule("eplb-dynamic-env")
def _eplb_env(ctx: Context) -> None:
    """EplbConfig: dynamic_eplb asserts env DYNAMIC_EPLB in (true, 1) or EXPERT_MAP_RECORD=true."""
    if not ctx.on(EPLB + "dynamic_eplb"):
        return
    env = ctx.facts.env
    if env.get("DYNAMIC_EPLB", "false").lower() in ("true", "1"):
        return
    if env.get("EXPERT_MAP_RECORD", "false") == "true":
        return
    what = "dynamic EPLB needs DYNAMIC_EPLB=true (or EXPERT_MAP_RECORD=true) in the environment"
    if ctx.facts.env_explicit:
        ctx.error(
            (EPLB + "dynamic_eplb",),
            what + f"; the {ctx.facts.env_label} has neither",
            "export DYNAMIC_EPLB=true for the server",
        )
    else:
        ctx.needs((EPLB + "dynamic_eplb",), what + " (this shell has neither)", ("--env-file",))


V1_EPLB_ENV = ("DYNAMIC_EPLB", "EXPERT_MAP_RECORD")
PHASE = "load_collection_phase"


@rule("eplb-model-runner")
def _eplb_runner(ctx: Context) -> None:
    """platform._validate_eplb_config (main): Model Runner V1 refuses eplb_config.
    load_collection_phase and --enable-eplb; V2 refuses every other eplb_config key, env
    DYNAMIC_EPLB / EXPERT_MAP_RECORD, and load_collection_phase != "all" without --enable-eplb.
    The runner is VLLM_USE_V2_MODEL_RUNNER alone (patch_use_v2_model_runner; unset = V1)."""
    user = ctx.user.get("eplb_config")
    given = sorted(user) if isinstance(user, dict) else []
    enable_eplb = ctx.facts.enable_eplb
    env = ctx.facts.env
    raw = env.get(RUNNER_ENV)
    if raw is not None:
        try:
            int(raw)
        except ValueError:
            ctx.error(
                (),
                f"{RUNNER_ENV}={raw} (from the {ctx.facts.env_label}) is not an integer: "
                "vLLM fails reading it when vLLM-Ascend checks the EPLB config at start-up",
                f"set {RUNNER_ENV} to 0 (Model Runner V1) or 1 (V2), or unset it",
            )
            return
    v2 = ctx.facts.v2_model_runner
    if v2 is None:
        refused = []
        if any(g != PHASE for g in given):
            refused.append("Model Runner V2 refuses eplb_config keys other than " + PHASE)
        if PHASE in given:
            refused.append(f"Model Runner V1 refuses eplb_config.{PHASE}")
        if enable_eplb:
            refused.append("Model Runner V1 refuses --enable-eplb")
        if refused:
            ctx.needs(
                tuple(EPLB + g for g in given),
                "; ".join(refused) + f" ({RUNNER_ENV} picks the runner, unset means V1)",
                (f"--env-file (its {RUNNER_ENV})",),
            )
        return
    if not v2:
        if PHASE in given:
            ctx.error(
                (EPLB + PHASE,),
                "eplb_config.load_collection_phase is only supported by Model Runner V2 "
                f"({RUNNER_ENV}=1); vLLM-Ascend refuses it on V1",
                "use eplb_config.eplb_heat_collection_stage with Model Runner V1",
            )
        if enable_eplb:
            ctx.error(
                (),
                "vLLM's --enable-eplb (upstream EPLB) is only supported by Model Runner V2 on "
                f"Ascend, and {RUNNER_ENV} is not set to 1",
                f"drop --enable-eplb (use eplb_config.dynamic_eplb on V1), or set {RUNNER_ENV}=1",
            )
        return
    legacy = [g for g in given if g != PHASE]
    if legacy:
        ctx.error(
            tuple(EPLB + g for g in legacy),
            "Model Runner V2 accepts only load_collection_phase in eplb_config; "
            f"vLLM-Ascend refuses {', '.join(legacy)}",
            f"remove {'it' if len(legacy) == 1 else 'them'} and use --enable-eplb "
            "on Model Runner V2",
        )
    v1_env = [f"{n}={env[n]}" for n in V1_EPLB_ENV if env.get(n, "false").lower() in ("true", "1")]
    if v1_env:
        ctx.error(
            (),
            f"{' and '.join(v1_env)} (from the {ctx.facts.env_label}): these are Model Runner V1 "
            "EPLB controls and vLLM-Ascend refuses them on V2",
            f"unset {', '.join(n.split('=')[0] for n in v1_env)} and use --enable-eplb",
        )
    phase = user.get(PHASE, "all") if isinstance(user, dict) else "all"
    if phase == "all":
        return
    if enable_eplb is None:
        ctx.needs(
            (EPLB + PHASE,),
            'load_collection_phase other than "all" requires --enable-eplb',
            ("--cmdline (its --enable-eplb)",),
        )
    elif not enable_eplb:
        ctx.error(
            (EPLB + PHASE,),
            f"eplb_config.load_collection_phase = {show(phase)} requires --enable-eplb",
            "add --enable-eplb, or drop load_collection_phase",
        )


# --- scheduler (SchedulerConfig and friends; main nests them under scheduler_config) ------------


def _prof(ctx: Context, name: str) -> str:
    return ctx.sched("profiling_chunk_config." + name)


@rule("profiling-need-timing-ignored")
def _need_timing(ctx: Context) -> None:
    """ProfilingChunkConfig (main): need_timing forced false (warning) when the feature is off."""
    if not ctx.on(_prof(ctx, "enabled")) and ctx.on(_prof(ctx, "need_timing")):
        ctx.rewrite(
            _prof(ctx, "need_timing"),
            False,
            f"{_prof(ctx, 'enabled')} = {show(ctx.get(_prof(ctx, 'enabled')))}",
            "need_timing only acts when profiling chunk sizing is enabled",
        )


@rule("dyntra-end-before-start")
def _dyntra_steps(ctx: Context) -> None:
    """DyntraLBConfig (main): end_step must be -1 or greater than start_step (ValueError)."""
    base = "scheduler_config.dyntra_lb_config."
    start, end = ctx.num(base + "start_step"), ctx.num(base + "end_step")
    if start is None or end is None or isinstance(start, bool) or isinstance(end, bool):
        return
    if end != -1 and end <= start:
        ctx.error(
            (base + "start_step", base + "end_step"),
            f"dyntra_lb_config.end_step ({show(end)}) must be -1 or greater than "
            f"start_step ({show(start)})",
            "raise end_step or set it to -1 (never stop)",
        )


@rule("profiling-min-chunk-clamped")
def _min_chunk(ctx: Context) -> None:
    """AscendConfig.__init__: min_chunk clamped to max_num_batched_tokens (warning)."""
    if not ctx.on(_prof(ctx, "enabled")):
        return
    key = _prof(ctx, "min_chunk")
    mc = ctx.num(key)
    mnbt = ctx.facts.max_num_batched_tokens
    if mc is None:
        return
    if mnbt is None:
        if ctx.given(key):
            ctx.needs(
                (key,),
                "min_chunk is clamped to --max-num-batched-tokens",
                ("--cmdline (its --max-num-batched-tokens)",),
            )
        return
    if mnbt < mc:
        ctx.rewrite(
            key,
            mnbt,
            f"--max-num-batched-tokens = {mnbt}",
            "min_chunk larger than max_num_batched_tokens is clamped",
        )


@rule("profiling-needs-pp")
def _prof_pp(ctx: Context) -> None:
    """AscendConfig.__init__: profiling_chunk_config requires PP > 1 (ValueError)."""
    key = _prof(ctx, "enabled")
    if not ctx.on(key):
        return
    pp = ctx.facts.pp
    if pp is None:
        ctx.needs((key,), "profiling chunk sizing requires pipeline parallelism", ("--pp",))
    elif pp <= 1:
        ctx.error(
            (key,),
            f"profiling chunk sizing requires pipeline parallelism (PP > 1), got PP = {pp}",
            "set --pipeline-parallel-size > 1 or disable it",
        )


@rule("profiling-with-balance")
def _prof_balance(ctx: Context) -> None:
    """AscendConfig.__init__: profiling_chunk_config and balance scheduling exclude each other."""
    a, b = _prof(ctx, "enabled"), ctx.sched("enable_balance_scheduling")
    if ctx.on(a) and ctx.on(b):
        ctx.error(
            (a, b),
            "profiling chunk sizing and balance scheduling cannot both be enabled",
            "disable one of them",
        )


# --- hamming sparse (v0.23.0 AscendConfig.__init__) -------------------------------------------


@rule("hamming-sparse-keys")
def _hamming_keys(ctx: Context) -> None:
    """v0.23.0 reads hamming_sparse["enabled"] and ["sparse_json_location"] directly: a section
    given without either key stops start-up with a KeyError."""
    if not ctx.given("hamming_sparse") or not isinstance(ctx.user.get("hamming_sparse"), dict):
        return
    missing = [
        k for k in ("enabled", "sparse_json_location") if not ctx.given(f"hamming_sparse.{k}")
    ]
    if missing:
        ctx.error(
            tuple(f"hamming_sparse.{k}" for k in missing),
            f"hamming_sparse without {' and '.join(missing)}: vLLM-Ascend v0.23.0 reads both keys "
            "directly and stops with a KeyError",
            'write both: {"hamming_sparse": {"enabled": false, "sparse_json_location": ""}}',
        )


# --- dump, shared expert DP, fused MC2 (AscendConfig.__init__) ---------------------------------


@rule("dump-config-conflict")
def _dump(ctx: Context) -> None:
    """AscendConfig._resolve_dump_config_path: dump_config and dump_config_path exclude each other."""
    if ctx.get("dump_config") is not None and ctx.get("dump_config_path") is not None:
        ctx.error(
            ("dump_config", "dump_config_path"),
            "only one of dump_config and dump_config_path can be set",
            "keep dump_config (inline) or dump_config_path (a file), not both",
        )


SHARED_DP = "enable_shared_expert_dp"


@rule("shared-expert-dp-off")
def _shared_dp(ctx: Context) -> None:
    """AscendConfig.__init__: enable_shared_expert_dp = value and expert parallel and TP > 1."""
    if not ctx.on(SHARED_DP):
        return
    ep, tp = ctx.facts.enable_expert_parallel, ctx.facts.tp
    if ep is False or (tp is not None and tp <= 1):
        why = "--enable-expert-parallel is off" if ep is False else f"TP = {tp}"
        ctx.rewrite(
            SHARED_DP,
            False,
            why,
            "shared-expert DP needs expert parallel and TP > 1; vLLM-Ascend turns it off",
            "add --enable-expert-parallel and --tensor-parallel-size > 1, or drop it",
        )
    elif ep is None or tp is None:
        ctx.undecided.add(SHARED_DP)
        missing = tuple(x for x, v in (("--enable-expert-parallel", ep), ("--tp", tp)) if v is None)
        ctx.needs(
            (SHARED_DP,),
            "shared-expert DP is silently off without expert parallel and TP > 1",
            missing,
        )


@rule("shared-expert-dp-enables-sp")
def _shared_dp_sp(ctx: Context) -> None:
    """utils.enable_sp (v0.23.0): effective shared-expert DP turns sequence parallel (FlashComm1) on."""
    if ctx.on(SHARED_DP) and SHARED_DP not in ctx.undecided and not ctx.on("enable_flashcomm1"):
        ctx.rewrite(
            "enable_flashcomm1",
            True,
            "enable_shared_expert_dp = true",
            "shared-expert DP also switches on sequence parallelism (FlashComm1)",
            keys=("enable_flashcomm1", SHARED_DP),
            severity="warning",
        )


FUSED = "enable_fused_mc2"
OVERLAP = "multistream_overlap_shared_expert"


@rule("fused-mc2-minimax")
def _fused_minimax(ctx: Context) -> None:
    """AscendConfig.__init__ (main): assert not (enable_fused_mc2 == 1 and a MiniMaxM3 model)."""
    if ctx.get(FUSED) != 1:
        return
    if ctx.model is None:
        ctx.needs(
            (FUSED,), "enable_fused_mc2 = 1 is refused for MiniMax M3 models", ("--hf-config",)
        )
    elif any(a.startswith("MiniMaxM3") for a in ctx.model.architectures):
        ctx.error(
            (FUSED,),
            "MiniMax M3 does not support enable_fused_mc2 = 1",
            "set enable_fused_mc2 to 0 (and unset VLLM_ASCEND_ENABLE_FUSED_MC2)",
        )


@rule("fused-mc2-disables-overlap")
def _fused_overlap(ctx: Context) -> None:
    """AscendConfig.__init__: enable_fused_mc2 == 1 forces multistream_overlap_shared_expert off."""
    fused = ctx.get(FUSED)
    if fused == 1 and ctx.on(OVERLAP):
        ctx.rewrite(
            OVERLAP,
            False,
            f"{FUSED} = {show(fused)}",
            f"{FUSED} = 1 and {OVERLAP} cannot run together: shared-expert overlap is "
            "switched off, the overlap you asked for never happens",
            f"drop {OVERLAP}, or use {FUSED} = 0 to keep the overlap",
            keys=(OVERLAP, FUSED),
        )


MEGAMOE_QUANTS = (
    "w8a8",
    "w4a8",
    "w8a8_dynamic",
    "w4a8_dynamic",
    "quanttype.w8a8",
    "quanttype.w4a8",
)


def megamoe_ok(m: ModelFacts) -> bool:
    """AscendConfig._is_megamoe_supported_by_config: the CANN MegaMoE kernel's shape limits."""
    h, i = m.hidden_size, m.moe_intermediate_size
    if h is None or not (1024 <= h <= 8192 and h % 512 == 0):
        return False
    if i is None or not (1024 <= i <= 3072 and i % 512 == 0):
        return False
    return m.quantize is None or m.quantize.lower() in MEGAMOE_QUANTS


@rule("fused-mc2-megamoe-fallback")
def _fused_megamoe(ctx: Context) -> None:
    """AscendConfig.__init__ (main): with cann_ops_transformer installed, fused_mc2 1 -> 0 for
    models outside MegaMoE's limits. Whether the package is installed is not known here, so the
    effective config is left alone."""
    if ctx.get(FUSED) != 1:
        return
    if ctx.model is None:
        ctx.needs(
            (FUSED,),
            "with CANN MegaMoE installed, enable_fused_mc2 = 1 falls back to 0 "
            "for models outside MegaMoE's shape limits",
            ("--hf-config",),
        )
    elif ctx.model.hidden_size is None or ctx.model.moe_intermediate_size is None:
        # the HF config lacks a field: nothing is known to be wrong, so it is not a warning
        m = ctx.model
        lacking = [
            name
            for name, v in (
                ("hidden_size", m.hidden_size),
                ("moe_intermediate_size", m.moe_intermediate_size),
            )
            if v is None
        ]
        ctx.report(
            "info",
            (FUSED,),
            f"the HF config gives no {' or '.join(lacking)}: whether this model is inside "
            "MegaMoE's limits (where cann_ops_transformer is installed, vLLM-Ascend sets "
            "enable_fused_mc2 to 0 outside them) cannot be told",
            "give the model's own config.json with --hf-config",
        )
    elif not megamoe_ok(ctx.model):
        m = ctx.model
        ctx.report(
            "warning",
            (FUSED,),
            "this model is outside MegaMoE's limits (hidden_size in 1024..8192 and "
            "moe_intermediate_size in 1024..3072, multiples of 512; W8A8/W4A8 or no quant;"
            f" got hidden_size {m.hidden_size}, moe_intermediate_size "
            f"{m.moe_intermediate_size}, quant {m.quantize}): where cann_ops_transformer "
            "is installed vLLM-Ascend sets enable_fused_mc2 to 0",
            "expect the unfused MC2 path on hosts with CANN MegaMoE",
        )


# --- KV NZ, sparse C8, MC2 hierarchy, reduce sample, mix placement -----------------------------


@rule("kv-nz-mla-only")
def _kv_nz_mla(ctx: Context) -> None:
    """AscendConfig.__init__: enable_kv_nz only for MLA models that are not SFA-sparse."""
    if not ctx.on("enable_kv_nz"):
        return
    if ctx.model is None:
        ctx.needs(("enable_kv_nz",), "enable_kv_nz is only for MLA models", ("--hf-config",))
    elif not ctx.model.is_mla or ctx.model.uses_sfa_sparse:
        ctx.error(
            ("enable_kv_nz",),
            "enable_kv_nz is only supported for MLA attention (DeepSeek-style, not sparse) models",
            "remove enable_kv_nz for this model",
        )


@rule("kv-nz-decode-only")
def _kv_nz_decode(ctx: Context) -> None:
    """AscendConfig.__init__: enable_kv_nz only on a PD decode node (NotImplementedError)."""
    if not ctx.on("enable_kv_nz"):
        return
    if ctx.role is None:
        ctx.needs(
            ("enable_kv_nz",),
            "enable_kv_nz runs only on decode nodes (kv_consumer)",
            ("--kv-role",),
        )
    elif ctx.role != "kv_consumer":
        ctx.error(
            ("enable_kv_nz",),
            f"enable_kv_nz runs only on PD-disaggregated decode nodes "
            f"(kv_consumer), this node is {ctx.role}",
            "use it in the decode config only",
        )


@rule("sparse-c8-needs-sparse-model")
def _sparse_c8(ctx: Context) -> None:
    """AscendConfig.__init__: enable_sparse_{sfa,li}_c8 are ANDed with "model uses SFA sparse"."""
    for key in ("enable_sparse_sfa_c8", "enable_sparse_li_c8"):
        if not ctx.on(key):
            continue
        if ctx.model is None:
            ctx.undecided.add(key)
            ctx.needs((key,), f"{key} only acts on SFA-sparse models", ("--hf-config",))
        elif not ctx.model.uses_sfa_sparse:
            ctx.rewrite(
                key,
                False,
                "the model is not SFA-sparse (no index_topk)",
                f"{key} only acts on SFA-sparse models; vLLM-Ascend turns it off",
            )


@rule("c8-reshape-needs-li-c8")
def _c8_reshape(ctx: Context) -> None:
    """AscendConfig.__init__: c8_enable_reshape_optim is ANDed with enable_sparse_li_c8."""
    key = "c8_enable_reshape_optim"
    if ctx.on(key) and not ctx.on("enable_sparse_li_c8"):
        if "enable_sparse_li_c8" in ctx.undecided:
            return
        ctx.rewrite(
            key,
            False,
            f"enable_sparse_li_c8 = {show(ctx.get('enable_sparse_li_c8'))}",
            "c8_enable_reshape_optim only acts with enable_sparse_li_c8",
            keys=(key, "enable_sparse_li_c8"),
        )


HIER = "enable_mc2_hierarchy_comm"


@rule("mc2-hierarchy-soc")
def _hier_soc(ctx: Context) -> None:
    """AscendConfig._validate_mc2_hierarchy_comm (main): only on A2 and A3 (NotImplementedError)."""
    if not ctx.on(HIER):
        return
    soc = ctx.facts.soc
    if soc is None:
        ctx.needs((HIER,), "MC2 hierarchy communication runs only on A2 and A3", ("--soc",))
    elif soc not in ("A2", "A3"):
        ctx.error(
            (HIER,),
            f"enable_mc2_hierarchy_comm is only supported on A2 and A3, not {soc}",
            "remove it on this SoC",
        )


@rule("mc2-hierarchy-experts")
def _hier_experts(ctx: Context) -> None:
    """AscendConfig._validate_mc2_hierarchy_comm (main): at most 512 experts (+ redundant ones)."""
    if not ctx.on(HIER):
        return
    if ctx.model is None:
        ctx.needs(
            (HIER,), "MC2 hierarchy communication supports at most 512 experts", ("--hf-config",)
        )
        return
    logical = ctx.model.num_experts or 0
    redundant = ctx.num(EPLB + "num_redundant_experts") if ctx.on(EPLB + "dynamic_eplb") else 0
    total = logical + (redundant or 0)
    if total > 512:
        ctx.error(
            (HIER, EPLB + "num_redundant_experts"),
            f"enable_mc2_hierarchy_comm supports at most 512 experts, got {show(total)} "
            f"({logical} logical + {show(redundant or 0)} redundant)",
            "lower eplb_config.num_redundant_experts or drop hierarchy communication",
        )


REDUCE = "enable_reduce_sample"


@rule("reduce-sample-experimental")
def _reduce_exp(ctx: Context) -> None:
    """AscendConfig.__init__: enable_reduce_sample logs "experimental"."""
    if ctx.on(REDUCE):
        ctx.info(
            (REDUCE,),
            "enable_reduce_sample is an experimental feature",
            "validate accuracy before production use",
        )


@rule("reduce-sample-lmhead-tp")
def _reduce_lmhead(ctx: Context) -> None:
    """AscendConfig.__init__: enable_reduce_sample refuses lmhead finegrained TP (ValueError)."""
    key = FTP + "lmhead_tensor_parallel_size"
    if ctx.on(REDUCE) and _ftp(ctx, "lmhead") > 0:
        ctx.error(
            (REDUCE, key),
            "enable_reduce_sample is incompatible with lmhead_tensor_parallel_size",
            "disable one of them",
        )


@rule("reduce-sample-producer")
def _reduce_producer(ctx: Context) -> None:
    """AscendConfig.__init__: enable_reduce_sample refused on PD prefill nodes (kv_producer)."""
    if not ctx.on(REDUCE):
        return
    if ctx.role is None:
        ctx.needs(
            (REDUCE,),
            "enable_reduce_sample is refused on prefill nodes (kv_producer)",
            ("--kv-role",),
        )
    elif ctx.role == "kv_producer":
        ctx.error(
            (REDUCE,),
            "enable_reduce_sample is not supported on PD-disaggregated prefill nodes (kv_producer)",
            "remove it from the prefill instance's config",
        )


@rule("mix-placement-conflict")
def _mix(ctx: Context) -> None:
    """AscendConfig._check_mix_placement: refused with shared-expert DP or overlap (after rewrites,
    so fused_mc2 = 1 that switched overlap off lets mix_placement pass)."""
    if not ctx.on("mix_placement"):
        return
    if ctx.on(OVERLAP):
        ctx.error(
            ("mix_placement", OVERLAP),
            "mix_placement is not supported with multistream_overlap_shared_expert",
            f"disable {OVERLAP} or mix_placement",
        )
    elif ctx.on(SHARED_DP):
        if SHARED_DP in ctx.undecided:
            ctx.needs(
                ("mix_placement", SHARED_DP),
                "mix_placement is refused when shared-expert "
                "DP is in effect (expert parallel and TP > 1)",
                ("--tp", "--enable-expert-parallel"),
            )
        else:
            ctx.error(
                ("mix_placement", SHARED_DP),
                "mix_placement is not supported with shared-expert DP",
                f"disable {SHARED_DP} or mix_placement",
            )


# --- sparse KV offload, RL (main) --------------------------------------------------------------

SKO = "sparse_kv_offload_config."


@rule("sparse-kv-offload-model")
def _sko_model(ctx: Context) -> None:
    """SparseKVOffloadConfig (main): sparse-attention models only, not compressed (DSV4) ones."""
    if not ctx.on(SKO + "enabled"):
        return
    m = ctx.model
    if m is None:
        ctx.needs(
            (SKO + "enabled",), "sparse KV offload needs a sparse-attention model", ("--hf-config",)
        )
    elif m.has_compress_ratios:
        ctx.error(
            (SKO + "enabled",),
            "sparse KV offload does not support compressed attention (compress_ratios)",
            "disable sparse_kv_offload_config for this model",
        )
    elif not m.has_indexer:
        ctx.error(
            (SKO + "enabled",),
            "sparse KV offload only supports sparse attention models (with index_topk)",
            "disable sparse_kv_offload_config for this model",
        )


@rule("sparse-kv-offload-pp")
def _sko_pp(ctx: Context) -> None:
    """SparseKVOffloadConfig (main): no pipeline parallelism."""
    if not ctx.on(SKO + "enabled"):
        return
    pp = ctx.facts.pp
    if pp is None:
        ctx.needs((SKO + "enabled",), "sparse KV offload refuses pipeline parallelism", ("--pp",))
    elif pp > 1:
        ctx.error(
            (SKO + "enabled",),
            f"sparse KV offload does not support pipeline parallelism (PP = {pp})",
            "use --pipeline-parallel-size 1",
        )


@rule("sparse-kv-offload-decode-only")
def _sko_decode(ctx: Context) -> None:
    """SparseKVOffloadConfig (main): decode nodes only, unless keep_device_kv_cache (debug)."""
    if not ctx.on(SKO + "enabled") or ctx.on(SKO + "keep_device_kv_cache"):
        return
    if ctx.role is None:
        ctx.needs(
            (SKO + "enabled",),
            "sparse KV offload runs only on decode nodes (kv_consumer)",
            ("--kv-role",),
        )
    elif ctx.role != "kv_consumer":
        ctx.error(
            (SKO + "enabled", SKO + "keep_device_kv_cache"),
            f"sparse KV offload runs only on PD-disaggregated decode nodes, this node is "
            f"{ctx.role}",
            "use it on the decode node, or set keep_device_kv_cache (debug)",
        )


@rule("sparse-kv-offload-topk")
def _sko_topk(ctx: Context) -> None:
    """SparseKVOffloadConfig (main): topk_buffer_size must be >= the model's index_topk."""
    if not ctx.on(SKO + "enabled"):
        return
    size = ctx.num(SKO + "topk_buffer_size")
    m = ctx.model
    if m is None:
        ctx.needs(
            (SKO + "topk_buffer_size",),
            "topk_buffer_size must be at least the model's index_topk",
            ("--hf-config",),
        )
    elif m.index_topk is not None and size is not None and size < m.index_topk:
        ctx.error(
            (SKO + "topk_buffer_size",),
            f"topk_buffer_size ({show(size)}) is smaller "
            f"than the model's index_topk ({m.index_topk})",
            f"set it to at least {m.index_topk}",
        )


@rule("sparse-kv-offload-sfa-c8")
def _sko_c8(ctx: Context) -> None:
    """AscendConfig._validate_sparse_c8_kv_offload_compatibility (main): not with sparse SFA C8."""
    if ctx.on(SKO + "enabled") and ctx.on("enable_sparse_sfa_c8"):
        ctx.error(
            (SKO + "enabled", "enable_sparse_sfa_c8"),
            "sparse KV offload does not support the sparse SFA C8 cache",
            "disable enable_sparse_sfa_c8 (enable_sparse_li_c8 is fine)",
        )


@rule("rl-forces-weight-nz-off")
def _rl_nz(ctx: Context) -> None:
    """RlConfig.apply (main): rl_config.enabled sets weight_nz_mode = 0."""
    if ctx.on("rl_config.enabled") and ctx.get("weight_nz_mode") != 0:
        ctx.rewrite(
            "weight_nz_mode",
            0,
            "rl_config.enabled = true",
            "RL mode runs without NZ weights",
            keys=("weight_nz_mode", "rl_config.enabled"),
        )


# --- platform.py: NPUPlatform.check_and_update_config / _check_ascend_config --------------------


@rule("fused-mc2-with-hierarchy")
def _fused_hier(ctx: Context) -> None:
    """platform: fused MC2 (any non-zero) and MC2 hierarchy communication exclude each other."""
    if ctx.on(HIER) and ctx.on(FUSED):
        ctx.error(
            (HIER, FUSED),
            "enable_fused_mc2 cannot be used with enable_mc2_hierarchy_comm",
            "set enable_fused_mc2 to 0 (and unset "
            "VLLM_ASCEND_ENABLE_FUSED_MC2) or drop hierarchy communication",
        )


@rule("balance-scheduling-pd")
def _balance_pd(ctx: Context) -> None:
    """platform: enable_balance_scheduling only in PD-mixed mode (kv_both or no KV transfer)."""
    key = ctx.sched("enable_balance_scheduling")
    if not ctx.on(key):
        return
    if ctx.role is None:
        ctx.needs((key,), "balance scheduling is refused on PD-disaggregated nodes", ("--kv-role",))
    elif ctx.role not in ("none", "kv_both"):
        ctx.error(
            (key,),
            f"balance scheduling only supports PD-mixed mode, this node is {ctx.role}",
            "disable it on PD-disaggregated nodes",
        )


SRF = "scheduler_config.short_request_first_config.enabled"


@rule("srf-policy")
def _srf_policy(ctx: Context) -> None:
    """platform (main): short-request-first needs --scheduling-policy fcfs."""
    if not ctx.on(SRF):
        return
    policy = ctx.facts.scheduling_policy
    if policy is None:
        ctx.needs(
            (SRF,),
            "short-request-first needs scheduling policy fcfs",
            ("--cmdline (its --scheduling-policy)",),
        )
    elif policy != "fcfs":
        ctx.error(
            (SRF,),
            f"short-request-first requires --scheduling-policy fcfs, got {policy}",
            "use the default fcfs policy",
        )


@rule("srf-with-batch-job")
def _srf_batch(ctx: Context) -> None:
    """platform (main): short-request-first and batch_job_sched_config exclude each other."""
    other = "scheduler_config.batch_job_sched_config.enabled"
    if ctx.on(SRF) and ctx.on(other):
        ctx.error(
            (SRF, other),
            "short-request-first cannot be enabled with batch_job_sched_config",
            "disable one of them",
        )


@rule("srf-with-profiling-chunk")
def _srf_prof(ctx: Context) -> None:
    """platform (main): short-request-first and profiling_chunk_config exclude each other."""
    other = "scheduler_config.profiling_chunk_config.enabled"
    if ctx.on(SRF) and ctx.on(other):
        ctx.error(
            (SRF, other),
            "short-request-first cannot be enabled with profiling_chunk_config",
            "disable one of them",
        )


@rule("srf-on-decode-node")
def _srf_decode(ctx: Context) -> None:
    """platform (main): short-request-first refused on decode nodes (kv_consumer)."""
    if not ctx.on(SRF):
        return
    if ctx.role is None:
        ctx.needs((SRF,), "short-request-first is refused on decode nodes", ("--kv-role",))
    elif ctx.role == "kv_consumer":
        ctx.error(
            (SRF,),
            "short-request-first is supported only on prefill or PD-mixed nodes, "
            "not decode nodes (kv_consumer)",
            "remove it from the decode config",
        )


DYNTRA = "scheduler_config.dyntra_lb_config.enabled"


@rule("dyntra-with-balance")
def _dyntra_balance(ctx: Context) -> None:
    """platform (main): DyntraLB cannot be used with balance scheduling."""
    other = "scheduler_config.enable_balance_scheduling"
    if ctx.on(DYNTRA) and ctx.on(other):
        ctx.error(
            (DYNTRA, other),
            "DyntraLB cannot be used with enable_balance_scheduling",
            "disable one of them",
        )


@rule("dyntra-decode-only")
def _dyntra_decode(ctx: Context) -> None:
    """platform (main): DyntraLB only on PD-disaggregated decode nodes (kv_consumer)."""
    if not ctx.on(DYNTRA):
        return
    if ctx.role is None:
        ctx.needs((DYNTRA,), "DyntraLB runs only on decode nodes (kv_consumer)", ("--kv-role",))
    elif ctx.role != "kv_consumer":
        ctx.error(
            (DYNTRA,),
            f"DyntraLB runs only on PD-disaggregated decode nodes, this node is {ctx.role}",
            "use it in the decode config only",
        )


@rule("dyntra-needs-dp")
def _dyntra_dp(ctx: Context) -> None:
    """platform (main): DyntraLB requires data_parallel_size > 1."""
    if not ctx.on(DYNTRA):
        return
    dp = ctx.facts.dp
    if dp is None:
        ctx.needs((DYNTRA,), "DyntraLB balances across DP ranks and needs DP > 1", ("--dp",))
    elif dp <= 1:
        ctx.error(
            (DYNTRA,),
            f"DyntraLB requires data_parallel_size > 1, got {dp}",
            "raise --data-parallel-size or disable DyntraLB",
        )


@rule("dyntra-with-profiling-chunk")
def _dyntra_prof(ctx: Context) -> None:
    """platform (main): DyntraLB cannot be used with profiling_chunk_config."""
    other = "scheduler_config.profiling_chunk_config.enabled"
    if ctx.on(DYNTRA) and ctx.on(other):
        ctx.error(
            (DYNTRA, other),
            "DyntraLB cannot be used with profiling_chunk_config",
            "disable one of them",
        )


@rule("recompute-off-on-producer")
def _recompute_producer(ctx: Context) -> None:
    """platform: recompute_scheduler_enable on a prefill node (kv_producer) is set to false and
    written back into additional_config; the workers rebuild AscendConfig from it, so oproj /
    embedding finegrained TP, which asserts the recompute scheduler, then fails there."""
    key = ctx.sched("recompute_scheduler_enable")
    if not (ctx.on(key) and ctx.role == "kv_producer"):
        return
    ftp = tuple(
        FTP + f"{w}_tensor_parallel_size" for w in ("oproj", "embedding") if _ftp(ctx, w) > 0
    )
    if ftp:
        ctx.rewrite(
            key,
            False,
            "kv_role = kv_producer",
            "on a prefill node vLLM-Ascend writes recompute_scheduler_enable = false back into "
            "the additional config; the worker processes rebuild AscendConfig from it, and "
            "oproj/embedding tensor parallel then fail its assertion that the recompute "
            "scheduler is on (AssertionError at worker start)",
            "drop oproj/embedding tensor parallel from the prefill node's config "
            "(they need the recompute scheduler, which runs only on kv_consumer)",
            keys=(key, *ftp),
            severity="error",
        )
        return
    ctx.rewrite(
        key,
        False,
        "kv_role = kv_producer",
        "the recompute scheduler is ignored on prefill nodes",
        "keep it only in the decode node's config",
    )


@rule("recompute-decode-only")
def _recompute_decode(ctx: Context) -> None:
    """platform: recompute_scheduler_enable only on decode nodes; refused in PD-mixed mode."""
    key = ctx.sched("recompute_scheduler_enable")
    if not ctx.on(key):
        return
    if ctx.role is None:
        ctx.needs(
            (key,),
            "the recompute scheduler runs only on decode nodes (kv_consumer)",
            ("--kv-role",),
        )
    elif ctx.role in ("none", "kv_both"):
        ctx.error(
            (key,),
            "the recompute scheduler can only be enabled on PD-disaggregated "
            f"decode nodes (kv_consumer), this node is "
            f"{'PD-mixed' if ctx.role == 'none' else ctx.role}",
            "remove it, or run this instance as kv_consumer",
        )


@rule("dsa-cp-needs-indexer")
def _dsa_cp(ctx: Context) -> None:
    """utils.enable_dsa_cp (v0.23.0, main-2026-08) / derive_and_validate (main-2026-09):
    enable_dsa_cp only acts on models with an indexer (index_topk)."""
    if not ctx.on("enable_dsa_cp"):
        return
    if ctx.model is None:
        ctx.needs(
            ("enable_dsa_cp",),
            "enable_dsa_cp only acts on models with an indexer",
            ("--hf-config",),
        )
    elif not ctx.model.has_indexer:
        ctx.rewrite(
            "enable_dsa_cp",
            False,
            "the model has no indexer (index_topk)",
            "DSA context parallel only applies to DeepSeek V3.2/V4-style models",
        )


@rule("numa-bind-ignored")
def _numa_bind(ctx: Context) -> None:
    """platform (v0.23.0 and main): --numa-bind is turned off; Ascend binding is enable_cpu_binding."""
    if ctx.facts.numa_bind:
        ctx.info(
            ("enable_cpu_binding",),
            "vLLM's --numa-bind is not supported on Ascend: it is "
            "turned off and vLLM-Ascend's own binding (enable_cpu_binding = "
            f"{show(ctx.get('enable_cpu_binding'))}) is used instead",
            "drop --numa-bind; see `ascendtune plan --policy vllm-ascend`",
        )


# --- v0.23.0 only -------------------------------------------------------------------------------


@rule("async-exponential-batch-invariant")
def _async_exp(ctx: Context) -> None:
    """AscendConfig.__init__ (v0.23.0): enable_async_exponential is off under VLLM_BATCH_INVARIANT."""
    key = "enable_async_exponential"
    if not ctx.on(key):
        return
    raw = ctx.facts.env.get("VLLM_BATCH_INVARIANT")
    try:
        invariant = raw is not None and int(raw) != 0
    except ValueError:
        invariant = False
    if invariant:
        ctx.rewrite(
            key,
            False,
            f"VLLM_BATCH_INVARIANT={raw}",
            "async exponential sampling would break batch invariance; it is turned off",
        )


@rule("layer-sharding-producer-only")
def _layer_sharding(ctx: Context) -> None:
    """platform._validate_layer_sharding_config (v0.23.0): layer_sharding only on kv_producer."""
    if not ctx.on("layer_sharding"):
        return
    if ctx.role is None:
        ctx.needs(
            ("layer_sharding",),
            "layer_sharding runs only on prefill nodes (kv_producer)",
            ("--kv-role",),
        )
    elif ctx.role != "kv_producer":
        ctx.error(
            ("layer_sharding",),
            "layer_sharding can only be enabled on PD-disaggregated "
            f"prefill nodes (kv_producer), this node is {ctx.role}",
            "remove it from this config",
        )


@rule("flashcomm1-needs-tp")
def _fc1_tp(ctx: Context) -> None:
    """platform.check_and_update_config (v0.23.0): assert TP > 1 when sequence parallel is on."""
    if not ctx.on("enable_flashcomm1"):
        return
    tp = ctx.facts.tp
    if tp is None:
        ctx.needs(
            ("enable_flashcomm1",), "FlashComm1 (sequence parallel) requires TP > 1", ("--tp",)
        )
    elif tp <= 1:
        ctx.error(
            ("enable_flashcomm1",),
            f"FlashComm1 is only supported with TP > 1, got TP = {tp}",
            "disable enable_flashcomm1 (and VLLM_ASCEND_ENABLE_FLASHCOMM1)",
        )


@rule("flashcomm1-moe-needs-ep")
def _fc1_ep(ctx: Context) -> None:
    """platform.check_and_update_config (v0.23.0): FlashComm1 on a MoE model needs expert parallel."""
    if not ctx.on("enable_flashcomm1"):
        return
    m, ep = ctx.model, ctx.facts.enable_expert_parallel
    if m is None:
        ctx.needs(
            ("enable_flashcomm1",),
            "FlashComm1 on MoE models requires expert parallel",
            ("--hf-config",),
        )
    elif m.is_moe and ep is None:
        ctx.needs(
            ("enable_flashcomm1",),
            "FlashComm1 on MoE models requires expert parallel",
            ("--enable-expert-parallel",),
        )
    elif m.is_moe and not ep:
        ctx.error(
            ("enable_flashcomm1",),
            "FlashComm1 requires --enable-expert-parallel for MoE models",
            "add --enable-expert-parallel or disable FlashComm1",
        )


@rule("dsa-cp-needs-flashcomm1")
def _dsa_cp_sp(ctx: Context) -> None:
    """utils.enable_dsa_cp (v0.23.0): DSA CP on an indexer model requires sequence parallel."""
    if (
        ctx.on("enable_dsa_cp")
        and ctx.model is not None
        and ctx.model.has_indexer
        and not ctx.on("enable_flashcomm1")
    ):
        ctx.error(
            ("enable_dsa_cp", "enable_flashcomm1"),
            "DSA CP requires sequence parallel (FlashComm1)",
            "set enable_flashcomm1 to true (or VLLM_ASCEND_ENABLE_FLASHCOMM1=1)",
        )


# --- the host -----------------------------------------------------------------------------------


@rule("cpu-binding-not-arm")
def _binding_arch(ctx: Context) -> None:
    """cpu_binding.bind_cpus: enable_cpu_binding only acts on ARM hosts (is_arm_cpu)."""
    arch = ctx.facts.arch
    if ctx.on("enable_cpu_binding") and arch and not is_arm(arch):
        ctx.info(
            ("enable_cpu_binding",),
            f"enable_cpu_binding does nothing on this {arch} host: "
            "vLLM-Ascend binds CPUs only on ARM",
            "bind with `ascendtune bind` if you need it",
        )


BINDER_ENV = ("CPU_AFFINITY_CONF", "OMP_PROC_BIND", "GOMP_CPU_AFFINITY", "KMP_AFFINITY")


def active_binders(env: dict[str, str] | Any) -> list[str]:
    """The environment variables that pin threads by themselves (set and not switched off)."""
    out = []
    for name in BINDER_ENV:
        v = env.get(name)
        if v is None or not v.strip():
            continue
        low = v.strip().lower()
        if name == "OMP_PROC_BIND" and low == "false":
            continue
        if name == "CPU_AFFINITY_CONF" and (low == "0" or low.startswith("mode:0")):
            continue
        if name == "KMP_AFFINITY" and "disabled" in low:
            continue
        out.append(f"{name}={v}")
    return out


@rule("two-cpu-binders")
def _two_binders(ctx: Context) -> None:
    """vLLM-Ascend's binding together with torch_npu's / OpenMP's: the last one to run wins."""
    arch = ctx.facts.arch
    if not ctx.on("enable_cpu_binding") or not arch or not is_arm(arch):
        return
    binders = active_binders(ctx.facts.env)
    if binders:
        ctx.info(
            ("enable_cpu_binding",),
            "two CPU binders at once: enable_cpu_binding and "
            + ", ".join(binders)
            + f" (from the {ctx.facts.env_label})",
            "keep one: set enable_cpu_binding to false, or unset the variables",
        )


OUTER_BINDERS = ("taskset", "numactl", "ascendtune")


def outer_binder(argv: list[str] | tuple[str, ...]) -> str | None:
    """The binder a command line starts vLLM under (`taskset -c 0-3 vllm serve ...`,
    `numactl --physcpubind=... vllm ...`, `ascendtune bind --rank 0 -- vllm ...`), as typed up to
    the vLLM part; None when it starts vLLM directly. Leading NAME=VALUE words are skipped."""
    i = 0
    while i < len(argv) and "=" in argv[i] and not argv[i].startswith("-"):
        i += 1
    if i >= len(argv):
        return None
    prog = argv[i].rsplit("/", 1)[-1]
    if prog not in OUTER_BINDERS:
        return None
    end = next(
        (
            j
            for j in range(i + 1, len(argv))
            if argv[j].rsplit("/", 1)[-1] in ("vllm", "python", "python3")
            or argv[j].startswith("vllm.")
        ),
        len(argv),
    )
    if prog == "ascendtune" and "bind" not in argv[i + 1 : end]:
        return None
    return " ".join(a for a in argv[i:end] if a != "--")


@rule("outer-binder-narrowed")
def _outer_binder(ctx: Context) -> None:
    """cpu_binding.py (v0.23.0 and main): the binding after warm-up reads the worker's
    Cpus_allowed_list and plans inside it; narrowed by an outer binder, the pools conflict with
    the NPU affinity (no role thread bound) or are re-sliced from the narrowed mask."""
    arch = ctx.facts.arch
    if not ctx.on("enable_cpu_binding") or not arch or not is_arm(arch):
        return
    f = ctx.facts
    why: list[str] = []
    if f.outer_binder:
        why.append(f"it is started under `{f.outer_binder}`")
    if (
        f.process_cpus is not None
        and f.process_cpuset is not None
        and f.process_cpus < f.process_cpuset
    ):
        why.append(
            f"its mask {format_cpulist(f.process_cpus)} is narrower than its cpuset "
            f"{format_cpulist(f.process_cpuset)}"
        )
    conf = [b for b in active_binders(f.env) if b.startswith("CPU_AFFINITY_CONF=")]
    if conf:
        why.append(f"{conf[0]} is set (from the {f.env_label})")
    if why:
        ctx.report(
            "warning",
            ("enable_cpu_binding",),
            "enable_cpu_binding is on inside an outer binder's mask: "
            + "; ".join(why)
            + ". vLLM-Ascend then plans inside that mask after warm-up: it fails ('CPUs "
            "available in Cpus_allowed_list conflict with NUMA affinity') or re-slices the mask "
            "and leaves part of it idle",
            "start the server with --additional-config '{\"enable_cpu_binding\": false}' and "
            "bind with `ascendtune bind --workers` once it is up "
            "(`ascendtune plan --emit vllm --cmdline CMDLINE` prints both)",
        )
