"""Mask secrets in command lines and environments before they are printed or written into a
snapshot.

By name: the value of an option (`--api-key X`, `--hf-token=X`) or an environment variable
(`HF_TOKEN=X`) whose name looks secret. By form, wherever it appears: well-known token prefixes
(`sk-...`, `hf_...`, `ghp_...`), `Bearer X` / `Basic X`, credentials in a URL (`user:X@host`),
and values under secret-like keys inside a JSON argument (`{"api_key": "X"}`).
"""

from __future__ import annotations

import re
from collections.abc import Sequence

MASK = "***"
# the option's name ends in the word: --api-key, --hf-token, --password; not --max-num-batched-tokens
SECRET_FLAG = re.compile(
    r"^--?[\w.-]*(key|token|secret|passw|password|passwd|credentials?)$", re.IGNORECASE
)
# an environment name with the word as one of its _-separated parts: HF_TOKEN, AWS_SECRET_ACCESS_KEY,
# not TOKENIZERS_PARALLELISM (nor PWD, the shell's folder)
SECRET_NAME = re.compile(
    r"^(?:[\w.-]*_)?(?:key|token|secret|password|passwd|pass|credentials?|auth)(?:_[\w.-]*)?$",
    re.IGNORECASE,
)

# token shapes of common providers (OpenAI/Anthropic sk-, Hugging Face hf_, GitHub, AWS, Slack)
_TOKENS = re.compile(
    r"\b(?:sk-[A-Za-z0-9_-]{8,}|hf_[A-Za-z0-9]{8,}|gh[pousr]_[A-Za-z0-9]{8,}"
    r"|github_pat_[A-Za-z0-9_]{8,}|AKIA[0-9A-Z]{12,}|xox[abposr]-[A-Za-z0-9-]{8,})"
)
_BEARER = re.compile(r"\b(Bearer|Basic|Token)(\s+|%20)[A-Za-z0-9._~+/=-]+", re.IGNORECASE)
_URL_CRED = re.compile(r"([A-Za-z][A-Za-z0-9+.-]*://[^/\s:@]*:)[^@/\s]+@")
# "api_key": "X" (also with escaped quotes, as in a JSON string inside a shell argument). The key
# must END in the word: "num_speculative_tokens" or "max_num_batched_tokens" are not secrets.
_JSON_KEY_END = r"(?:key|token|secret|password|passwd|pwd|credentials?|auth|authorization)"
_JSON_SECRET = re.compile(
    rf'((?:\\?")[^"\\]*{_JSON_KEY_END}(?:\\?")\s*:\s*)(\\?")(?:[^"\\]|\\[^"])*(\\?")',
    re.IGNORECASE,
)


def redact_text(text: str) -> str:
    """text with every secret recognised by its form masked."""
    text = _JSON_SECRET.sub(lambda m: f"{m.group(1)}{m.group(2)}{MASK}{m.group(3)}", text)
    text = _BEARER.sub(lambda m: f"{m.group(1)}{m.group(2)}{MASK}", text)
    text = _URL_CRED.sub(lambda m: f"{m.group(1)}{MASK}@", text)
    return _TOKENS.sub(MASK, text)


def redact_args(argv: Sequence[str]) -> list[str]:
    """argv with the values of --api-key-like options replaced by ***, and every secret
    recognised by its form (redact_text) masked in the other arguments."""
    out: list[str] = []
    hide_next = False
    for arg in argv:
        if hide_next and arg:
            out.append(MASK)
            hide_next = False
            continue
        flag, eq, _ = arg.partition("=")
        if SECRET_FLAG.match(flag):
            if eq:
                out.append(f"{flag}={MASK}")
            else:
                out.append(arg)
                hide_next = True
            continue
        out.append(redact_text(arg))
    return out


def redact_environ(raw: str) -> str:
    """A NUL-separated environment (/proc/PID/environ) with secret-named values masked."""
    out: list[str] = []
    for entry in raw.split("\0"):
        name, eq, _value = entry.partition("=")
        if eq and SECRET_NAME.match(name):
            out.append(f"{name}={MASK}")
        else:
            out.append(redact_text(entry))
    return "\0".join(out)
