"""The PodResources v1 client against a real gRPC server on a unix socket (answers encoded by
protobuf from ascendtune's .proto), and against sockets that hang, answer garbage or a million
containers: each ends in a bounded time with a reason, never an exception."""

from __future__ import annotations

import os
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from ascendtune.core.k8s import paths
from ascendtune.host.k8s import api, socket_path
from ascendtune.host.roots import open_root
from tests.support import k8s as K


@pytest.fixture
def short_tmp() -> Iterator[Path]:
    """A short folder: a unix socket's path must stay under 108 bytes."""
    with tempfile.TemporaryDirectory(prefix="k8s", dir="/tmp") as d:
        yield Path(d)


@pytest.fixture(scope="module")
def pb(tmp_path_factory: pytest.TempPathFactory) -> Any:
    return K.compile_proto(tmp_path_factory.mktemp("pb"))


def test_list_and_allocatable_through_a_real_server(short_tmp: Path, pb: Any) -> None:
    alloc = pb.AllocatableResourcesResponse()
    alloc.cpu_ids.extend(range(2, 192))
    d = alloc.devices.add(resource_name="huawei.com/Ascend910", device_ids=["Ascend910-0"])
    d.topology.nodes.add(ID=6)
    with K.PodResourcesServer(short_tmp, K.list_answer(pb, K.issue_pods()), alloc) as server:
        got = api.ask(str(server.path))
    assert isinstance(got, api.ApiAnswer), got
    by_name = {p.name: p for p in got.pods}
    assert set(by_name) == {"qwen-a", "qwen-b", "coredns-5d78c9869d-abcde"}
    (b,) = by_name["qwen-b"].containers
    assert b.cpus == frozenset(range(24)) and b.memory_nodes == (6,)
    assert [(x.device_id, x.numa_nodes) for x in b.devices] == [("Ascend910-1", (6,))]
    assert got.allocatable is not None and got.allocatable.cpus == frozenset(range(2, 192))
    assert got.allocatable.devices[0].numa_nodes == (6,)


def test_a_kubelet_without_get_allocatable(short_tmp: Path, pb: Any) -> None:
    with K.PodResourcesServer(short_tmp, K.list_answer(pb, K.issue_pods())) as server:
        got = api.ask(str(server.path))
    assert isinstance(got, api.ApiAnswer) and got.allocatable is None
    assert any("UNIMPLEMENTED" in n for n in got.notes)


def test_the_saved_answer_reads_back_equal(short_tmp: Path, pb: Any) -> None:
    with K.PodResourcesServer(short_tmp, K.list_answer(pb, K.issue_pods())) as server:
        got = api.ask(str(server.path))
    assert isinstance(got, api.ApiAnswer)
    import json

    (short_tmp / paths.API_ANSWER).write_text(json.dumps(api.answer_document(got)))
    back = api.read_answer(_root(short_tmp), paths.API_ANSWER)
    assert isinstance(back, api.ApiAnswer)
    assert back.pods == got.pods


def _root(path: Path) -> Any:
    (path / "meta.json").write_text("{}")
    return open_root(str(path))


def test_a_socket_that_hangs_costs_the_deadline(short_tmp: Path) -> None:
    with K.RawSocketServer(short_tmp) as server:
        t = time.monotonic()
        got = api.ask(str(server.path), timeout_s=0.5)
        spent = time.monotonic() - t
    assert isinstance(got, api.Unanswered) and "DEADLINE_EXCEEDED" in got.reason
    assert spent < 5


def test_a_socket_that_answers_garbage(short_tmp: Path) -> None:
    with K.RawSocketServer(short_tmp, garbage=os.urandom(4096)) as server:
        t = time.monotonic()
        got = api.ask(str(server.path), timeout_s=2)
        spent = time.monotonic() - t
    assert isinstance(got, api.Unanswered) and "did not answer" in got.reason
    assert spent < 5


def test_an_answer_that_is_not_pod_resources(short_tmp: Path) -> None:
    with K.PodResourcesServer(short_tmp, b"\x0a\xff\xff\xff\x0f") as server:
        got = api.ask(str(server.path))
    assert isinstance(got, api.Unanswered) and "not PodResources" in got.reason


def test_a_million_containers_are_refused_within_bounds(short_tmp: Path) -> None:
    # one pod of 1,000,000 (empty) containers, as raw protobuf: 2 MB on the wire
    inner = b"\x0a\x01p" + b"\x1a\x00" * 1_000_000
    n, length = len(inner), b""
    while True:
        length += bytes([(n & 0x7F) | (0x80 if n >> 7 else 0)])
        n >>= 7
        if not n:
            break
    with K.PodResourcesServer(short_tmp, b"\x0a" + length + inner) as server:
        t = time.monotonic()
        got = api.ask(str(server.path))
        spent = time.monotonic() - t
    assert isinstance(got, api.Unanswered) and "containers" in got.reason
    assert spent < 10


def test_no_socket_no_symlinked_socket(short_tmp: Path, pb: Any) -> None:
    root = _root(short_tmp)
    assert socket_path(root) is None
    with K.PodResourcesServer(short_tmp / "elsewhere", K.list_answer(pb, [])) as server:
        link = short_tmp / paths.SOCKET
        link.parent.mkdir(parents=True)
        link.symlink_to(server.path)
        assert socket_path(root) is None  # never followed out of the root


def test_without_grpcio_the_files_are_read(
    monkeypatch: pytest.MonkeyPatch, short_tmp: Path
) -> None:
    import sys

    monkeypatch.setitem(sys.modules, "grpc", None)
    got = api.ask(str(short_tmp / paths.SOCKET))
    assert isinstance(got, api.Unanswered) and "ascendtune[k8s]" in got.reason
