# the compiled loops of _affinityc.c (masks.affinity_native() loads them)

from collections.abc import Iterable

def pool_pass(
    tids: list[int], at: int, want: Iterable[int], /
) -> tuple[list[int], list[tuple[int, frozenset[int]]], int]: ...
def survey(
    tids: list[int], want: Iterable[int], /
) -> tuple[list[int], list[tuple[int, frozenset[int]]]]: ...
