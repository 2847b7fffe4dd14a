"""A reply the endpoint cut at its completion token limit (``finish_reason: "length"``) usually ends inside
its code block: the attempt has no code ("the last code block is not closed"). Before, nothing told the
user that the limit was the cause or what to change; now the reply's line says so with the flag to raise
(``--max-tokens``), and a batch's summary counts such attempts in one line. The endpoint is a real HTTP
server on 127.0.0.1 (tests/loopback_endpoint.py)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from beavertui.cli import main
from tests.loopback_endpoint import Endpoint, completion

#: A reply cut in its code block, as a server ends it at max_tokens.
CUT = "Here is the fix:\n```cuda\n__global__ void transpose(const float* in, float* out, int n) {\n  int i ="
HINT = (
    "the reply stopped at its completion token limit (finish reason length): set or raise --max-tokens N "
    "(max_tokens in the models file or a protocol file's [[models]])"
)


def _cut(model: str, _body: dict[str, Any], _headers: dict[str, str]) -> tuple[str, Any]:
    doc = completion(model, CUT)
    doc["choices"][0]["finish_reason"] = "length"
    doc["usage"] = {"prompt_tokens": 900, "completion_tokens": 64, "total_tokens": 964}
    return "json", doc


def _whole(model: str, _body: dict[str, Any], _headers: dict[str, str]) -> tuple[str, Any]:
    return "json", completion(model, CUT + " 0;\n}\n```\n")


@pytest.fixture(autouse=True)
def _clean_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for var in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "BEAVERTUI_MODELS"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.chdir(tmp_path)


def test_live_says_the_token_limit_cut_the_reply_and_what_to_raise(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "s.jsonl"
    with Endpoint(_cut) as server:
        rc = main(["live", "--task", "transpose_00", "--model", "m", "--base-url", server.url, "--no-stream",
                   "--max-tokens", "64", "--budget", "1", "--toolchain", "demo", "--headless", "--out", str(out)])  # fmt: skip
        assert len(server.requests) == 1 and server.requests[0][1]["max_tokens"] == 64
    printed = capsys.readouterr().out
    assert rc == 1, printed
    (reply,) = [line for line in printed.splitlines() if "finish length" in line]
    assert reply.endswith(f"finish length  {HINT}")
    assert "no code: the last code block is not closed" in printed
    kinds = [json.loads(line)["kind"] for line in out.read_text().splitlines()]
    assert (
        "candidate" in kinds
    )  # the attempt is recorded as the model's (no code), not as an infrastructure error


def test_a_whole_reply_says_nothing_of_the_limit(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with Endpoint(_whole) as server:
        main(["live", "--task", "transpose_00", "--model", "m", "--base-url", server.url, "--no-stream",
              "--budget", "1", "--toolchain", "demo", "--headless", "--out", str(tmp_path / "s.jsonl")])  # fmt: skip
    printed = capsys.readouterr().out
    assert "finish stop" in printed and "token limit" not in printed


def test_a_batch_summary_counts_the_attempts_the_limit_cut(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with Endpoint(_cut) as server:
        rc = main(["batch", "--models", "m", "--base-url", server.url, "--no-stream", "--max-tokens", "64",
                   "--tasks", "transpose_00,scan_00", "--toolchain", "demo", "--run-id", "r",
                   "--sessions-dir", str(tmp_path), "--quiet", "--no-reply-cache"])  # fmt: skip
        asked = len(server.requests)
    err = capsys.readouterr().err
    assert rc == 0, err
    assert f"beavertui: {asked} attempt(s) had no code because {HINT}" in err.splitlines()
    assert asked >= 2  # each session's attempts, until its budget or a detector stopped it
    manifest = json.loads((tmp_path / "r" / "run.json").read_text())
    assert manifest["summary"]["token_limit"] == asked
