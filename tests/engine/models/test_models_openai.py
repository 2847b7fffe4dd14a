"""The OpenAI-compatible model against a real HTTP server on 127.0.0.1 speaking chat-completions."""

from __future__ import annotations

import contextlib
import json
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from beavertui.engine.errors import BeaverError
from beavertui.engine.models.base import EndpointError
from beavertui.engine.models.openai_model import (
    OpenAIConfig,
    OpenAIModel,
    load_models_file,
    parse_retry_after,
)
from beavertui.engine.models.resolve import with_protocol
from beavertui.engine.session.events import Message
from beavertui.engine.session.protocol import Protocol


class ChatServer:
    """A chat-completions server that answers each request with the next scripted behaviour.

    Behaviours: ``("ok", text)``, ``("stream", [pieces])``, ``("429", retry_after)``, ``("500", None)``,
    ``("hang", seconds)``, ``("malformed", None)``, ``("malformed_stream", None)``, ``("401", None)``.
    The last behaviour repeats when the script runs out. ``models``: the model ids ``GET /v1/models`` lists
    (None: the route is not there, as on a server without it); ``models_status``: its HTTP status.
    """

    def __init__(
        self, script: list[tuple[str, Any]], models: list[str] | None = None, models_status: int = 200
    ) -> None:
        self.script = list(script)
        self.listed = 0
        self.requests: list[dict[str, Any]] = []
        self.headers: list[dict[str, str]] = []
        self.times: list[float] = []
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: object) -> None:
                pass

            def do_GET(self) -> None:
                if models is None or self.path.rstrip("/") != "/v1/models":
                    self.send_error(404)
                    return
                server.listed += 1
                if models_status != 200:
                    err = json.dumps({"error": {"message": "bad key", "type": "auth"}}).encode()
                    self._send(models_status, err, "application/json")
                    return
                data = [{"id": m, "object": "model", "created": 0, "owned_by": "test"} for m in models]
                self._send(200, json.dumps({"object": "list", "data": data}).encode(), "application/json")

            def do_POST(self) -> None:
                length = int(self.headers.get("content-length", "0"))
                body = json.loads(self.rfile.read(length) or b"{}")
                server.requests.append(body)
                server.headers.append({k.lower(): v for k, v in self.headers.items()})
                server.times.append(time.monotonic())
                kind, arg = server.script.pop(0) if len(server.script) > 1 else server.script[0]
                getattr(self, f"_{kind}")(arg, body)

            def _send(
                self, status: int, payload: bytes, ctype: str, extra: dict[str, str] | None = None
            ) -> None:
                self.send_response(status)
                self.send_header("content-type", ctype)
                self.send_header("content-length", str(len(payload)))
                for k, v in (extra or {}).items():
                    self.send_header(k, v)
                self.end_headers()
                self.wfile.write(payload)

            def _ok(self, text: str, body: dict[str, Any]) -> None:
                reply = {
                    "id": "c1",
                    "object": "chat.completion",
                    "created": 0,
                    "model": body["model"],
                    "choices": [
                        {
                            "index": 0,
                            "message": {"role": "assistant", "content": text},
                            "finish_reason": "stop",
                        }
                    ],
                    "usage": {"prompt_tokens": 11, "completion_tokens": 7, "total_tokens": 18},
                }
                self._send(200, json.dumps(reply).encode(), "application/json")

            def _stream(self, pieces: list[str], body: dict[str, Any]) -> None:
                self.send_response(200)
                self.send_header("content-type", "text/event-stream")
                self.send_header("connection", "close")
                self.end_headers()

                def event(obj: dict[str, Any]) -> None:
                    self.wfile.write(b"data: " + json.dumps(obj).encode() + b"\n\n")
                    self.wfile.flush()

                base = {"id": "c1", "object": "chat.completion.chunk", "created": 0, "model": body["model"]}
                for piece in pieces:
                    event(
                        {
                            **base,
                            "choices": [{"index": 0, "delta": {"content": piece}, "finish_reason": None}],
                        }
                    )
                event({**base, "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]})
                usage = {
                    "prompt_tokens": 5,
                    "completion_tokens": len(pieces),
                    "total_tokens": 5 + len(pieces),
                }
                event({**base, "choices": [], "usage": usage})
                self.wfile.write(b"data: [DONE]\n\n")
                self.wfile.flush()
                self.close_connection = True

            def _malformed_stream(self, _arg: object, body: dict[str, Any]) -> None:
                self.send_response(200)
                self.send_header("content-type", "text/event-stream")
                self.send_header("connection", "close")
                self.end_headers()
                self.wfile.write(b"data: {this is not json\n\n")
                self.wfile.flush()
                self.close_connection = True

            def _429(self, retry_after: str, body: dict[str, Any]) -> None:
                err = json.dumps({"error": {"message": "slow down", "type": "rate_limit"}}).encode()
                self._send(429, err, "application/json", {"retry-after": retry_after})

            def _500(self, _arg: object, body: dict[str, Any]) -> None:
                err = json.dumps({"error": {"message": "boom", "type": "server_error"}}).encode()
                self._send(500, err, "application/json")

            def _401(self, _arg: object, body: dict[str, Any]) -> None:
                err = json.dumps({"error": {"message": "bad key", "type": "auth"}}).encode()
                self._send(401, err, "application/json")

            def _hang(self, seconds: float, body: dict[str, Any]) -> None:
                time.sleep(seconds)
                with contextlib.suppress(OSError):  # the client gave up long ago
                    self._send(500, b"{}", "application/json")

            def _malformed(self, _arg: object, body: dict[str, Any]) -> None:
                self._send(200, b'{"id": "c1", "choices": [', "application/json")

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"
        self.thread = threading.Thread(target=self.httpd.serve_forever, args=(0.05,), daemon=True)

    def __enter__(self) -> ChatServer:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture
def server(request: pytest.FixtureRequest) -> Iterator[ChatServer]:
    with ChatServer(request.param) as s:
        yield s


def model_for(server: ChatServer, **overrides: Any) -> tuple[OpenAIModel, list[float]]:
    slept: list[float] = []
    settings: dict[str, Any] = {
        "stream": False,
        "timeout_s": 2.0,
        "retries": 2,
        "backoff_base_s": 0.01,
        "backoff_max_s": 0.05,
    }
    config = OpenAIConfig(model="test-model", base_url=server.url, **{**settings, **overrides})

    def sleep(s: float) -> None:
        slept.append(s)
        time.sleep(s)

    return OpenAIModel(config, api_key="sk-test-key", sleep=sleep), slept


MESSAGES = [Message(role="system", content="You repair kernels."), Message(role="user", content="fix")]


@pytest.mark.parametrize("server", [[("ok", "```cuda\nint x;\n```")]], indirect=True)
def test_non_streaming_reply_with_usage_and_parameters(server: ChatServer) -> None:
    model, slept = model_for(
        server, temperature=0.3, top_p=0.9, max_tokens=64, seed=7, extra_body={"top_k": 5}
    )
    reply = model.complete(MESSAGES)
    assert reply.content == "```cuda\nint x;\n```"
    assert (reply.prompt_tokens, reply.completion_tokens, reply.finish_reason) == (11, 7, "stop")
    assert reply.retries == 0 and slept == []
    assert reply.latency_s > 0
    sent = server.requests[0]
    assert sent["messages"] == [
        {"role": "system", "content": "You repair kernels."},
        {"role": "user", "content": "fix"},
    ]
    assert (sent["temperature"], sent["top_p"], sent["max_tokens"], sent["seed"], sent["top_k"]) == (
        0.3,
        0.9,
        64,
        7,
        5,
    )
    assert server.headers[0]["authorization"] == "Bearer sk-test-key"
    info = model.info()
    assert info.kind == "openai" and info.base_url == server.url
    assert "sk-test-key" not in info.model_dump_json()


@pytest.mark.parametrize("server", [[("stream", ["```cu", "da\nint", " y;\n```"])]], indirect=True)
def test_streaming_delivers_deltas(server: ChatServer) -> None:
    model, _ = model_for(server, stream=True)
    deltas: list[str] = []
    reply = model.complete(MESSAGES, on_delta=deltas.append)
    assert deltas == ["```cu", "da\nint", " y;\n```"]
    assert reply.content == "```cuda\nint y;\n```"
    assert reply.finish_reason == "stop"
    assert (reply.prompt_tokens, reply.completion_tokens) == (5, 3)
    assert server.requests[0]["stream"] is True


@pytest.mark.parametrize("server", [[("429", "1"), ("ok", "done")]], indirect=True)
def test_429_honours_retry_after(server: ChatServer) -> None:
    model, slept = model_for(server)
    reply = model.complete(MESSAGES)
    assert reply.content == "done"
    assert reply.retries == 1
    assert slept == [1.0]
    assert server.times[1] - server.times[0] >= 1.0
    assert reply.retry_reasons[0].startswith("HTTP 429")
    assert "Retry-After" in reply.retry_reasons[0]


@pytest.mark.parametrize("server", [[("429", "3600")]], indirect=True)
def test_429_with_an_excessive_wait_fails_at_once(server: ChatServer) -> None:
    model, slept = model_for(server, retry_after_max_s=10)
    with pytest.raises(EndpointError, match="asks to wait 3600 s"):
        model.complete(MESSAGES)
    assert slept == []


@pytest.mark.parametrize("server", [[("500", None), ("500", None), ("ok", "fine")]], indirect=True)
def test_500_is_retried_with_exponential_backoff(server: ChatServer) -> None:
    model, slept = model_for(server)
    reply = model.complete(MESSAGES)
    assert reply.content == "fine" and reply.retries == 2
    assert len(slept) == 2
    assert 0.005 <= slept[0] <= 0.01 and 0.01 <= slept[1] <= 0.02  # base 0.01 s doubled, jitter in [0.5, 1]
    assert all(r.startswith("HTTP 500") for r in reply.retry_reasons)


@pytest.mark.parametrize("server", [[("500", None)]], indirect=True)
def test_persistent_500_raises_endpoint_error(server: ChatServer) -> None:
    model, slept = model_for(server)
    with pytest.raises(EndpointError, match=r"HTTP 500.*gave up after 3 tries") as info:
        model.complete(MESSAGES)
    assert len(server.requests) == 3 and len(slept) == 2
    assert info.value.retries == 2


@pytest.mark.parametrize("server", [[("500", None)]], indirect=True)
def test_no_retry_allowed_gives_up_after_one_try(server: ChatServer) -> None:
    model, slept = model_for(server, retries=0)
    with pytest.raises(EndpointError, match=r"HTTP 500.*\(gave up after 1 try\)$") as info:
        model.complete(MESSAGES)
    assert len(server.requests) == 1 and slept == [] and info.value.retries == 0


@pytest.mark.parametrize("server", [[("401", None)]], indirect=True)
def test_client_errors_are_not_retried(server: ChatServer) -> None:
    model, slept = model_for(server)
    with pytest.raises(EndpointError, match="HTTP 401"):
        model.complete(MESSAGES)
    assert len(server.requests) == 1 and slept == []


@pytest.mark.parametrize("server", [[("hang", 3.0), ("ok", "late but fine")]], indirect=True)
def test_hung_connection_hits_the_timeout_then_retries(server: ChatServer) -> None:
    model, _ = model_for(server, timeout_s=0.3)
    start = time.monotonic()
    reply = model.complete(MESSAGES)
    assert reply.content == "late but fine"
    assert reply.retries == 1
    assert reply.retry_reasons[0].startswith("no answer within 0.3 s")
    assert time.monotonic() - start < 2.5


@pytest.mark.parametrize("server", [[("malformed", None), ("ok", "good")]], indirect=True)
def test_malformed_json_is_retried(server: ChatServer) -> None:
    model, _ = model_for(server)
    reply = model.complete(MESSAGES)
    assert reply.content == "good"
    assert reply.retry_reasons[0].startswith("malformed response")


@pytest.mark.parametrize("server", [[("malformed_stream", None)]], indirect=True)
def test_malformed_stream_ends_as_endpoint_error(server: ChatServer) -> None:
    model, _ = model_for(server, stream=True, retries=1)
    with pytest.raises(EndpointError, match="malformed response") as info:
        model.complete(MESSAGES)
    assert len(info.value.retry_reasons) == 2


@pytest.mark.parametrize("server", [[("ok", "never seen")]], indirect=True)
def test_a_server_that_does_not_stream_is_named_as_such(server: ChatServer) -> None:
    """A streamed request answered with one JSON body (a server that ignores "stream": true) has no event
    in it: a malformed response like any other (retried), said as what it is, with the setting that fixes
    it, where it read 'the stream ended without content or a finish reason'."""
    model, _ = model_for(server, stream=True, retries=1)
    with pytest.raises(EndpointError) as info:
        model.complete(MESSAGES)
    assert (
        "malformed response: the server answered a streamed request with application/json, not an event"
        in str(info.value)
    )
    assert "--no-stream" in str(info.value) and len(server.requests) == 2


def test_connection_refused_is_an_endpoint_error() -> None:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    config = OpenAIConfig(model="m", base_url=f"http://127.0.0.1:{port}/v1", retries=1, backoff_base_s=0.01)
    model = OpenAIModel(config, api_key="k", sleep=lambda s: None)
    with pytest.raises(EndpointError, match="connection error"):
        model.complete(MESSAGES)


def test_missing_key_for_the_openai_api_is_a_clear_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    with pytest.raises(BeaverError, match="no API key: set OPENAI_API_KEY"):
        OpenAIModel(OpenAIConfig(model="gpt-x"))


def test_parse_retry_after() -> None:
    assert parse_retry_after({"retry-after": "2"}) == 2.0
    assert parse_retry_after({"retry-after-ms": "250"}) == 0.25
    assert parse_retry_after({}) is None
    later = time.strftime("%a, %d %b %Y %H:%M:%S GMT", time.gmtime(time.time() + 30))
    value = parse_retry_after({"retry-after": later})
    assert value is not None and 25 <= value <= 31


def test_models_file(tmp_path: Path) -> None:
    path = tmp_path / "models.toml"
    path.write_text(
        '[models.local-qwen]\nmodel = "Qwen/Qwen2.5-Coder"\nbase_url = "http://127.0.0.1:8000/v1"\n'
        "temperature = 0.2\n[models.local-qwen.extra_body]\ntop_k = 20\n"
    )
    models = load_models_file(path)
    assert models["local-qwen"].model == "Qwen/Qwen2.5-Coder"
    assert models["local-qwen"].extra_body == {"top_k": 20}
    assert models["local-qwen"].temperature == 0.2
    # What a session sends is its protocol's temperature and seed: the header records those.
    sent = with_protocol(models["local-qwen"], Protocol(temperature=0.9, seed=3))
    assert (sent.temperature, sent.seed, sent.model) == (0.9, 3, "Qwen/Qwen2.5-Coder")
    path.write_text('[models.x]\nmodel = "m"\napi_key = "sk-oops"\n')
    with pytest.raises(BeaverError, match=r"models.x.api_key: Extra inputs are not permitted"):
        load_models_file(path)


def test_an_error_event_inside_a_stream_is_an_endpoint_failure_not_a_crash(tmp_path: Path) -> None:
    """vLLM answers 200 and then sends ``data: {"error": {...}}`` in the stream for an error it meets after
    the stream began (a prompt past the model's length, an engine fault). The client library raises its base
    APIError there, which no branch caught: ``live`` died with a traceback and exit 1, a batch session as
    'failed to run' (source other). Now it is the endpoint's failure: a 4xx code fails at once, with the
    server's words; any other is retried like a 5xx."""
    import subprocess
    import sys

    from tests.loopback_endpoint import Endpoint, chunk

    too_long = {"error": {"object": "error", "message": "The decoder prompt (length 40000) is longer than the "
                          "maximum model length of 32768.", "type": "BadRequestError", "code": 400}}  # fmt: skip
    fault = {"error": {"message": "engine loop died", "type": "InternalServerError"}}
    script = [[chunk("m", "Here "), fault], [chunk("m", "fixed"), chunk("m", None, "stop")]]

    def answer(model: str, _body: dict[str, Any], _headers: dict[str, str]) -> tuple[str, Any]:
        if model == "short":
            return "stream", [chunk(model, "Here "), too_long]
        return "stream", script.pop(0) if script else [too_long]

    with Endpoint(answer) as server:
        config = {"base_url": server.url, "stream": True, "retries": 2, "backoff_base_s": 0.0}
        flaky = OpenAIModel(OpenAIConfig(model="flaky", **config), api_key="k", sleep=lambda s: None)
        got = flaky.complete(MESSAGES)
        assert (got.content, got.retries) == ("fixed", 1)
        assert got.retry_reasons[0].startswith("the stream ended in an error: engine loop died")
        short = OpenAIModel(OpenAIConfig(model="short", **config), api_key="k", sleep=lambda s: None)
        with pytest.raises(EndpointError) as err:
            short.complete(MESSAGES)
        assert err.value.retries == 0
        assert "the stream ended in an error (code 400): The decoder prompt (length 40000)" in str(err.value)
        asked = len(server.requests)
        # the command: the endpoint's failure, exit 3, one line, no traceback
        root = Path(__file__).resolve().parents[3]
        p = subprocess.run(
            [sys.executable, "-m", "beavertui", "live", "--task", "transpose_00", "--model", "short", "--base-url",
             server.url, "--toolchain", "demo", "--headless", "--sessions-dir", str(tmp_path)],
            capture_output=True, text=True, timeout=120, cwd=tmp_path,
            env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(root), "HOME": str(tmp_path)},
        )  # fmt: skip
        assert len(server.requests) == asked + 1  # not retried
    assert p.returncode == 3, p.stdout + p.stderr
    assert "Traceback" not in p.stderr
    assert "infra     endpoint: the stream ended in an error (code 400)" in p.stdout
