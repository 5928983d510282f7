"""The one place secrets are masked: command lines, environments, log lines and documents go
through here before they are printed or written (snapshots, `--json`, error lines, fleet).

The catalogue (each form has a test in tests/core/test_redact.py):

- options by name, wherever they stand: `--api-key X`, `--api-key=X`, and the same inside one
  argument (`bash -c "vllm serve --api-key X"`), quoted or not; a name is secret when it ends in
  key, token, secret, password, passwd, passphrase, pwd, auth, authorization, credential(s),
  cookie, dsn, signature or webhook (or its last word is `pass`): `--auth`, `--pwd`,
  `--hf-token`; not `--max-num-batched-tokens` (a plural is a count) nor `--tokenizer`;
- keys by the same rule in JSON and Python-dict text (`{"api_key": "X"}`, `{'api_key': 'X'}`,
  also with escaped quotes) and keyword arguments (`api_key='X'`); only string values are
  masked, so `"enable_sp_by_pass": true` stays;
- headers: `Authorization:`, `Proxy-Authorization:`, `Cookie:`, `X-API-Key:`, `X-...-Token:`,
  `Private-Token:`; `Bearer X` and `Basic X` anywhere;
- URLs: `user:pw@host` (and a lone `token@host`), query and fragment parameters named like a
  secret (`?token=`, `&key=`, `&sig=`), webhook paths (`/hooks/...`, `/webhooks/...`, every
  path of a `hooks.` host), a Telegram `/botID:TOKEN`, and any path segment that looks like a
  token (20+ of [A-Za-z0-9_-] with an upper-case letter, a lower-case letter and a digit);
- token shapes by their prefix, kept so the kind stays recognisable (`sk-***`): `sk-`,
  `sk_live_`/`sk_test_`, `rk_live_`, `glpat-`, `ghp_`/`gho_`/`ghu_`/`ghs_`/`ghr_`,
  `github_pat_`, `xox?-`, `AIza`, `AKIA`/`ASIA`, `hf_`, `npm_`, `pypi-`; JWTs (`eyJ...` in three
  base64url parts, kept as `eyJ***`);
- environment variables by name (`NAME=X` in an environment, and in text when NAME is upper
  case): any name that contains KEY, TOKEN, SECRET, PASS, PWD, AUTH, CREDENTIAL, DSN, COOKIE or
  WEBHOOK (PGPASSWORD, MYSQL_PWD, APIKEY, *_APIKEY, SECRETS, OAUTHTOKEN, SENTRY_DSN,
  SLACK_WEBHOOK_URL), except the few known-safe names in ENV_ALLOW (the shell's PWD, a socket
  or file path, TOKENIZERS_PARALLELISM). No `ASCEND_*_KEY` exception: no variable this tool reads
  has such a name, and CANN's model-encryption settings may hold a real key.

A masked value keeps its quotes and its kind's prefix, never a character of the secret itself.
Masking errs on the side of hiding: a false positive costs a `***` in a report, a miss costs a key.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any

MASK = "***"

# --- names --------------------------------------------------------------------------------------

# an option or key name is secret when its letters (separators dropped) end in one of these
_NAME_ENDS = (
    "key",
    "token",
    "secret",
    "secrets",
    "password",
    "passwd",
    "passphrase",
    "pwd",
    "auth",
    "authorization",
    "credential",
    "credentials",
    "cookie",
    "dsn",
    "signature",
    "webhook",
    "webhookurl",
)
# ... or when its last word is one of these (`by_pass` ends in "pass"; `compass` does not)
_LAST_WORDS = frozenset({"pass", "sig", "pat", "jwt"})
_SEPARATORS = re.compile(r"[-_.]+")

ENV_WORDS = (
    "KEY",
    "TOKEN",
    "SECRET",
    "PASS",
    "PWD",
    "AUTH",
    "CREDENTIAL",
    "DSN",
    "COOKIE",
    "WEBHOOK",
)
# names that contain one of the words and are known to hold no secret
ENV_ALLOW = frozenset(
    {
        "PWD",  # the shell's folder
        "OLDPWD",
        "TOKENIZERS_PARALLELISM",  # Hugging Face tokenizers: true/false
        "SSH_AUTH_SOCK",  # a socket path
        "XAUTHORITY",  # a file path
        "RAY_AUTH_MODE",  # token/disabled: how Ray authenticates, not with what
    }
)


@functools.lru_cache(maxsize=4096)  # a long text repeats its names
def is_secret_name(name: str) -> bool:
    """An option or key name whose value is a secret: `--api-key`, `hf_token`, `sentry_dsn`."""
    low = name.strip().lstrip("-").lower()
    if not low:
        return False
    words = [w for w in _SEPARATORS.split(low) if w]
    if words and words[-1] in _LAST_WORDS:
        return True
    return "".join(words).endswith(_NAME_ENDS)


def is_secret_env(name: str) -> bool:
    """An environment variable whose value is a secret: any name that looks like one
    (contains KEY, TOKEN, PASS, ...) unless ENV_ALLOW knows it is safe."""
    up = name.strip().upper()
    if not up or up in ENV_ALLOW:
        return False
    return any(w in up for w in ENV_WORDS)


@functools.lru_cache(maxsize=4096)
def is_secret_key(name: str) -> bool:
    """A key in a dict, a keyword argument, a query parameter or an environment: by the option
    rule, or by the environment rule when it is written like a variable (upper case)."""
    if name.strip().upper() in ENV_ALLOW:
        return False
    return is_secret_name(name) or (name.isupper() and is_secret_env(name))


# --- forms in text ------------------------------------------------------------------------------

_URL = re.compile(r"(?<![A-Za-z0-9+.-])[A-Za-z][A-Za-z0-9+.-]{0,30}://[^\s\"'<>\\`]+")
# "api_key": "X" / 'api_key': 'X' / \"api_key\": \"X\" (a JSON string inside a shell
# argument): the name, then (when it is a secret) its quoted value
_QUOTED_KEY = re.compile(r"""(?P<q>\\?["'])(?P<n>[\w.-]{1,100})(?P=q)\s*[:=]\s*""")
# ... a string, or a list (vLLM's api_key is a list of keys)
_QUOTED_VALUE = re.compile(r"""(?P<v>(?P<vq>\\?["']).{0,4096}?(?P=vq)|\[[^\]\n]{0,4096}\])""")
_HEADER = re.compile(
    r"(?<![\w-])(?P<h>(?:proxy-)?authorization|(?:set-)?cookie|api-?key|private-token|auth-token"
    r"|x-[a-z0-9-]*?(?:key|token|secret|auth|signature|password|session))"
    r"(?P<sep>\s*:\s*)(?P<v>[^\r\n\"'\\]*[^\s\"'\\])",
    re.IGNORECASE,
)
# a value after a name: quoted (also with escaped quotes), or up to the next blank
_VALUE = re.compile(r"""(?P<v>\\?"[^"\\]*\\?"|'[^']*'|[^\s"'`]+)""")
# --api-key X, --api-key=X, -token 'X' inside a longer text
_FLAG = re.compile(r"(?<![\w-])(?P<n>--?[A-Za-z][\w.-]{0,100})(?:=|[ \t]+)")
# ?token=X&key=Y (a query string, in a URL or not), up to the next parameter
_PARAM = re.compile(r"(?<=[?&#;])(?P<n>[\w.-]+)=(?P<v>[^&#;\s\"']*)")
# NAME=X (an environment entry, `env HF_TOKEN=X cmd`) and api_key='X' (a keyword argument)
_ASSIGN = re.compile(r"(?<![\w.?&#;-])(?P<n>[A-Za-z_][A-Za-z0-9_]{0,100})=")
_BEARER = re.compile(r"\b(?P<k>Bearer)(?P<sep>\s+|%20)(?P<v>[A-Za-z0-9._~+/=-]+)", re.IGNORECASE)
_BASIC = re.compile(r"\b(?P<k>Basic)(?P<sep>\s+|%20)(?P<v>[A-Za-z0-9+/]{6,}={0,2})", re.IGNORECASE)
_PREFIXED = re.compile(
    r"(?<![\w-])(?P<p>sk-(?:proj-|ant-|svcacct-)?|[sr]k_(?:live|test)_|glpat-|gh[pousr]_|github_pat_"
    r"|xox[abposre]-|AIza|hf_|npm_|pypi-)(?P<v>[A-Za-z0-9_-]{16,})"
    r"|(?<![\w-])(?P<aws>AKIA|ASIA)(?P<av>[0-9A-Z]{16})(?![0-9A-Za-z])"
)
_PREFIX_HINTS = (
    "sk-",
    "k_live_",
    "k_test_",
    "glpat-",
    "gh",
    "xox",
    "AIza",
    "hf_",
    "npm_",
    "pypi-",
    "AKIA",
    "ASIA",
)
_JWT = re.compile(r"(?<![\w-])eyJ[A-Za-z0-9_-]{4,}\.[A-Za-z0-9_-]{4,}\.[A-Za-z0-9_-]{4,}")
# a path segment that looks like a token: long, and mixing upper case, lower case and digits
_TOKENISH = re.compile(r"^(?=.*[A-Z])(?=.*[a-z])(?=.*\d)[A-Za-z0-9_-]{20,}$")
_TELEGRAM = re.compile(r"^bot\d+:[A-Za-z0-9_-]+$")
_HOOK_SEGMENTS = frozenset({"hooks", "webhooks", "webhook", "hook"})
_URL_PARAM_NAMES = frozenset({"sig", "signature", "code", "x-amz-security-token"})


def _masked_value(v: str) -> str:
    """The mask in place of v, keeping v's quotes (`"X"` -> `"***"`, `\\"X\\"` -> `\\"***\\"`)."""
    if v.startswith("[") and v.endswith("]"):
        return f"[{MASK}]"
    for q in ('\\"', '"', "'"):
        if len(v) >= 2 * len(q) and v.startswith(q) and v.endswith(q):
            return f"{q}{MASK}{q}"
    return MASK


def _param(m: re.Match[str]) -> str:
    name = m.group("n")
    if m.group("v") and (is_secret_key(name) or name.lower() in _URL_PARAM_NAMES):
        return f"{name}={MASK}"
    return m.group(0)


def _url(m: re.Match[str]) -> str:
    scheme, _, rest = m.group(0).partition("://")
    cut = min((i for i in (rest.find(c) for c in "/?#") if i >= 0), default=len(rest))
    authority, tail = rest[:cut], rest[cut:]
    host = authority.rpartition("@")[2]
    if "@" in authority:
        user, colon, _ = authority.rpartition("@")[0].partition(":")
        authority = f"{user}:{MASK}@{host}" if colon else f"{MASK}@{host}"
    before_fragment, hashmark, fragment = tail.partition("#")
    path, qmark, query = before_fragment.partition("?")
    segments = path.split("/")
    # every path of a hooks. host (hooks.slack.com/services/T/B/X), or what follows /hooks/
    hook_from = 2 if host.lower().startswith("hooks.") else None
    for i, seg in enumerate(segments[1:], 1):
        if hook_from is not None and i >= hook_from:
            segments[i:] = [MASK]
            break
        if _TOKENISH.match(seg):
            segments[i] = MASK
        elif _TELEGRAM.match(seg):
            segments[i] = "bot" + MASK
        elif seg.lower() in _HOOK_SEGMENTS:
            hook_from = i + 1
    return f"{scheme}://{authority}{'/'.join(segments)}{qmark}{query}{hashmark}{fragment}"


def _header(m: re.Match[str]) -> str:
    return f"{m.group('h')}{m.group('sep')}{MASK}"


def _option_value(name: re.Match[str], value: str) -> bool:
    # `--no-auth --api-key X`: the word after a name is an option, not its value
    return name.group(0).endswith("=") or not _is_option(value)


def _mask_values(
    names: re.Pattern[str],
    values: re.Pattern[str],
    secret: Callable[[str], bool],
    text: str,
    is_value: Callable[[re.Match[str], str], bool] | None = None,
) -> str:
    """Every value (`values`, right after a match of `names`) of a name that `secret` says
    is one, masked (unless `is_value` says what follows is no value). Two steps, so a name
    that is no secret does not swallow what follows it: after `-c` or `cmd=` the text is
    scanned on (`-c 'vllm --api-key X'`, `cmd='HF_TOKEN=X'`)."""
    out: list[str] = []
    pos = 0
    for m in names.finditer(text):
        if m.start() < pos or not secret(m.group("n")):
            continue  # inside a value already masked, or no secret
        v = values.match(text, m.end())
        if v is None or not v.group("v") or (is_value and not is_value(m, v.group("v"))):
            continue
        out.append(text[pos : m.end()] + _masked_value(v.group("v")))
        pos = v.end()
    out.append(text[pos:])
    return "".join(out)


def _basic(m: re.Match[str]) -> str:
    v = m.group("v")
    # "Basic setup" is English; base64 of user:password has a digit, a '=' or both cases
    if not (any(c.isdigit() for c in v) or "=" in v or (v != v.lower() and v != v.upper())):
        return m.group(0)
    return f"{m.group('k')}{m.group('sep')}{MASK}"


def _prefixed(m: re.Match[str]) -> str:
    return (m.group("p") or m.group("aws")) + MASK


def redact_text(text: str) -> str:
    """text with every secret of the catalogue masked, whatever the text is (one argument, a
    joined command line, a log line, an error message)."""
    if not text:
        return text
    low = text.lower()
    # each form has a character or word it cannot do without: most text skips most scans
    if "://" in text:
        text = _URL.sub(_url, text)
    if ('"' in text or "'" in text) and (":" in text or "=" in text):
        text = _mask_values(_QUOTED_KEY, _QUOTED_VALUE, is_secret_key, text)
    if ":" in text:
        text = _HEADER.sub(_header, text)
    if "=" in text:
        text = _PARAM.sub(_param, text)
    if "-" in text:
        text = _mask_values(_FLAG, _VALUE, is_secret_name, text, _option_value)
    if "=" in text:
        text = _mask_values(_ASSIGN, _VALUE, is_secret_key, text)
    if "bearer" in low:
        text = _BEARER.sub(lambda m: f"{m.group('k')}{m.group('sep')}{MASK}", text)
    if "basic" in low:
        text = _BASIC.sub(_basic, text)
    if any(p in text for p in _PREFIX_HINTS):
        text = _PREFIXED.sub(_prefixed, text)
    if "eyJ" in text:
        text = _JWT.sub("eyJ" + MASK, text)
    return text


def _is_option(arg: str) -> bool:
    return len(arg) > 2 and arg.startswith("--") and arg[2].isalpha()


def redact_args(argv: Sequence[str]) -> list[str]:
    """argv with the value of every secret-named option masked (`--api-key X`: the next
    argument), and every other argument through redact_text."""
    out: list[str] = []
    hide_next = False
    for arg in argv:
        if hide_next:
            hide_next = False
            if arg and not _is_option(arg):
                out.append(MASK)
                continue
        flag, eq, _ = arg.partition("=")
        if flag.startswith("-") and " " not in flag and is_secret_name(flag):
            if eq:
                out.append(f"{flag}={MASK}")
            else:
                out.append(arg)
                hide_next = True
            continue
        out.append(redact_text(arg))
    return out


def redact_entry(entry: str) -> str:
    """One NAME=VALUE of an environment: the value masked when the name looks secret."""
    name, eq, value = entry.partition("=")
    if not eq:
        return redact_text(entry)
    if name.strip().upper() not in ENV_ALLOW and (is_secret_env(name) or is_secret_name(name)):
        return f"{name}={MASK}"
    return f"{name}={redact_text(value)}"


def redact_environ(raw: str) -> str:
    """A NUL-separated environment (/proc/PID/environ) with secret values masked."""
    return "\0".join(redact_entry(e) for e in raw.split("\0"))


def redact_env(env: Mapping[str, str]) -> dict[str, str]:
    """An environment as a mapping, secret values masked."""
    return {k: redact_entry(f"{k}={v}").partition("=")[2] for k, v in env.items()}


def redact_cmdline(raw: str) -> str:
    """A NUL-separated command line (/proc/PID/cmdline) with every secret masked."""
    return "\0".join(redact_args(raw.split("\0")))


def redact_doc(doc: Any) -> Any:
    """A JSON-like document with every secret masked: what a secret-named key holds (a string,
    or each string of a list: vLLM's api_key is a list), every other list of strings as a
    command line, every other string as text."""
    if isinstance(doc, str):
        return redact_text(doc)
    if isinstance(doc, Mapping):
        return {k: _under(k, v) for k, v in doc.items()}
    if isinstance(doc, list | tuple):
        if doc and all(isinstance(a, str) for a in doc):
            return redact_args(doc)
        return [redact_doc(v) for v in doc]
    return doc


def _under(key: object, value: Any) -> Any:
    if not (isinstance(key, str) and is_secret_key(key)):
        return redact_doc(value)
    if isinstance(value, str):
        return MASK if value else value
    if isinstance(value, list | tuple) and all(isinstance(v, str) for v in value):
        return [MASK] * len(value)
    return redact_doc(value)
