# the compiled loops of _scanc.c (scan.native() loads them)

def newlines(data: bytes, begin: int, end: int, /) -> int: ...
def plain(data: bytes, /) -> bool: ...
def first_dirty(data: bytes, begin: int, end: int, /) -> int: ...
def stamps(
    data: bytes,
    begin: int,
    end: int,
    heads: tuple[bytes, ...],
    start: bytes | None,
    back_s: int,
    /,
) -> tuple[int, bytes | None]: ...
