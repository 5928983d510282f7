"""KubeletConfiguration from its YAML file, a JSON file or a configz dump; the YAML subset
refuses what it does not read rather than guessing."""

from __future__ import annotations

import contextlib
import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ascendtune.core.errors import ParseError
from ascendtune.core.k8s.config import DEFAULT, parse_kubelet_config, parse_yaml_subset
from tests.support import k8s as K


def test_the_kubeadm_style_file() -> None:
    c = parse_kubelet_config(K.KUBELET_CONFIG)
    assert c.cpu_manager_policy == "static"
    assert dict(c.cpu_manager_options) == {"full-pcpus-only": "true"}
    assert c.topology_manager_policy == "none" and c.topology_manager_scope == "container"
    assert c.memory_manager_policy == "None"
    assert c.reserved_cpus == frozenset({0, 1})
    assert c.notes == ()


def test_defaults_when_keys_are_missing() -> None:
    c = parse_kubelet_config("kind: KubeletConfiguration\n")
    assert c[:7] == DEFAULT[:7]


def test_configz_dump_and_plain_json() -> None:
    body = {
        "cpuManagerPolicy": "static",
        "topologyManagerPolicy": "single-numa-node",
        "topologyManagerScope": "pod",
    }
    for text in (json.dumps({"kubeletconfig": body}), json.dumps(body)):
        c = parse_kubelet_config(text, "configz")
        assert (c.cpu_manager_policy, c.topology_manager_policy, c.topology_manager_scope) == (
            "static",
            "single-numa-node",
            "pod",
        )


def test_an_unquoted_boolean_policy_option_is_one_the_kubelet_refuses() -> None:
    c = parse_kubelet_config(
        "cpuManagerPolicy: static\ncpuManagerPolicyOptions:\n  full-pcpus-only: true\n"
    )
    assert any("YAML boolean" in n and "refuses" in n for n in c.notes)
    quoted = parse_kubelet_config('cpuManagerPolicyOptions:\n  full-pcpus-only: "true"\n')
    assert quoted.notes == ()


def test_flow_mappings_comments_and_quotes() -> None:
    doc = parse_yaml_subset(
        "# kubelet\n"
        "cpuManagerPolicyOptions: {full-pcpus-only: \"true\", align-by-socket: 'false'}\n"
        "topologyManagerPolicy: 'single-numa-node'  # aligned\n"
        "clusterDNS:\n- 10.96.0.10\n"
        "evictionHard:\n  memory.available: 100Mi\n",
        "c",
    )
    assert doc["cpuManagerPolicyOptions"] == {"full-pcpus-only": "true", "align-by-socket": "false"}
    assert doc["topologyManagerPolicy"] == "single-numa-node"
    assert doc["clusterDNS"] == ["10.96.0.10"]
    assert doc["evictionHard"] == {"memory.available": "100Mi"}


@pytest.mark.parametrize(
    "text",
    [
        "a: &anchor 1\n",
        "a: |\n  text\n",
        "a: 1\n---\nb: 2\n",
        "a:\n\tb: 1\n",
        "just words\n",
        "a: 1\n   b: 2\n",
    ],
)
def test_what_the_subset_does_not_read_is_refused(text: str) -> None:
    with pytest.raises(ParseError):
        parse_kubelet_config(text)


@given(st.text(max_size=300))
def test_any_text_parses_or_raises_a_parse_error(text: str) -> None:
    with contextlib.suppress(ParseError):
        parse_kubelet_config(text)


@pytest.mark.parametrize(
    "text",
    [
        '{"kubeletconfig": {"reservedSystemCPUs": ' + "9" * 5000 + "}}",
        '{"kubeletconfig": {"cpuManagerPolicy": ' + "[" * 5000 + "]" * 5000 + "}}",
        "topologyManagerPolicy: " + "{a: " * 3000 + "}" * 3000 + "\n",
    ],
)
def test_huge_numbers_and_deep_nesting_are_parse_errors(text: str) -> None:
    # the campaign's kubelet family: "internal error: ValueError/RecursionError" (issue 27)
    with pytest.raises(ParseError):
        parse_kubelet_config(text)
