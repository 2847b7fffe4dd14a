"""`beavertui attribute --run` end to end: a batch run made by the CLI, branches asked of a model behind a
real OpenAI-compatible HTTP endpoint on loopback that repairs according to the feedback it reads.

The endpoint repairs correctly only when the run log is in the feedback, and keeps the fast tiled design
only when the sanitizer's verdict is there as well, so the attribution has a known answer.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from beavertui.cli import main
from tests.engine.analysis.test_analysis_attribute import _recordings_file
from tests.engine.analysis.test_analysis_branch import CORPUS, NAIVE, REFERENCE, WRONG_A, WRONG_B, reply


def repair_for(note: str) -> str:
    if "MISMATCH out:" in note and "compute-sanitizer --tool memcheck" in note:
        return REFERENCE
    if "MISMATCH out:" in note:
        return NAIVE
    return WRONG_B


class Endpoint:
    """A chat-completions server answering from the last message (streamed or not)."""

    def __init__(self) -> None:
        self.notes: list[str] = []
        outer = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: object) -> None:
                pass

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers.get("content-length", "0"))) or b"{}")
                note = body["messages"][-1]["content"]
                outer.notes.append(note)
                text = reply(repair_for(note))
                base = {"id": "c1", "created": 0, "model": body["model"]}
                if body.get("stream"):
                    self.send_response(200)
                    self.send_header("content-type", "text/event-stream")
                    self.send_header("connection", "close")
                    self.end_headers()
                    for chunk in (
                        {"choices": [{"index": 0, "delta": {"content": text}, "finish_reason": None}]},
                        {"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]},
                    ):
                        payload = {**base, "object": "chat.completion.chunk", **chunk}
                        self.wfile.write(b"data: " + json.dumps(payload).encode() + b"\n\n")
                    self.wfile.write(b"data: [DONE]\n\n")
                    self.wfile.flush()
                    self.close_connection = True
                    return
                message = {"role": "assistant", "content": text}
                payload = {
                    **base,
                    "object": "chat.completion",
                    "choices": [{"index": 0, "message": message, "finish_reason": "stop"}],
                }
                data = json.dumps(payload).encode()
                self.send_response(200)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)


@pytest.fixture
def endpoint() -> Iterator[Endpoint]:
    e = Endpoint()
    e.thread.start()
    yield e
    e.httpd.shutdown()
    e.httpd.server_close()


def test_attribute_run_over_a_cli_batch_run(
    endpoint: Endpoint, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("BEAVERTUI_MODELS", raising=False)
    rec = _recordings_file(tmp_path / "rec.jsonl")
    script = tmp_path / "wrong.json"
    script.write_text(json.dumps([reply(WRONG_A), reply(WRONG_B)]))
    protocol = tmp_path / "k2.toml"
    protocol.write_text('name = "k2"\n[protocol]\nbudget = 2\nfeedback = "L3"\nhistory = 2\ngate = 0.7\n')
    batch = ["batch", "--corpus", str(CORPUS), "--models", f"scripted:{script}", "--protocol", str(protocol)]
    batch += ["--toolchain", f"recorded:{rec}", "--sessions-dir", str(tmp_path), "--run-id", "run", "--quiet"]
    assert main(batch) == 0
    run = tmp_path / "run"
    assert len(list(run.rglob("*.jsonl"))) == 1  # one task, one sample: failed at steps 1 and 2
    common = ["--components", "runtime,sanitizer", "--samples", "2", "--model", "probe"]
    common += ["--base-url", endpoint.url, "--recorded", str(rec), "--out", str(tmp_path / "attr")]
    capsys.readouterr()
    assert main(["attribute", "--run", str(run), *common]) == 0
    text = capsys.readouterr().out
    assert "2 frozen step(s), 16 branches (0 without a verdict, left out)" in text
    assert len(endpoint.notes) == 16
    section = text[text.index("outcome: passed") :].splitlines()
    assert section[0].endswith("16 branches over 2 step(s))")
    assert section[2].split() == ["runtime", "+0.50", "[+0.50,", "+0.50]", "+0.50", "[+0.50,", "+0.50]"]
    assert section[3].split() == ["sanitizer", "+0.50", "[+0.50,", "+0.50]", "+0.50", "[+0.50,", "+0.50]"]
    assert section[5].split()[:2] == ["runtime×sanitizer", "+1.00"]
    saved: dict[str, Any] = json.loads((tmp_path / "attr" / "attribution-run-run.json").read_text())
    correct = saved["measures"]["correct"]
    assert correct["shapley"]["runtime"]["value"] == pytest.approx(1.0)
    assert correct["shapley"]["sanitizer"]["value"] == pytest.approx(0.0)
    assert correct["steps"] == 2 and saved["branches"] == 16
