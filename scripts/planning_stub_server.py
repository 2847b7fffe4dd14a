#!/usr/bin/env python3
"""A loopback OpenAI-compatible endpoint that stands in for the coder, planner and summariser of the planning
arms (docs/protocols.md) without a model: scripts/gpu-planning.sh runs one real session of each arm against
it, and tests/engine/metrics/test_planning_arms.py a batch of every arm. Standard library only.

It answers ``GET /v1/models`` and ``POST /v1/chat/completions`` (streamed or not). It finds the task by its
broken start (or its reference) quoted in any message (``--corpus``: a folder of tasks with ``broken_start.*`` and
``reference.*``), and answers by what the request asks, never by counting calls, so any number of sessions
may share it:

- a **planning** request (beavertui's, which asks for "a short numbered plan"): the first plan of a
  conversation (no assistant turn yet) says to build the file as it is; a later one, to replace the faulty
  kernel (``LATER_PLAN``);
- a **summarising** request (system message "You condense ..."): the note's first lines that say what
  failed, without code fences;
- a **coding** request, by the model's name:
  ``plan-reader`` repairs (answers the reference) only when given a plan that says to replace the kernel;
  ``feedback-reader`` only once its conversation holds an earlier attempt and the feedback on it;
  ``plan-averse`` only when given no plan; any other name (``stub-coder``) repairs when either the plan or
  an earlier attempt's feedback is there, so that every arm fails once with the broken start and then
  passes. Otherwise it answers the broken start.

Every request is logged as one JSON line on stderr (and ``--log``); the first line gives the port.

    python3 scripts/planning_stub_server.py --corpus corpus [--port 8012] [--log FILE]
"""

from __future__ import annotations

import argparse
import json
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

PLAN_REQUEST = "Write a short numbered plan"
SUMMARY_SYSTEM = "You condense"
PLAN_MARK = "Follow this plan for the next version:"
FIRST_PLAN = "1. Build and run the file as it is, to see how it fails.\n2. Read the toolchain's verdict."
LATER_PLAN = (
    "1. Replace the faulty kernel with a correct version of the same design.\n"
    "2. Keep the launch configuration and the file's interface."
)
MODELS = ("stub-coder", "plan-reader", "feedback-reader", "plan-averse")


def load_tasks(corpus: Path) -> list[tuple[str, str, str]]:
    """(task id, broken start, reference) of every task folder that has both."""
    tasks = []
    for folder in sorted(p for p in corpus.iterdir() if p.is_dir() and not p.name.startswith(("_", "."))):
        broken, ref = sorted(folder.glob("broken_start.*")), sorted(folder.glob("reference.*"))
        if len(broken) == 1 and len(ref) == 1:
            tasks.append((folder.name, broken[0].read_text(), ref[0].read_text()))
    return tasks


def _text(message: object) -> str:
    if isinstance(message, dict):
        content = message.get("content")
        return content if isinstance(content, str) else ""
    return ""


def answer(model: str, messages: list[object], tasks: list[tuple[str, str, str]]) -> tuple[str, str]:
    """(what was answered, the reply text) for one chat request."""
    texts = [_text(m) for m in messages]
    roles = [m.get("role") if isinstance(m, dict) else None for m in messages]
    last = texts[-1] if texts else ""
    earlier = "assistant" in roles
    if PLAN_REQUEST in last:
        return ("later_plan", LATER_PLAN) if earlier else ("first_plan", FIRST_PLAN)
    if texts and SUMMARY_SYSTEM in texts[0]:
        lines = [ln for ln in last.splitlines() if ln.strip() and not ln.startswith("```")]
        return "summary", "\n".join(lines[:6])
    # the task whose broken start (or reference: P+NF quotes the newest candidate only) a message quotes
    task = next(
        (t for t in tasks for code in (t[1], t[2]) if code.strip() and any(code.strip() in x for x in texts)),
        None,
    )
    if task is None:
        return "unknown_task", "I cannot find the code to repair."
    planned = PLAN_MARK in last
    good_plan = planned and "Replace the faulty kernel" in last
    if model.startswith("plan-reader"):
        fixed = good_plan
    elif model.startswith("feedback-reader"):
        fixed = earlier
    elif model.startswith("plan-averse"):
        fixed = not planned
    else:
        fixed = good_plan or earlier
    code = task[2] if fixed else task[1]
    return ("reference" if fixed else "broken_start") + f":{task[0]}", f"```cuda\n{code.strip()}\n```\n"


class Stub:
    def __init__(self, tasks: list[tuple[str, str, str]], log: Path | None) -> None:
        self.tasks, self.log = tasks, log
        self.lock = threading.Lock()

    def note(self, **fields: object) -> None:
        line = json.dumps({"at": round(time.time(), 3), **fields})
        print(line, file=sys.stderr, flush=True)
        if self.log is not None:
            with self.lock, open(self.log, "a", encoding="utf-8") as fh:
                fh.write(line + "\n")


def make_handler(stub: Stub) -> type[BaseHTTPRequestHandler]:
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
                data = [{"id": m, "object": "model", "owned_by": "stub"} for m in MODELS]
                self._send(200, {"object": "list", "data": data})
            else:
                self._send(404, {"error": {"message": f"stub: no route {self.path}"}})

        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            try:
                request = json.loads(self.rfile.read(length) or b"{}")
            except ValueError:
                self._send(400, {"error": {"message": "stub: the body is not JSON"}})
                return
            messages = request.get("messages")
            if not self.path.rstrip("/").endswith("/chat/completions") or not isinstance(messages, list):
                self._send(400, {"error": {"message": "stub: expected a chat completions request"}})
                return
            model = str(request.get("model") or "stub-coder")
            what, text = answer(model, messages, stub.tasks)
            stub.note(event="reply", model=model, answered=what, turns=len(messages))
            usage = {
                "prompt_tokens": sum(len(_text(m)) // 4 for m in messages),
                "completion_tokens": len(text) // 4,
            }
            usage["total_tokens"] = usage["prompt_tokens"] + usage["completion_tokens"]
            if request.get("stream"):
                self._stream(model, text, usage)
                return
            self._send(
                200,
                {
                    "id": "stub",
                    "object": "chat.completion",
                    "created": int(time.time()),
                    "model": model,
                    "choices": [
                        {
                            "index": 0,
                            "finish_reason": "stop",
                            "message": {"role": "assistant", "content": text},
                        }
                    ],
                    "usage": usage,
                },
            )

        def _stream(self, model: str, text: str, usage: dict[str, int]) -> None:
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.send_header("Connection", "close")
            self.end_headers()
            base = {
                "id": "stub",
                "object": "chat.completion.chunk",
                "created": int(time.time()),
                "model": model,
            }
            pieces = [text[i : i + 400] for i in range(0, len(text), 400)] or [""]
            for piece in pieces:
                chunk = {
                    **base,
                    "choices": [{"index": 0, "delta": {"content": piece}, "finish_reason": None}],
                }
                self.wfile.write(b"data: " + json.dumps(chunk).encode() + b"\n\n")
            end = {**base, "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}], "usage": usage}
            self.wfile.write(b"data: " + json.dumps(end).encode() + b"\n\ndata: [DONE]\n\n")
            self.wfile.flush()
            self.close_connection = True

        def log_message(self, format: str, *args: object) -> None:  # the JSON log says enough
            return

    return Handler


def main() -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument(
        "--corpus", type=Path, required=True, help="a folder of tasks (broken_start.*, reference.*)"
    )
    ap.add_argument("--port", type=int, default=8012)
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--log", type=Path, help="also append the JSON log lines to this file")
    args = ap.parse_args()
    tasks = load_tasks(args.corpus)
    stub = Stub(tasks, args.log)
    server = ThreadingHTTPServer((args.host, args.port), make_handler(stub))
    server.daemon_threads = True
    stub.note(event="listening", host=args.host, port=server.server_address[1], tasks=len(tasks))
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
