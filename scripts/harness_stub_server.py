#!/usr/bin/env python3
"""A loopback OpenAI-compatible endpoint that stands in for a model when the CUDABeaver harness is run
offline (scripts/gpu-harness-run.sh). Standard library only.

It answers ``GET /v1/models`` and ``POST /v1/chat/completions``. For a chat request it finds the task by
the broken code quoted in the first user message (the harness's debug prompt puts it in a fenced block
under "## Current (broken) implementation", before "## Why it fails"; history pruning always keeps that
message), looks its sha256 up in a table built from ``DATA/<task>/broken_start.*``, and replies with the
task's broken start on the first call for that task and with its reference on every later call, so a
harness run shows a failure followed by a repair. Tasks matching ``--refuse`` get HTTP 400 (the harness
records an api_error). Every request is logged as one JSON line.

    python3 scripts/harness_stub_server.py --data RELEASE/data [--port 8011] [--refuse REGEX] [--log FILE]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import re
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

START = "## Current (broken) implementation"
END = "## Why it fails"


def digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def load_table(data: Path) -> dict[str, tuple[str, str, str | None]]:
    """sha256 of a broken start (as is, and stripped) -> (task id, broken start, reference or None)."""
    table: dict[str, tuple[str, str, str | None]] = {}
    for task in sorted(p for p in data.iterdir() if p.is_dir() and not p.name.startswith(("_", "."))):
        broken = sorted(task.glob("broken_start.*"))
        if len(broken) != 1 or not (task / "instance.json").is_file():
            continue
        code = broken[0].read_text(encoding="utf-8", errors="replace")
        refs = sorted(task.glob("reference.*"))
        ref = refs[0].read_text(encoding="utf-8", errors="replace") if len(refs) == 1 else None
        entry = (task.name, code, ref)
        table[digest(code)] = entry
        table.setdefault(digest(code.strip()), entry)
    return table


def broken_code(prompt: str) -> str | None:
    """The code inside the fenced block between the two headings of the harness's debug prompt."""
    start = prompt.find(START)
    end = prompt.find(END, start + 1)
    if start < 0 or end < 0:
        return None
    section = prompt[start + len(START) : end]
    fence = section.find("```")
    if fence < 0:
        return None
    body_start = section.find("\n", fence)
    body_end = section.rfind("\n```")
    if body_start < 0 or body_end <= body_start:
        return None
    return section[body_start + 1 : body_end]


class Stub:
    def __init__(self, table: dict[str, tuple[str, str, str | None]], refuse: str | None, log: Path | None):
        self.table = table
        self.refuse = re.compile(refuse) if refuse else None
        self.log = log
        self.calls: dict[str, int] = {}
        self.lock = threading.Lock()

    def note(self, **fields: object) -> None:
        line = json.dumps({"at": round(time.time(), 3), **fields})
        print(line, file=sys.stderr, flush=True)
        if self.log is not None:
            with self.lock, open(self.log, "a", encoding="utf-8") as fh:
                fh.write(line + "\n")

    def answer(self, request: dict[str, object]) -> tuple[int, dict[str, object]]:
        messages = request.get("messages")
        if not isinstance(messages, list) or len(messages) < 2 or not isinstance(messages[1], dict):
            return 400, _error("stub: expected a system and a first user message")
        code = broken_code(str(messages[1].get("content", "")))
        entry = None
        if code is not None:
            entry = self.table.get(digest(code)) or self.table.get(digest(code.strip()))
        if entry is None:
            self.note(event="unknown_task", found_code=code is not None)
            return 400, _error("stub: no task of the data folder has this broken start")
        task, broken, ref = entry
        with self.lock:
            n = self.calls.get(task, 0) + 1
            self.calls[task] = n
        if self.refuse is not None and self.refuse.search(task):
            self.note(event="refused", task=task, call=n)
            return 400, _error("stub: refused on purpose (an api_error record for the import tests)")
        which = "broken_start" if n == 1 or ref is None else "reference"
        text = broken if which == "broken_start" else str(ref)
        self.note(event="reply", task=task, call=n, reply=which, turns=len(messages))
        model = str(request.get("model") or "stub")
        return 200, {
            "id": f"stub-{task}-{n}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": model,
            "choices": [
                {
                    "index": 0,
                    "finish_reason": "stop",
                    "message": {"role": "assistant", "content": f"```\n{text.strip()}\n```"},
                }
            ],
            "usage": {"prompt_tokens": 0, "completion_tokens": 0, "total_tokens": 0},
        }


def _error(message: str) -> dict[str, object]:
    return {"error": {"message": message, "type": "invalid_request_error", "code": None}}


def make_handler(stub: Stub, model: str) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def _send(self, status: int, body: dict[str, object]) -> None:
            data = json.dumps(body).encode("utf-8")
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_GET(self) -> None:
            if self.path.rstrip("/").endswith("/models"):
                self._send(
                    200, {"object": "list", "data": [{"id": model, "object": "model", "owned_by": "stub"}]}
                )
            else:
                self._send(404, _error(f"stub: no route {self.path}"))

        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            try:
                request = json.loads(self.rfile.read(length) or b"{}")
            except ValueError:
                self._send(400, _error("stub: the body is not JSON"))
                return
            if not self.path.rstrip("/").endswith("/chat/completions"):
                self._send(404, _error(f"stub: no route {self.path}"))
                return
            if request.get("stream"):
                self._send(400, _error("stub: streaming is not served"))
                return
            status, body = stub.answer(request)
            self._send(status, body)

        def log_message(self, format: str, *args: object) -> None:  # the JSON log says enough
            return

    return Handler


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", type=Path, required=True, help="the release's data/ folder")
    ap.add_argument("--port", type=int, default=8011)
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--model", default="stub-broken-then-reference", help="the id GET /v1/models lists")
    ap.add_argument("--refuse", help="regular expression of task ids answered with HTTP 400")
    ap.add_argument("--log", type=Path, help="also append the JSON log lines to this file")
    args = ap.parse_args()
    table = load_table(args.data)
    stub = Stub(table, args.refuse, args.log)
    server = ThreadingHTTPServer((args.host, args.port), make_handler(stub, args.model))
    stub.note(
        event="listening",
        host=args.host,
        port=server.server_address[1],
        tasks=len({v[0] for v in table.values()}),
    )
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
