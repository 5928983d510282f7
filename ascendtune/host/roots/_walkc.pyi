# the compiled reads of _walkc.c (walker.walk_native() loads them)

from typing import Literal

def texts(
    dir_fd: int, under: str, names: tuple[str, ...], cap: int, absent: bool = False, /
) -> list[str | Literal[True] | None] | int: ...
def children(
    top_fd: int, names: list[str], file: str | None, links: str, skip_below: int, cap: int, /
) -> list[tuple[str | Literal[True] | None, list[str] | Literal[True] | None]]: ...
