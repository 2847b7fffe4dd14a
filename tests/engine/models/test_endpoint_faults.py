"""Endpoint faults against a real loopback TCP server: each is retried, and one that persists ends the
session as an infrastructure failure that ``beavertui metrics`` counts and never scores.

The server speaks HTTP/1.1 by hand so that it can misbehave below HTTP too: reset the connection (RST)
before answering or in the middle of a body or a stream, or close it without a word. Behaviours are
chosen per request by the request's ``model`` field, so one server serves every faulty model of a batch.
Cases already covered in test_models_openai.py (429 with Retry-After, backoff on 500, a hung server,
malformed JSON, a malformed stream, refused connections, 4xx not retried) are not repeated one by one.
"""

from __future__ import annotations

import contextlib
import csv
import io
import json
import os
import socket
import socketserver
import struct
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from beavertui.engine.models.base import EndpointError
from beavertui.engine.models.openai_model import OpenAIConfig, OpenAIModel
from beavertui.engine.session.events import Message
from tests.cli_in_process import run_cli

ROOT = Path(__file__).resolve().parents[3]
CORPUS = ROOT / "tests" / "data" / "recorded"
RECORDED = f"recorded:{CORPUS / 'vec_scale.recordings.jsonl'}"
MESSAGES = [Message(role="system", content="You repair kernels."), Message(role="user", content="fix")]


def _completion(model: str, content: Any, choices: bool = True) -> bytes:
    body = {
        "id": "c1",
        "object": "chat.completion",
        "created": 0,
        "model": model,
        "choices": [
            {"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": "stop"}
        ]
        if choices
        else [],
        "usage": {"prompt_tokens": 3, "completion_tokens": 2, "total_tokens": 5},
    }
    return json.dumps(body).encode()


def _chunk(model: str, delta: dict[str, Any], finish: str | None = None) -> bytes:
    obj = {
        "id": "c1",
        "object": "chat.completion.chunk",
        "created": 0,
        "model": model,
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
    }
    return b"data: " + json.dumps(obj).encode() + b"\n\n"


class FaultServer:
    """A chat-completions server on 127.0.0.1 whose answers follow a script per model name.

    ``scripts[model]`` is a list of behaviours (see ``_answer``); the last one repeats. ``counts[model]``
    is the number of requests each model's script has seen.
    """

    def __init__(self, scripts: dict[str, list[tuple[str, Any]]]) -> None:
        self.scripts = {k: list(v) for k, v in scripts.items()}
        self.counts: dict[str, int] = {k: 0 for k in scripts}
        self.last_key = ""
        self.lock = threading.Lock()
        server = self

        class Handler(socketserver.BaseRequestHandler):
            def handle(self) -> None:
                with contextlib.suppress(OSError):  # the client hung up or went idle: nothing to serve
                    server._serve(self.request)

        socketserver.ThreadingTCPServer.allow_reuse_address = True
        self.tcp = socketserver.ThreadingTCPServer(("127.0.0.1", 0), Handler)
        self.tcp.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.tcp.server_address[1]}/v1"
        self.thread = threading.Thread(target=self.tcp.serve_forever, args=(0.05,), daemon=True)

    def __enter__(self) -> FaultServer:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.tcp.shutdown()
        self.tcp.server_close()

    def _serve(self, conn: socket.socket) -> None:
        conn.settimeout(10)
        buf = b""
        while True:  # keep-alive: one request after another on this connection
            while b"\r\n\r\n" not in buf:
                data = conn.recv(65536)
                if not data:
                    return
                buf += data
            head, buf = buf.split(b"\r\n\r\n", 1)
            length = 0
            for line in head.split(b"\r\n")[1:]:
                name, _, value = line.partition(b":")
                if name.strip().lower() == b"content-length":
                    length = int(value.strip())
            while len(buf) < length:
                buf += conn.recv(65536)
            if head.startswith(b"GET "):  # the preflight's GET /models: a server without that route
                buf = buf[length:]
                self._send(conn, "404 Not Found", b'{"error": {"message": "no such route"}}')
                continue
            body, buf = json.loads(buf[:length]), buf[length:]
            for line in head.split(b"\r\n")[1:]:
                name, _, value = line.partition(b":")
                if name.strip().lower() == b"authorization":
                    self.last_key = value.strip().decode().removeprefix("Bearer ")
            model = body.get("model", "")
            with self.lock:
                script = self.scripts[model]
                kind, arg = script.pop(0) if len(script) > 1 else script[0]
                self.counts[model] += 1
            if not self._answer(conn, kind, arg, model, bool(body.get("stream"))):
                return

    @staticmethod
    def _reset(conn: socket.socket) -> bool:
        conn.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        conn.close()  # with linger 0: a TCP RST, "connection reset by peer" on the client
        return False

    @staticmethod
    def _send(conn: socket.socket, status: str, body: bytes, extra: str = "") -> bool:
        head = (
            f"HTTP/1.1 {status}\r\ncontent-type: application/json\r\ncontent-length: {len(body)}\r\n"
            f"{extra}\r\n"
        )
        conn.sendall(head.encode() + body)
        return True

    def _answer(self, conn: socket.socket, kind: str, arg: Any, model: str, stream: bool) -> bool:
        """Answer one request; False when the connection is gone."""
        if kind == "ok":
            if stream:
                conn.sendall(
                    b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\nconnection: close\r\n\r\n"
                )
                conn.sendall(
                    _chunk(model, {"content": arg}) + _chunk(model, {}, "stop") + b"data: [DONE]\n\n"
                )
                conn.close()
                return False
            return self._send(conn, "200 OK", _completion(model, arg))
        if kind == "status":  # an HTTP error status, e.g. "503 Service Unavailable"
            err = json.dumps({"error": {"message": "unavailable", "type": "server_error"}}).encode()
            return self._send(conn, arg, err, "retry-after: 0\r\n" if arg.startswith("429") else "")
        if kind == "no_choices":
            return self._send(conn, "200 OK", _completion(model, None, choices=False))
        if kind == "empty_content":
            return self._send(conn, "200 OK", _completion(model, arg))  # "" or None
        if kind == "empty_body":
            return self._send(conn, "200 OK", b"")
        if kind == "malformed":
            return self._send(conn, "200 OK", b'{"id": "c1", "choices": [')
        if kind == "stream_empty":  # a stream that finishes without a single token
            conn.sendall(b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\nconnection: close\r\n\r\n")
            conn.sendall(
                _chunk(model, {"role": "assistant"}) + _chunk(model, {}, "stop") + b"data: [DONE]\n\n"
            )
            conn.close()
            return False
        if kind == "reset":  # RST right after reading the request
            return self._reset(conn)
        if kind == "reset_mid_body":
            body = _completion(model, "```cuda\nint x;\n```")
            head = f"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {len(body)}\r\n\r\n"
            conn.sendall(head.encode() + body[:20])
            time.sleep(0.05)
            return self._reset(conn)
        if kind == "reset_mid_stream":
            conn.sendall(b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\n\r\n")
            conn.sendall(_chunk(model, {"content": "```cuda\nint"}))
            time.sleep(0.05)
            return self._reset(conn)
        if kind == "close":  # FIN without any answer
            conn.close()
            return False
        if kind == "hang":
            time.sleep(arg)
            return False
        if kind == "echo_key":  # a hostile or careless server that repeats the key in its error
            err = json.dumps({"error": {"message": f"invalid api key {self.last_key}", "type": "auth"}})
            return self._send(conn, "401 Unauthorized", err.encode())
        raise AssertionError(f"unknown behaviour {kind}")


#: fault -> whether it applies to streamed calls, plain calls or both, and the retry reason it gives
FAULTS: dict[str, tuple[tuple[str, Any], tuple[bool, ...], str]] = {
    "no_choices": (("no_choices", None), (False,), "malformed response"),
    "empty_content": (("empty_content", ""), (False,), "empty reply"),
    "null_content": (("empty_content", None), (False,), "empty reply"),
    "empty_body": (("empty_body", None), (False,), "malformed response"),
    "stream_empty": (("stream_empty", None), (True,), "empty reply"),
    "reset": (("reset", None), (False, True), "connection error"),
    "reset_mid_body": (("reset_mid_body", None), (False,), "connection error"),
    "reset_mid_stream": (("reset_mid_stream", None), (True,), "connection error"),
    "close": (("close", None), (False, True), "connection error"),
    "503": (("status", "503 Service Unavailable"), (False, True), "HTTP 503"),
    "502": (("status", "502 Bad Gateway"), (False,), "HTTP 502"),
    "429": (("status", "429 Too Many Requests"), (False,), "HTTP 429"),
    "timeout": (("hang", 1.0), (False,), "no answer within 0.2 s"),
}
CASES = [(name, stream) for name, (_b, modes, _r) in FAULTS.items() for stream in modes]


def _model(url: str, stream: bool, retries: int) -> OpenAIModel:
    config = OpenAIConfig(
        model="m",
        base_url=url,
        stream=stream,
        timeout_s=0.2,
        retries=retries,
        backoff_base_s=0.01,
        backoff_max_s=0.02,
    )
    return OpenAIModel(config, api_key="sk-fault-test")


@pytest.mark.parametrize(
    ("fault", "stream"), CASES, ids=[f"{n}-{'stream' if s else 'plain'}" for n, s in CASES]
)
def test_each_fault_is_retried_then_the_reply_is_used(fault: str, stream: bool) -> None:
    behaviour, _modes, reason = FAULTS[fault]
    with FaultServer({"m": [behaviour, ("ok", "```cuda\nint fixed;\n```")]}) as server:
        reply = _model(server.url, stream, retries=2).complete(MESSAGES)
    assert reply.content == "```cuda\nint fixed;\n```"
    assert reply.retries == 1 and server.counts["m"] == 2
    assert reply.retry_reasons[0].startswith(reason), reply.retry_reasons


@pytest.mark.parametrize(
    ("fault", "stream"), CASES, ids=[f"{n}-{'stream' if s else 'plain'}" for n, s in CASES]
)
def test_a_persistent_fault_is_an_endpoint_error_after_the_retries(fault: str, stream: bool) -> None:
    behaviour, _modes, reason = FAULTS[fault]
    with FaultServer({"m": [behaviour]}) as server:
        with pytest.raises(EndpointError) as info:
            _model(server.url, stream, retries=1).complete(MESSAGES)
        assert server.counts["m"] == 2
    assert info.value.detail.startswith(reason) and "gave up after 2 tries" in info.value.detail
    assert "\n" not in info.value.detail


@pytest.mark.parametrize("stream", [False, True], ids=["plain", "stream"])
def test_lone_surrogates_in_a_reply_become_replacement_characters(stream: bool) -> None:
    # "\ud800" is a valid JSON escape but no UTF-8 text: kept as is, it would break every file write
    with FaultServer({"m": [("ok", "fix \ud800:\n```cuda\nint x; // \udfff\n```")]}) as server:
        deltas: list[str] = []
        reply = _model(server.url, stream, retries=0).complete(MESSAGES, on_delta=deltas.append)
    assert reply.content == "fix \ufffd:\n```cuda\nint x; // \ufffd\n```"
    assert all(t.encode("utf-8") for t in deltas)


# ------------------------------------------------------------------------------- through a whole batch

#: models of the batch: every persistent fault, plus one healthy endpoint
BATCH_FAULTS = [
    "no_choices",
    "empty_content",
    "stream_empty",
    "reset",
    "reset_mid_stream",
    "close",
    "503",
    "timeout",
]


@pytest.mark.slow
def test_persistent_faults_in_a_batch_are_retried_counted_and_never_scored(tmp_path: Path) -> None:
    from beavertui.engine.corpus.load import load_corpus

    reference = load_corpus(CORPUS).get("vec_scale").reference()
    scripts: dict[str, list[tuple[str, Any]]] = {name: [FAULTS[name][0]] for name in BATCH_FAULTS}
    scripts["healthy"] = [("ok", f"```cuda\n{reference}\n```")]
    scripts["surrogates"] = [("ok", f"Fixed \ud83d\ude00 \ud800:\n```cuda\n{reference}\n```")]
    scripts["echo_key"] = [("echo_key", None)]
    with FaultServer(scripts) as server:
        models = "".join(
            f'[[models]]\nmodel = "{name}"\nbase_url = "{server.url}"\nretries = 1\ntimeout_s = 0.2\n'
            f'api_key_env = "FAULT_TEST_KEY"\n\n'
            for name in scripts
        )
        proto = tmp_path / "faults.toml"
        proto.write_text(f'name = "faults"\nretries = 1\n[protocol]\nbudget = 2\n\n{models}')
        env = {**os.environ, "FAULT_TEST_KEY": "sk-fault-batch-0123"}
        t0 = time.monotonic()
        out = subprocess.run(
            [
                sys.executable, "-m", "beavertui", "batch", "--protocol", str(proto), "--corpus", str(CORPUS),
                "--toolchain", RECORDED, "--sessions-dir", str(tmp_path), "--run-id", "r", "--quiet",
                "--jobs", str(len(scripts)),
            ],
            capture_output=True, text=True, env=env, timeout=120,
        )  # fmt: skip
        wall = time.monotonic() - t0
        counts = dict(server.counts)
    assert out.returncode == 3, out.stderr  # the faulty models' sessions have no verdict
    run = tmp_path / "r"
    # each faulty endpoint: 2 tries per call (1 retry), and the session retried once by the batch
    assert {m: counts[m] for m in BATCH_FAULTS} == {m: 4 for m in BATCH_FAULTS}
    assert counts["healthy"] == counts["surrogates"] == 1
    assert counts["echo_key"] == 2  # a 401 is not retried per call; the session is retried once
    infra = [json.loads(x) for x in (run / "infra.jsonl").read_text().splitlines()]
    faulty = len(BATCH_FAULTS) + 1
    assert len(infra) == 2 * faulty and sum(1 for r in infra if r["retried"]) == faulty
    # the key was sent (the echoing server saw it) but is written nowhere, not even where it echoed back
    key = "sk-fault-batch-0123"
    assert server.last_key == key
    leaks = [p for p in run.rglob("*") if p.is_file() and key.encode() in p.read_bytes()]
    assert leaks == [] and key not in out.stderr + out.stdout
    echoed = next((run / "echo_key").rglob("*.jsonl")).read_text()
    assert "invalid api key [redacted]" in echoed
    # in each faulty session: an infrastructure error from the endpoint, no verdict, never the key
    from beavertui.engine.session.store import read_session

    for name in BATCH_FAULTS:
        (path,) = (run / name).rglob("*.jsonl")
        _h, events, problem = read_session(path)
        assert problem is None
        assert [e.kind for e in events if e.kind in ("verdict", "infra_error", "end")] == [
            "infra_error",
            "end",
        ]
        assert events[-1].stop_reason == "error"  # type: ignore[union-attr]
        assert events[-2].source == "endpoint"  # type: ignore[union-attr]
        assert "sk-fault-batch-0123" not in path.read_text()
    # metrics: the healthy model scored, every faulty one counted as excluded with no score
    # the metrics of the run, read in this process (tests/cli_in_process.py): their output is the point
    table = run_cli("metrics", run, "--table", "main", "--format", "csv", check=True).stdout
    rows = {r["model"]: r for r in csv.DictReader(io.StringIO(table))}
    assert rows["healthy"]["pass@1 (%)"] == "100.00" and rows["healthy"]["infra excl."] == "0"
    assert rows["surrogates"]["pass@1 (%)"] == "100.00"  # broken Unicode in the prose costs nothing
    for name in [*BATCH_FAULTS, "echo_key"]:
        assert rows[name]["infra excl."] == "1" and rows[name]["tasks"] == "0", rows[name]
    doc = json.loads(run_cli("metrics", run, "--json", check=True).stdout)
    excluded = {g["model"]: g["n_infra_excluded"] for g in doc["groups"]}
    assert excluded == {**{m: 1 for m in [*BATCH_FAULTS, "echo_key"]}, "healthy": 0, "surrogates": 0}
    print(
        f"\nreliability: endpoint faults: {len(CASES)} fault/mode cases retried then answered, "
        f"{len(CASES)} persistent ones ended as endpoint errors; batch with {faulty} faulty endpoints "
        f"(one echoing the key): {sum(counts[m] for m in [*BATCH_FAULTS, 'echo_key'])} failed requests, "
        f"{len(infra)} infrastructure records ({sum(1 for r in infra if r['retried'])} retried), "
        f"{sum(excluded.values())} attempts excluded from scores, key found in 0 of "
        f"{sum(1 for p in run.rglob('*') if p.is_file())} files; healthy models pass@1 100% ({wall:.1f} s)"
    )


def test_a_ray_worker_redacts_the_key_before_a_line_leaves_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # the Ray driver writes the lines a worker streams back and never holds the key, so the worker redacts
    from beavertui.batch.job import JobSpec
    from beavertui.batch.protocol_file import ModelSpec
    from beavertui.batch.ray_executor import remote_session
    from beavertui.engine.session.protocol import Protocol

    key = 'sk-ray-"worker"-4242'
    monkeypatch.setenv("FAULT_TEST_KEY", key)
    with FaultServer({"echo_key": [("echo_key", None)]}) as server:
        spec = ModelSpec(model="echo_key", base_url=server.url, api_key_env="FAULT_TEST_KEY", retries=0)
        job = JobSpec("r", spec, "p", Protocol(), "vec_scale", 0, tmp_path / "s.jsonl")
        lines = list(remote_session(job, str(CORPUS), RECORDED, None))
        assert server.last_key == key  # it was sent
    text = "\n".join(lines)
    assert key not in text and json.dumps(key)[1:-1] not in text
    assert "invalid api key [redacted]" in text and json.loads(lines[-1])["stop_reason"] == "error"
