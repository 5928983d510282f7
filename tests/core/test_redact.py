"""The redaction catalogue, form by form: each form masked as an argument list, as one joined
line (a `bash -c` launcher, a log line), in an environment; what only looks like a secret kept;
a masked value keeps its kind's prefix and never a character of the secret."""

from __future__ import annotations

import json
import shlex
import time

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ascendtune.core.redact import (
    MASK,
    is_secret_env,
    is_secret_name,
    redact_args,
    redact_doc,
    redact_env,
    redact_environ,
    redact_text,
)
from tests.support import secrets


@pytest.mark.parametrize("form", list(secrets.ARGV), ids=list(secrets.ARGV))
def test_each_argv_form_is_masked(form: str) -> None:
    args = secrets.ARGV[form]
    assert secrets.leaks(*redact_args(["vllm", "serve", "m", *args])) == []
    # the same arguments as one line, as `ps`, a log or an error line shows them
    assert secrets.leaks(redact_text(" ".join(["vllm", *args]))) == []


@pytest.mark.parametrize("name", list(secrets.ENV), ids=list(secrets.ENV))
def test_each_environment_form_is_masked(name: str) -> None:
    value = secrets.ENV[name]
    assert secrets.leaks(redact_environ(f"A=1\0{name}={value}\0B=2")) == []
    assert secrets.leaks(*redact_env({name: value}).values()) == []
    # NAME=X in a line: `env NAME=X cmd`, `export NAME=X`
    assert secrets.leaks(redact_text(f"export {name}={shlex.quote(value)}; vllm serve")) == []


@pytest.mark.parametrize("line", secrets.LOG_LINES)
def test_each_log_form_is_masked(line: str) -> None:
    assert secrets.leaks(redact_text(line)) == []


def test_what_only_looks_secret_is_kept() -> None:
    assert redact_args(secrets.KEEP_ARGV) == secrets.KEEP_ARGV
    keep = "".join(f"{k}={v}\0" for k, v in secrets.KEEP_ENV.items())
    assert redact_environ(keep) == keep
    for text in (
        "--max-num-batched-tokens 8192 --tokenizer x -tp 2 --port 8000",
        '{"enable_sp_by_pass": true, "max_num_batched_tokens": 8192, "num_speculative_tokens": 2}',
        "Basic setup done; https://hub.example/org/model?revision=main",
        "https://github.com/vllm-project/vllm-ascend/commit/182b75ea0123456789abcdef0123456789abcdef",
        "disk-usage task-set hf_cache /data/hf_models",
    ):
        assert redact_text(text) == text


# (input, exact output): the shape stays recognisable, and no character of a secret is left
SHAPES = [
    ("--api-key X1", "--api-key ***"),
    ("--api-key=X2", "--api-key=***"),
    ("--api-key 'a b'", "--api-key '***'"),
    ('{"api_key": "X3", "n": 1}', '{"api_key": "***", "n": 1}'),
    ("{'api_key': ['k1', 'k2']}", "{'api_key': [***]}"),
    ('{\\"hf_token\\": \\"X4\\"}', '{\\"hf_token\\": \\"***\\"}'),
    ("Authorization: Bearer abc.def", "Authorization: ***"),
    ("curl -H 'Bearer abc'", "curl -H 'Bearer ***'"),
    ("https://u:pw@h.example/p?a=1", "https://u:***@h.example/p?a=1"),
    ("https://tok@h.example/", "https://***@h.example/"),
    ("https://h.example/p?a=1&token=t&b=2", "https://h.example/p?a=1&token=***&b=2"),
    ("https://hooks.slack.com/services/T0/B0/XYZ", "https://hooks.slack.com/services/***"),
    ("https://x.example/api/webhooks/1/XYZ", "https://x.example/api/webhooks/***"),
    ("https://api.telegram.org/bot123:AbC/send", "https://api.telegram.org/bot***/send"),
    ("sk-proj-abcdefghijklmnop1", "sk-proj-***"),
    ("key sk_live_abcdefghijklmnop1.", "key sk_live_***."),
    ("AKIAABCDEFGHIJKLMNOP", "AKIA***"),
    ("eyJhbGciOi.eyJzdWIiOi.c2lnbmF0dXJl", "eyJ***"),
    ("HF_TOKEN=abc vllm", "HF_TOKEN=*** vllm"),
    ("--no-auth --api-key X5", "--no-auth --api-key ***"),
    ("-c 'vllm --api-key X6'", "-c 'vllm --api-key ***'"),
]


@pytest.mark.parametrize(("raw", "want"), SHAPES)
def test_masked_shape(raw: str, want: str) -> None:
    assert redact_text(raw) == want


def test_argv_masks_the_next_argument_unless_it_is_an_option() -> None:
    argv = ["vllm", "--api-key", "k1", "--no-auth", "--port", "8000", "--hf-token=t", "--password"]
    assert redact_args(argv) == [
        "vllm", "--api-key", MASK, "--no-auth", "--port", "8000", "--hf-token=***", "--password"
    ]  # fmt: skip


def test_names() -> None:
    for name in ("--api-key", "--hf-token", "--auth", "--pwd", "--passphrase", "api_key", "PASS"):
        assert is_secret_name(name), name
    for name in ("--max-num-batched-tokens", "--tokenizer", "--port", "keys", "--compass"):
        assert not is_secret_name(name), name
    # an environment name that looks secret is one, unless known to be safe
    for name in ("PGPASSWORD", "MYSQL_PWD", "APIKEY", "X_APIKEY", "SECRETS", "OAUTHTOKEN",
                 "SENTRY_DSN", "A_WEBHOOK_URL", "MONKEYPATCH_KEY", "SESSION_COOKIE"):  # fmt: skip
        assert is_secret_env(name), name
    for name in ("PWD", "OLDPWD", "TOKENIZERS_PARALLELISM", "SSH_AUTH_SOCK", "PATH", "LANG"):
        assert not is_secret_env(name), name


def test_documents() -> None:
    doc = {
        "command": ["vllm", "--api-key", "X1"],
        "env": {"HF_TOKEN": "X2", "LANG": "C"},
        "api_key": "X3",
        "nested": [{"line": "Bearer X4"}, 3, None],
        "n_keys": 2,
    }
    out = redact_doc(doc)
    assert "X1" not in json.dumps(out) and "X2" not in json.dumps(out)
    assert out["api_key"] == MASK and out["env"]["LANG"] == "C" and out["n_keys"] == 2
    assert out["nested"][0]["line"] == "Bearer ***"


word = st.text(alphabet="abcXYZ019_-./:", min_size=1, max_size=8)


@given(
    st.sampled_from(sorted(secrets.ARGV)), st.lists(word, max_size=4), st.lists(word, max_size=4)
)
def test_a_form_among_other_words_is_still_masked(
    form: str, before: list[str], after: list[str]
) -> None:
    argv = [*before, *secrets.ARGV[form], *after]
    assert secrets.leaks(*redact_args(argv)) == []
    assert secrets.leaks(redact_text(" ".join(argv))) == []


@given(st.text(max_size=200))
def test_redaction_is_idempotent(text: str) -> None:
    once = redact_text(text)
    assert redact_text(once) == once


@pytest.mark.parametrize(
    "text",
    ['"a":"' * 100_000, "a=" * 250_000, "-a " * 150_000, "a://b@" * 80_000, "a." * 250_000],
    ids=["quoted", "assign", "flags", "urls", "dots"],
)
def test_large_hostile_text_is_linear(text: str) -> None:
    # half a megabyte in a few seconds at most on a loaded machine; a quadratic scan takes
    # minutes (what the first version of the two-step scan did with `a=a=a=...`)
    start = time.monotonic()
    redact_text(text)
    assert time.monotonic() - start < 20
