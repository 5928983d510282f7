"""The version registry (core/vllm_ascend) and the planner's implementations (core/planner/impls)
describe the same releases from two sides: every release that ships binding names an
implementation the planner has, and both say the same about how a rank finds its NPU."""

from __future__ import annotations

import pytest

from ascendtune.core import vllm_ascend as va
from ascendtune.core.planner import impls

RANK_RULE = {
    impls.RUNNING_LIST: va.SORTED_BUSY,
    impls.DEVICES_LIST: va.VISIBLE_INDEX,
    impls.NPU_ID: va.DEVICE_ID,
}
SHIPS = [e for e in va.ENTRIES if e.binding.ships]


def test_every_release_with_binding_is_planned_and_the_rest_ship_none() -> None:
    assert len(SHIPS) >= 30
    assert {e.binding.impl for e in SHIPS} <= set(impls.IMPLS)
    assert all(e.binding.impl is None for e in va.ENTRIES if not e.binding.ships)


@pytest.mark.parametrize("entry", SHIPS, ids=lambda e: e.name)
def test_registry_and_planner_agree_on_the_rank_rule(entry: va.VllmAscendVersion) -> None:
    assert RANK_RULE[impls.of(entry).rank_npu] == entry.binding.npu_of_rank


def test_an_entry_naming_an_unknown_implementation_is_refused() -> None:
    ghost = SHIPS[-1]._replace(binding=SHIPS[-1].binding._replace(impl="00000000"))
    with pytest.raises(ValueError, match="00000000"):
        impls.of(ghost)
