"""The one encoder of `--json` documents (core/jsondoc.py): strict JSON whatever the document
holds (SPEC.md section 4: no NaN, no Infinity), schema_version first."""

from __future__ import annotations

import json
import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ascendtune.core.jsondoc import dumps, finite, non_finite_paths


def strict(text: str) -> object:
    def reject(token: str) -> object:
        raise ValueError(f"not strict JSON: {token}")

    return json.loads(text, parse_constant=reject)


def test_non_finite_numbers_are_written_as_strings() -> None:
    doc = {"a": math.nan, "b": [1e400, -1e309, 1.5], "c": {"d": math.inf}}
    for compact in (False, True):
        got = strict(dumps(doc, compact=compact))
        assert got == {
            "schema_version": 1,
            "a": "NaN",
            "b": ["Infinity", "-Infinity", 1.5],
            "c": {"d": "Infinity"},
        }


def test_keys_json_cannot_write_are_written_as_text() -> None:
    # a config logged as a Python dict literal may hold tuple keys and NaN keys
    got = strict(dumps({"c": {(1, 2): 3, 4: 5, None: 6, math.nan: 7}}))
    assert got == {"schema_version": 1, "c": {"(1, 2)": 3, "4": 5, "null": 6, "NaN": 7}}


def test_a_finite_document_is_the_same_object_and_the_same_text() -> None:
    doc = {"a": [1, 2.5, {"b": None}], "c": "x"}
    assert finite(doc) is doc
    assert dumps(doc) == json.dumps({"schema_version": 1, **doc}, indent=2)


def test_non_finite_paths_name_each_value() -> None:
    assert non_finite_paths({"a": {"b": [1.0, math.inf]}, "c": math.nan}) == ["a.b[1]", "c"]


values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=5),
    lambda inner: (
        st.lists(inner, max_size=3)
        | st.dictionaries(st.text(max_size=5) | st.integers() | st.floats(), inner, max_size=3)
    ),
    max_leaves=15,
)


@given(values)
def test_every_document_is_strict_json(value: object) -> None:
    strict(dumps({"v": value}))
    strict(dumps({"v": value}, compact=True))


@pytest.mark.parametrize("text", ["NaN", "Infinity", "-Infinity"])
def test_the_strict_parser_of_these_tests_refuses_bare_constants(text: str) -> None:
    with pytest.raises(ValueError):
        strict(text)
