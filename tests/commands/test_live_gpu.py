"""`beavertui live --headless` with an OpenAI-compatible endpoint (a real HTTP server on loopback) and the local
GPU toolchain, on a task of each corpus layout: the session file is complete, and it alone rebuilds the
numbers (the reducer over the file gives the same verdicts, speedups and stop reason as the live run)."""

from __future__ import annotations

from pathlib import Path

import pytest

from beavertui.cli import main
from beavertui.engine.corpus.load import load_corpus
from beavertui.engine.session.events import Request, SessionEnd, Verdict
from beavertui.engine.session.state import fold
from beavertui.engine.session.store import read_session

pytestmark = pytest.mark.gpu
ROOT = Path(__file__).resolve().parents[2]
CASES = [
    (ROOT / "corpus", "transpose_00", True),
    (ROOT / "tests" / "data" / "release", "cuda_902__memory_crash__a0000002", False),
]


@pytest.mark.parametrize(("corpus", "task_id", "must_pass"), CASES, ids=["native", "release"])
def test_live_headless_with_an_endpoint_on_the_gpu(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, corpus: Path, task_id: str, must_pass: bool
) -> None:
    from tests.engine.models.test_models_openai import ChatServer

    task = load_corpus(corpus, [task_id]).get(task_id)
    reference = task.reference()
    assert reference is not None
    monkeypatch.setenv("LIVE_GPU_KEY", "sk-live-gpu-7781")
    out = tmp_path / "live.jsonl"
    with ChatServer([("stream", ["Repaired:\n```cuda\n", reference, "```\n"])]) as server:
        rc = main(
            [
                "live", "--task", task_id, "--corpus", str(corpus), "--headless", "--model", "coder",
                "--base-url", server.url, "--api-key-env", "LIVE_GPU_KEY", "--budget", "1", "--out", str(out),
            ]
        )  # fmt: skip
    text = out.read_text()
    assert "sk-live-gpu-7781" not in text
    header, events, problem = read_session(out)
    assert problem is None and header is not None and header.gpu is not None
    kinds = [e.kind for e in events]
    assert kinds[0] == "request" and kinds[-1] == "end" and kinds.count("end") == 1
    assert any(isinstance(e, Request) for e in events)
    verdicts = [e for e in events if isinstance(e, Verdict)]
    assert len(verdicts) == 1
    end = events[-1]
    assert isinstance(end, SessionEnd)
    state = fold(header, events)
    assert [a.verdict.category for a in state.attempts if a.verdict] == [v.category for v in verdicts]
    assert [a.verdict.speedup for a in state.attempts if a.verdict] == [v.speedup for v in verdicts]
    if must_pass:
        assert rc == 0 and verdicts[0].category == "passed" and verdicts[0].speedup is not None
        assert 0.5 < verdicts[0].speedup < 2.0  # the reference against itself, interleaved
        assert end.success
