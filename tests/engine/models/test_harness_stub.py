"""The loopback stub model of scripts/gpu-harness-run.sh, spoken to over real HTTP by the OpenAI client.

It must find the task from the broken code quoted in the first user turn, answer the broken start first
and the reference after, and refuse the tasks it is told to (so the harness records an api_error).
"""

from __future__ import annotations

import json
import subprocess
import sys
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
DATA = ROOT / "tests" / "data" / "release" / "data"
TASK = "cuda_901__compile_error__a0000001"
REFUSED = "cuda_902__memory_crash__a0000002"


def prompt(code: str) -> str:
    """A first user turn shaped like the harness's debug prompt: the code under the two headings."""
    return (
        "Fix it.\n\n## Task Description\nsaxpy\n\n## Current (broken) implementation\n"
        f"It fails:\n\n```cuda\n{code}\n```\n\n## Why it fails\nError category: `compile_error`\n"
    )


@pytest.fixture(scope="module")
def stub() -> Iterator[str]:
    proc = subprocess.Popen(
        [
            sys.executable,
            str(ROOT / "scripts" / "harness_stub_server.py"),
            "--data",
            str(DATA),
            "--port",
            "0",
            "--refuse",
            REFUSED,
        ],
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stderr is not None
        first = json.loads(proc.stderr.readline())
        assert first["event"] == "listening" and first["tasks"] >= 3
        yield f"http://127.0.0.1:{first['port']}/v1"
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def ask(base_url: str, code: str, turns: int = 0) -> str:
    import openai  # here, not at collection: importing it costs 0.7 s of CPU a worker

    client = openai.OpenAI(base_url=base_url, api_key="EMPTY", max_retries=0)
    messages = [
        {"role": "system", "content": "You repair kernels."},
        {"role": "user", "content": prompt(code)},
    ]
    for _ in range(turns):
        messages += [{"role": "assistant", "content": "earlier"}, {"role": "user", "content": "feedback"}]
    reply = client.chat.completions.create(model="stub", messages=messages, temperature=0.7)  # type: ignore[arg-type]
    return reply.choices[0].message.content or ""


def test_broken_start_first_then_the_reference(stub: str) -> None:
    broken = (DATA / TASK / "broken_start.cu").read_text()
    reference = (DATA / TASK / "reference.cu").read_text()
    assert ask(stub, broken) == f"```\n{broken.strip()}\n```"
    assert ask(stub, broken, turns=1) == f"```\n{reference.strip()}\n```"
    assert ask(stub, broken, turns=2) == f"```\n{reference.strip()}\n```"


def test_refused_and_unknown_tasks_are_http_errors(stub: str) -> None:
    import openai

    with pytest.raises(openai.BadRequestError, match="refused on purpose"):
        ask(stub, (DATA / REFUSED / "broken_start.cu").read_text())
    with pytest.raises(openai.BadRequestError, match="no task of the data folder"):
        ask(stub, "__global__ void nobody_wrote_this() {}")


def test_models_are_listed(stub: str) -> None:
    with urllib.request.urlopen(f"{stub}/models", timeout=10) as r:
        data = json.load(r)
    assert [m["id"] for m in data["data"]] == ["stub-broken-then-reference"]
