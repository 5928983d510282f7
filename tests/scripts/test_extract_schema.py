"""scripts/extract_schema.py on small sources written here: the three styles vLLM-Ascend's
ascend_config.py has had (plain `.get()` reads, sub-config classes, pydantic `@config` fields),
what it can tell and what it must call unknown. No network, nothing imported from a release."""

from __future__ import annotations

import textwrap
from typing import Any

import pytest

from scripts import extract_schema as ex


def run(**modules: str) -> dict[str, Any]:
    files = {
        f"vllm_ascend/{name.replace('__', '/')}.py": textwrap.dedent(src).encode()
        for name, src in modules.items()
    }
    return ex.extract(files)


GET_STYLE = """
    import os
    from vllm_ascend import envs as ascend_envs

    class AscendConfig:
        def __init__(self, vllm_config):
            additional_config = vllm_config.additional_config if vllm_config.additional_config is not None else {}
            self.enable_cpu_binding = additional_config.get("enable_cpu_binding", False)
            self.prefill = bool(additional_config.get("enable_prefill_mc2", False))
            self.tokens: int = additional_config.get("max_tokens", 1024)
            self.path = additional_config.get("dump_path", None)
            self.log = additional_config.get("log_path", os.path.join("~", "log"))
            self.fused = self._value(additional_config, "enable_fused", ascend_envs.FUSED)
            graph = additional_config.get("graph_config", {})
            self.graph = GraphConfig(graph)
            comp = additional_config.get("compile_config", {})
            self.comp = CompileConfig(**comp)
            self.eplb = EplbConfig(additional_config.get("eplb_config", {}))
            self.pre = additional_config.get("prefetch", {"enabled": False, "ratio": 0.5})
            self.ratio = self.pre["ratio"]

        @staticmethod
        def _value(cfg, key, env_value):
            if key in cfg:
                return cfg[key]
            return env_value

    class GraphConfig:
        def __init__(self, graph_config):
            self.enabled = graph_config.get("enabled", False)
            self.sizes = graph_config.get("batch_sizes", [])
            self.mode = graph_config.get("mode", "")

    class CompileConfig:
        def __init__(self, fuse_norm: bool = True, level: int = 2, **kwargs):
            self.fuse_norm = fuse_norm
            self.extra = kwargs.get("fuse_add", True)

    class EplbConfig:
        _defaults = {"dynamic": False, "interval": 600, "map_path": None}

        def __init__(self, user_config):
            self.config = self._defaults.copy()
            for key, value in user_config.items():
                if key in self.config:
                    self.config[key] = value
                else:
                    raise ValueError(key)
"""

ENVS = """
    import os
    env_variables = {
        "FUSED": lambda: int(os.getenv("FUSED", "1")),
    }
"""

ELSEWHERE = """
    def dsa_cp_enabled(vllm_config):
        additional_config = getattr(vllm_config, "additional_config", None)
        if additional_config is not None and "enable_dsa_cp" in additional_config:
            return bool(additional_config["enable_dsa_cp"])
        return False
"""


@pytest.fixture(scope="module")
def get_style() -> dict[str, Any]:
    return run(ascend_config=GET_STYLE, envs=ENVS, utils=ELSEWHERE)


def test_get_style_top_level_keys_types_and_defaults(get_style: dict[str, Any]) -> None:
    keys = get_style["keys"]
    assert get_style["style"] == "get"
    # .get() reads only what it knows: unknown top-level keys are silently ignored
    assert get_style["unknown_keys"] == "ignored"
    assert keys["enable_cpu_binding"]["type"] == "bool"
    assert keys["enable_cpu_binding"]["default"] is False
    assert keys["enable_prefill_mc2"]["cast"] == "bool"
    assert keys["max_tokens"] == {**keys["max_tokens"], "type": "int", "default": 1024}


def test_get_style_says_unknown_instead_of_guessing(get_style: dict[str, Any]) -> None:
    keys = get_style["keys"]
    # a None default tells nothing of the type
    assert keys["dump_path"]["default"] is None
    assert keys["dump_path"]["unknown"] == ["type"]
    # a default computed at run time is not evaluated
    log = keys["log_path"]
    assert "default" not in log
    assert log["unknown"] == ["type", "default"]
    assert "os.path.join" in log["expr"]


def test_env_fallback_through_a_helper_reads_envs_py(get_style: dict[str, Any]) -> None:
    fused = get_style["keys"]["enable_fused"]
    assert fused["env"] == "FUSED"
    assert fused["default"] == 1  # int(os.getenv("FUSED", "1")) when unset
    assert fused["type"] == "int"


def test_sub_config_class_taking_the_dict(get_style: dict[str, Any]) -> None:
    graph = get_style["keys"]["graph_config"]
    assert graph["type"] == "section"
    assert graph["unknown_keys"] == "ignored"
    assert set(graph["keys"]) == {"enabled", "batch_sizes", "mode"}
    assert graph["keys"]["batch_sizes"]["default"] == []


def test_keyword_splat_into_a_class_with_kwargs(get_style: dict[str, Any]) -> None:
    comp = get_style["keys"]["compile_config"]
    assert comp["unknown_keys"] == "ignored"  # **kwargs swallows the rest
    assert comp["keys"]["fuse_norm"]["default"] is True
    assert comp["keys"]["level"]["type"] == "int"
    assert comp["keys"]["fuse_add"]["default"] is True  # read out of **kwargs


def test_loop_that_raises_on_an_unknown_key_and_its_literal(get_style: dict[str, Any]) -> None:
    eplb = get_style["keys"]["eplb_config"]
    assert eplb["unknown_keys"] == "refused"
    assert eplb["keys"]["interval"]["default"] == 600
    assert eplb["keys"]["map_path"]["optional"] is True


def test_section_defaults_from_a_dict_literal(get_style: dict[str, Any]) -> None:
    pre = get_style["keys"]["prefetch"]
    assert pre["type"] == "section"
    # the child read from it takes its default from the literal
    assert pre["keys"]["ratio"]["default"] == 0.5
    assert pre["keys"]["ratio"]["type"] == "float"


def test_a_key_read_in_another_module(get_style: dict[str, Any]) -> None:
    dsa = get_style["keys"]["enable_dsa_cp"]
    assert dsa["type"] == "bool"
    assert dsa["unknown"] == ["default"]
    assert any(s.startswith("vllm_ascend/utils.py:") for s in dsa["source"])


TYPED_DECORATOR = """
    from pydantic import ConfigDict
    from pydantic.dataclasses import dataclass

    def config(cls=None, *, config=None, **kwargs):
        merged = ConfigDict(extra="forbid")
        if config is not None:
            merged.update(config)
        def deco(c):
            return dataclass(c, config=merged)
        return deco if cls is None else deco(cls)
"""

TYPED = """
    import dataclasses
    import importlib.util
    from typing import Any, ClassVar, Literal
    from pydantic import ConfigDict, Field
    from vllm_ascend.config_utils import config

    @config
    class GraphConfig:
        enabled: bool = False
        sizes: list[int] = dataclasses.field(default_factory=list)

    @config(config=ConfigDict(extra="ignore"))
    class LooseConfig:
        level: int = Field(default=3, ge=0, le=9)

    @config
    class AscendConfig:
        model_config = ConfigDict(extra="forbid")
        SUPPORTED: ClassVar[tuple[str, ...]] = ("a",)

        enable_cpu_binding: bool = True
        window: int | None = None
        alg: Literal["", "fullmesh"] = ""
        overlap: bool = dataclasses.field(default_factory=lambda: detect_hardware() == 5)
        graph_config: GraphConfig = dataclasses.field(default_factory=GraphConfig)
        loose_config: LooseConfig = dataclasses.field(default_factory=lambda: LooseConfig())
        pd_ratio: int = 1
        _private: bool = dataclasses.field(default=False, init=False)
        cache: set[int] = dataclasses.field(default_factory=set, init=False)

    def init_ascend_config(vllm_config):
        additional_config = vllm_config.additional_config or {}
        refresh = additional_config.get("refresh", False)
        _STRIP = {"refresh", "pd_ratio"}
        kwargs = {k: v for k, v in additional_config.items() if k not in _STRIP}
        unknown = sorted(set(kwargs) - AscendConfig.__dataclass_fields__.keys())
        if unknown and importlib.util.find_spec("vllm_omni") is not None:
            kwargs = {k: v for k, v in kwargs.items() if k not in unknown}
        return AscendConfig(**kwargs)

    def elsewhere(vllm_config):
        return vllm_config.additional_config.get("stray_key", 1)
"""


@pytest.fixture(scope="module")
def typed() -> dict[str, Any]:
    return run(config_utils=TYPED_DECORATOR, ascend_config=TYPED)


def test_typed_fields_are_the_keys(typed: dict[str, Any]) -> None:
    keys = typed["keys"]
    assert typed["style"] == "typed"
    assert typed["unknown_keys"] == "refused"
    assert typed["unknown_keys_exception"] == "vllm_omni"
    assert keys["enable_cpu_binding"]["default"] is True
    assert keys["window"]["type"] == "int"
    assert keys["window"]["optional"] is True
    assert keys["alg"]["choices"] == ["", "fullmesh"]
    # not configuration: class variables, private and init=False fields
    assert not {"SUPPORTED", "_private", "cache", "model_config"} & set(keys)


def test_typed_default_factory_that_runs_code_is_unknown(typed: dict[str, Any]) -> None:
    overlap = typed["keys"]["overlap"]
    assert overlap["type"] == "bool"
    assert overlap["unknown"] == ["default"]
    assert "detect_hardware" in overlap["expr"]


def test_typed_sub_configs_and_their_policy(typed: dict[str, Any]) -> None:
    graph = typed["keys"]["graph_config"]
    assert graph["unknown_keys"] == "refused"  # the package's @config forbids extra keys
    assert graph["keys"]["sizes"]["default"] == []
    loose = typed["keys"]["loose_config"]
    assert loose["unknown_keys"] == "ignored"  # its own ConfigDict(extra="ignore")
    assert loose["keys"]["level"]["bounds"] == {"ge": 0, "le": 9}


def test_typed_keys_stripped_before_validation(typed: dict[str, Any]) -> None:
    keys = typed["keys"]
    assert keys["refresh"]["default"] is False  # read by init_ascend_config itself
    # a field the factory strips: accepted, then dropped (derived)
    assert keys["pd_ratio"]["stripped"] is True
    assert keys["pd_ratio"]["read"] == "derived"


def test_typed_read_elsewhere_but_refused_first(typed: dict[str, Any]) -> None:
    # read with .get() by other code, but neither a field nor stripped: validation refuses it
    assert "stray_key" not in typed["keys"]
    assert typed["read_but_refused"] == ["stray_key"]


def test_vllm_decorator_outside_the_package_is_said_to_forbid() -> None:
    doc = run(
        ascend_config="""
        from vllm.config import config

        @config
        class AscendConfig:
            enabled: bool = False

        def init_ascend_config(vllm_config):
            return AscendConfig(**vllm_config.additional_config)
        """
    )
    assert doc["unknown_keys"] == "refused"
    assert "vLLM's @config" in doc["unknown_keys_source"]


def test_nothing_is_imported_or_run(tmp_path: Any) -> None:
    # a source that would fail loudly if executed still extracts
    doc = run(
        ascend_config="""
        raise SystemExit("never run me")

        class AscendConfig:
            def __init__(self, vllm_config):
                self.x = vllm_config.additional_config.get("x", 3)
        """
    )
    assert doc["keys"]["x"]["default"] == 3


def test_document_records_release_extractor_and_digest() -> None:
    doc = ex.document("9.9.9", "vllm_ascend-9.9.9.tar.gz", "ab" * 32, {})
    assert doc["release"] == "9.9.9"
    assert doc["extractor_version"] == ex.EXTRACTOR_VERSION
    assert doc["sdist"] == {"filename": "vllm_ascend-9.9.9.tar.gz", "sha256": "ab" * 32}
    assert doc["keys"] == {}
    assert ex.render(doc).endswith("\n")


@pytest.mark.parametrize(
    ("src", "want"),
    [
        ("int | None", ("int", True, None)),
        ("Optional[str]", ("str", True, None)),
        ("Literal[0, 2, 3]", ("int", False, [0, 2, 3])),
        ("list[Any]", ("list", False, None)),
        ("'bool'", ("bool", False, None)),
        ("Annotated[float, Field(gt=0)]", ("float", False, None)),
        ("SomethingElse", (None, False, None)),
    ],
)
def test_annotation_types(src: str, want: tuple[Any, ...]) -> None:
    import ast

    assert ex.annotation_type(ast.parse(src, mode="eval").body) == want


def test_typed_validator_choices_and_bounds() -> None:
    doc = run(
        config_utils=TYPED_DECORATOR,
        ascend_config="""
        from pydantic import model_validator
        from vllm_ascend.config_utils import config

        @config
        class AscendConfig:
            mode: int = 1
            ratio: float = 0.5
            steps: int = 8
            cap: int = 4

            @model_validator(mode="after")
            def _check(self):
                if self.mode not in (0, 1, 2):
                    raise ValueError("mode")
                if not (0 < self.ratio <= 1):
                    raise ValueError("ratio")
                if self.steps <= 0 or self.steps > 64:
                    raise ValueError("steps")
                if self.mode == 2:
                    if self.cap < 0:
                        raise ValueError("only read when mode is 2: not a bound")
                return self

        def init_ascend_config(vllm_config):
            return AscendConfig(**vllm_config.additional_config)
        """,
    )
    keys = doc["keys"]
    assert keys["mode"]["choices"] == [0, 1, 2]
    assert keys["ratio"]["bounds"] == {"gt": 0, "le": 1}
    assert keys["steps"]["bounds"] == {"gt": 0, "le": 64}
    assert "bounds" not in keys["cap"]


def test_get_style_checks_in_init_and_validate() -> None:
    doc = run(
        ascend_config="""
        class AscendConfig:
            def __init__(self, vllm_config):
                cfg = vllm_config.additional_config
                self.tokens = cfg.get("max_tokens", 65536)
                if self.tokens <= 0:
                    raise ValueError("positive")
                self.chunk = ChunkConfig(cfg.get("chunk_config", {}))

        class ChunkConfig:
            def __init__(self, config):
                self.smooth = float(config.get("smooth", 1.0))
                self.stage = config.get("stage", "all")
                self._validate()

            def _validate(self):
                if not 0 < self.smooth <= 1:
                    raise ValueError("smooth")
                if self.stage not in ["all", "prefill"]:
                    raise ValueError("stage")
        """
    )
    keys = doc["keys"]
    assert keys["max_tokens"]["bounds"] == {"gt": 0}
    chunk = keys["chunk_config"]["keys"]
    assert chunk["smooth"]["bounds"] == {"gt": 0, "le": 1}
    assert chunk["stage"]["choices"] == ["all", "prefill"]
