"""The recorded planning arms (tests/data/planning/sessions) replay under Pilot with their plans and summaries
in the Diff pane's plan tab."""

from __future__ import annotations

from pathlib import Path

import pytest

from beavertui.engine.session.store import read_session
from beavertui.tui.app import BeaverApp
from beavertui.tui.session_screen import SessionScreen
from tests.tui.conftest import SIZE

# 27 s in a serial run on a loaded 2-core machine: a parallel run starts it early
pytestmark = pytest.mark.slow

ARMS = Path(__file__).resolve().parents[1] / "data" / "planning" / "sessions"


def _app(name: str) -> BeaverApp:
    header, events, problem = read_session(ARMS / f"{name}.jsonl")
    assert header is not None and problem is None
    return BeaverApp(lambda: SessionScreen(header, events, problem=problem))


def _diff(app: BeaverApp) -> str:
    return str(app.screen.query_one("#diff").text)  # type: ignore[attr-defined]


async def _to_plan_tab(app: BeaverApp, pilot) -> None:  # type: ignore[no-untyped-def]
    for _ in range(5):
        await pilot.press("d")
        await pilot.pause()
        if app.screen.view.diff_mode == "plan":  # type: ignore[attr-defined]
            return
    raise AssertionError("no plan tab in the Diff pane's modes")


async def test_plan_and_summary_arm_shows_each_iterations_plan() -> None:
    app = _app("plan-f-summary")
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        await pilot.press("home")
        await _to_plan_tab(app, pilot)
        assert app.screen.query_one("#diff").border_title == "Diff · plan and feedback summary"
        first = _diff(app)
        assert "plan for iteration 1 by scripted:planner.toml" in first
        assert "the tile is read back in the wrong order" in first
        assert "feedback on iteration 1, summarised (sent with the next request)" in first
        assert "abs errors 0.28 to 0.97" in first
        await pilot.press("right")
        await pilot.pause()
        second = _diff(app)
        assert "plan for iteration 2" in second and "block-wide barrier" in second
        assert "feedback on iteration 1, summarised (what this request carried)" in second
        assert '"__syncthread" is undefined' in second  # the summary of iteration 2's own feedback
        # the other tabs are unchanged: one more press comes back to the diff against the previous attempt
        await pilot.press("d")
        await pilot.pause()
        assert app.screen.view.diff_mode == "previous"  # type: ignore[attr-defined]
        assert "iteration 2 against iteration 1" in _diff(app)


@pytest.mark.parametrize(
    ("arm", "expected"),
    [
        ("plan-f", "Read the shared tile transposed"),
        ("plan-nf", "Read the shared tile transposed"),
        ("plan-transfer", "Fix the tile indexing."),
    ],
)
async def test_every_planned_arm_replays_with_its_plans(arm: str, expected: str) -> None:
    app = _app(arm)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        await pilot.press("home")
        await _to_plan_tab(app, pilot)
        assert expected in _diff(app)
        header = app.screen.query_one("#header").render().plain  # type: ignore[attr-defined]
        assert ("plan+NF" if arm == "plan-nf" else "plan+F") in header


async def test_an_implicit_session_has_no_plan_tab() -> None:
    app = _app("implicit")
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        modes = []
        for _ in range(4):
            await pilot.press("d")
            await pilot.pause()
            modes.append(app.screen.view.diff_mode)  # type: ignore[attr-defined]
        assert modes == ["broken", "reference", "file", "previous"]


async def test_search_finds_a_plan_and_opens_its_tab() -> None:
    app = _app("plan-f-summary")
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        await pilot.press("home", "slash", *"block-wide", "enter")
        await pilot.pause()
        assert app.screen.view.cursor == 2  # type: ignore[attr-defined]
        assert app.screen.view.diff_mode == "plan"  # type: ignore[attr-defined]
        assert "Put a block-wide barrier" in _diff(app)


async def test_a_live_planned_session_shows_each_plan_as_it_comes(tmp_path: Path) -> None:
    from beavertui.engine.models.scripted import ScriptedModel
    from beavertui.tui.live import LiveScreen
    from tests.tui.conftest import wait_for
    from tests.tui.live_setup import live_parts

    task, model, toolchain, protocol = live_parts(tmp_path)
    planner = ScriptedModel([f"live plan {i}" for i in range(1, 6)], name="live-planner")
    planned = protocol.model_copy(update={"planning": "plan"})
    screens: list[LiveScreen] = []

    def first() -> LiveScreen:
        screens.append(
            LiveScreen(task, model, toolchain, planned, tmp_path / "live.jsonl", run_kw={"planner": planner})
        )
        return screens[0]

    app = BeaverApp(first)
    async with app.run_test(size=SIZE) as pilot:
        await wait_for(pilot, lambda: bool(screens) and screens[0].finished.is_set(), timeout=20)
        await pilot.pause()
        assert screens[0].view.state.end is not None
        await _to_plan_tab(app, pilot)
        last = screens[0].view.cursor
        assert f"plan for iteration {last} by live-planner" in _diff(app)
        assert f"live plan {last}" in _diff(app)
    header, events, problem = read_session(tmp_path / "live.jsonl")
    assert problem is None and header is not None and header.planner is not None
    assert [e.content for e in events if e.kind == "plan"] == [f"live plan {i}" for i in range(1, last + 1)]


GPU_ARMS = ARMS.parent / "gpu"


@pytest.mark.parametrize(
    ("arm", "author"),
    [
        ("plan-f", "stub-coder"),
        ("plan-nf", "stub-coder"),
        ("plan-transfer", "strong-planner"),
        ("summary", "summariser"),
    ],
)
async def test_real_gpu_sessions_of_the_arms_replay_with_their_plans(arm: str, author: str) -> None:
    """tests/data/planning/gpu: one session of each arm on an H200 (scripts/gpu-planning.sh), the coder,
    planner and summariser answering over HTTP on loopback."""
    header, events, problem = read_session(GPU_ARMS / f"{arm}.jsonl")
    assert header is not None and problem is None
    assert header.gpu is not None and header.gpu.name == "NVIDIA H200"
    assert header.model.base_url is not None and header.model.base_url.startswith("http://127.0.0.1:")
    app = BeaverApp(lambda: SessionScreen(header, events, problem=problem))
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        await pilot.press("home")
        await _to_plan_tab(app, pilot)
        text = _diff(app)
        if arm == "summary":
            assert "makes no plans (planning = implicit)" in text
            assert f"feedback on iteration 1, summarised (sent with the next request) by {author}" in text
            assert "from 1,210 chars of L3 feedback" in text and "MISMATCH out at [0,802]" in text
            await pilot.press("right")
            await pilot.pause()
            assert f"summarised (what this request carried) by {author}" in _diff(app)
        else:
            assert f"plan for iteration 1 by {author}" in text
            assert "Build and run the file as it is" in text
            await pilot.press("right")
            await pilot.pause()
            assert "Replace the faulty kernel" in _diff(app)


def test_real_gpu_coder_sees_the_feedback_only_in_the_arms_that_send_it() -> None:
    """P+F sends the run's failure to the coder with the plan; P+NF sends the plan alone; L3S sends the
    summary in place of the full feedback."""
    from beavertui.engine.session.events import Request

    seen = {}
    for arm in ("implicit", "plan-f", "plan-nf", "plan-transfer", "summary"):
        header, events, _ = read_session(GPU_ARMS / f"{arm}.jsonl")
        assert header is not None
        second = next(e for e in events if isinstance(e, Request) and e.iteration == 2)
        text = "".join(str(m.content) for m in second.messages)
        seen[arm] = ("MISMATCH" in text, "Run log:" in text, "Feedback on your attempt, summarised:" in text)
    assert seen == {
        "implicit": (True, True, False),
        "plan-f": (True, True, False),
        "plan-nf": (False, False, False),
        "plan-transfer": (True, True, False),
        "summary": (True, False, True),
    }
