"""Every file a run writes is parseable whatever the secrets' values, and holds none of them.

Real runs against a real HTTP server on loopback that echoes the credentials it was sent (as is, JSON-escaped
and base64-encoded) inside its replies. Before: a base-URL user name ``user``, a key ``true`` or ``"``
corrupted the session file (``live`` said "passed" and no reader accepted the file); ``run.json`` and the
reply cache kept a base URL's password and secret extra-body fields in plain text.
"""

from __future__ import annotations

import base64
import json
import os
import subprocess
import sys
import urllib.parse
from pathlib import Path
from typing import Any

import pytest

from beavertui.engine.session.store import read_session
from tests.cli_in_process import run_cli
from tests.loopback_endpoint import Endpoint, chunk, completion

ROOT = Path(__file__).resolve().parents[2]
RECORDED = ROOT / "tests" / "data" / "recorded"
TOOLCHAIN = f"recorded:{RECORDED / 'vec_scale.recordings.jsonl'}"
REFERENCE = (RECORDED / "vec_scale" / "candidates" / "reference.cu").read_text()


def _echo(model: str, body: dict[str, Any], headers: dict[str, str]) -> tuple[str, Any]:
    auth = headers.get("authorization", "")
    sent = json.dumps(body.get("top_secret_echo", ""))
    text = (
        f"```cuda\n{REFERENCE}\n```\nYou sent {auth} ({base64.b64encode(auth.encode()).decode()}), "
        f"as JSON {json.dumps(auth)}, extra {sent}"
    )
    if body.get("stream"):
        return "stream", [chunk(model, text), chunk(model, None, "stop")]
    return "json", completion(model, text)


def _cli(
    *argv: str, cwd: Path, env: dict[str, str], process: bool = False
) -> subprocess.CompletedProcess[str]:
    """The command in this process, or with ``process`` as ``python3 -m beavertui`` (the first case keeps
    the real entry point of ``live`` under test)."""
    if not process:
        return run_cli(*argv, cwd=cwd, env={**os.environ, **env})
    return subprocess.run(
        [sys.executable, "-m", "beavertui", *argv],
        cwd=cwd, env={**os.environ, "PYTHONPATH": str(ROOT), **env}, capture_output=True, text=True, timeout=120,
    )  # fmt: skip


CASES = [
    ("user", "pass", "true"),
    ('"', "\\", "null"),
    ("kind", "role", "reply"),
]


@pytest.mark.parametrize(
    ("user", "password", "key"), CASES, ids=["user-pass-true", "quote-backslash-null", "keys"]
)
def test_live_writes_a_whole_session_whatever_the_secrets(
    tmp_path: Path, user: str, password: str, key: str
) -> None:
    with Endpoint(_echo) as server:
        netloc = f"{urllib.parse.quote(user, safe='')}:{urllib.parse.quote(password, safe='')}@"
        url = server.url.replace("http://", f"http://{netloc}")
        p = _cli(
            "live", "--task", "vec_scale", "--corpus", str(RECORDED), "--model", "echo", "--base-url", url,
            "--api-key-env", "SECRET_WORD_KEY", "--extra-body", json.dumps({"api_key": password, "top_secret_echo": 1}),
            "--headless", "--no-stream", "--toolchain", TOOLCHAIN, "--budget", "2", "--temperature", "0",
            cwd=tmp_path, env={"SECRET_WORD_KEY": key}, process=user == CASES[0][0],
        )  # fmt: skip
        assert server.requests, p.stderr
    assert p.returncode == 0, p.stdout + p.stderr
    (session,) = (tmp_path / "sessions" / "live").glob("*.jsonl")
    for line in session.read_text().splitlines():
        json.loads(line)
    header, events, problem = read_session(session)
    assert problem is None and header is not None, problem
    assert events[-1].kind == "end" and events[-1].success  # type: ignore[union-attr]
    roles = [m.role for e in events if e.kind == "request" for m in e.messages]  # type: ignore[union-attr]
    assert "user" in roles and "system" in roles
    assert header.model.base_url is not None and header.model.base_url.startswith(
        "http://[redacted]@127.0.0.1"
    )
    assert header.model.params["extra_body"] == {"api_key": "[redacted]", "top_secret_echo": 1}
    m = _cli("metrics", str(session.parent), "--json", cwd=tmp_path, env={})
    assert m.returncode == 0, m.stderr
    (group,) = json.loads(m.stdout)["groups"]
    assert group["n_tasks"] == 1 and group["pass@1"] == 1.0


LONG_KEY = "sk-proj-Zx81-QvR7_tt3LmK0pq9"
LONG_PASSWORD = "pw-Bq81nTz0-4471"
BODY_SECRET = "bd-Yt66Rk-2092"


def _protocol(path: Path, url: str) -> Path:
    netloc = f"http://operator:{LONG_PASSWORD}@"
    path.write_text(
        "name = 'secrets'\n[protocol]\nbudget = 2\ntemperature = 0.0\n"
        f"[[models]]\nmodel = 'echo'\nbase_url = '{url.replace('http://', netloc)}'\n"
        "api_key_env = 'SECRET_LONG_KEY'\nretries = 0\n"
        f"extra_body = {{ api_key = '{BODY_SECRET}', top_k = 5 }}\n"
    )
    return path


def _spellings(secret: str) -> list[str]:
    return [secret, json.dumps(secret)[1:-1], base64.b64encode(secret.encode()).decode()[:12]]


def test_run_json_and_the_reply_cache_hold_no_credentials_and_a_resume_takes_them_from_the_file(
    tmp_path: Path,
) -> None:
    cache = tmp_path / "replies"
    env = {"SECRET_LONG_KEY": LONG_KEY, "BEAVERTUI_REPLY_CACHE": str(cache)}
    with Endpoint(_echo) as server:
        proto = _protocol(tmp_path / "p.toml", server.url)
        args = ("--corpus", str(RECORDED), "--tasks", "vec_scale", "--toolchain", TOOLCHAIN, "--quiet")
        p = _cli("batch", "--protocol", str(proto), "--run-id", "r", *args, cwd=tmp_path, env=env)
        assert p.returncode == 0, p.stdout + p.stderr
        run = tmp_path / "sessions" / "r"
        written = [f for f in [*run.rglob("*"), *cache.rglob("*")] if f.is_file() and f.name != ".run.lock"]
        assert any(f.parent.parent == cache for f in written)  # the reply cache was filled
        for f in written:
            text = f.read_text()
            if f.suffix == ".json":
                json.loads(text)
            else:
                for line in text.splitlines():
                    json.loads(line)
            for secret in (LONG_KEY, LONG_PASSWORD, BODY_SECRET):
                for spelling in _spellings(secret):
                    assert spelling not in text, (f, secret)
        manifest = json.loads((run / "run.json").read_text())
        assert manifest["models"][0]["base_url"].startswith("http://[redacted]@127.0.0.1")
        assert manifest["models"][0]["extra_body"] == {"api_key": "[redacted]", "top_k": 5}
        # a resume needs the credentials run.json does not keep: refused in one line without the file
        (session,) = run.rglob("*.jsonl")
        session.unlink()
        r = _cli("batch", "--resume", str(run), *args, cwd=tmp_path, env=env)
        assert r.returncode == 2 and "Traceback" not in r.stderr
        assert r.stderr.strip().splitlines()[-1].endswith("with --protocol FILE"), r.stderr
        sent = len(server.requests)
        r = _cli("batch", "--resume", str(run), "--protocol", str(proto), *args, cwd=tmp_path, env=env)
        assert r.returncode == 0, r.stderr
        assert len(server.requests) == sent  # the same requests: served from the reply cache
        (session,) = run.rglob("*.jsonl")
        assert read_session(session)[2] is None
