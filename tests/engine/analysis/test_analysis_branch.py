"""Branching from a frozen step: the real loop, a scripted model and recorded outcomes of a tiled transpose."""

from __future__ import annotations

from pathlib import Path

import pytest

from beavertui.engine.analysis.branch import BranchError, branch_session
from beavertui.engine.code.hashing import code_hash
from beavertui.engine.corpus.load import load_corpus
from beavertui.engine.corpus.task import Task
from beavertui.engine.loop.run import run_session
from beavertui.engine.models.scripted import ScriptedModel
from beavertui.engine.session.events import (
    Built,
    Event,
    Ran,
    Request,
    Sanitized,
    SessionEnd,
    SessionHeader,
    StageResult,
    Timed,
    TimingResult,
    Verdict,
)
from beavertui.engine.session.protocol import Protocol
from beavertui.engine.session.store import SessionWriter, load_session
from beavertui.engine.toolchain.recorded import RecordedToolchain
from tests.conftest import gpu_present

CORPUS = Path(__file__).parents[2] / "data" / "analysis" / "corpus"
TASK_DIR = CORPUS / "transpose_tiled"
REFERENCE = (TASK_DIR / "reference.cu").read_text()
BROKEN = (TASK_DIR / "broken_start.cu").read_text()
# Two wrong repairs (block indices not swapped for the write; the read tile not transposed either).
WRONG_A = BROKEN.replace("y = blockIdx.x * TILE + threadIdx.y;", "y = blockIdx.y * TILE + threadIdx.y;")
WRONG_B = BROKEN.replace("x = blockIdx.y * TILE + threadIdx.x;", "x = blockIdx.x * TILE + threadIdx.x;")
# A correct but naive repair: one element per thread, no tile, uncoalesced writes.
NAIVE = """#include "transpose.h"

__global__ void transpose_kernel(const float* __restrict__ in, float* __restrict__ out, int n) {
    int x = blockIdx.x * blockDim.x + threadIdx.x;
    int y = blockIdx.y * blockDim.y + threadIdx.y;
    if (x < n && y < n) out[x * n + y] = in[y * n + x];
}

void launch_transpose(const float* in, float* out, int n) {
    dim3 block(32, 8);
    dim3 grid((n + 31) / 32, (n + 7) / 8);
    transpose_kernel<<<grid, block>>>(in, out, n);
}
"""

# The outcomes below are written by hand in the harness's format (not measured): the broken start's line
# (error_log.txt, computed by emulating the broken kernel on the harness's inputs) stands in for both
# wrong repairs' run logs.
MISMATCH = "MISMATCH out: 16252928 of 16777216 elements wrong, first at [0,1]: got 0.261000 want -0.444000"


def reply(code: str) -> str:
    return f"Here is the repaired file.\n\n```cuda\n{code}```\n"


def _failed(log: str) -> tuple[Event, ...]:
    return (
        Built(iteration=1, result=StageResult(stage="build", command="nvcc ...", rc=0)),
        Ran(iteration=1, result=StageResult(stage="run", command="./test.out", rc=1, log=log + "\n")),
        Sanitized(
            iteration=1,
            tool="memcheck",
            result=StageResult(stage="sanitize", command="compute-sanitizer ./test.out", rc=1),
            error_count=0,
        ),
        Verdict(
            iteration=1,
            category="functional_correctness",
            signature="MISMATCH out",
            correct=False,
            reason="functional_correctness",
            decisive=[log],
        ),
    )


def _correct(speedup: float) -> tuple[Event, ...]:
    timing = TimingResult(
        method="beaver_time_ms",
        candidate_ms=0.1 / speedup,
        reference_ms=0.1,
        candidate_cv=0.01,
        reference_cv=0.01,
        speedup=speedup,
    )
    return (
        Built(iteration=1, result=StageResult(stage="build", command="nvcc ...", rc=0)),
        Ran(iteration=1, result=StageResult(stage="run", command="./test.out", rc=0, log="OK out\n")),
        Timed(iteration=1, result=timing),
        Verdict(iteration=1, category="passed", signature="", correct=True, speedup=speedup, success=True),
    )


def recordings() -> dict[str, tuple[Event, ...]]:
    return {
        code_hash(WRONG_A): _failed(MISMATCH),
        code_hash(WRONG_B): _failed(MISMATCH.replace("[0,1]", "[1,0]")),
        code_hash(REFERENCE): _correct(1.0),
        code_hash(NAIVE): _correct(0.45),
    }


def load_task() -> Task:
    return load_corpus(CORPUS).get("transpose_tiled")


def write(path: Path, stream) -> list[Event]:  # type: ignore[no-untyped-def]
    header = next(stream)
    events: list[Event] = []
    with SessionWriter(path, header) as w:
        for e in stream:
            w.append(e)
            events.append(e)
    return events


def parent_session(tmp_path: Path) -> Path:
    """A recorded L3 session that fails twice (budget 2)."""
    path = tmp_path / "parent.jsonl"
    stream = run_session(
        load_task(),
        ScriptedModel([reply(WRONG_A), reply(WRONG_B)]),
        RecordedToolchain(recordings()),
        Protocol(budget=2, feedback="L3", history=2),
    )
    events = write(path, stream)
    assert isinstance(events[-1], SessionEnd) and events[-1].stop_reason == "budget"
    return path


def requests(events: list[Event]) -> dict[int, Request]:
    return {e.iteration: e for e in events if isinstance(e, Request)}


def test_branch_keeps_the_prefix_and_changes_the_feedback(tmp_path: Path) -> None:
    parent = parent_session(tmp_path)
    p_header, p_events = load_session(parent)
    stream = branch_session(
        parent,
        1,
        load_task(),
        ScriptedModel([reply(REFERENCE)]),
        RecordedToolchain(recordings()),
        Protocol(budget=3, feedback="L1", history=2),
    )
    out = tmp_path / "branch.jsonl"
    write(out, stream)
    header, events = load_session(out)
    assert (header.parent, header.branch_step) == (str(parent), 1)
    assert header.protocol.feedback == "L1"
    assert header.session_id != p_header.session_id
    # The copied prefix is the parent's iteration 1, event for event.
    p_first = [e for e in p_events if getattr(e, "iteration", 0) == 1]
    assert events[: len(p_first)] == p_first
    # Iteration 2 is new: same first turn, the parent's reply 1, then feedback on attempt 1 at L1.
    p_req, b_req = requests(p_events), requests(events)
    msgs = b_req[2].messages
    assert msgs[:3] == p_req[2].messages[:3]
    assert (
        msgs[2].content == next(e.content for e in p_events if e.kind == "reply" and e.iteration == 1).strip()
    )
    assert msgs[3].content.startswith("Your solution failed. Try again.")
    assert p_req[2].messages[3].content != msgs[3].content  # the parent's L3 note quoted the log
    assert MISMATCH in p_req[2].messages[3].content
    end = events[-1]
    assert isinstance(end, SessionEnd) and (end.stop_reason, end.iterations, end.success) == (
        "passed",
        2,
        True,
    )


def test_branch_errors_are_one_line(tmp_path: Path) -> None:
    parent = parent_session(tmp_path)
    task, tc = load_task(), RecordedToolchain(recordings())

    def start(step: int, protocol: Protocol) -> None:
        next(iter(branch_session(parent, step, task, ScriptedModel(["x"]), tc, protocol)))

    with pytest.raises(
        BranchError, match="step 3 has no verdict in the parent \\(its last judged step is 2\\)"
    ):
        start(3, Protocol(budget=5))
    with pytest.raises(BranchError, match="1 or more"):
        start(0, Protocol(budget=5))
    with pytest.raises(BranchError, match="leaves no iteration after step 2"):
        start(2, Protocol(budget=2))
    with pytest.raises(BranchError, match="must be iterative"):
        start(1, Protocol(budget=5, method="repeated"))


def test_branch_from_a_passed_step_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "passed.jsonl"
    write(
        path,
        run_session(
            load_task(),
            ScriptedModel([reply(REFERENCE)]),
            RecordedToolchain(recordings()),
            Protocol(budget=2),
        ),
    )
    stream = branch_session(
        path, 1, load_task(), ScriptedModel(["x"]), RecordedToolchain(recordings()), Protocol(budget=3)
    )
    with pytest.raises(BranchError, match="already passed"):
        next(iter(stream))


def test_branch_from_a_repeated_parent_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "repeated.jsonl"
    model = ScriptedModel([reply(WRONG_A), reply(WRONG_B)])
    write(
        path,
        run_session(
            load_task(), model, RecordedToolchain(recordings()), Protocol(method="repeated", budget=2)
        ),
    )
    stream = branch_session(
        path, 1, load_task(), ScriptedModel(["x"]), RecordedToolchain(recordings()), Protocol(budget=3)
    )
    with pytest.raises(BranchError, match="repeated protocol"):
        next(iter(stream))


def test_header_is_yielded_first(tmp_path: Path) -> None:
    parent = parent_session(tmp_path)
    stream = branch_session(
        parent,
        1,
        load_task(),
        ScriptedModel([reply(NAIVE)]),
        RecordedToolchain(recordings()),
        Protocol(budget=2),
    )
    assert isinstance(next(iter(stream)), SessionHeader)


def test_earlier_rounds_keep_their_recorded_feedback(tmp_path: Path) -> None:
    # Branch after step 2 at L1: round 1 keeps the parent's L3 note (quoting the log), round 2 gets L1.
    parent = parent_session(tmp_path)
    _, p_events = load_session(parent)
    out = tmp_path / "branch2.jsonl"
    write(
        out,
        branch_session(
            parent,
            2,
            load_task(),
            ScriptedModel([reply(NAIVE)]),
            RecordedToolchain(recordings()),
            Protocol(budget=3, feedback="L1", history=2),
        ),
    )
    _, events = load_session(out)
    msgs = requests(events)[3].messages
    assert [m.role for m in msgs] == ["system", "user", "assistant", "user", "assistant", "user"]
    assert msgs[3] == requests(p_events)[2].messages[3]  # the recorded L3 note on attempt 1
    assert MISMATCH in msgs[3].content
    assert msgs[5].content.startswith("Your solution failed. Try again.")


def test_branch_command(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    import json

    from beavertui.cli import main

    parent = parent_session(tmp_path)
    script = tmp_path / "fix.json"
    script.write_text(json.dumps([reply(REFERENCE)]))
    rec = tmp_path / "rec.jsonl"
    with open(rec, "w") as fh:
        task = load_task()
        for key, evs in recordings().items():
            line = {"task": task.id, "harness": task.harness_hash(), "sha256": key}
            fh.write(json.dumps({**line, "events": [e.model_dump(mode="json") for e in evs]}) + "\n")
    out = tmp_path / "b.jsonl"
    argv = ["branch", str(parent), "--at", "1", "--feedback", "L2", "--history", "1", "--budget", "4"]
    argv += ["--model", f"scripted:{script}", "--recorded", str(rec), "--out", str(out)]
    assert main(argv) == 0
    printed = capsys.readouterr().out
    assert "at step 1: iterative K4 L2 H1" in printed
    assert (
        "iteration 2: passed, 1.00x (success)" in printed and "ended: passed after 2, best 1.00x" in printed
    )
    header, _ = load_session(out)
    assert (header.branch_step, header.protocol.feedback, header.protocol.history) == (1, "L2", 1)
    assert header.model.name == f"scripted:{script.name}"
    # Errors are one line: a missing step, and a parent model that cannot be asked again.
    assert main([*argv[:3], "9", *argv[4:-1], str(tmp_path / "b9.jsonl")]) == 2  # a new --out: b.jsonl exists
    assert "step 9 has no verdict" in capsys.readouterr().err
    assert (
        main(["branch", str(parent), "--at", "1", "--recorded", str(rec), "--out", str(tmp_path / "c.jsonl")])
        == 2
    )
    assert "the parent's model was scripted" in capsys.readouterr().err
    assert main(["branch", str(parent), "--at", "1", "--history", "9", "--recorded", str(rec)]) == 2
    assert "--history" in capsys.readouterr().err
    if not gpu_present():
        assert main(["branch", str(parent), "--at", "1", "--model", f"scripted:{script}"]) == 2
        assert "no NVIDIA GPU visible" in capsys.readouterr().err
