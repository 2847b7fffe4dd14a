"""The planner + coder method and summarised feedback (L3S) over the real loop and recorded outcomes.

A planned iteration is a planning call (task, code, feedback) then a coding call given the plan, with the
feedback (P+F) or without it (P+NF); L3S sends the coder a summariser's condensed L3 note. Plans and
summaries are session events: written, read back, folded, resumed and branched like replies.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import pytest
from pydantic import ValidationError

from beavertui.batch.protocol_file import protocol_slug
from beavertui.engine.analysis.branch import branch_session
from beavertui.engine.loop.prompts import PLAN_ASK
from beavertui.engine.loop.run import run_session
from beavertui.engine.models.base import Completion, DeltaCallback
from beavertui.engine.models.scripted import ScriptedModel
from beavertui.engine.session.events import (
    Event,
    Message,
    ModelInfo,
    Plan,
    Request,
    SessionEnd,
    SessionHeader,
    Summary,
)
from beavertui.engine.session.protocol import Protocol
from beavertui.engine.session.state import fold
from beavertui.engine.session.store import load_session
from beavertui.engine.toolchain.recorded import RecordedToolchain
from tests.engine.analysis.test_analysis_branch import (
    MISMATCH,
    REFERENCE,
    WRONG_A,
    WRONG_B,
    load_task,
    recordings,
    reply,
    write,
)


class Listener:
    """A scripted helper that keeps what it was sent."""

    def __init__(self, name: str, replies: Sequence[str]) -> None:
        self.inner = ScriptedModel(list(replies), name=name)
        self.sent: list[list[Message]] = []

    def info(self) -> ModelInfo:
        return self.inner.info()

    def secrets(self) -> tuple[str, ...]:
        return ()

    def resume_at(self, calls: int) -> None:
        self.inner.resume_at(calls)

    def complete(self, messages: Sequence[Message], *, on_delta: DeltaCallback | None = None) -> Completion:
        self.sent.append(list(messages))
        return self.inner.complete(messages, on_delta=on_delta)


def _run(protocol: Protocol, planner: Listener | None = None, summariser: Listener | None = None) -> list:  # type: ignore[type-arg]
    coder = ScriptedModel([reply(WRONG_A), reply(WRONG_B), reply(REFERENCE)])
    return list(
        run_session(
            load_task(),
            coder,
            RecordedToolchain(recordings()),
            protocol,
            planner=planner,
            summariser=summariser,
        )
    )


def test_plan_with_feedback_plans_then_codes_from_the_plan() -> None:
    planner = Listener("strong-planner", ["1. swap the block indices", "2. swap them back", "3. tile it"])
    events = _run(Protocol(budget=3, history=2, planning="plan"), planner)
    header, rest = events[0], events[1:]
    assert isinstance(header, SessionHeader) and header.planner is not None
    assert header.planner.name == "strong-planner" and header.summariser is None
    kinds = [e.kind for e in rest if e.kind in ("plan", "request", "verdict")]
    assert kinds == ["plan", "request", "verdict"] * 3
    state = fold(header, rest)
    # the planner read the task, the code so far and the feedback on it, and was asked for a plan
    second = planner.sent[1]
    assert second[0].role == "system" and "plans, not code" in second[0].content
    assert "Run log:" in second[-1].content and MISMATCH in second[-1].content
    assert second[-1].content.endswith(PLAN_ASK.format(file="solution.cu"))
    assert any(m.role == "assistant" and "blockIdx" in m.content for m in second)
    # the coder read the feedback and the plan
    request = state.attempt(2).request  # type: ignore[union-attr]
    assert request is not None and MISMATCH in request.messages[-1].content
    assert request.messages[-1].content.endswith("Follow this plan for the next version:\n2. swap them back")
    assert state.attempt(3).plan.content == "3. tile it"  # type: ignore[union-attr]
    assert state.attempt(3).verdict.success  # type: ignore[union-attr]
    end = rest[-1]
    assert isinstance(end, SessionEnd) and end.planner_usage is not None and end.planner_usage.replies == 3
    assert end.usage is not None and end.usage.replies == 3 and end.summariser_usage is None


def test_plan_without_feedback_sends_the_coder_no_feedback() -> None:
    planner = Listener("planner", ["P1", "P2", "P3"])
    events = _run(Protocol(budget=3, history=2, planning="plan", coder_feedback=False), planner)
    state = fold(events[0], events[1:])
    for it in (1, 2, 3):
        messages = state.attempt(it).request.messages  # type: ignore[union-attr]
        assert len(messages) == 2, "the coder gets the task, the current code and the plan only"
        text = messages[-1].content
        assert f"Follow this plan for the next version:\nP{it}" in text
        assert MISMATCH not in text and "Run log" not in text and "error log" not in text
    # the current code is the newest candidate: attempt 3 starts from attempt 2's code
    assert WRONG_B.strip().splitlines()[3] in state.attempt(3).request.messages[-1].content  # type: ignore[union-attr]
    # the planner still reads the feedback
    assert "Run log:" in planner.sent[2][-1].content and "MISMATCH out:" in planner.sent[2][-1].content
    assert events[0].protocol.key()["planning"] == "plan+NF"


def test_summarised_feedback_replaces_the_l3_note() -> None:
    summariser = Listener("small-summariser", ["S1: row 0 col 1 wrong", "S2: row 1 col 0 wrong"])
    events = _run(
        Protocol(budget=3, history=2, feedback="L3S", summariser="small-summariser"), None, summariser
    )
    header, rest = events[0], events[1:]
    assert header.summariser is not None and header.summariser.name == "small-summariser"
    summaries = [e for e in rest if isinstance(e, Summary)]
    assert [s.iteration for s in summaries] == [1, 2]  # the third attempt passed: nothing to condense
    assert all(s.model == "small-summariser" for s in summaries)
    # the summariser was sent the L3 note, the coder the summary
    l3 = summariser.sent[0][-1].content
    assert "Run log:" in l3 and MISMATCH in l3 and summaries[0].source_chars == len(l3)
    request = fold(header, rest).attempt(2).request  # type: ignore[union-attr]
    assert request is not None
    note = request.messages[-1].content
    assert note.startswith("Feedback on your attempt, summarised:\nS1: row 0 col 1 wrong")
    assert MISMATCH not in note
    assert rest[-1].summariser_usage.replies == 2


def test_plans_and_summaries_are_written_and_read_back(tmp_path: Path) -> None:
    path = tmp_path / "planned.jsonl"
    stream = run_session(
        load_task(),
        ScriptedModel([reply(WRONG_A), reply(REFERENCE)]),
        RecordedToolchain(recordings()),
        Protocol(budget=2, history=2, planning="plan", feedback="L3S"),
        planner=ScriptedModel(["PA", "PB"], name="planner"),
        summariser=ScriptedModel(["SA"], name="summariser"),
    )
    written = write(path, stream)
    header, events = load_session(path)
    assert [e for e in events if isinstance(e, Plan | Summary)] == [
        e for e in written if isinstance(e, Plan | Summary)
    ]
    assert header.protocol.planning == "plan" and header.planner is not None
    state = fold(header, events)
    assert (state.attempt(1).plan.content, state.attempt(1).summary.content) == ("PA", "SA")  # type: ignore[union-attr]
    assert state.attempt(2).plan.content == "PB"  # type: ignore[union-attr]


def test_a_cut_planned_attempt_resumes_with_its_plan(tmp_path: Path) -> None:
    protocol = Protocol(budget=3, history=2, planning="plan", feedback="L3S")
    full = list(
        run_session(
            load_task(),
            ScriptedModel([reply(WRONG_A), reply(WRONG_B), reply(REFERENCE)]),
            RecordedToolchain(recordings()),
            protocol,
            planner=ScriptedModel(["P1", "P2", "P3"], name="planner"),
            summariser=ScriptedModel(["S1", "S2"], name="summariser"),
        )
    )
    header, rest = full[0], [e for e in full[1:] if e.kind != "reply_delta"]
    # cut right after the second plan: the verdict of attempt 1 and its summary are kept
    cut = next(i for i, e in enumerate(rest) if isinstance(e, Plan) and e.iteration == 2) + 1
    planner = Listener("planner", ["P1", "P2", "P3"])
    summariser = Listener("summariser", ["S1", "S2"])
    resumed = list(
        run_session(
            load_task(),
            ScriptedModel([reply(WRONG_A), reply(WRONG_B), reply(REFERENCE)]),
            RecordedToolchain(recordings()),
            protocol,
            resume_from=(header, rest[:cut]),
            planner=planner,
            summariser=summariser,
        )
    )
    new = [e for e in resumed[1:] if e.kind != "reply_delta"]
    assert [e.kind for e in new][:2] == ["request", "reply"], "the recorded plan of attempt 2 is reused"
    assert len(planner.sent) == 1 and [e.content for e in new if isinstance(e, Plan)] == ["P3"]
    assert [e.content for e in new if isinstance(e, Summary)] == ["S2"]
    request = next(e for e in new if isinstance(e, Request))
    assert "summarised:\nS1" in request.messages[-1].content and request.messages[-1].content.endswith("P2")
    assert isinstance(new[-1], SessionEnd) and new[-1].success


def test_a_branch_of_a_planned_session_keeps_the_plans_it_copies(tmp_path: Path) -> None:
    parent = tmp_path / "parent.jsonl"
    write(
        parent,
        run_session(
            load_task(),
            ScriptedModel([reply(WRONG_A), reply(WRONG_B)]),
            RecordedToolchain(recordings()),
            Protocol(budget=2, history=2, planning="plan"),
            planner=ScriptedModel(["P1", "P2"], name="planner"),
        ),
    )
    events: list[Event] = []
    stream = branch_session(
        parent,
        1,
        load_task(),
        ScriptedModel([reply(REFERENCE)]),
        RecordedToolchain(recordings()),
        Protocol(budget=2, history=2, planning="plan", coder_feedback=False),
        planner=ScriptedModel(["fresh plan"], name="other-planner"),
    )
    header = next(stream)
    events = list(stream)
    assert isinstance(header, SessionHeader) and header.planner is not None
    assert header.planner.name == "other-planner" and header.branch_step == 1
    plans = [e for e in events if isinstance(e, Plan)]
    assert [(p.iteration, p.content) for p in plans] == [(1, "P1"), (2, "fresh plan")]


def test_implicit_protocols_are_saved_and_named_as_before() -> None:
    implicit = Protocol()
    assert "planning" not in implicit.model_dump_json() and "summariser" not in implicit.model_dump()
    assert protocol_slug(implicit).startswith("iterative-K5-L3-H4-T0.7-p0.7-")
    assert protocol_slug(implicit) == protocol_slug(Protocol.model_validate_json(implicit.model_dump_json()))
    planned = Protocol(planning="plan", coder_feedback=False, planner="big")
    assert Protocol.model_validate_json(planned.model_dump_json()) == planned
    assert protocol_slug(planned).startswith("iterative-planNF-K5-")
    assert planned.short() == "iterative K5 L3 H4 T0.7 p0.7 plan+NF planner=big"
    key = Protocol(feedback="L3S").key()
    assert (key["feedback"], key["planning"], key["planner"], key["summariser"]) == (
        "L3S",
        "implicit",
        "self",
        "self",
    )


@pytest.mark.parametrize(
    "fields",
    [{"planner": "big"}, {"coder_feedback": False}, {"summariser": "small"}, {"planning": "guess"}],
)
def test_settings_of_another_axis_are_refused(fields: dict[str, object]) -> None:
    with pytest.raises(ValidationError):
        Protocol.model_validate(fields)


def test_a_plan_or_summary_echoing_a_key_is_written_without_it(tmp_path: Path) -> None:
    key = "sk-planner-secret-0123456789"
    path = tmp_path / "echo.jsonl"
    stream = run_session(
        load_task(),
        ScriptedModel([reply(WRONG_A), reply(REFERENCE)]),
        RecordedToolchain(recordings()),
        Protocol(budget=2, history=2, planning="plan", feedback="L3S"),
        planner=ScriptedModel([f"plan with {key}", "plan two"], name="planner"),
        summariser=ScriptedModel([f"summary with {key}"], name="summariser"),
    )
    header = next(stream)
    assert isinstance(header, SessionHeader)
    from beavertui.engine.session.store import SessionWriter

    with SessionWriter(path, header, redact=(key,)) as w:
        for e in stream:
            if e.kind != "reply_delta":
                w.append(e)
    # the last line of defence acts on the fields that carry endpoint text, as for a reply (an endpoint
    # model removes its own key from what it returns before the loop sees it)
    _, events = load_session(path)
    calls = [e for e in events if isinstance(e, Plan | Summary)]
    assert [c.content for c in calls if "with" in c.content] == [
        "plan with [redacted]",
        "summary with [redacted]",
    ]


def test_a_folder_of_scripts_gives_each_task_its_own_planner(tmp_path: Path) -> None:
    from beavertui.engine.errors import BeaverError
    from beavertui.engine.models.resolve import build_model

    (tmp_path / "transpose_tiled.toml").write_text('[[reply]]\ncontent = "the task\'s own plan"\n')
    task = load_task()
    planner = build_model(f"scripted:{tmp_path}", task, Protocol())
    assert planner.info().name == "scripted:transpose_tiled.toml"
    assert planner.complete([]).content == "the task's own plan"
    (tmp_path / "transpose_tiled.toml").unlink()
    with pytest.raises(BeaverError, match="no script for task transpose_tiled"):
        build_model(f"scripted:{tmp_path}", task, Protocol())
