"""What each additional-config key is for, in words: side, timing, how to verify it, how it fails.

This is the data `ascendtune explain` teaches from; it sits beside the version tables
(`versions.py`) and the cross-key rules (`rules.py`), and a test keeps the three in step: every
key of every version has one entry here, and every entry names keys some version has. Defaults,
types and presence per version are never written here; they are read from the version tables.
`RULE_KEYS` names the keys each check-config rule reads or rewrites, so a key's interactions are
the rules' own descriptions. Every text is ascendtune's own.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

Side = Literal["host", "device", "both"]
When = Literal["startup", "load", "warmup", "per_step", "periodic"]

# the concerns `explain` groups keys by, in display order
CONCERNS: dict[str, str] = {
    "binding": "CPU binding",
    "multistream": "Multistream overlap",
    "graph": "Graph and compilation",
    "moe": "MoE and EPLB",
    "parallel": "Parallelism and communication",
    "kv": "KV cache and disaggregated prefill",
    "scheduler": "Scheduler",
    "spec": "Speculative decoding and sampling",
    "kernels": "Kernels, fusion and weights",
    "debug": "Debug, logging and RL",
}
WHEN_WORDS: dict[str, str] = {
    "startup": "read once, when the engine builds its config",
    "load": "applied while the model is loaded or its graphs are captured",
    "warmup": "runs once per worker, at the end of warm-up",
    "per_step": "acts on every step the model runs",
    "periodic": "acts every few steps, on a timer of steps",
}
SIDE_WORDS: dict[str, str] = {
    "host": "host side (CPU threads, scheduling, memory placement)",
    "device": "device side (what the NPU runs and on which stream)",
    "both": "both sides",
}


@dataclass(frozen=True)
class LogLine:
    """A line of a server log that shows the key at work; `vllm_log` parses `example`."""

    means: str
    example: str
    binding: str = ""  # what `ascendtune log` reports for the worker: bound, failed, skipped


@dataclass(frozen=True)
class KeyDoc:
    path: str  # dotted, as written in --additional-config
    concern: str
    side: Side
    when: When
    summary: str  # one line
    detail: str = ""  # what it controls and the problem it addresses
    verify: tuple[str, ...] = ()
    failure: tuple[str, ...] = ()
    # the same setting spelled elsewhere on other versions (older lines: top level)
    also: tuple[str, ...] = ()
    # interactions no check-config rule models: (key, what happens)
    related: tuple[tuple[str, str], ...] = ()
    log: tuple[LogLine, ...] = ()
    per_version: tuple[tuple[str, str], ...] = ()  # (version, what differs there)


SHOW_EFFECTIVE = "`ascendtune check-config CONFIG --show-effective` shows the value that will run"


def _d(path: str, concern: str, side: Side, when: When, summary: str, **kw: object) -> KeyDoc:
    return KeyDoc(path, concern, side, when, summary, **kw)  # type: ignore[arg-type]


def _section(path: str, concern: str, side: Side, what: str, **kw: object) -> KeyDoc:
    return _d(path, concern, side, "startup", f"the {what} settings, one object", **kw)


_BOUND_LOG = (
    LogLine(
        "the mode and the busy NPUs the worker found",
        "(Worker_TP1 pid=5302) INFO 09-23 10:11:22 [cpu_binding.py:545] [vllm-ascend] - "
        "[cpu_bind_mode] mode=topo_affinity rank=1 visible_npus=[0, 1]",
    ),
    LogLine(
        "the pool it bound: main threads, acl_thread, release_thread",
        "(Worker_TP1 pid=5302) INFO 09-23 10:11:26 [cpu_binding.py:641] [vllm-ascend] - "
        "NPU1: main=[170 171 172 173 174 175 176 177 178 179 180 181 182 183 184 185 186 187 "
        "188 189]  acl=[190]  release=[[191]]",
        "bound",
    ),
    LogLine(
        "the NUMA nodes its memory was moved to",
        "(Worker_TP1 pid=5302) INFO 09-23 10:11:26 [cpu_binding.py:667] [vllm-ascend] - "
        "[migrate] NPU:1 -> NUMA [7]",
    ),
    LogLine(
        "a failure: one warning, and start-up goes on with the worker unbound",
        "(Worker_TP1 pid=5302) WARNING 09-23 10:11:06 [worker.py:783] [vllm-ascend] - "
        "Bind cpus failed in rank1: CPUs available in 'Cpus_allowed_list' conflict with NUMA "
        "affinity. Skip binding cpu.",
        "failed",
    ),
    LogLine(
        "a host that is not ARM: nothing is bound",
        "(Worker_TP0 pid=5301) INFO 09-23 10:11:06 [cpu_binding.py:60] [vllm-ascend] - "
        "CPU binding skipped: non-ARM CPU detected.",
        "skipped",
    ),
)

_SCHED = "scheduler_config."
_PROF = _SCHED + "profiling_chunk_config"
_SRF = _SCHED + "short_request_first_config"
_BATCH = _SCHED + "batch_job_sched_config"
_DYN = _SCHED + "dyntra_lb_config"


def _nested(path: str) -> tuple[str, ...]:
    """The top-level spelling older lines (v0.23.0, v0.24.0rc1) read for a scheduler key."""
    return (path[len(_SCHED) :],)


DOCS: tuple[KeyDoc, ...] = (
    # --- binding ---------------------------------------------------------------------------------
    _d(
        "enable_cpu_binding",
        "binding",
        "host",
        "warmup",
        "pin each worker's threads to CPUs near its NPU, and steer the NPU's interrupts there",
        detail="Host side. Once per worker, when warm-up has finished, vLLM-Ascend works out a CPU "
        "pool for the NPU the worker drives (npu-smi's affinity for it within the cpuset, or an "
        "even slice of the cpuset on A3), keeps the first two CPUs of the pool for the NPU's "
        "interrupts, binds the worker's main threads to the middle, acl_thread to the second "
        "last CPU and release_thread to the last, moves the process's memory to the pool's NUMA "
        "nodes with migratepages, and points the NPU's send and completion interrupts at the two "
        "reserved CPUs. The point is to stop the scheduler moving the launch threads between "
        "cores and nodes, which shows as jitter in host time per step. It acts only on ARM "
        "hosts. Any exception inside it becomes one warning and the worker carries on unbound: "
        "nothing stops start-up.",
        verify=(
            "`ascendtune log server.log`: per rank, bound (with the plan it printed) or failed "
            "with the cause",
            "`ascendtune doctor`: a `worker:PID` row per NPU worker says whether its threads sit "
            "on the pool `plan` predicts",
            "`ascendtune watch --pid PID --plan plan.json --rank R`: whether acl_thread and "
            "release_thread stay on their CPU",
            "`ascendtune explain binding --rank R`: the steps it takes on this host",
        ),
        failure=(
            "the cpuset holds none of the NPU's affinity CPUs: 'conflict with NUMA affinity'",
            "fewer than 5 CPUs in a pool (2 IRQ + main + acl + release): 'The number of CPUs is "
            "insufficient'",
            "global slicing with fewer than 5 CPUs per NPU of the host, visible or not",
            "no busy NPU in npu-smi's table ('Can not get running npu info.'), or a rank past "
            "the end of the busy list on lines without the device-id fix",
            "an offline CPU makes `lscpu -e` print '-' as its node and the parse fails",
            "/proc/irq not writable in a container: the IRQ step is skipped, the rest binds",
            "two services on one host with different cpusets get overlapping pools silently",
        ),
        related=(
            (
                "numa_bind (vLLM)",
                "vLLM's own NUMA binding option is ignored on Ascend; this key is the binder",
            ),
        ),
        log=_BOUND_LOG,
        per_version=(
            (
                "v0.9.1rc1, v0.9.2rc1 … v0.11.0rc0",
                "no CPU binding in the release: the key is not read",
            ),
            (
                "v0.9.1rc2 … v0.14.0rc1",
                "off by default; up to v0.13.0 the whole process is bound to its NPU's share of "
                "the NPU's NUMA node (no IRQ, acl or release CPUs), rank r taking entry r of "
                "ASCEND_RT_VISIBLE_DEVICES",
            ),
            (
                "v0.14.0rc1 … v0.25.1rc1, main-2026-08",
                "rank r binds the r-th NPU of the sorted busy list, which goes wrong with a "
                "non-ascending device list or data parallel on vLLM >= 0.24",
            ),
            (
                "v0.26.0rc1 on, main-2026-09",
                "rank r binds the NPU vLLM assigned it (device_id_to_physical_device_id)",
            ),
            (
                "main-2026-09, v0.27.1rc1",
                'typed config: "false" as a string turns it off; before, any non-empty string '
                "kept it on",
            ),
        ),
    ),
    # --- multistream ------------------------------------------------------------------------------
    _d(
        "multistream_overlap_shared_expert",
        "multistream",
        "device",
        "per_step",
        "run the shared experts on a second stream, overlapped with the routed experts",
        detail="Device side. In a MoE layer with shared experts, the shared-expert MLP does not "
        "depend on the routing result, so it can run on its own stream while the routed path "
        "does its token dispatch, expert compute and combine; the input gather of the shared "
        "path overlaps the routed path's input transform. It acts on every MoE layer of every "
        "step. Collective communication (the TP all-gather among them) must stay on the default "
        "stream: issuing a collective from the side stream can deadlock HCCL across process "
        "groups. vLLM-Ascend switches it off silently when enable_fused_mc2 is 1, because the "
        "fused dispatch-FFN-combine kernel leaves nothing to overlap with. If it is set but "
        "shows no effect, check enable_fused_mc2 first.",
        verify=(
            SHOW_EFFECTIVE + " (it reports the fused-mc2-disables-overlap rewrite)",
            "a profiler timeline shows the shared-expert kernels on a second stream",
        ),
        failure=(
            "silently off under enable_fused_mc2 = 1: the overlap you asked for never happens",
            "models without shared experts: nothing to overlap, no effect",
        ),
    ),
    _d(
        "multistream_dsv4_dsa_overlap",
        "multistream",
        "device",
        "per_step",
        "split DeepSeek-style MLA/DSA attention prologue work across two streams",
        detail="Device side. The attention prologue of DeepSeek-style sparse attention (MLA "
        "with the DSA indexer) is a chain of Vector and Cube kernels. With this on, the chain "
        "is cut into stages spread over the main stream and a second stream, with events "
        "ordering them, so Vector work of one stage runs while another stage uses the Cube "
        "units, without two Cube-heavy stages fighting for them. It acts on every attention "
        "layer of every step. Turning it off is the fallback when the overlap is suspected of "
        "a wrong result, a hang or a slowdown.",
        verify=("a profiler timeline shows prologue kernels on two streams",),
        failure=("no effect on models without DSA-style sparse attention",),
    ),
    # --- graph and compilation --------------------------------------------------------------------
    _section("xlite_graph_config", "graph", "device", "xlite graph mode"),
    _d(
        "xlite_graph_config.enabled",
        "graph",
        "device",
        "load",
        "run decode through the xlite graph runtime instead of ACL graphs",
        detail="Device side: captures and replays the model through xlite, which cuts the host "
        "cost of launching kernels one by one. Only some model families are supported.",
        verify=(SHOW_EFFECTIVE,),
        failure=(
            "refused with speculative decoding other than one token, with pipeline "
            "parallelism, or with an unsupported block size",
        ),
    ),
    _d(
        "xlite_graph_config.full_mode",
        "graph",
        "device",
        "load",
        "capture prefill as well as decode in the xlite graph",
        detail="Without speculative decoding it also makes vLLM's cudagraph mode NONE, which "
        "turns the Ascend compilation passes off.",
    ),
    _section("ascend_compilation_config", "graph", "device", "Ascend graph compilation"),
    _d(
        "ascend_compilation_config.enable_npugraph_ex",
        "graph",
        "device",
        "load",
        "compile captured graphs with the npugraph_ex backend",
        detail="Device side: a graph backend that fuses and schedules the captured graph "
        "ahead of time. Written back to false in eager and piecewise graph modes.",
        verify=(SHOW_EFFECTIVE,),
    ),
    _d(
        "ascend_compilation_config.enable_static_kernel",
        "graph",
        "device",
        "load",
        "build static-shape kernels for the captured graph sizes",
        detail="Needs enable_npugraph_ex; costs compile time at start-up for faster replays.",
        failure=("refused without enable_npugraph_ex; forced off in eager mode",),
    ),
    _d(
        "ascend_compilation_config.fuse_norm_quant",
        "graph",
        "device",
        "load",
        "fuse RMSNorm with the following quantization in the compiled graph",
    ),
    _d(
        "ascend_compilation_config.fuse_qknorm_rope",
        "graph",
        "device",
        "load",
        "fuse Q/K normalization with rotary embedding in the compiled graph",
    ),
    _d(
        "ascend_compilation_config.fuse_muls_add",
        "graph",
        "device",
        "load",
        "fuse a multiply-by-scalar and the add after it in the compiled graph",
    ),
    _d(
        "ascend_compilation_config.fuse_allreduce_rms",
        "graph",
        "device",
        "load",
        "fuse the TP all-reduce with the RMSNorm after it (v0.23.0 only)",
    ),
    _section("ascend_fusion_config", "kernels", "device", "operator fusion"),
    _d(
        "ascend_fusion_config.fusion_ops_gmmswigluquant",
        "kernels",
        "device",
        "load",
        "use the fused grouped-matmul + SwiGLU + quantize kernel in quantized MoE layers",
    ),
    # --- parallelism ------------------------------------------------------------------------------
    _section(
        "finegrained_tp_config",
        "parallel",
        "device",
        "per-module tensor parallel",
        detail="Gives single modules (o_proj, lm_head, embedding, dense MLP) a TP size of "
        "their own, independent of --tensor-parallel-size, mostly for MoE models run with DP.",
    ),
    _d(
        "finegrained_tp_config.oproj_tensor_parallel_size",
        "parallel",
        "device",
        "load",
        "TP size of the attention output projection",
        failure=("only with --tensor-parallel-size 1, on a decode node, for MoE models",),
    ),
    _d(
        "finegrained_tp_config.lmhead_tensor_parallel_size",
        "parallel",
        "device",
        "load",
        "TP size of the LM head",
    ),
    _d(
        "finegrained_tp_config.embedding_tensor_parallel_size",
        "parallel",
        "device",
        "load",
        "TP size of the token embedding",
    ),
    _d(
        "finegrained_tp_config.mlp_tensor_parallel_size",
        "parallel",
        "device",
        "load",
        "TP size of the dense MLP layers",
    ),
    _d(
        "finegrained_tp_config.olora_tensor_parallel_size",
        "parallel",
        "device",
        "load",
        "TP size of the low-rank output projection of MLA",
    ),
    _d(
        "enable_shared_expert_dp",
        "parallel",
        "device",
        "load",
        "run shared experts data-parallel instead of tensor-parallel",
        detail="Each rank keeps the whole shared expert and runs it on its own tokens, saving "
        "the all-reduce of a tensor-parallel shared expert. Needs expert parallel and TP > 1, "
        "else it is silently off.",
        verify=(SHOW_EFFECTIVE,),
    ),
    _d(
        "enable_prefill_mc2",
        "parallel",
        "device",
        "per_step",
        "use MC2 (fused communication and compute) for MoE dispatch in prefill too",
    ),
    _d(
        "enable_fused_mc2",
        "moe",
        "device",
        "per_step",
        "pick a fused MoE dispatch/compute/combine kernel (0 off)",
        detail="Device side. 1 selects the kernel that fuses dispatch, expert FFN and combine "
        "in one operator; 2 (v0.23.0) the fused dispatch-grouped-matmul-combine for decode. "
        "Fusing removes the gaps between communication and compute, and with them the room "
        "for shared-expert overlap, so 1 turns multistream_overlap_shared_expert off. Also "
        "read from VLLM_ASCEND_ENABLE_FUSED_MC2 when the key is absent.",
        verify=(SHOW_EFFECTIVE,),
        failure=(
            "a value outside the version's choices fails start-up or the first MoE layer",
            "where CANN MegaMoE is installed, 1 falls back to 0 for models outside its shape "
            "limits",
        ),
    ),
    _d(
        "enable_mc2_hierarchy_comm",
        "parallel",
        "device",
        "per_step",
        "two-level MC2 communication: within the server first, then across servers",
        failure=("only some SoCs and expert counts; not with enable_fused_mc2",),
    ),
    _d(
        "enable_flashcomm1",
        "parallel",
        "device",
        "per_step",
        "sequence-parallel communication (FlashComm1): reduce-scatter/all-gather in place of "
        "all-reduce",
        detail="Read on the lines up to v0.26.0rc1; main only logs that it is deprecated.",
    ),
    _d(
        "enable_matmul_allreduce",
        "parallel",
        "device",
        "per_step",
        "fuse a matmul with the all-reduce after it (v0.23.0)",
    ),
    _d(
        "enable_flashcomm2_parallel_size",
        "parallel",
        "device",
        "per_step",
        "group size of FlashComm2's output-projection communication (v0.23.0; 0 off)",
    ),
    _d(
        "dp_allreduce_on_npu",
        "parallel",
        "both",
        "per_step",
        "do the DP engines' per-step metadata all-reduce on the NPU instead of the CPU (v0.23.0)",
    ),
    _d(
        "layer_sharding",
        "parallel",
        "device",
        "load",
        "shard chosen layers' weights across ranks (v0.23.0, prefill nodes)",
    ),
    _d(
        "multistream_overlap_gate",
        "multistream",
        "device",
        "per_step",
        "compute the MoE router gate on a second stream (v0.23.0)",
    ),
    _d(
        "enable_dsa_cp",
        "parallel",
        "device",
        "per_step",
        "context parallelism for DSA sparse attention",
        failure=("only for models with the DSA indexer",),
    ),
    # --- MoE and EPLB -----------------------------------------------------------------------------
    _d(
        "mega_moe_max_tokens",
        "moe",
        "device",
        "load",
        "the most tokens one MegaMoE call handles (buffers are sized for it)",
    ),
    _d(
        "mix_placement",
        "moe",
        "device",
        "load",
        "place shared and routed experts together in one expert table",
        failure=("conflicts with shared-expert DP and shared-expert overlap",),
    ),
    _section(
        "eplb_config",
        "moe",
        "both",
        "expert-parallel load balancing (EPLB)",
        detail="Moves hot experts and adds redundant copies so expert-parallel ranks carry "
        "similar loads; unknown sub-keys are refused.",
    ),
    _d(
        "eplb_config.dynamic_eplb",
        "moe",
        "both",
        "periodic",
        "rebalance expert placement while serving, from measured expert load",
        failure=("needs DYNAMIC_EPLB or EXPERT_MAP_RECORD set in the environment",),
    ),
    _d(
        "eplb_config.expert_map_path",
        "moe",
        "device",
        "load",
        "a JSON expert placement to load at start-up (static EPLB)",
        failure=("a path not ending in .json is refused",),
    ),
    _d(
        "eplb_config.expert_heat_collection_interval",
        "moe",
        "host",
        "periodic",
        "steps between expert-load collections",
    ),
    _d(
        "eplb_config.algorithm_execution_interval",
        "moe",
        "host",
        "periodic",
        "steps between runs of the placement algorithm",
    ),
    _d(
        "eplb_config.expert_map_record_path",
        "moe",
        "host",
        "periodic",
        "where to write the expert placement it computes (turns dynamic EPLB on)",
    ),
    _d(
        "eplb_config.num_redundant_experts",
        "moe",
        "device",
        "load",
        "extra expert copies to spread hot experts over",
    ),
    _d(
        "eplb_config.eplb_policy_type",
        "moe",
        "host",
        "periodic",
        "which placement algorithm EPLB runs (0-3)",
    ),
    _d(
        "eplb_config.eplb_heat_collection_stage",
        "moe",
        "host",
        "periodic",
        "which phase's expert load counts: all, prefill or decode",
    ),
    _d(
        "eplb_config.load_collection_phase",
        "moe",
        "host",
        "periodic",
        "the phase whose load is collected (newer spelling beside heat_collection_stage)",
    ),
    # --- kernels and weights ----------------------------------------------------------------------
    _d(
        "enable_mlapo",
        "kernels",
        "device",
        "per_step",
        "use the fused MLA prologue kernel (MLAPO) for DeepSeek-style attention",
    ),
    _d(
        "weight_nz_mode",
        "kernels",
        "device",
        "load",
        "store weights in the NZ fractal layout: 0 off, 1 quantized weights, 2 also BF16/FP16",
        detail="NZ is the blocked layout the Cube unit reads fastest; converting at load time "
        "costs memory traffic once and saves it on every matmul.",
    ),
    _d(
        "enable_transpose_kv_cache_by_block",
        "kernels",
        "device",
        "per_step",
        "use the fused kernel that transposes KV cache blocks",
    ),
    _d(
        "pa_shape_list",
        "kernels",
        "device",
        "load",
        "batch sizes for which paged-attention kernels are prepared ahead",
    ),
    _d(
        "enable_sparse_sfa_c8",
        "kernels",
        "device",
        "per_step",
        "8-bit KV cache for the sparse (SFA) attention path",
    ),
    _d(
        "enable_sparse_li_c8",
        "kernels",
        "device",
        "per_step",
        "8-bit cache for the lightning indexer of sparse attention",
    ),
    _d(
        "enable_sparse_c8",
        "kernels",
        "device",
        "per_step",
        "8-bit caches for sparse attention (one switch on v0.24.0rc1 / v0.25.1rc1)",
    ),
    _d(
        "c8_enable_reshape_optim",
        "kernels",
        "device",
        "per_step",
        "a faster reshape path for the 8-bit indexer cache",
        failure=("needs enable_sparse_li_c8",),
    ),
    _d(
        "enable_async_exponential",
        "spec",
        "device",
        "per_step",
        "draw the sampling noise asynchronously, ahead of the step (v0.23.0)",
    ),
    # --- KV cache and disaggregated prefill -------------------------------------------------------
    _d(
        "enable_kv_nz",
        "kv",
        "device",
        "per_step",
        "keep the KV cache in NZ layout (MLA models, decode nodes)",
    ),
    _section(
        "sparse_kv_offload_config",
        "kv",
        "both",
        "sparse KV offload",
        detail="Keeps most of a sparse-attention model's KV cache in host DRAM and fetches the "
        "top-k blocks each step.",
    ),
    _d(
        "sparse_kv_offload_config.enabled",
        "kv",
        "both",
        "per_step",
        "offload the KV cache to host memory for sparse attention",
        failure=("sparse-attention models only, no PP, decode nodes only",),
    ),
    _d(
        "sparse_kv_offload_config.topk_buffer_size",
        "kv",
        "device",
        "load",
        "device buffer for the fetched top-k KV entries",
    ),
    _d(
        "sparse_kv_offload_config.dram_size_per_dp_GB",
        "kv",
        "host",
        "load",
        "host memory per DP engine for the offloaded cache, in GB",
    ),
    _d(
        "sparse_kv_offload_config.keep_device_kv_cache",
        "kv",
        "device",
        "load",
        "keep a full device copy too (a debugging aid)",
    ),
    _section("hamming_sparse", "kv", "device", "Hamming-distance sparse attention (v0.23.0)"),
    _d(
        "hamming_sparse.enabled",
        "kv",
        "device",
        "per_step",
        "select KV blocks by Hamming distance of hashed keys",
    ),
    _d(
        "hamming_sparse.sparse_json_location",
        "kv",
        "device",
        "load",
        "the JSON file with the hashing parameters",
    ),
    _d(
        "enable_hamming_sparse",
        "kv",
        "device",
        "per_step",
        "the attention-side switch of Hamming sparse attention (v0.23.0)",
    ),
    _section("weight_prefetch_config", "kernels", "device", "weight prefetch (v0.23.0)"),
    _d(
        "weight_prefetch_config.enabled",
        "kernels",
        "device",
        "per_step",
        "prefetch the next layer's weights into cache while this layer computes",
    ),
    _d(
        "weight_prefetch_config.prefetch_ratio",
        "kernels",
        "device",
        "per_step",
        "the share of each weight to prefetch, per module",
    ),
    # --- scheduler --------------------------------------------------------------------------------
    _section("scheduler_config", "scheduler", "host", "Ascend scheduler"),
    _d(
        _SCHED + "enable_balance_scheduling",
        "scheduler",
        "host",
        "per_step",
        "balance running requests across DP engines when scheduling",
        also=_nested(_SCHED + "enable_balance_scheduling"),
        failure=("not with PD disaggregation",),
    ),
    _d(
        _SCHED + "recompute_scheduler_enable",
        "scheduler",
        "host",
        "per_step",
        "on a decode node, recompute preempted requests instead of swapping",
        also=_nested(_SCHED + "recompute_scheduler_enable"),
    ),
    _section(_SRF, "scheduler", "host", "short-request-first scheduling", also=_nested(_SRF)),
    _d(
        _SRF + ".enabled",
        "scheduler",
        "host",
        "per_step",
        "schedule short prompts ahead of long ones",
        also=_nested(_SRF + ".enabled"),
    ),
    _d(
        _SRF + ".threshold",
        "scheduler",
        "host",
        "per_step",
        "prompt length, in tokens, below which a request counts as short",
        also=_nested(_SRF + ".threshold"),
    ),
    _d(
        _SRF + ".long_max_wait_ms",
        "scheduler",
        "host",
        "per_step",
        "how long a long request may wait before it goes first anyway (0: no limit)",
        also=_nested(_SRF + ".long_max_wait_ms"),
    ),
    _section(_PROF, "scheduler", "host", "profiling-based chunked prefill", also=_nested(_PROF)),
    _d(
        _PROF + ".enabled",
        "scheduler",
        "host",
        "per_step",
        "size prefill chunks from measured step times",
        also=_nested(_PROF + ".enabled"),
    ),
    _d(
        _PROF + ".smooth_factor",
        "scheduler",
        "host",
        "per_step",
        "smoothing of the measured step times (0-1]",
        also=_nested(_PROF + ".smooth_factor"),
    ),
    _d(
        _PROF + ".min_chunk",
        "scheduler",
        "host",
        "per_step",
        "smallest prefill chunk, in tokens",
        also=_nested(_PROF + ".min_chunk"),
    ),
    _d(
        _PROF + ".need_timing",
        "scheduler",
        "host",
        "per_step",
        "time steps for the chunk model (defaults to enabled)",
        also=_nested(_PROF + ".need_timing"),
    ),
    _d(
        _PROF + ".max_fit_chunk",
        "scheduler",
        "host",
        "per_step",
        "how many timings the chunk-size fit keeps",
        also=_nested(_PROF + ".max_fit_chunk"),
    ),
    _section(_BATCH, "scheduler", "host", "batch-job scheduling"),
    _d(
        _BATCH + ".enabled",
        "scheduler",
        "host",
        "per_step",
        "admit offline batch jobs into spare capacity",
    ),
    _d(_BATCH + ".max_jobs", "scheduler", "host", "per_step", "batch jobs admitted at once"),
    _d(
        _BATCH + ".reserve_margin_blocks",
        "scheduler",
        "host",
        "per_step",
        "KV blocks kept free beyond a batch job's estimate",
    ),
    _d(
        _BATCH + ".reserve_max_blocks",
        "scheduler",
        "host",
        "per_step",
        "the most KV blocks reserved for one batch job",
    ),
    _d(
        _BATCH + ".low_available_tokens_threshold",
        "scheduler",
        "host",
        "per_step",
        "free-token level below which batch jobs stop being admitted",
    ),
    _d(
        _BATCH + ".short_decode_token_threshold",
        "scheduler",
        "host",
        "per_step",
        "decode length under which a job counts as short",
    ),
    _section(_DYN, "scheduler", "host", "dynamic DP load balancing (DyntraLB)"),
    _d(
        _DYN + ".enabled",
        "scheduler",
        "host",
        "per_step",
        "shift requests between DP engines to close step-time bubbles",
        failure=("decode nodes with DP > 1 only; not with balance scheduling",),
    ),
    _d(
        _DYN + ".enable_diagnostics",
        "scheduler",
        "host",
        "per_step",
        "log DyntraLB's decisions",
    ),
    _d(_DYN + ".mode", "scheduler", "host", "per_step", "static or dynamic balancing"),
    _d(_DYN + ".start_step", "scheduler", "host", "per_step", "the step balancing starts at"),
    _d(
        _DYN + ".end_step",
        "scheduler",
        "host",
        "per_step",
        "the step balancing stops at (-1: never)",
    ),
    _d(
        _DYN + ".bubble_threshold",
        "scheduler",
        "host",
        "per_step",
        "the step-time gap between engines that triggers a move",
    ),
    _d(
        _DYN + ".long_req_block_threshold",
        "scheduler",
        "host",
        "per_step",
        "KV blocks above which a request counts as long",
    ),
    _d(
        _DYN + ".dynamic_max_step",
        "scheduler",
        "host",
        "per_step",
        "the longest stretch of steps the dynamic mode plans for",
    ),
    _d(
        "SLO_limits_for_dynamic_batch",
        "scheduler",
        "host",
        "per_step",
        "latency target of the dynamic-batch scheduler (v0.23.0; -1 off)",
    ),
    # --- speculative decoding and sampling --------------------------------------------------------
    _section("dynamic_spec_config", "spec", "host", "dynamic speculative decoding"),
    _d(
        "dynamic_spec_config.method",
        "spec",
        "host",
        "per_step",
        "the method that varies the number of draft tokens (dspark, dflash)",
    ),
    _d(
        "dynamic_spec_config.method_params",
        "spec",
        "host",
        "per_step",
        "parameters of that method",
    ),
    _d(
        "draft_window_size",
        "spec",
        "host",
        "per_step",
        "how many past tokens the draft proposer looks at",
    ),
    _section("rejection_sampler_config", "spec", "device", "rejection sampler"),
    _d(
        "rejection_sampler_config.enable_block_verify",
        "spec",
        "device",
        "per_step",
        "verify draft tokens as a block instead of one by one",
    ),
    _d(
        "rejection_sampler_config.enable_entropy_verify",
        "spec",
        "device",
        "per_step",
        "accept draft tokens by an entropy-based test",
    ),
    _d(
        "rejection_sampler_config.posterior_threshold",
        "spec",
        "device",
        "per_step",
        "probability above which a draft token is accepted",
    ),
    _d(
        "rejection_sampler_config.posterior_alpha",
        "spec",
        "device",
        "per_step",
        "weight of the posterior in the acceptance test",
    ),
    _d(
        "enable_reduce_sample",
        "spec",
        "device",
        "per_step",
        "sample on each TP shard of the vocabulary and reduce the result (experimental)",
        failure=("not with a finegrained LM-head TP, not on prefill (producer) nodes",),
    ),
    # --- debug, logging, RL -----------------------------------------------------------------------
    _d(
        "dump_config",
        "debug",
        "device",
        "per_step",
        "tensor dump settings for the msprobe debugger, as an object",
        failure=("not together with dump_config_path",),
    ),
    _d(
        "dump_config_path",
        "debug",
        "device",
        "per_step",
        "a file with the msprobe dump settings",
    ),
    _d(
        "ascend_log_path",
        "debug",
        "host",
        "startup",
        "where vLLM-Ascend writes its own log files",
    ),
    _d(
        "msmonitor_use_daemon",
        "debug",
        "host",
        "startup",
        "report to the msmonitor profiling daemon",
    ),
    _d(
        "refresh",
        "debug",
        "host",
        "startup",
        "rebuild the cached Ascend config instead of reusing it",
    ),
    _d(
        "enable_sleep_mode_extra_cleanup",
        "debug",
        "device",
        "startup",
        "free extra device memory when the engine sleeps (older spelling of the RL option)",
    ),
    _section("rl_config", "debug", "both", "reinforcement-learning integration"),
    _d(
        "rl_config.enabled",
        "debug",
        "both",
        "startup",
        "serve as the rollout engine of an RL trainer",
        detail="Weights are swapped in from the trainer, so NZ weight layout is turned off.",
    ),
    _d(
        "rl_config.sleep_mode_extra_cleanup",
        "debug",
        "device",
        "startup",
        "free extra device memory when the engine sleeps between rollouts",
    ),
    _d(
        "rl_config.enable_training_consistency",
        "debug",
        "device",
        "per_step",
        "compute the way the trainer does, so rollouts match training numerics",
    ),
    _d(
        "rl_config.enable_batch_invariant",
        "debug",
        "device",
        "per_step",
        "kernels whose results do not depend on the batch composition",
    ),
)

# The keys each check-config rule (ascendtune.core.vllm_config.rules.RULES) reads or rewrites.
# Facts from the command line (TP, DP, kv_role, the model) are not keys and are not listed.
RULE_KEYS: dict[str, tuple[str, ...]] = {
    "xlite-speculative": ("xlite_graph_config.enabled",),
    "xlite-pipeline-parallel": ("xlite_graph_config.enabled",),
    "xlite-block-size": ("xlite_graph_config.enabled",),
    "compilation-310p": (
        "ascend_compilation_config.enable_npugraph_ex",
        "ascend_compilation_config.enable_static_kernel",
    ),
    "static-kernel-needs-npugraph-ex": (
        "ascend_compilation_config.enable_static_kernel",
        "ascend_compilation_config.enable_npugraph_ex",
    ),
    "compilation-eager": (
        "ascend_compilation_config.enable_npugraph_ex",
        "ascend_compilation_config.enable_static_kernel",
        "xlite_graph_config.full_mode",
    ),
    "compilation-piecewise": (
        "ascend_compilation_config.enable_npugraph_ex",
        "ascend_compilation_config.enable_static_kernel",
    ),
    "finegrained-oproj-tp": ("finegrained_tp_config.oproj_tensor_parallel_size",),
    "finegrained-graph-mode": (
        "finegrained_tp_config.oproj_tensor_parallel_size",
        "xlite_graph_config.full_mode",
    ),
    "finegrained-decode-only": (
        "finegrained_tp_config.oproj_tensor_parallel_size",
        "finegrained_tp_config.olora_tensor_parallel_size",
    ),
    "finegrained-moe-only": (
        "finegrained_tp_config.oproj_tensor_parallel_size",
        "finegrained_tp_config.lmhead_tensor_parallel_size",
        "finegrained_tp_config.embedding_tensor_parallel_size",
        "finegrained_tp_config.mlp_tensor_parallel_size",
        "finegrained_tp_config.olora_tensor_parallel_size",
    ),
    "finegrained-dp-divisible": (
        "finegrained_tp_config.oproj_tensor_parallel_size",
        "finegrained_tp_config.lmhead_tensor_parallel_size",
        "finegrained_tp_config.embedding_tensor_parallel_size",
        "finegrained_tp_config.mlp_tensor_parallel_size",
        "finegrained_tp_config.olora_tensor_parallel_size",
    ),
    "finegrained-needs-recompute": (
        "finegrained_tp_config.oproj_tensor_parallel_size",
        "scheduler_config.recompute_scheduler_enable",
    ),
    "eplb-path-not-json": ("eplb_config.expert_map_path", "eplb_config.expert_map_record_path"),
    "eplb-record-enables-dynamic": (
        "eplb_config.expert_map_record_path",
        "eplb_config.dynamic_eplb",
    ),
    "eplb-dynamic-env": ("eplb_config.dynamic_eplb",),
    "eplb-model-runner": ("eplb_config", "eplb_config.load_collection_phase"),
    "profiling-need-timing-ignored": (_PROF + ".enabled", _PROF + ".need_timing"),
    "dyntra-end-before-start": (_DYN + ".start_step", _DYN + ".end_step"),
    "profiling-min-chunk-clamped": (_PROF + ".enabled", _PROF + ".min_chunk"),
    "profiling-needs-pp": (_PROF + ".enabled",),
    "profiling-with-balance": (_SCHED + "enable_balance_scheduling", _PROF + ".enabled"),
    "hamming-sparse-keys": ("hamming_sparse", "hamming_sparse.enabled"),
    "dump-config-conflict": ("dump_config", "dump_config_path"),
    "shared-expert-dp-off": ("enable_shared_expert_dp",),
    "shared-expert-dp-enables-sp": ("enable_shared_expert_dp", "enable_flashcomm1"),
    "fused-mc2-minimax": ("enable_fused_mc2",),
    "fused-mc2-disables-overlap": ("enable_fused_mc2", "multistream_overlap_shared_expert"),
    "outer-binder-narrowed": ("enable_cpu_binding",),
    "fused-mc2-megamoe-fallback": ("enable_fused_mc2",),
    "kv-nz-mla-only": ("enable_kv_nz",),
    "kv-nz-decode-only": ("enable_kv_nz",),
    "sparse-c8-needs-sparse-model": ("enable_sparse_sfa_c8", "enable_sparse_li_c8"),
    "c8-reshape-needs-li-c8": ("c8_enable_reshape_optim", "enable_sparse_li_c8"),
    "mc2-hierarchy-soc": ("enable_mc2_hierarchy_comm",),
    "mc2-hierarchy-experts": ("enable_mc2_hierarchy_comm",),
    "reduce-sample-experimental": ("enable_reduce_sample",),
    "reduce-sample-lmhead-tp": (
        "enable_reduce_sample",
        "finegrained_tp_config.lmhead_tensor_parallel_size",
    ),
    "reduce-sample-producer": ("enable_reduce_sample",),
    "mix-placement-conflict": (
        "mix_placement",
        "enable_shared_expert_dp",
        "multistream_overlap_shared_expert",
    ),
    "sparse-kv-offload-model": ("sparse_kv_offload_config.enabled",),
    "sparse-kv-offload-pp": ("sparse_kv_offload_config.enabled",),
    "sparse-kv-offload-decode-only": (
        "sparse_kv_offload_config.enabled",
        "sparse_kv_offload_config.keep_device_kv_cache",
    ),
    "sparse-kv-offload-topk": (
        "sparse_kv_offload_config.enabled",
        "sparse_kv_offload_config.topk_buffer_size",
    ),
    "sparse-kv-offload-sfa-c8": ("sparse_kv_offload_config.enabled", "enable_sparse_sfa_c8"),
    "rl-forces-weight-nz-off": ("rl_config.enabled", "weight_nz_mode"),
    "fused-mc2-with-hierarchy": ("enable_fused_mc2", "enable_mc2_hierarchy_comm"),
    "balance-scheduling-pd": (_SCHED + "enable_balance_scheduling",),
    "srf-policy": (_SRF + ".enabled",),
    "srf-with-batch-job": (_SRF + ".enabled", _BATCH + ".enabled"),
    "srf-with-profiling-chunk": (_SRF + ".enabled", _PROF + ".enabled"),
    "srf-on-decode-node": (_SRF + ".enabled",),
    "dyntra-with-balance": (_DYN + ".enabled", _SCHED + "enable_balance_scheduling"),
    "dyntra-decode-only": (_DYN + ".enabled",),
    "dyntra-needs-dp": (_DYN + ".enabled",),
    "dyntra-with-profiling-chunk": (_DYN + ".enabled", _PROF + ".enabled"),
    "recompute-off-on-producer": (_SCHED + "recompute_scheduler_enable",),
    "recompute-decode-only": (_SCHED + "recompute_scheduler_enable",),
    "dsa-cp-needs-indexer": ("enable_dsa_cp",),
    "numa-bind-ignored": ("enable_cpu_binding",),
    "async-exponential-batch-invariant": ("enable_async_exponential",),
    "layer-sharding-producer-only": ("layer_sharding",),
    "flashcomm1-needs-tp": ("enable_flashcomm1",),
    "flashcomm1-moe-needs-ep": ("enable_flashcomm1",),
    "dsa-cp-needs-flashcomm1": ("enable_dsa_cp", "enable_flashcomm1"),
    "cpu-binding-not-arm": ("enable_cpu_binding",),
    "two-cpu-binders": ("enable_cpu_binding",),
}


def by_path() -> dict[str, KeyDoc]:
    """Every spelling of every key (its path and its `also` paths) -> its entry."""
    out: dict[str, KeyDoc] = {}
    for d in DOCS:
        for p in (d.path, *d.also):
            out[p] = d
    return out
