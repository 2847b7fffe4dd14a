"""Attribution controls over the real loop and the recorded toolchain: the no-feedback condition (history
kept or dropped), the horizon, the static-analysis component and the randomised-feedback control."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Sequence
from pathlib import Path

import pytest

from beavertui.cli import main
from beavertui.engine.analysis.attribute_run import (
    attribution_protocol,
    controls,
    donor_pool,
    run_attribution,
)
from beavertui.engine.analysis.attribution import control_estimates
from beavertui.engine.loop.prompts import feedback, lint
from beavertui.engine.loop.run import run_session
from beavertui.engine.models.base import Completion, DeltaCallback
from beavertui.engine.models.scripted import ScriptedModel
from beavertui.engine.session.events import (
    Built,
    Candidate,
    Event,
    Message,
    Request,
    StageResult,
    Verdict,
)
from beavertui.engine.session.protocol import Protocol
from beavertui.engine.session.state import AttemptState
from beavertui.engine.session.store import load_session
from beavertui.engine.toolchain.recorded import RecordedToolchain
from tests.engine.analysis.test_analysis_attribute import ProbeModel, _recordings_file
from tests.engine.analysis.test_analysis_branch import (
    BROKEN,
    MISMATCH,
    NAIVE,
    REFERENCE,
    WRONG_B,
    _failed,
    load_task,
    parent_session,
    recordings,
    reply,
    write,
)

NEUTRAL = "Please give another attempt. Reply with the complete corrected file in one ```cuda block."
#: Two failing candidates of another task: the same category as the parent's attempts, other run logs.
DONOR_A = BROKEN + "\nstatic int donor_a = 1;\n"
DONOR_B = BROKEN + "\nstatic int donor_b = 2;\n"
DONOR_LOGS = {DONOR_A: "checksum differs: 3.5e+02 at row 9", DONOR_B: "checksum differs: 1.0e+01 at row 2"}


def _recordings() -> dict[str, tuple[Event, ...]]:
    from beavertui.engine.code.hashing import code_hash

    got = dict(recordings())
    for code, log in DONOR_LOGS.items():
        got[code_hash(code)] = _failed(log)
    return got


class Recorder(ProbeModel):
    """The probe model, keeping every request's messages."""

    def __init__(self) -> None:
        super().__init__()
        self.requests: list[list[Message]] = []

    def complete(self, messages: Sequence[Message], *, on_delta: DeltaCallback | None = None) -> Completion:
        self.requests.append(list(messages))
        return super().complete(messages, on_delta=on_delta)


class SecondLook(ProbeModel):
    """Ignores the first note it gets; from the second on, repairs as the probe model does."""

    def complete(self, messages: Sequence[Message], *, on_delta: DeltaCallback | None = None) -> Completion:
        if not self.seen:
            self.seen.append(messages[-1].content)
            return Completion(content=reply(WRONG_B), finish_reason="stop")
        return super().complete(messages, on_delta=on_delta)


def _donor_session(tmp_path: Path) -> Path:
    """A session of another task id whose two attempts fail with the parent's category, other logs."""
    task = dataclasses.replace(load_task(), id="transpose_donor")
    path = tmp_path / "donors" / "donor.jsonl"
    path.parent.mkdir(parents=True)
    model = ScriptedModel([reply(DONOR_A), reply(DONOR_B)])
    write(path, run_session(task, model, RecordedToolchain(_recordings()), Protocol(budget=2, history=2)))
    return path


@pytest.mark.parametrize("history", ["kept", "dropped"])
def test_the_empty_subset_is_a_no_feedback_condition(tmp_path: Path, history: str) -> None:
    parent = parent_session(tmp_path)  # two failed attempts, history 2
    models: list[Recorder] = []

    def factory() -> Recorder:
        models.append(Recorder())
        return models[-1]

    outcomes = run_attribution(
        parent,
        2,
        ("runtime",),
        1,
        load_task(),
        factory,
        RecordedToolchain(recordings()),
        tmp_path / "attr",
        no_feedback=history,  # type: ignore[arg-type]
    )
    empty = models[0].requests[0]
    assert outcomes[0].subset == frozenset()
    if history == "kept":
        assert outcomes[0].correct is False
        # First turn, then both recorded rounds; the newest note is the neutral one.
        assert len(empty) == 6 and empty[-1].content == NEUTRAL
        assert empty[3].content.startswith("Your solution failed.")  # the note actually sent on attempt 1
    else:
        # The first turn again (the task and its broken start's log): nothing about any attempt.
        _, parent_events = load_session(parent)
        first = next(e for e in parent_events if isinstance(e, Request) and e.iteration == 1)
        assert empty == list(first.messages) and len(empty) == 2
    header, _ = load_session(outcomes[0].path)  # type: ignore[arg-type]
    assert header.protocol.feedback == ("L3" if history == "kept" else "L0")
    assert header.protocol.feedback_components == ()
    # The other subset is untouched by the choice: the run log repairs it.
    assert outcomes[1].subset == frozenset({"runtime"}) and outcomes[1].correct is True
    assert MISMATCH.replace("[0,1]", "[1,0]") in models[1].requests[0][-1].content


def test_horizon_scores_the_best_of_several_attempts(tmp_path: Path) -> None:
    parent = parent_session(tmp_path)
    tc = RecordedToolchain(recordings())
    one = run_attribution(parent, 1, ("runtime",), 1, load_task(), SecondLook, tc, tmp_path / "h1")
    two = run_attribution(parent, 1, ("runtime",), 1, load_task(), SecondLook, tc, tmp_path / "h2", horizon=2)
    # One attempt: the model ignores its first note, so nothing is repaired whatever the feedback.
    assert [(sorted(o.subset), o.correct) for o in one] == [([], False), (["runtime"], False)]
    # Two attempts: the run log repairs it on the second; without feedback it never is.
    assert [(sorted(o.subset), o.correct, o.horizon) for o in two] == [([], False, 2), (["runtime"], True, 2)]
    header, events = load_session(two[1].path)  # type: ignore[arg-type]
    assert header.protocol.budget == 3
    assert sorted({e.iteration for e in events if isinstance(e, Verdict)}) == [1, 2, 3]
    with pytest.raises(Exception, match="horizon must be 1 or more"):
        attribution_protocol(Protocol(), frozenset(), 1, horizon=0)


def test_static_component_warnings_and_lint() -> None:
    code = (
        "__global__ void k(float* o) { __shared__ float t[32]; t[threadIdx.x] = 1; o[0] = t[1]; }\n"
        "int main() { k<<<1, 1>>>(nullptr); }\n"
    )
    log = 'solution.cu(1): warning #177-D: variable "n" was declared but never referenced\nok\n'
    attempt = AttemptState(
        iteration=1,
        candidate=Candidate(iteration=1, code=code),
        build=Built(iteration=1, result=StageResult(stage="build", command="nvcc", rc=0, log=log)),
        verdict=Verdict(iteration=1, category="functional_correctness", signature="s", correct=False),
    )
    note = feedback(attempt, "L3", "cuda", ("static",))
    assert "Static analysis:" in note and "warning #177-D" in note
    assert "Lint: every kernel launch runs one thread (<<<1, 1>>>)" in note
    assert "Lint: __shared__ memory is used without a barrier" in note
    # Not part of any level: the full L3 note and the other components leave it out.
    assert "Static analysis" not in feedback(attempt, "L3", "cuda")
    assert "Static analysis" not in feedback(attempt, "L3", "cuda", ("compiler", "runtime"))
    assert lint(REFERENCE) == [] and lint(NAIVE) == []
    assert lint("int main() { return 0; }") == ["no __global__ kernel is defined"]
    assert lint("__global__ void k() {}\nvoid f() { cublasSgemm(h); k<<<8, 256>>>(); }") == [
        "the computation is handed to a library: cublasSgemm"
    ]
    p = attribution_protocol(Protocol(), frozenset({"static", "runtime"}), 1)
    assert p.feedback_components == ("runtime", "static")


def test_randomised_feedback_control(tmp_path: Path) -> None:
    parent = parent_session(tmp_path)
    donor = _donor_session(tmp_path)
    pool = donor_pool([donor, parent])
    assert {d.task for d in pool} == {"transpose_donor", "transpose_tiled"} and len(pool) == 4
    models: list[Recorder] = []

    def factory() -> Recorder:
        models.append(Recorder())
        return models[-1]

    tc = RecordedToolchain(_recordings())
    comps = ("runtime", "sanitizer")
    outcomes = run_attribution(
        parent, 1, comps, 2, load_task(), factory, tc, tmp_path / "attr", donors=pool, seed=3
    )
    coalition = [o for o in outcomes if o.condition == "coalition"]
    random_ = [o for o in outcomes if o.condition == "random"]
    assert len(coalition) == 8 and len(random_) == 2
    for o, model in zip(random_, models[-2:], strict=True):
        # Only another task's attempts are drawn; the note is that attempt's, and the request records it.
        (drawn,) = o.donors
        assert drawn.startswith(f"transpose_donor ({donor} iteration ")
        donor_log = DONOR_LOGS[DONOR_A if drawn.endswith("iteration 1)") else DONOR_B]
        assert donor_log in model.seen[0] and MISMATCH[:12] not in model.seen[0]
        _, events = load_session(o.path)  # type: ignore[arg-type]
        sent = next(e for e in events if isinstance(e, Request) and e.iteration == 2)
        assert sent.messages[-1].content == model.seen[0]
        assert o.correct is False  # the probe repairs only on the parent's own run log
    # Deterministic given the seed; other seeds draw the other donor attempt too.
    again = run_attribution(
        parent, 1, comps, 2, load_task(), ProbeModel, tc, tmp_path / "again", donors=pool, seed=3
    )
    assert [o.donors for o in again if o.condition == "random"] == [o.donors for o in random_]
    # The draw is keyed by the parent's session id, which is new each run: try seeds until both attempts
    # are drawn (one seed draws either with probability 1/2, so 40 seeds all missing one is 2^-39).
    drawn_over_seeds: set[tuple[str, ...]] = set()
    for s in range(40):
        drawn_over_seeds |= {
            o.donors
            for o in run_attribution(
                parent,
                1,
                ("runtime",),
                1,
                load_task(),
                ProbeModel,
                tc,
                tmp_path / f"s{s}",
                donors=pool,
                seed=s,
            )
            if o.condition == "random"
        }
        if len(drawn_over_seeds) == 2:
            break
    assert len(drawn_over_seeds) == 2
    # Beside the components: no feedback 0, randomised 0, every component 1 (the probe reads the run log).
    got = controls(outcomes, comps, "correct", resamples=200)
    assert (got["none"].value, got["random"].value, got["full"].value) == (0.0, 0.0, 1.0)
    assert got["full-random"].value == 1.0 and got["random-none"].value == 0.0
    # The game leaves the control out.
    from beavertui.engine.analysis.attribute_run import attribute_outcomes

    assert attribute_outcomes(outcomes, comps, resamples=50)["correct"].samples == 8


def test_a_step_without_a_donor_of_its_category_gets_no_control(tmp_path: Path) -> None:
    parent = parent_session(tmp_path)
    skipped: list[str] = []
    outcomes = run_attribution(
        parent,
        1,
        ("runtime",),
        1,
        load_task(),
        ProbeModel,
        RecordedToolchain(recordings()),
        tmp_path / "attr",
        donors=donor_pool([parent]),  # only the parent's own task
        skipped=skipped,
    )
    assert [o.condition for o in outcomes] == ["coalition", "coalition"]
    assert len(skipped) == 1 and "no donor attempt of category functional_correctness" in skipped[0]


def test_control_estimates_on_constructed_steps() -> None:
    steps = [
        {"none": [0.0, 0.0], "random": [1.0, 0.0], "full": [1.0, 1.0]},
        {"none": [1.0, 1.0], "full": [1.0, 1.0]},  # no donor here: no random control
    ]
    got = control_estimates(steps, resamples=300, seed=1)
    assert got["none"].value == pytest.approx(0.5) and got["full"].value == pytest.approx(1.0)
    assert got["random"].value == pytest.approx(0.5)  # over the one step that ran it
    assert got["full-random"].value == pytest.approx(0.5) and got["random-none"].value == pytest.approx(0.5)
    assert got["full-none"].value == pytest.approx(0.5)
    for e in got.values():
        assert e.low <= e.value <= e.high
    assert got["random"].low == 0.0 and got["random"].high == 1.0
    assert control_estimates([{"full": [1.0]}], resamples=10).keys() == {"full"}


def test_attribute_command_reports_the_controls(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    parent = parent_session(tmp_path)
    donor = _donor_session(tmp_path)
    script = tmp_path / "fix.json"
    script.write_text(json.dumps([reply(REFERENCE)]))
    rec = _recordings_file(tmp_path / "rec.jsonl")
    args = ["--model", f"scripted:{script}", "--recorded", str(rec), "--out", str(tmp_path / "b")]
    controls_args = [
        "--random-feedback",
        str(donor.parent),
        "--horizon",
        "2",
        "--no-feedback-history",
        "dropped",
    ]
    attribute = ["attribute", str(parent), "--at", "1", "--components", "runtime", "--samples", "1"]
    attribute += [*args, *controls_args]
    rc = main([*attribute, "--json"])
    assert rc == 0
    data = json.loads(capsys.readouterr().out)
    c = data["controls"]
    assert (c["horizon"], c["no_feedback_history"], c["skipped"]) == (2, "dropped", [])
    assert c["random_feedback"] == {"donors_from": str(donor.parent), "pool": 2, "seed": 0}
    # The scripted model repairs whatever it reads: every condition passes, every contrast is zero.
    assert c["values"]["passed"]["random"] == {"value": 1.0, "low": 1.0, "high": 1.0}
    assert c["values"]["passed"]["full-random"]["value"] == 0.0
    random_rows = [o for o in data["outcomes"] if o["condition"] == "random"]
    assert len(random_rows) == 1 and random_rows[0]["donors"][0].startswith("transpose_donor (")
    assert data["branches"] == 3 and all(o["horizon"] == 2 for o in data["outcomes"])

    rc = main(attribute)
    out = capsys.readouterr().out
    assert rc == 0
    assert "horizon 2 attempt(s) after the frozen step (best outcome); no feedback: history dropped" in out
    assert "randomised feedback" in out and "every component - randomised" in out
    assert main(["attribute", str(parent), "--at", "1", *args, "--horizon", "0"]) == 2
    assert "--horizon must be 1 to 99, not 0" in capsys.readouterr().err
    assert (
        main(["attribute", str(parent), "--at", "1", *args, "--random-feedback", str(tmp_path / "nope")]) == 2
    )
    assert "not a folder" in capsys.readouterr().err


def test_a_saved_attribution_shows_its_controls(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    parent = parent_session(tmp_path)
    donor = _donor_session(tmp_path)
    script = tmp_path / "fix.json"
    script.write_text(json.dumps([reply(REFERENCE)]))
    rec = _recordings_file(tmp_path / "rec.jsonl")
    out = tmp_path / "b"
    args = ["--model", f"scripted:{script}", "--recorded", str(rec), "--out", str(out)]
    assert (
        main(
            [
                "attribute",
                str(parent),
                "--at",
                "1",
                "--components",
                "runtime",
                "--samples",
                "1",
                *args,
                "--random-feedback",
                str(donor.parent),
                "--json",
            ]
        )
        == 0
    )
    capsys.readouterr()
    assert main(["attribute", "--show", str(out / f"attribution-{parent.stem}-at1.json")]) == 0
    shown = capsys.readouterr().out
    assert "controls (mean outcome): no feedback (empty subset) 1.00 [1.00, 1.00]" in shown
    assert "randomised feedback 1.00" in shown and "every component - randomised +0.00" in shown
