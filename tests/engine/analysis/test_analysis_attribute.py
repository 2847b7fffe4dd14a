"""Feedback attribution runs over the real loop: a model that reacts to what the feedback says.

The probe model below is a real ``Model``: it reads the feedback it is sent and repairs according to it,
so the attribution has a known answer. It repairs correctly only when the run log (``runtime``) is in
the feedback, and keeps the fast tiled design only when the sanitizer's verdict is there as well.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

import pytest

from beavertui.cli import main
from beavertui.engine.analysis.attribute_run import (
    attribute_outcomes,
    attribution_protocol,
    failed_steps,
    run_attribution,
)
from beavertui.engine.models.base import Completion, DeltaCallback
from beavertui.engine.session.events import Message, ModelInfo
from beavertui.engine.session.protocol import Protocol
from beavertui.engine.session.store import load_session
from beavertui.engine.toolchain.recorded import RecordedToolchain
from tests.engine.analysis.test_analysis_branch import (
    MISMATCH,
    NAIVE,
    REFERENCE,
    WRONG_B,
    load_task,
    parent_session,
    recordings,
    reply,
)

COMPONENTS = ("compiler", "runtime", "sanitizer")


class ProbeModel:
    """Repairs from the feedback it reads: MISMATCH -> correct; plus the sanitizer's word -> fast too."""

    def __init__(self) -> None:
        self.seen: list[str] = []

    def info(self) -> ModelInfo:
        return ModelInfo(name="probe", kind="scripted")

    def secrets(self) -> tuple[str, ...]:
        return ()

    def complete(self, messages: Sequence[Message], *, on_delta: DeltaCallback | None = None) -> Completion:
        note = messages[-1].content
        self.seen.append(note)
        if "MISMATCH out:" in note and "compute-sanitizer --tool memcheck" in note:
            code = REFERENCE
        elif "MISMATCH out:" in note:
            code = NAIVE
        else:
            code = WRONG_B
        return Completion(content=reply(code), finish_reason="stop")


def test_attribution_protocol() -> None:
    p = attribution_protocol(Protocol(budget=5, feedback="L1"), frozenset({"timing", "compiler"}), 2)
    assert (p.feedback, p.feedback_components, p.budget) == ("L3", ("compiler", "timing"), 3)
    assert attribution_protocol(Protocol(), frozenset({"profile"}), 1).feedback == "L4"
    assert p.stagnation.stop is False and p.stagnation.enabled == Protocol().stagnation.enabled


def test_attribution_of_a_probe_model(tmp_path: Path) -> None:
    parent = parent_session(tmp_path)
    assert failed_steps(parent) == [1, 2]
    probes: list[ProbeModel] = []

    def factory() -> ProbeModel:
        probes.append(ProbeModel())
        return probes[-1]

    outcomes = run_attribution(
        parent, 1, COMPONENTS, 2, load_task(), factory, RecordedToolchain(recordings()), tmp_path / "attr"
    )
    assert len(outcomes) == 16 and len(probes) == 16
    by_subset = {tuple(sorted(o.subset)): (o.compiled, o.correct, o.passed) for o in outcomes}
    assert by_subset[()] == (True, False, False)
    assert by_subset[("runtime",)] == (True, True, False)
    assert by_subset[("runtime", "sanitizer")] == (True, True, True)
    assert by_subset[("compiler", "sanitizer")] == (True, False, False)
    # What the model read is exactly the chosen components (branches run subset by subset, by bitmask).
    # The empty subset is the no-feedback condition: not even that the attempt failed.
    empty_note = probes[0].seen[0]
    assert (
        empty_note
        == "Please give another attempt. Reply with the complete corrected file in one ```cuda block."
    )
    compiler_note = probes[2].seen[0]  # {compiler}: the build passed, so it adds only the verdict's head
    assert compiler_note.startswith("Your solution failed.") and "```text" not in compiler_note
    full_note = probes[-1].seen[0]
    assert "Run log:" in full_note and MISMATCH in full_note and "compute-sanitizer" in full_note

    results = attribute_outcomes(outcomes, COMPONENTS, resamples=200)
    correct, passed, compiled = results["correct"], results["passed"], results["compiled"]
    assert correct.shapley["runtime"].value == pytest.approx(1.0)
    assert correct.shapley["compiler"].value == pytest.approx(0.0)
    assert passed.shapley["runtime"].value == pytest.approx(0.5)
    assert passed.shapley["sanitizer"].value == pytest.approx(0.5)
    assert passed.banzhaf["sanitizer"].value == pytest.approx(0.5)
    assert passed.shapley_interaction[("runtime", "sanitizer")].value == pytest.approx(1.0)
    assert passed.banzhaf_interaction[("compiler", "sanitizer")].value == pytest.approx(0.0)
    assert all(e.value == 0.0 for e in compiled.shapley.values())
    # Every branch file names its parent and the frozen step, and records the subset in its protocol.
    header, _ = load_session(outcomes[5].path)  # type: ignore[arg-type]
    assert (header.parent, header.branch_step) == (str(parent), 1)
    assert header.protocol.feedback_components == tuple(c for c in COMPONENTS if c in outcomes[5].subset)


def _recordings_file(path: Path) -> Path:
    with open(path, "w") as fh:
        task = load_task()
        for key, events in recordings().items():
            line = {"task": task.id, "harness": task.harness_hash(), "sha256": key}
            fh.write(json.dumps({**line, "events": [e.model_dump(mode="json") for e in events]}) + "\n")
    return path


def test_attribute_command_on_a_session_and_on_a_run(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    parent = parent_session(run_dir)
    script = tmp_path / "fix.json"
    script.write_text(json.dumps([reply(REFERENCE)]))
    rec = _recordings_file(tmp_path / "rec.jsonl")
    common = ["--model", f"scripted:{script}", "--recorded", str(rec), "--out", str(tmp_path / "b"), "--json"]
    rc = main(
        ["attribute", str(parent), "--at", "2", "--components", "runtime,timing", "--samples", "2", *common]
    )
    assert rc == 0
    data = json.loads(capsys.readouterr().out)
    assert data["branches"] == 8 and data["without_verdict"] == 0
    # The scripted model ignores the feedback: every subset passes, every value is exactly zero.
    passed = data["measures"]["passed"]
    assert passed["subset_means"] == {"none": 1.0, "runtime": 1.0, "timing": 1.0, "runtime+timing": 1.0}
    assert passed["shapley"]["runtime"] == {"value": 0.0, "low": 0.0, "high": 0.0}
    saved = json.loads((tmp_path / "b" / f"attribution-{parent.stem}-at2.json").read_text())
    assert saved["measures"] == data["measures"]

    rc = main(["attribute", "--run", str(run_dir), "--components", "runtime", "--samples", "1", *common])
    assert rc == 0
    data = json.loads(capsys.readouterr().out)
    assert data["branches"] == 4  # failed steps 1 and 2, two subsets, one sample
    assert data["measures"]["correct"]["steps"] == 2


def test_attribute_command_tables_and_errors(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    parent = parent_session(tmp_path)
    script = tmp_path / "fix.json"
    script.write_text(json.dumps([reply(NAIVE)]))
    rec = _recordings_file(tmp_path / "rec.jsonl")
    args = ["--model", f"scripted:{script}", "--recorded", str(rec), "--out", str(tmp_path / "b")]
    assert (
        main(
            [
                "attribute",
                str(parent),
                "--at",
                "1",
                "--components",
                "sanitizer,timing",
                "--samples",
                "1",
                *args,
            ]
        )
        == 0
    )
    out = capsys.readouterr().out
    assert "outcome: correct" in out and "Shapley" in out and "sanitizer×timing" in out
    assert "subset means: none 1.00, sanitizer 1.00, timing 1.00, sanitizer+timing 1.00" in out
    assert "outcome: passed" in out
    assert main(["attribute", str(parent), "--components", "runtime", *args]) == 2
    assert "SESSION needs --at STEP" in capsys.readouterr().err
    assert main(["attribute", str(parent), "--at", "1", "--components", "linker", *args]) == 2
    assert "unknown feedback component 'linker'" in capsys.readouterr().err


def test_feedback_filter_on_build_failures_and_slow_repairs() -> None:
    from beavertui.engine.loop.prompts import feedback
    from beavertui.engine.session.events import Built, Candidate, StageResult, Timed, TimingResult, Verdict
    from beavertui.engine.session.state import AttemptState

    log = 'solution.cu(7): error: identifier "tile" is undefined'
    broken = AttemptState(
        iteration=1,
        candidate=Candidate(iteration=1, code="x"),
        build=Built(iteration=1, result=StageResult(stage="build", command="nvcc", rc=2, log=log)),
        verdict=Verdict(iteration=1, category="buildability", signature="s", correct=False, decisive=[log]),
    )
    assert log in feedback(broken, "L3", "cuda", ("compiler",))
    assert log not in feedback(broken, "L3", "cuda", ("runtime", "sanitizer", "timing"))
    assert feedback(broken, "L3", "cuda") == feedback(
        broken, "L3", "cuda", ("compiler", "runtime", "sanitizer")
    )
    timing = TimingResult(
        method="beaver_time_ms",
        candidate_ms=2.0,
        reference_ms=1.0,
        candidate_cv=0.0,
        reference_cv=0.0,
        speedup=0.5,
    )
    slow = AttemptState(
        iteration=1,
        candidate=Candidate(iteration=1, code="x"),
        timing=Timed(iteration=1, result=timing),
        verdict=Verdict(iteration=1, category="passed", signature="", correct=True, speedup=0.5),
    )
    assert "0.50x" in feedback(slow, "L3", "cuda", ("timing",))
    assert "0.50x" not in feedback(slow, "L3", "cuda", ("compiler", "runtime"))
    assert feedback(slow, "L3", "cuda", ()) == feedback(slow, "L0", "cuda")  # no feedback: nothing on speed


@pytest.mark.gpu
def test_attribution_run_on_the_gpu(tmp_path: Path) -> None:
    """One attribution run on a native task, built, run, sanitized and timed on this machine's GPU."""
    from beavertui.engine.loop.run import run_session
    from beavertui.engine.models.scripted import ScriptedModel
    from beavertui.engine.toolchain.local import LocalToolchain  # type: ignore[import-not-found,unused-ignore]
    from tests.engine.analysis.test_analysis_branch import WRONG_A, write

    toolchain = LocalToolchain()
    parent = tmp_path / "parent.jsonl"
    events = write(
        parent,
        run_session(
            load_task(), ScriptedModel([reply(WRONG_A)]), toolchain, Protocol(budget=1, feedback="L3")
        ),
    )
    verdict = next(e for e in events if e.kind == "verdict")
    assert (verdict.category, verdict.correct) == ("functional_correctness", False), verdict
    outcomes = run_attribution(
        parent, 1, ("runtime", "sanitizer"), 1, load_task(), ProbeModel, toolchain, tmp_path / "attr"
    )
    got = {tuple(sorted(o.subset)): (o.compiled, o.correct, o.passed) for o in outcomes}
    print("outcomes per subset (compiled, correct, passed):", got)
    assert got[()] == (True, False, False)
    assert got[("sanitizer",)] == (True, False, False)
    assert got[("runtime",)][:2] == (True, True)  # the naive transpose: correct; its speed decides 'passed'
    assert got[("runtime", "sanitizer")] == (True, True, True)  # the tiled reference design
    results = attribute_outcomes(outcomes, ("runtime", "sanitizer"), resamples=200)
    print("passed: Shapley", {c: e.value for c, e in results["passed"].shapley.items()})
    assert results["correct"].shapley["runtime"].value == pytest.approx(1.0)
    assert results["correct"].shapley["sanitizer"].value == pytest.approx(0.0)


def test_attribution_from_a_step_where_the_parent_stagnated(tmp_path: Path) -> None:
    from beavertui.engine.loop.run import run_session
    from beavertui.engine.models.scripted import ScriptedModel
    from beavertui.engine.session.events import SessionEnd
    from tests.engine.analysis.test_analysis_branch import WRONG_A, write

    parent = tmp_path / "stuck.jsonl"
    tc = RecordedToolchain(recordings())
    events = write(
        parent,
        run_session(load_task(), ScriptedModel([reply(WRONG_A), reply(WRONG_A)]), tc, Protocol(budget=4)),
    )
    assert isinstance(events[-1], SessionEnd) and events[-1].stop_reason == "duplicate_code"
    outcomes = run_attribution(parent, 2, ("runtime",), 1, load_task(), ProbeModel, tc, tmp_path / "attr")
    assert [(sorted(o.subset), o.correct) for o in outcomes] == [([], False), (["runtime"], True)]


def test_a_build_stopped_by_its_time_limit_is_not_compiled() -> None:
    """Attribution's ``compiled`` outcome: a build that hit its time limit is classified timeout (build
    stage) and did not compile; a run that hit it did."""
    from beavertui.engine.analysis.attribute_run import outcome_of
    from beavertui.engine.judge.classify import classify
    from beavertui.engine.session.events import Verdict

    build = classify(build_rc=-9, build_log="nvcc: compiling\n", run_rc=None, run_log="", timed_out=True)
    run = classify(build_rc=0, build_log="", run_rc=None, run_log="started\n", timed_out=True)
    for c, built in ((build, False), (run, True)):
        v = Verdict(iteration=1, category=c.category, signature=c.signature, correct=False)
        assert c.category == "timeout" and outcome_of([v], 1) == (built, False, False)
