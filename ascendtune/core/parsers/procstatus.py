"""One `Key:` line of a /proc status file, as doctor's process scan reads it.

A module of its own, apart from `core.parsers.procfs` (the records `watch` makes per thread,
two frozen dataclasses): doctor needs only this function, and loads no procfs, 7.9 M
instructions of its 590 M (callgrind; docs/startup.md)."""


def status_int(text: str | None, key: str, base: int = 10) -> int | None:
    """The first number of a `Key:` line of a /proc status file (CapEff in hex: base 16)."""
    if text is None:
        return None
    for line in text.splitlines():
        if line.startswith(key + ":"):
            raw = line.split(":", 1)[1].split()
            try:
                return int(raw[0], base) if raw else None
            except ValueError:
                return None
    return None
