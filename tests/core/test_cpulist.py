"""cpulist algebra, table by table, and properties over random sets."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ascendtune.core.cpulist import (
    format_cpulist,
    format_cpumask,
    parse_cpulist,
    parse_cpumask,
    parse_int_list,
)
from ascendtune.core.errors import ParseError


@pytest.mark.parametrize(
    ("text", "cpus"),
    [
        ("", set()),
        ("\n", set()),
        ("0", {0}),
        ("0-3", {0, 1, 2, 3}),
        ("0,2,4-7", {0, 2, 4, 5, 6, 7}),
        ("146-165\n", set(range(146, 166))),
        (" 1 , 3 ", {1, 3}),
        ("0-15:2/4", {0, 1, 4, 5, 8, 9, 12, 13}),
        ("3,1,2", {1, 2, 3}),
    ],
)
def test_parse(text: str, cpus: set[int]) -> None:
    assert parse_cpulist(text) == frozenset(cpus)


@pytest.mark.parametrize(
    "text", ["a", "1-", "-1", "3-1", "1,,x", "0-99999999", "1-3:0", "1-3:4/2", "1.5"]
)
def test_parse_rejects(text: str) -> None:
    with pytest.raises(ParseError):
        parse_cpulist(text)


@pytest.mark.parametrize(
    ("cpus", "text"),
    [(set(), ""), ({0}, "0"), ({0, 1, 2}, "0-2"), ({0, 2, 4, 5, 6, 7}, "0,2,4-7"), ({5, 1}, "1,5")],
)
def test_format(cpus: set[int], text: str) -> None:
    assert format_cpulist(cpus) == text


@pytest.mark.parametrize(
    ("mask", "cpus"),
    [("3", {0, 1}), ("ff,00000000", set(range(32, 40))), ("00000001", {0}), ("", set())],
)
def test_masks(mask: str, cpus: set[int]) -> None:
    assert parse_cpumask(mask) == frozenset(cpus)


def test_mask_rejects() -> None:
    with pytest.raises(ParseError):
        parse_cpumask("xyz")


def test_int_list_keeps_order() -> None:
    assert parse_int_list("6,4") == (6, 4)
    assert parse_int_list("0-2,1") == (0, 1, 2)
    with pytest.raises(ParseError):
        parse_int_list("6;4")


cpu_sets = st.frozensets(st.integers(min_value=0, max_value=2047), max_size=300)


@given(cpu_sets)
def test_roundtrip(cpus: frozenset[int]) -> None:
    text = format_cpulist(cpus)
    assert parse_cpulist(text) == cpus
    assert " " not in text
    assert parse_cpumask(format_cpumask(cpus)) == cpus


@given(st.text(max_size=40) | st.text(alphabet="0123456789,- \n", max_size=40))
def test_parse_never_crashes(text: str) -> None:
    try:
        cpus = parse_cpulist(text)
    except ParseError:
        return
    # a set of CPU numbers, which its own cpulist gives back
    assert all(isinstance(c, int) and c >= 0 for c in cpus)
    assert parse_cpulist(format_cpulist(cpus)) == cpus


@pytest.mark.parametrize(
    "text",
    [
        "5",
        "007",
        "0-3",
        " 4-9 \n",
        "0-65535",
        "65535",
        "3-1",
        "65536",
        "1-65536",
        "0-",
        "-3",
        "1-2-3",
        "1234567",
        "\u0663",
        "\u0663-\u0665",
    ],
)
def test_one_number_or_range_parses_as_the_general_form(text: str) -> None:
    # the fast path for one item gives what the item-by-item parse gives (the same text listed
    # twice takes the general path), errors included
    def parse(t: str) -> object:
        try:
            return parse_cpulist(t)
        except ParseError as e:
            return str(e).replace(f"{t.strip()},{t.strip()}", t.strip())

    general = parse(f"{text.strip()},{text.strip()}")
    assert parse(text) == general or (isinstance(general, str) and isinstance(parse(text), str))
