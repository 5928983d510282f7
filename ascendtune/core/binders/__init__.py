"""Every binder that can act on an inference worker, one module each (where it is configured,
when it acts, which threads it touches, what it does on a narrower mask, its evidence), and the
chain that runs them in order on one worker (`chain.run`)."""

from __future__ import annotations

from ascendtune.core.binders.chain import BINDERS, Chain, ChainFinding, Switch, run, thread_class
from ascendtune.core.binders.model import (
    CLASS_WORDS,
    CLASSES,
    OWNERS,
    STAGES,
    Action,
    Binder,
    Evidence,
    Owner,
    Pool,
    Worker,
)

__all__ = [
    "BINDERS",
    "CLASSES",
    "CLASS_WORDS",
    "OWNERS",
    "STAGES",
    "Action",
    "Binder",
    "Chain",
    "ChainFinding",
    "Evidence",
    "Owner",
    "Pool",
    "Switch",
    "Worker",
    "run",
    "thread_class",
]
