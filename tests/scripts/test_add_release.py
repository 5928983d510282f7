"""scripts/add_release.py without the network: the schema diff against the release before, the
binding implementation named by its blob id, the worker's bind_cpus call, the draft entry."""

from __future__ import annotations

from scripts import add_release, releases
from scripts.add_release import diff_schemas


def doc(keys: dict[str, object], **top: object) -> dict[str, object]:
    return {"style": "get", "unknown_keys": "ignored", "keys": keys, **top}


def test_schema_diff_names_added_removed_and_changed_keys() -> None:
    old = doc(
        {
            "a": {"type": "bool", "default": False},
            "gone": {"type": "int", "default": 1},
            "sec": {
                "type": "section",
                "unknown_keys": "ignored",
                "keys": {"x": {"type": "int", "default": 2}},
            },
        }
    )
    new = doc(
        {
            "a": {"type": "bool", "default": True},
            "sec": {
                "type": "section",
                "unknown_keys": "refused",
                "keys": {
                    "x": {"type": "float", "default": 2.0},
                    "y": {"type": "str", "default": ""},
                },
            },
            "new": {"type": "bool", "unknown": ["default"]},
        },
        style="typed",
        unknown_keys="refused",
    )
    d = diff_schemas(old, new)
    assert d["added"] == ['sec.y (str, default "")', "new (bool, default unknown)"]
    assert d["removed"] == ["gone"]
    assert "a: default false -> true" in d["changed"]
    assert "sec: unknown keys ignored -> refused" in d["changed"]
    assert "sec.x: type int -> float" in d["changed"]
    assert "(top level) unknown_keys: ignored -> refused" in d["changed"]


def test_schema_diff_of_two_committed_releases() -> None:
    from ascendtune.core.vllm_config import extracted

    d = diff_schemas(extracted.load("0.27.1rc1"), extracted.load("0.28.0rc1"))
    assert "c8_enable_reshape_optim" in d["removed"]


def test_binding_named_by_blob_id() -> None:
    assert "0.27.1rc1" in (add_release.known_binding("daab93aa" + "0" * 32) or "")
    assert add_release.known_binding(releases.blob_id(b"new code\n")) is None


def test_worker_call_and_draft() -> None:
    files = {
        "vllm_ascend/worker/worker.py": b"def warm(self):\n    bind_cpus(self.local_rank, npu_id=3)\n",
        "vllm_ascend/platform.py": b"bind_cpus(0)\n",
    }
    calls = add_release.worker_calls(files)
    assert calls == ["vllm_ascend/worker/worker.py:2: bind_cpus(self.local_rank, npu_id=3)"]
    sdist = releases.Sdist("9.9.9", "vllm_ascend-9.9.9.tar.gz", "file:///x", "ab" * 32, "file:///")
    lines = add_release.draft(
        "9.9.9",
        sdist,
        doc({"enable_cpu_binding": {"type": "bool", "default": True}}),
        releases.blob_id(b"new code\n"),
        calls,
        "0.30.0rc2",
    )
    text = "\n".join(lines)
    assert "NEW implementation" in text
    assert "enable_cpu_binding default: true" in text
    assert "compared with: v0.30.0rc2" in text


def test_previous_release_is_the_newest_schema_below() -> None:
    assert add_release.previous_release("0.31.0rc1") == "0.30.0rc2"
    assert add_release.previous_release("0.18.0") == "0.18.0rc1"
    assert add_release.previous_release("0.9.1rc1") is None


def test_differential_tier_per_implementation() -> None:
    shown, cmd = add_release.differential("7ed2022f" + "0" * 32)
    assert cmd is not None and cmd[-2:] == ["-k", "7ed2022f"]
    assert "-m reference tests/reference" in shown
    shown, cmd = add_release.differential(releases.blob_id(b"new code\n"))
    assert cmd is None and "not in tests/reference/harness.py IMPLS" in shown
    assert add_release.differential(None)[1] is None
