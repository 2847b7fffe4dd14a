"""A chat-completions server on 127.0.0.1 for tests: real HTTP, answers chosen by the request's model name.

``Endpoint(answer)`` calls ``answer(model, body, headers)`` for each request; it returns one of
``("json", obj)`` (a 200 JSON body, any shape), ``("stream", chunks)`` (a 200 event stream of the given
``data:`` objects; a generator never ending is allowed), ``("status", (code, obj))``, ``("raw", (code,
content_type, pieces[, headers]))`` (a body of the given byte pieces, sent as they come, without a length: a generator
never ending or trickling is allowed). Every request is kept in ``requests`` (model, body, headers).
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

Answer = tuple[str, Any]


def completion(model: str, content: Any) -> dict[str, Any]:
    return {
        "id": "c1",
        "object": "chat.completion",
        "created": 0,
        "model": model,
        "choices": [
            {"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": "stop"}
        ],
        "usage": {"prompt_tokens": 3, "completion_tokens": 2, "total_tokens": 5},
    }


def chunk(model: str, content: str | None, finish: str | None = None) -> dict[str, Any]:
    delta = {} if content is None else {"content": content}
    return {
        "id": "c1",
        "object": "chat.completion.chunk",
        "created": 0,
        "model": model,
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
    }


class Endpoint:
    def __init__(
        self, answer: Callable[[str, dict[str, Any], dict[str, str]], Answer], models: list[str] | None = None
    ) -> None:
        """``models``: served to anyone at GET /models (None: GET is refused, 501, as before)."""
        self.answer = answer
        self.requests: list[tuple[str, dict[str, Any], dict[str, str]]] = []
        outer = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: object) -> None:
                pass

            def do_GET(self) -> None:
                if models is None or not self.path.rstrip("/").endswith("/models"):
                    self.send_error(501)
                    return
                listed = {"object": "list", "data": [{"id": m, "object": "model"} for m in models]}
                self._send(200, json.dumps(listed).encode())

            def do_POST(self) -> None:
                length = int(self.headers.get("content-length") or 0)
                body = json.loads(self.rfile.read(length) or b"{}")
                headers = {k.lower(): v for k, v in self.headers.items()}
                model = str(body.get("model", ""))
                outer.requests.append((model, body, headers))
                kind, arg = outer.answer(model, body, headers)
                try:
                    if kind == "json":
                        self._send(200, json.dumps(arg).encode())
                    elif kind == "status":
                        code, obj = arg
                        self._send(code, json.dumps(obj).encode())
                    elif kind == "stream":
                        self._stream(arg)
                    elif kind == "raw":
                        self._raw(*arg)
                    else:
                        raise AssertionError(kind)
                except (BrokenPipeError, ConnectionResetError):
                    pass

            def _send(self, code: int, data: bytes) -> None:
                self.send_response(code)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def _raw(
                self,
                code: int,
                content_type: str,
                pieces: Iterable[bytes],
                extra: dict[str, str] | None = None,
            ) -> None:
                self.send_response(code)
                self.send_header("content-type", content_type)
                for name, value in (extra or {}).items():
                    self.send_header(name, value)
                self.send_header("connection", "close")
                self.end_headers()
                for piece in pieces:
                    self.wfile.write(piece)
                    self.wfile.flush()
                self.close_connection = True

            def _stream(self, chunks: Iterable[Any]) -> None:
                self.send_response(200)
                self.send_header("content-type", "text/event-stream")
                self.send_header("connection", "close")
                self.end_headers()
                for c in chunks:
                    self.wfile.write(b"data: " + json.dumps(c).encode() + b"\n\n")
                    self.wfile.flush()
                self.wfile.write(b"data: [DONE]\n\n")
                self.close_connection = True

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/v1"
        self.thread = threading.Thread(target=self.server.serve_forever, args=(0.05,), daemon=True)

    def __enter__(self) -> Endpoint:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()
