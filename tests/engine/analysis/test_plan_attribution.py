"""The plan as a player of the attribution game, and the dummy-plan control, over the real loop.

The constructed game: a coder that repairs only when it reads both the run log (``runtime``) and the
planner's real plan (which names the fault the run log shows). Its outcome is 1 exactly on the
coalitions that hold both, so ``runtime`` matters only with a plan: the Shapley and Banzhaf interaction
of (runtime, plan) is 1, and the dummy-plan control (every feedback component, a content-free plan) fails
where the full coalition passes.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

import pytest

from beavertui.cli import main
from beavertui.engine.analysis.attribute_run import (
    DUMMY_PLAN,
    attribute_outcomes,
    controls,
    run_attribution,
)
from beavertui.engine.analysis.branch import BranchError
from beavertui.engine.loop.run import run_session
from beavertui.engine.models.base import Completion, DeltaCallback
from beavertui.engine.models.scripted import ScriptedModel
from beavertui.engine.session.events import Message, ModelInfo, Plan
from beavertui.engine.session.protocol import Protocol
from beavertui.engine.session.store import load_session
from beavertui.engine.toolchain.recorded import RecordedToolchain
from tests.engine.analysis.test_analysis_attribute import _recordings_file
from tests.engine.analysis.test_analysis_branch import (
    REFERENCE,
    WRONG_A,
    WRONG_B,
    load_task,
    parent_session,
    recordings,
    reply,
    write,
)

#: The real plan: it names the fault that the run log's MISMATCH lines show.
PLAN_TEXT = "1. The MISMATCH rows show the block indices swapped for the write.\n2. Swap them back."
COMPONENTS = ("compiler", "runtime", "plan")


class PlanReader:
    """A coder that repairs only with the run log in its feedback and the real plan beside it."""

    def __init__(self) -> None:
        self.seen: list[str] = []

    def info(self) -> ModelInfo:
        return ModelInfo(name="plan-reader", kind="scripted")

    def secrets(self) -> tuple[str, ...]:
        return ()

    def complete(self, messages: Sequence[Message], *, on_delta: DeltaCallback | None = None) -> Completion:
        text = messages[-1].content
        self.seen.append(text)
        fixed = "MISMATCH out:" in text and "block indices swapped" in text
        return Completion(content=reply(REFERENCE if fixed else WRONG_B), finish_reason="stop")


def _planned_parent(tmp_path: Path) -> tuple[Path, Path]:
    """A planned L3 session (P+F) that fails twice; its planner is a script of the real plan."""
    script = tmp_path / "planner.json"
    script.write_text(json.dumps([PLAN_TEXT] * 4))
    path = tmp_path / "parent.jsonl"
    protocol = Protocol(budget=2, history=2, planning="plan", planner=f"scripted:{script}")
    write(
        path,
        run_session(
            load_task(),
            ScriptedModel([reply(WRONG_A), reply(WRONG_B)]),
            RecordedToolchain(recordings()),
            protocol,
        ),
    )
    return path, script


def test_a_component_that_matters_only_with_a_plan_gets_its_interaction(tmp_path: Path) -> None:
    parent, _ = _planned_parent(tmp_path)
    coders: list[PlanReader] = []

    def factory() -> PlanReader:
        coders.append(PlanReader())
        return coders[-1]

    outcomes = run_attribution(
        parent, 1, COMPONENTS, 1, load_task(), factory, RecordedToolchain(recordings()), tmp_path / "attr"
    )
    assert len(outcomes) == 8
    passed = {tuple(sorted(o.subset)): o.passed for o in outcomes}
    assert passed == {
        (): False,
        ("compiler",): False,
        ("runtime",): False,
        ("compiler", "runtime"): False,
        ("plan",): False,
        ("compiler", "plan"): False,
        ("plan", "runtime"): True,
        ("compiler", "plan", "runtime"): True,
    }
    a = attribute_outcomes(outcomes, COMPONENTS, resamples=200)["passed"]
    assert a.shapley["runtime"].value == pytest.approx(0.5)
    assert a.shapley["plan"].value == pytest.approx(0.5)
    assert a.shapley["compiler"].value == pytest.approx(0.0)
    assert a.shapley_interaction[("runtime", "plan")].value == pytest.approx(1.0)
    assert a.banzhaf_interaction[("runtime", "plan")].value == pytest.approx(1.0)
    assert a.shapley_interaction[("compiler", "plan")].value == pytest.approx(0.0)
    assert a.shapley_interaction[("compiler", "runtime")].value == pytest.approx(0.0)
    # beside the game: the dummy plan (every feedback component, no real plan) fails where the full passes
    c = controls(outcomes, COMPONENTS, "passed", resamples=200)
    assert (c["dummy_plan"].value, c["full"].value, c["full-dummy_plan"].value) == (0.0, 1.0, 1.0)
    # what each branch's coder was given: the dummy plan exactly where the coalition lacks the plan
    for o in outcomes:
        assert o.path is not None
        header, events = load_session(o.path)
        plans = [e for e in events if isinstance(e, Plan) and e.iteration == 2]
        assert len(plans) == 1
        if "plan" in o.subset:
            assert plans[0].content == PLAN_TEXT and plans[0].replaces is None
            assert header.planner is not None and header.planner.name == "scripted:planner.json"
        else:
            assert plans[0].content == DUMMY_PLAN and plans[0].replaces is not None
            assert header.planner is not None and header.planner.name == "dummy-plan"
        assert header.protocol.feedback_components == tuple(
            c for c in ("compiler", "runtime") if c in o.subset
        )


def test_the_dummy_plan_control_runs_beside_a_feedback_game(tmp_path: Path) -> None:
    parent, _ = _planned_parent(tmp_path)
    outcomes = run_attribution(
        parent,
        1,
        ("runtime",),
        2,
        load_task(),
        PlanReader,
        RecordedToolchain(recordings()),
        tmp_path / "attr",
        dummy_plan=True,
    )
    dummy = [o for o in outcomes if o.condition == "dummy_plan"]
    assert len(outcomes) == 6 and len(dummy) == 2
    assert all(o.subset == frozenset({"runtime"}) and o.passed is False for o in dummy)
    assert all(o.path is not None and "-dummy-plan-s" in o.path.name for o in dummy)
    c = controls(outcomes, ("runtime",), "passed", resamples=200)
    assert (c["none"].value, c["dummy_plan"].value, c["full"].value) == (0.0, 0.0, 1.0)
    assert c["full-dummy_plan"].value == 1.0


def test_the_plan_player_needs_a_planning_parent(tmp_path: Path) -> None:
    parent = parent_session(tmp_path)  # the implicit loop
    for kw in ({"components": ("runtime", "plan")}, {"components": ("runtime",), "dummy_plan": True}):
        with pytest.raises(BranchError, match="needs a planning protocol"):
            run_attribution(
                parent,
                1,
                kw["components"],  # type: ignore[arg-type]
                1,
                load_task(),
                PlanReader,
                RecordedToolchain(recordings()),
                tmp_path / "attr",
                dummy_plan=bool(kw.get("dummy_plan")),
            )


def test_attribute_command_reports_the_dummy_plan(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    parent, _ = _planned_parent(tmp_path)
    coder = tmp_path / "fix.json"
    coder.write_text(json.dumps([reply(REFERENCE)]))
    rec = _recordings_file(tmp_path / "rec.jsonl")
    args = ["--model", f"scripted:{coder}", "--recorded", str(rec), "--out", str(tmp_path / "b")]
    attribute = ["attribute", str(parent), "--at", "1", "--samples", "1", *args]
    assert main([*attribute, "--components", "runtime,plan"]) == 0
    out = capsys.readouterr().out
    assert "4 subsets x 1 samples" in out
    assert "dummy plan (content-free, every feedback component)" in out
    assert "every component - dummy plan" in out
    assert (
        "runtime×plan" in out and "subset means: none 1.00, runtime 1.00, plan 1.00, runtime+plan 1.00" in out
    )
    assert main([*attribute, "--components", "runtime", "--dummy-plan", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["controls"]["dummy_plan"] is True and data["branches"] == 3
    # the scripted coder repairs whatever it reads: the dummy plan changes nothing here
    assert data["controls"]["values"]["passed"]["full-dummy_plan"]["value"] == 0.0
    assert main([*attribute, "--components", "runtime,guess"]) == 2
    assert "unknown feedback component 'guess'" in capsys.readouterr().err
