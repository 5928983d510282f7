"""`explain`: documents for one key, the listing by concern, the reference page, and the steps
of vLLM-Ascend's binding for one rank of a host."""

from __future__ import annotations

import json
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, NamedTuple

from ascendtune.app.options import THIS_HOST, HostSource, PlanOptions
from ascendtune.core import explain as core_explain
from ascendtune.core import vllm_ascend
from ascendtune.core.errors import AscendtuneError, UsageError
from ascendtune.core.explain_binding import BindingExplanation, explain_binding
from ascendtune.core.vllm_config import explain_data as data

if TYPE_CHECKING:
    from ascendtune.core.explain import KeyExplanation, ListedKey
    from ascendtune.core.model import Host
    from ascendtune.host.roots import Root

BINDING = "binding"  # `explain binding`: the binding steps, not a key
VERSIONS = "versions"  # `explain versions`: every version --target takes, not a key


class ExplainOptions(NamedTuple):
    """`explain`: a key (None: the listing of `plan.target`'s keys, `search` filtering them), or
    `binding`: the steps of vLLM-Ascend's binding for `rank` on the host, planned with `plan`."""

    key: str | None = None
    search: str | None = None
    rank: int = 0
    source: HostSource = THIS_HOST
    plan: PlanOptions = PlanOptions()


def resolve_target(target: str | None) -> str:
    """A listing needs one version: the one named, else the newest (no host is read)."""
    if target is None or target == "auto":
        return vllm_ascend.NEWEST.name
    return vllm_ascend.get(target).name


def versions_document() -> dict[str, Any]:
    """Every registry entry with its binding and where its schema comes from (ExplainVersions)."""
    from ascendtune.core.vllm_ascend.schemas import schema_source

    return {
        "newest": vllm_ascend.NEWEST.name,
        "versions": [
            {
                "name": e.name,
                "package_versions": list(e.package_versions),
                "released": e.released,
                "vllm": e.vllm,
                "source": e.source,
                "binding_impl": e.binding.impl,
                "binding_impl_evidence": e.binding.impl_evidence,
                "binding_call": e.binding.call,
                "binding_default": e.binding.on_by_default,
                "binding_runs": e.binding.runs or None,
                "npu_of_rank": e.binding.npu_of_rank if e.binding.ships else None,
                "data_parallel": e.binding.dp,
                "config_schema": schema_source(e),
                "facts": [
                    {"what": f.what, "evidence": f.evidence, "note": f.note} for f in e.facts
                ],
            }
            for e in vllm_ascend.ENTRIES
        ],
    }


class _Ends:
    """An explanation ends quietly: exit 0, no error after it."""

    @property
    def exit_code(self) -> int:
        return 0

    @property
    def error(self) -> AscendtuneError | None:
        return None


@dataclass(frozen=True)
class KeyReport(_Ends):
    """One key across every known version."""

    explanation: KeyExplanation


@dataclass(frozen=True)
class ListingReport(_Ends):
    """Every key of one version by concern (only those holding `search`)."""

    target: str
    search: str | None
    groups: dict[str, list[ListedKey]]


@dataclass(frozen=True)
class BindingReport(_Ends):
    """The steps of vLLM-Ascend's binding for one rank of a host."""

    host: Host
    explanation: BindingExplanation
    target_reason: str
    identity: dict[str, Any] | None = None


ExplainReport = KeyReport | ListingReport | BindingReport


def run(opts: ExplainOptions) -> ExplainReport:
    """`explain [KEY|binding]`: a key, the listing of opts.plan.target's keys (no key), or the
    binding steps for opts.rank on the host opts.source names."""
    if opts.key == BINDING:
        from ascendtune.app.hosts import load

        got = load(opts.source)
        report = binding(got.host, opts.plan, opts.rank, got.root)
        return replace(report, identity=got.identity)
    if opts.key is None:
        name = resolve_target(opts.plan.target)
        return ListingReport(name, opts.search, core_explain.listing(name, opts.search))
    return KeyReport(core_explain.explain_key(opts.key))


def document(report: ExplainReport) -> dict[str, Any]:
    """`explain --json` without schema_version (the printer adds it)."""
    if isinstance(report, KeyReport):
        return report.explanation.to_json()
    if isinstance(report, ListingReport):
        return listing_document(report)
    return binding_document(report, report.identity)


def listing_document(report: ListingReport) -> dict[str, Any]:
    return {
        "target": report.target,
        "search": report.search,
        "groups": [
            {
                "concern": c,
                "title": data.CONCERNS[c],
                "keys": [k.to_json() for k in ks],
            }
            for c, ks in report.groups.items()
        ],
        "count": sum(len(ks) for ks in report.groups.values()),
    }


def _show(v: Any) -> str:
    return json.dumps(v, ensure_ascii=False, sort_keys=True)


def _cell(row: dict[str, Any]) -> str:
    if row["status"] in ("present", "deprecated"):
        out = _show(row["default"]) if row.get("type") != "section" else "object"
        return out + (" (deprecated)" if row["status"] == "deprecated" else "")
    if row["status"] == "elsewhere":
        return f"as `{row['path']}`"
    return str(row["status"])


def markdown() -> str:
    """docs/config-reference.md: every key of every known version, by concern."""
    docs = data.DOCS
    every = {d.path: core_explain.explain_key(d.path).to_json() for d in docs}
    # one column per run of consecutive versions that agree on every key
    columns: list[list[str]] = []
    for n in vllm_ascend.VERSIONS:
        if columns and all(
            _cell(e["versions"][n]) == _cell(e["versions"][columns[-1][0]]) for e in every.values()
        ):
            columns[-1].append(n)
        else:
            columns.append([n])
    names = [c[0] for c in columns]
    heads = [c[0] if len(c) == 1 else f"{c[0]} … {c[-1]}" for c in columns]
    out = [
        "# vLLM-Ascend additional-config reference",
        "",
        "Generated by `ascendtune explain --markdown`; do not edit by hand. Defaults per version "
        "come from ascendtune's version tables, interactions from `check-config`'s rules. "
        "`ascendtune explain KEY` shows one key in full.",
        "",
        "Side: host (CPU threads, scheduling, memory) or device (what the NPU runs). When: "
        + "; ".join(f"`{w}` {t}" for w, t in data.WHEN_WORDS.items())
        + ".",
        "",
    ]
    for concern, title in data.CONCERNS.items():
        mine = [d for d in docs if d.concern == concern]
        if not mine:
            continue
        out += [f"## {title}", ""]
        out.append("| key | side | when | " + " | ".join(heads) + " | what it does |")
        out.append("|---|---|---|" + "---|" * len(names) + "---|")
        for d in mine:
            e = every[d.path]
            cells = [_cell(e["versions"][n]) for n in names]
            out.append(
                f"| `{d.path}` | {d.side} | {d.when} | "
                + " | ".join(c.replace("|", "\\|") for c in cells)
                + f" | {d.summary} |"
            )
        out.append("")
        for d in mine:
            e = every[d.path]
            if not (d.detail or e["interactions"] or d.failure):
                continue
            out += [f"### `{d.path}`", ""]
            if d.detail:
                out += [d.detail, ""]
            if e["interactions"]:
                out.append("Interactions:")
                out.append("")
                for i in e["interactions"]:
                    keys = ", ".join(f"`{k}`" for k in i["keys"])
                    rule = f"`{i['rule']}`" if i["rule"] else "not checked"
                    out.append(f"- {rule} ({keys or 'alone'}): {i['what']}")
                out.append("")
            if d.failure:
                out.append("Failure modes:")
                out.append("")
                out += [f"- {f}" for f in d.failure]
                out.append("")
    return "\n".join(out).rstrip() + "\n"


def binding(host: Host, opts: PlanOptions, rank: int, root: Root | None = None) -> BindingReport:
    """The steps vLLM-Ascend's binding takes for rank on host, under opts (policy ignored)."""
    from ascendtune.app.plan import build_request, resolve_version
    from ascendtune.core.planner import make_plan
    from ascendtune.core.planner.trace import VllmTrace

    req = build_request(host, opts._replace(policy="vllm-ascend"), root)
    reason = resolve_version(host, opts.target, root).reason
    if req.target is not None and not req.target.binding.ships:
        raise UsageError(
            f"vLLM-Ascend {req.target.name} ships no CPU binding: there are no steps to explain",
            "`ascendtune explain versions` shows which releases bind (v0.9.1rc2 on, with gaps)",
        )
    trace = VllmTrace()
    try:
        plan = make_plan(host, req._replace(policy="vllm-ascend"), trace=trace)
    except AscendtuneError as e:
        # the planner's hint names --policy, an option of `plan`: explain binding has none
        if e.hint and "--policy" in e.hint:
            e.hint = e.hint.replace("--policy", "ascendtune plan --policy")
        raise
    better: Any
    try:
        better = make_plan(host, req._replace(policy="numa-local"))
    except AscendtuneError as e:
        better = e.message
    return BindingReport(host, explain_binding(host, trace, plan, rank, better), reason)


def binding_document(
    report: BindingReport, identity: dict[str, Any] | None = None
) -> dict[str, Any]:
    return {
        **({"host": identity} if identity is not None else {}),
        "target_reason": report.target_reason,
        **report.explanation.to_json(),
    }
