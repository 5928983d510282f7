"""The PodResources v1 wire decoder: what protobuf encodes decodes (the encodings are written
out by hand here; the host tests check it against protobuf's own encoder), unknown fields are
skipped, and hostile answers end in a ParseError within bounds."""

from __future__ import annotations

import contextlib

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ascendtune.core.errors import ParseError
from ascendtune.core.k8s import wire


def varint(n: int) -> bytes:
    n &= (1 << 64) - 1
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        out.append(b | (0x80 if n else 0))
        if not n:
            return bytes(out)


def field(number: int, payload: bytes | int) -> bytes:
    if isinstance(payload, int):
        return varint(number << 3) + varint(payload)
    return varint(number << 3 | 2) + varint(len(payload)) + payload


def container(
    name: str, cpus: list[int], devices: list[tuple[str, str, list[int]]], packed: bool = True
) -> bytes:
    out = field(1, name.encode())
    for res, dev, nodes in devices:
        topo = b"".join(field(1, field(1, n)) for n in nodes)
        out += field(
            2, field(1, res.encode()) + field(2, dev.encode()) + (field(3, topo) if nodes else b"")
        )
    if packed:
        out += field(3, b"".join(varint(c) for c in cpus))
    else:
        out += b"".join(field(3, c) for c in cpus)
    return out


def pod(name: str, ns: str, *containers: bytes) -> bytes:
    return field(
        1,
        field(1, name.encode()) + field(2, ns.encode()) + b"".join(field(3, c) for c in containers),
    )


def test_a_list_answer_decodes() -> None:
    buf = pod(
        "qwen-b",
        "inference",
        container("vllm", [0, 1, 2], [("huawei.com/Ascend910", "Ascend910-1", [6])]),
    )
    pods, notes = wire.decode_list(buf)
    assert notes == []
    (p,) = pods
    assert (p.name, p.namespace) == ("qwen-b", "inference")
    (c,) = p.containers
    assert c.cpus == frozenset({0, 1, 2})
    assert [(d.resource, d.device_id, d.numa_nodes) for d in c.devices] == [
        ("huawei.com/Ascend910", "Ascend910-1", (6,))
    ]


def test_unpacked_cpu_ids_and_unknown_fields_are_read_as_protobuf_reads_them() -> None:
    extra = field(9, b"dynamic resources") + field(15, 7) + varint(16 << 3 | 5) + b"\0\0\0\0"
    buf = pod("p", "ns", container("c", [5, 7], [], packed=False) + extra)
    (p,), _ = wire.decode_list(buf + field(2, b"other"))
    assert p.containers[0].cpus == frozenset({5, 7})


def test_one_entry_per_device_and_node_merges_into_one_device() -> None:
    devs = [
        ("huawei.com/Ascend910", "Ascend910-2", [0]),
        ("huawei.com/Ascend910", "Ascend910-2", [1]),
    ]
    (p,), _ = wire.decode_list(pod("p", "ns", container("c", [], devs)))
    assert [d.numa_nodes for d in p.containers[0].devices] == [(0, 1)]


def test_allocatable() -> None:
    buf = field(1, field(1, b"huawei.com/Ascend910") + field(2, b"Ascend910-0")) + field(
        2, b"".join(varint(c) for c in range(2, 192))
    )
    a = wire.decode_allocatable(buf)
    assert a.cpus == frozenset(range(2, 192)) and a.devices[0].device_id == "Ascend910-0"


@pytest.mark.parametrize(
    "buf, words",
    [
        (b"\x0a\x05abc", "truncated"),
        (b"\x08", "truncated"),
        (b"\x0b", "wire type 3"),
        (b"\x00\x01", "field number 0"),
        (b"\x08" + b"\xff" * 11, "longer than 10 bytes"),
        (field(1, 5), "holds a number"),
    ],
)
def test_malformed_answers(buf: bytes, words: str) -> None:
    with pytest.raises(ParseError) as e:
        wire.decode_list(buf)
    assert words in e.value.message


def test_a_million_containers_stop_at_the_bound() -> None:
    buf = field(1, field(1, b"p") + field(3, b"") * 1_000_000)
    with pytest.raises(ParseError) as e:
        wire.decode_list(buf)
    assert str(wire.MAX_CONTAINERS) in e.value.message


def test_too_many_ids_stop_at_the_bound() -> None:
    buf = pod("p", "ns", container("c", list(range(wire.MAX_ITEMS + 1)), []))
    with pytest.raises(ParseError):
        wire.decode_list(buf)


@given(st.binary(max_size=400))
def test_any_bytes_decode_or_raise_a_parse_error(buf: bytes) -> None:
    for decode in (wire.decode_list, wire.decode_allocatable):
        with contextlib.suppress(ParseError):
            decode(buf)
