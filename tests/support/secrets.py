"""Every form of secret ascendtune/core/redact.py masks, planted by a value that holds LEAK and
a two-digit number: a test plants them (in a command line, an environment, a log) and asserts
with `leaks()` that none survives in what a command printed or wrote."""

from __future__ import annotations

import re
from collections.abc import Iterable
from pathlib import Path

# command-line forms: name -> the arguments as a process has them
ARGV: dict[str, list[str]] = {
    "--api-key X": ["--api-key", "LEAK01plain"],
    "--api-key=X": ["--api-key=LEAK02equals"],
    "'--api-key X' as one argument": ["--api-key LEAK03onearg"],
    "bash -c launcher": ["-c", "exec vllm serve m --api-key LEAK04bashc --port 8000"],
    "bash -c launcher, quoted value": ["-c", "vllm serve m --api-key 'LEAK05 quoted'"],
    "Bearer": ["--header", "Bearer LEAK06bearer"],
    "Authorization: header": ["-H", "Authorization: Token LEAK07authz"],
    "X-API-Key: header": ["-H", "X-API-Key: LEAK08xapikey"],
    "user:pw@host": ["--model", "https://user:LEAK09urlpw@hub.example/org/m"],
    "?token= in a URL": ["--endpoint", "https://api.example/v1?token=LEAK10query&x=1"],
    "&key= in a URL": ["--endpoint", "https://api.example/v1?x=1&key=LEAK11amp"],
    "webhook path": ["--notify", "https://hooks.slack.com/services/T000/B000/LEAK12hook"],
    "/hooks/ path": ["--notify", "https://chat.example/hooks/T000/B000/LEAK13hooks"],
    "token-like path segment": ["--dl", "https://dl.example/f/Xy9LEAK14aBcDeFgHiJkL/m.bin"],
    "JSON api_key": ["--additional-config", '{"api_key": "LEAK15json", "x": 1}'],
    "nested JSON token": ["--kv-transfer-config", '{"extra": {"auth_token": "LEAK16nested"}}'],
    "Python dict api_key": ["--note", "{'api_key': 'LEAK17pydict'}"],
    "keyword argument": ["--note", "Namespace(api_key='LEAK18kwarg')"],
    "--auth": ["--auth", "LEAK19auth"],
    "--pwd": ["--pwd", "LEAK20pwd"],
    "--passphrase": ["--passphrase", "LEAK21phrase"],
    "--password": ["--password", "LEAK22password"],
    "--token": ["--token", "LEAK23token"],
    "--secret": ["--secret", "LEAK24secret"],
    "sk-": ["--note", "sk-LEAK25abcdefghijkl"],
    "sk_live_": ["--note", "sk_live_LEAK26abcdefghijk"],
    "glpat-": ["--note", "glpat-LEAK27abcdefghijk"],
    "ghp_": ["--note", "ghp_LEAK28abcdefghijklmnopq"],
    "xoxb-": ["--note", "xoxb-LEAK29-abcdefghijkl"],
    "AIza": ["--note", "AIzaLEAK30abcdefghijklmnop"],
    "AKIA": ["--note", "AKIALEAK31ABCDEFGHIJ"],
    "hf_": ["--note", "hf_LEAK32abcdefghijklmnop"],
    "JWT": ["--note", "eyJhbGciOiJIUzI1NiJ9.eyJMEAK33payload.LEAK33signature"],
    "inline NAME=X": ["-c", "HF_TOKEN=LEAK34inline vllm serve m"],
    "Basic": ["--header", "Basic LEAK35basic0="],
}

# environment forms: name -> value
ENV: dict[str, str] = {
    "PGPASSWORD": "LEAK51pg",
    "MYSQL_PWD": "LEAK52mysql",
    "APIKEY": "LEAK53apikey",
    "OPENAI_APIKEY": "LEAK54openai",
    "SECRETS": "LEAK55secrets",
    "OAUTHTOKEN": "LEAK56oauth",
    "SENTRY_DSN": "https://LEAK57dsn@o1.ingest.sentry.io/42",
    "SLACK_WEBHOOK_URL": "https://hooks.slack.com/services/T0/B0/LEAK58",
    "HF_TOKEN": "LEAK59hf",
    "AWS_SECRET_ACCESS_KEY": "LEAK60aws",
    "MY_SERVICE_CREDENTIALS": "LEAK61creds",
    "SESSION_COOKIE": "LEAK62cookie",
    "DB_PASSPHRASE": "LEAK63phrase",
    "NOTE": "https://u:LEAK64note@proxy.example:3128",
}

# what must survive: names and values that only look like secrets
KEEP_ARGV = ["--max-num-batched-tokens", "8192", "--tokenizer", "Qwen/Qwen2.5-7B", "--port", "8000"]
KEEP_ENV = {"TOKENIZERS_PARALLELISM": "false", "PWD": "/workspace", "PATH": "/usr/bin"}

# how a vLLM server log echoes its arguments (and a client error quoting a URL)
LOG_LINES = [
    "INFO 01-01 00:00:00 [api_server.py:1] vLLM API server version 0.9.1",
    "INFO 01-01 00:00:00 [utils.py:1] non-default args: {'model': 'm', "
    "'api_key': ['LEAK71list'], 'hf_token': 'LEAK72hf', 'tensor_parallel_size': 2}",
    "INFO 01-01 00:00:00 [api_server.py:2] args: Namespace(api_key='LEAK73ns', port=8000)",
    "WARNING 01-01 00:00:01 [client.py:3] GET https://u:LEAK74@hub.example/x?token=LEAK75 failed",
    "INFO 01-01 00:00:02 [launcher.py:4] cmd: vllm serve m --api-key LEAK76cmd --hf-token=LEAK77",
    "INFO 01-01 00:00:02 [auth.py:5] Authorization: Bearer LEAK78bearer",
]

_LEAK = re.compile(r"LEAK\d\d")


def argv(
    head: Iterable[str] = ("python3", "-m", "vllm.entrypoints.openai.api_server"),
) -> list[str]:
    """A command line holding every form, and what must survive."""
    return [*head, *(a for form in ARGV.values() for a in form), *KEEP_ARGV]


def environ() -> dict[str, str]:
    return {**ENV, **KEEP_ENV}


def environ_text() -> str:
    """/proc/PID/environ holding every environment form."""
    return "".join(f"{k}={v}\0" for k, v in environ().items())


def leaks(*texts: str) -> list[str]:
    """The planted values that survived in texts."""
    return sorted({m for t in texts for m in _LEAK.findall(t)})


def leaks_in_files(root: Path) -> dict[str, list[str]]:
    """The planted values that survived in any file under root (a snapshot, a fleet folder),
    and in any .tar.gz / .tar there, by path."""
    import gzip
    import tarfile

    found: dict[str, list[str]] = {}
    for p in sorted(root.rglob("*")):
        if p.is_symlink() or not p.is_file():
            continue
        data = p.read_bytes()
        if p.name.endswith((".tar.gz", ".tgz", ".tar")):
            raw = gzip.decompress(data) if p.name.endswith(("gz", "tgz")) else data
            import io

            with tarfile.open(fileobj=io.BytesIO(raw)) as tar:
                for member in tar.getmembers():
                    f = tar.extractfile(member) if member.isfile() else None
                    if f is not None:
                        hit = leaks(f.read().decode("utf-8", "replace"))
                        if hit:
                            found[f"{p.name}:{member.name}"] = hit
            continue
        hit = leaks(data.decode("utf-8", "replace"))
        if hit:
            found[str(p.relative_to(root))] = hit
    return found
