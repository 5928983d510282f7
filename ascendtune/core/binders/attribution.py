"""Who set a thread's mask, where it can be told: the binders of the worker's chain that leave
exactly that mask on the thread's class, and what ascendtune itself wrote (its bind record).

The kernel does not say who called sched_setaffinity, so this never guesses beyond the chain:
one binder leaves the mask -> that binder ("exact"); several -> the latest in the chain's order,
the others named ("candidates"); none -> "unknown". A mask of every CPU the worker may use is
no binder's ("unbound"). ascendtune's own writes are known exactly: a record written in the
interval the change was seen in names it alone."""

from __future__ import annotations

from typing import Literal, NamedTuple

from ascendtune.core.binders.chain import Chain, thread_class
from ascendtune.core.binders.model import CLASS_WORDS
from ascendtune.core.bindplan import BindTarget
from ascendtune.core.cpulist import CpuSet

How = Literal["exact", "candidates", "unknown", "unbound"]
HOWS: tuple[How, ...] = ("exact", "candidates", "unknown", "unbound")
UNKNOWN_WORDS = "unknown (no binder on this worker's chain leaves this mask)"
OWN_ID, OWN_NAME, OWN_STAGE = "ascendtune", "ascendtune bind", "after start"


class Own(NamedTuple):
    """What ascendtune last wrote to one process (the record a bind leaves beside its lock):
    the target, whether by roles, and when (time.monotonic(), one clock for every process)."""

    target: BindTarget
    use_roles: bool
    at: float
    by: str = "ascendtune bind"

    def mask_for(self, name: str) -> CpuSet:
        return self.target.thread_target(name, use_roles=self.use_roles)[1]


class SetBy(NamedTuple):
    """Who set a thread's mask, as far as the chain and ascendtune's record tell."""

    how: How
    binder: str | None = None  # the binder's id (the latest of the candidates)
    name: str | None = None
    stage: str | None = None
    candidates: tuple[str, ...] = ()  # every binder that leaves this mask, in chain order
    note: str = ""

    @property
    def words(self) -> str:
        if self.how == "unknown":
            return UNKNOWN_WORDS + (f"; {self.note}" if self.note else "")
        if self.how == "unbound":
            return "no binder: " + self.note
        text = f"{self.name} ({self.stage})"
        if self.how == "candidates":
            others = [c for c in self.candidates if c != self.binder]
            text += f", or {' or '.join(others)}"
        return text

    @property
    def short(self) -> str:
        """A table cell: the binder's id, `id?` for the latest of several, `?` unknown."""
        if self.how == "exact":
            return self.binder or "?"
        if self.how == "candidates":
            return "/".join(self.candidates[::-1]) + "?"
        return "-" if self.how == "unbound" else "?"

    def to_json(self) -> dict[str, object]:
        return {
            "binder": self.binder,
            "name": self.name,
            "stage": self.stage,
            "how": self.how,
            "candidates": list(self.candidates),
            "words": self.words,
        }


class _Leaves(NamedTuple):
    binder: str
    name: str
    stage: str


class Attributor:
    """One worker's chain, read once, turned into who leaves which mask on which class."""

    def __init__(self, chain: Chain | None, pid: int, why_none: str = "") -> None:
        self.pid = pid
        self.chain = chain
        self.why_none = why_none
        # class -> mask -> the binders that leave it there, in chain order
        self.leaves: dict[str, dict[CpuSet, list[_Leaves]]] = {}
        self.unknown: dict[str, list[str]] = {}  # class -> binders whose mask is not known here
        self.frame: CpuSet | None = None
        if chain is None:
            return
        self.frame = chain.worker.frame
        for cls, sets in chain.set_by.items():
            by_mask = self.leaves.setdefault(cls, {})
            for i, mask in sets:
                a = chain.actions[i]
                if mask is None:
                    self.unknown.setdefault(cls, []).append(a.binder.name)
                    continue
                got = by_mask.setdefault(mask, [])
                got[:] = [x for x in got if x.binder != a.binder.id]
                got.append(_Leaves(a.binder.id, a.binder.name, a.when))

    def attribute(
        self, tid: int, name: str, mask: CpuSet, own: Own | None = None, since: float | None = None
    ) -> SetBy:
        """Who set `mask` on thread tid (named `name`). since: when the thread was last seen
        on another mask (None: first seen now); ascendtune counts only if its record is that
        recent (a record written after `since` names it alone)."""
        cls = thread_class(tid, name, self.pid)
        found = list(self.leaves.get(cls, {}).get(mask, ()))
        if own is not None and own.mask_for(name) == mask:
            if since is not None and own.at > since:
                return SetBy("exact", OWN_ID, own.by, OWN_STAGE, (OWN_ID,))
            if since is None:
                found = [x for x in found if x.binder != OWN_ID]
                found.append(_Leaves(OWN_ID, own.by, OWN_STAGE))
        if len(found) == 1:
            x = found[0]
            return SetBy("exact", x.binder, x.name, x.stage, (x.binder,))
        if found:
            x = found[-1]
            return SetBy("candidates", x.binder, x.name, x.stage, tuple(f.binder for f in found))
        if self.frame is not None and mask == self.frame:
            return SetBy("unbound", note="every CPU the worker may use")
        notes = []
        if self.chain is None and self.why_none:
            notes.append(f"this worker's chain could not be read: {self.why_none}")
        if self.unknown.get(cls):
            what = CLASS_WORDS.get(cls, cls)
            notes.append(
                f"{', '.join(self.unknown[cls])} leave(s) a mask on the {what} not known here"
            )
        return SetBy("unknown", note="; ".join(notes))
