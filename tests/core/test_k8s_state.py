"""The kubelet's state files in every layout it has written: the CPU manager's v1-v4, the
memory manager's, the device manager's list and NUMA-map forms; stale checksums reported."""

from __future__ import annotations

import contextlib
import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ascendtune.core.errors import ParseError
from ascendtune.core.k8s import checksum as ck
from ascendtune.core.k8s.state import (
    V1_POD,
    parse_cpu_manager_state,
    parse_device_checkpoint,
    parse_memory_manager_state,
)
from tests.support import k8s as K


def test_checksum_is_fnv1a_32() -> None:
    # FNV-1a's published test vectors
    assert ck.fnv1a32("") == 0x811C9DC5
    assert ck.fnv1a32("a") == 0xE40C292C
    assert ck.fnv1a32("foobar") == 0xBF9CF968


def test_v2_with_entries_and_a_matching_checksum() -> None:
    s = parse_cpu_manager_state(K.cpu_manager_v2())
    assert (s.layout, s.policy, s.checksum_ok) == ("v2", "static", True)
    assert s.containers[(K.UID_B, K.CONTAINER)] == frozenset(range(24))
    assert s.containers[(K.UID_A, K.CONTAINER)] == frozenset(range(144, 168))
    assert min(s.default_cpus) == 24 and 150 not in s.default_cpus


@pytest.mark.parametrize(
    "key", ["defaultCpuSet", "defaultCPUSet", "DefaultCPUSet", "defaultcpuset"]
)
def test_field_names_match_without_case_as_go_does(key: str) -> None:
    s = parse_cpu_manager_state(K.cpu_manager_v2(key=key))
    assert s.default_cpus == frozenset(range(24, 144)) | frozenset(range(168, 192))
    assert s.checksum_ok is True


def test_v1_entries_name_containers_by_runtime_id() -> None:
    s = parse_cpu_manager_state(K.cpu_manager_v1({"containerd://ab12": "2-5"}))
    assert s.layout == "v1" and s.checksum_ok is True
    assert s.containers == {(V1_POD, "containerd://ab12"): frozenset({2, 3, 4, 5})}


def test_an_empty_v1_and_v2_are_told_apart_by_their_checksum() -> None:
    v1 = K.cpu_manager_v1({})
    v2 = K.cpu_manager_v2({})
    assert json.loads(v1)["checksum"] != json.loads(v2)["checksum"]
    assert parse_cpu_manager_state(v1).layout == "v1"
    assert parse_cpu_manager_state(v2).layout == "v2"


def test_v3_pod_entries() -> None:
    s = parse_cpu_manager_state(K.cpu_manager_v3({K.UID_A: "144-167"}))
    assert (s.layout, s.checksum_ok) == ("v3", True)
    assert s.pods == {K.UID_A: frozenset(range(144, 168))}


def test_v4_reads_data_first_and_says_when_the_outer_copy_disagrees() -> None:
    s = parse_cpu_manager_state(K.cpu_manager_v4(outer_default="0-191"))
    assert (s.layout, s.checksum_ok) == ("v4", True)
    assert 0 not in s.default_cpus  # data's pool, not the outer copy's 0-191
    assert any("disagree" in n for n in s.notes)
    assert parse_cpu_manager_state(K.cpu_manager_v4()).notes == ()


def test_a_stale_checksum_is_reported_not_fatal() -> None:
    doc = json.loads(K.cpu_manager_v2())
    doc["entries"][K.UID_B][K.CONTAINER] = "0-25"  # edited by hand after the kubelet wrote it
    s = parse_cpu_manager_state(json.dumps(doc))
    assert s.checksum_ok is False
    assert s.containers[(K.UID_B, K.CONTAINER)] == frozenset(range(26))
    assert any("does not match" in n for n in s.notes)


def test_a_stale_v4_data_checksum_is_reported() -> None:
    doc = json.loads(K.cpu_manager_v4())
    doc["dataChecksum"] += 1
    assert parse_cpu_manager_state(json.dumps(doc)).checksum_ok is False


def test_no_checksum_is_not_a_mismatch() -> None:
    s = parse_cpu_manager_state(K.cpu_manager_v2(checksum=False))
    assert s.checksum_ok is None and s.notes == ()


@pytest.mark.parametrize(
    "text, words",
    [
        ('{"policyName": "static", "defaultCpuSet": "0-3", "entr', "not JSON"),
        ("[1, 2]", "expected a JSON object"),
        ('{"defaultCpuSet": "0-3"}', "no policyName"),
        ('{"policyName": "static", "defaultCpuSet": "0-x"}', "defaultCpuSet"),
        ('{"policyName": "static", "defaultCpuSet": 3}', "cpulist string"),
        ('{"policyName": "static", "defaultCpuSet": "", "entries": {"p": 5}}', "entries[p]"),
        ("[" * 100000, "nested too deeply"),
    ],
)
def test_malformed_files_raise_parse_errors_that_name_the_file(text: str, words: str) -> None:
    with pytest.raises(ParseError) as e:
        parse_cpu_manager_state(text)
    assert "cpu_manager_state" in e.value.message and words in e.value.message


@given(st.text(max_size=200))
def test_any_text_parses_or_raises_a_parse_error(text: str) -> None:
    for parse in (parse_cpu_manager_state, parse_memory_manager_state, parse_device_checkpoint):
        with contextlib.suppress(ParseError):
            parse(text)


def test_memory_manager_v1_and_v2_data() -> None:
    blocks = {"pod": {"c": [{"numaAffinity": [6], "type": "memory", "size": 1 << 30}]}}
    v1 = json.dumps({"policyName": "Static", "machineState": {}, "entries": blocks, "checksum": 7})
    s = parse_memory_manager_state(v1)
    assert (s.layout, s.policy) == ("v1", "Static")
    assert s.containers[("pod", "c")][0].numa_nodes == (6,)
    data = json.dumps({"policyName": "Static", "entries": blocks})
    v2 = json.dumps(
        {
            "policyName": "Static",
            "entries": {},
            "data": data,
            "dataChecksum": ck.data_checksum(data),
        }
    )
    s2 = parse_memory_manager_state(v2)
    assert (s2.layout, s2.checksum_ok) == ("v2", True)
    assert s2.containers[("pod", "c")][0].size_bytes == 1 << 30


def test_device_checkpoint_map_form_with_nodes() -> None:
    d = parse_device_checkpoint(K.device_checkpoint("map"))
    assert d.layout == "map"
    by_id = {g.device_id: g for g in d.grants}
    assert by_id["Ascend910-1"].numa_nodes == (6,) and by_id["Ascend910-1"].pod_uid == K.UID_B
    assert len(d.registered["huawei.com/Ascend910"]) == 8


def test_device_checkpoint_list_form_has_no_topology() -> None:
    d = parse_device_checkpoint(K.device_checkpoint("list"))
    assert d.layout == "list" and all(g.numa_nodes == () for g in d.grants)


def test_device_checkpoint_minus_one_and_several_nodes() -> None:
    doc = {
        "Data": {
            "PodDeviceEntries": [
                {
                    "PodUID": "u",
                    "ContainerName": "c",
                    "ResourceName": "huawei.com/Ascend910",
                    "DeviceIDs": {
                        "-1": ["Ascend910-3"],
                        "0": ["Ascend910-2"],
                        "1": ["Ascend910-2"],
                    },
                }
            ],
            "RegisteredDevices": None,
        },
        "Checksum": 1,
    }
    d = parse_device_checkpoint(json.dumps(doc))
    nodes = {g.device_id: g.numa_nodes for g in d.grants}
    assert nodes == {"Ascend910-3": (), "Ascend910-2": (0, 1)}


def test_device_checkpoint_with_no_entries() -> None:
    d = parse_device_checkpoint(
        '{"Data": {"PodDeviceEntries": null, "RegisteredDevices": {}}, "Checksum": 0}'
    )
    assert d.grants == ()


@pytest.mark.parametrize(
    "parse", [parse_cpu_manager_state, parse_memory_manager_state, parse_device_checkpoint]
)
def test_a_number_of_thousands_of_digits_is_a_parse_error(parse: object) -> None:
    # json.loads raises a plain ValueError for it (int's conversion bound), not JSONDecodeError:
    # the campaign's kubelet family met it as "internal error: ValueError" (issue 27)
    text = '{"policyName": "static", "checksum": ' + "9" * 5000 + "}"
    with pytest.raises(ParseError) as e:
        parse(text)  # type: ignore[operator]
    assert "digits" in e.value.message


def test_device_checkpoint_checksum_of_the_map_form() -> None:
    d = parse_device_checkpoint(K.device_checkpoint("map"))
    assert d.checksum_ok is True and d.notes == ()
    edited = K.device_checkpoint("map").replace('["Ascend910-1"]', '["Ascend910-5"]')
    d = parse_device_checkpoint(edited)
    assert d.checksum_ok is False
    assert any("does not match the content" in n for n in d.notes)
    assert parse_device_checkpoint(K.device_checkpoint("list")).checksum_ok is None


def test_device_checkpoint_form_prints_as_go_spew() -> None:
    entry = {
        "PodUID": "u",
        "ContainerName": "c",
        "ResourceName": "r/x",
        "DeviceIDs": {"10": ["d"], "2": ["b", "a"], "-1": []},
        "AllocResp": "AQL/",
    }
    form = ck.device_checkpoint_form(
        {"poddeviceentries": [entry], "registereddevices": {"z": None, "a": ["1"]}}
    )
    assert form == (
        "(checkpoint.checkpointData){PodDeviceEntries:([]checkpoint.PodDevicesEntry)["
        "{PodUID:(string)u ContainerName:(string)c ResourceName:(string)r/x "
        "DeviceIDs:(checkpoint.DevicesPerNUMA)map[-1:[] 2:[b a] 10:[d]] "
        "AllocResp:([]uint8)[1 2 255]}] RegisteredDevices:(map[string][]string)map[a:[1] z:<nil>]}"
    )
    empty = {"poddeviceentries": None, "registereddevices": None}
    assert ck.device_checkpoint_form(empty) == (
        "(checkpoint.checkpointData){PodDeviceEntries:([]checkpoint.PodDevicesEntry)<nil> "
        "RegisteredDevices:(map[string][]string)<nil>}"
    )
    # forms not recomputed: the list form, a field this form does not know
    assert ck.device_checkpoint_form({"poddeviceentries": [{**entry, "DeviceIDs": ["d"]}]}) is None
    assert ck.device_checkpoint_form({**empty, "bootid": "x"}) is None
