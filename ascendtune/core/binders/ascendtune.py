"""ascendtune as a binder: its launch form (`ascendtune bind --rank R -- COMMAND`) sets the
mask before exec; `ascendtune bind --workers` (and its `--watch`, and the agent) sets every
thread's mask once the server is up."""

from __future__ import annotations

from ascendtune.core.binders.model import Action, Binder, Evidence, Masks, Worker

INFO = Binder(
    id="ascendtune",
    name="ascendtune bind",
    family="ascendtune",
    configured=("ascendtune bind --rank R -- COMMAND", "ascendtune bind --workers [--watch]"),
    acts="after start",
    threads=("main", "acl", "omp", "plugin", "rest"),
    on_narrower="narrow",
    narrower_note="it binds inside the cpuset; a plan outside it is refused (exit 5)",
    off="do not run `ascendtune bind` (stop `--watch` or the agent)",
    evidence=(Evidence("ascendtune/app/bind.py, app/workers.py", "this version", "source"),),
)


def launch_words(argv: tuple[str, ...]) -> tuple[str, ...] | None:
    """`ascendtune bind ... --` in front of a command line."""
    i = 0
    while i < len(argv) and "=" in argv[i] and not argv[i].startswith("-"):
        i += 1
    if i + 1 >= len(argv) or argv[i].rsplit("/", 1)[-1] != "ascendtune" or argv[i + 1] != "bind":
        return None
    end = argv.index("--", i) if "--" in argv[i:] else len(argv)
    return tuple(argv[i:end])


def act(w: Worker, m: Masks) -> Action | None:
    words = launch_words(w.argv)
    if words is None:
        for wr in w.wrappers:
            words = launch_words(wr)
            if words:
                break
    if words is None:
        return None
    return Action(
        INFO,
        " ".join(words),
        "binds",
        dict.fromkeys(m),
        "the command starts on its rank's CPUs (the plan's pool)",
        stage="launch",
    )
