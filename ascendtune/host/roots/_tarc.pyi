# the compiled member run of _tarc.c (archive.tar_native() loads it)

def members(
    buf: bytes,
    pos: int,
    files: dict[str, str],
    links: dict[str, str],
    names: list[str],
    max_members: int,
    max_file: int,
    kept: int,
    kept_cap: int,
    text_per_member: int,
    /,
) -> tuple[int, int]: ...
def pack(
    rels: list[str], start: int, files: dict[str, str], links: dict[str, str], room: int, /
) -> tuple[bytes, int]: ...
