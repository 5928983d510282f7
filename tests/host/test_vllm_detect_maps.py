"""The site-packages folders found in a proc/PID/maps text: only the lines holding "-packages"
are parsed (vllm_detect._maps_sites), with the same result as parsing every line."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from ascendtune.host import vllm_detect


def every_line(text: str) -> list[str]:
    """The oracle: each line of the text split into its fields, the path matched."""
    out: list[str] = []
    for line in text.splitlines():
        parts = line.split(None, 5)
        if len(parts) == 6:
            m = vllm_detect._SITE.match(parts[5].strip())
            if m:
                out.append(m.group(1))
    return out


HEAD = "7f3a1c000000-7f3a1c021000 r-xp 00000000 08:01 1234"
PATHS = [
    "/usr/lib/python3/dist-packages/numpy/core/_multiarray.so",
    "/opt/venv/lib/python3.11/site-packages/torch/lib/libtorch.so",
    "/opt/venv/lib/python3.11/site-packages",
    "/home/u/site-packages-x/lib.so",
    "/a b/site-packages/x.so",
    "/srv/dist-packages/y.so (deleted)",
    "[stack]",
    "",
    "/x/-packages",
]
piece = st.one_of(
    st.sampled_from(PATHS).map(lambda p: f"{HEAD}                  {p}"),
    st.sampled_from(["\n", "\r", "\r\n", "\x85", "\u2028", " ", "-packages", "\t"]),
    st.text(alphabet="/ -_.acegikpst\n\r\x0b", max_size=30),
)


@settings(max_examples=150, deadline=None)
@given(st.lists(piece, max_size=40).map("".join))
def test_only_the_lines_with_packages_are_parsed_with_the_same_result(text: str) -> None:
    assert vllm_detect._maps_sites(text) == every_line(text)


def test_a_worker_map_gives_its_folders_in_order() -> None:
    text = "\n".join(
        [
            f"{HEAD}                  /opt/venv/lib/python3.11/site-packages/torch/lib/a.so",
            "7f3a1c021000-7f3a1c022000 rw-p 00000000 00:00 0 ",
            f"{HEAD}                  [stack:123]",
            f"{HEAD}                  /usr/lib/python3/dist-packages/yaml/_y.so",
            f"{HEAD}                  /opt/venv/lib/python3.11/site-packages/torch/lib/b.so",
        ]
    )
    assert vllm_detect._maps_sites(text) == [
        "/opt/venv/lib/python3.11/site-packages",
        "/usr/lib/python3/dist-packages",
        "/opt/venv/lib/python3.11/site-packages",
    ]
    assert vllm_detect._maps_sites(text.replace("-packages", "-pkgs")) == []
