"""A live session with real engine parts and no GPU: the scripted model replays the degenerate session's
replies and the recorded toolchain replays that session's real outcomes (build logs, sanitizer records,
timings) for exactly those candidates."""

from __future__ import annotations

import json
from pathlib import Path

from beavertui.engine.corpus.task import Task
from beavertui.engine.session.events import Reply
from beavertui.engine.session.store import read_session

DATA = Path(__file__).resolve().parents[1] / "data" / "sessions"
DEGENERATE = DATA / "degenerate.jsonl"


def task_from_session(path: Path, root: Path) -> Task:
    """A Task whose files are the session's broken start and reference (the recorded toolchain never builds)."""
    header, _events, _problem = read_session(path)
    assert header is not None
    ref = header.task
    root.mkdir(parents=True, exist_ok=True)
    (root / "testbench").mkdir(exist_ok=True)
    (root / "broken.cu").write_text(ref.broken_start)
    (root / "reference.cu").write_text(ref.reference or "")
    (root / "prompt.md").write_text("Repair kernel.cu: C = A * B for row-major float matrices.\n")
    (root / "error_log.txt").write_text(
        "sgemm M=2000 N=2000 K=2000 seed=1780000001\n"
        "CUDA error cudaErrorIllegalAddress (an illegal memory access was encountered) after sgemm launch\n"
    )
    return Task(
        id=ref.id,
        family=ref.family,
        label=ref.label,
        difficulty=None,
        root=root,
        corpus_root=root.parent,
        layout="native",
        build_command="nvcc -O3 -arch=sm_90 -std=c++17 -I _common -o test.out test_main.cu kernel.cu",
        test_command="./test.out",
        solution_file="kernel.cu",
        broken_start_path=root / "broken.cu",
        reference_path=root / "reference.cu",
        prompt_path=root / "prompt.md",
        testbench=root / "testbench",
        error_log_path=root / "error_log.txt",
    )


def live_parts(tmp: Path):  # type: ignore[no-untyped-def]
    """(task, model, toolchain, protocol) reproducing the degenerate session without a GPU."""
    from beavertui.engine.models.scripted import ScriptedModel
    from beavertui.engine.toolchain.recorded import RecordedToolchain

    header, events, _ = read_session(DEGENERATE)
    assert header is not None
    replies = [e.content for e in events if isinstance(e, Reply)]
    model = ScriptedModel(replies, name="scripted:degenerate")
    task = task_from_session(DEGENERATE, tmp / "task")
    # recorded outcomes hold for the harness they were judged on: name the stand-in task's harness
    recorded = tmp / "recorded.jsonl"
    first, rest = DEGENERATE.read_text().split("\n", 1)
    head = json.loads(first)
    head["task"]["harness_hash"] = task.harness_hash()
    recorded.write_text(json.dumps(head) + "\n" + rest)
    toolchain = RecordedToolchain.load(recorded)
    return task, model, toolchain, header.protocol
