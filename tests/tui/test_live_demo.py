"""``live --demo`` on the full screen: the bundled demo's task, protocol and replies on its recorded outcomes,
built the way the command builds them, run by the live screen to the verdicts the demo recorded."""

from __future__ import annotations

from pathlib import Path

from beavertui.engine.corpus.load import load_corpus
from beavertui.engine.models.resolve import build_model
from beavertui.engine.session.events import Verdict
from beavertui.engine.session.store import read_session
from beavertui.engine.toolchain.resolve import build_toolchain
from beavertui.service.demo import TOOLCHAIN, demo
from beavertui.service.environment import default_corpus
from beavertui.tui.app import BeaverApp
from beavertui.tui.live import LiveScreen
from tests.tui.conftest import SIZE, wait_for


async def test_the_default_demo_runs_on_the_live_screen(tmp_path: Path) -> None:
    d = demo("repair_in_three")
    task = load_corpus(default_corpus(), [d.task_id]).get(d.task_id)
    model = build_model(d.model, task, d.protocol)
    toolchain = build_toolchain(TOOLCHAIN, task, unknown="fail")
    screens: list[LiveScreen] = []

    def first() -> LiveScreen:
        screens.append(LiveScreen(task, model, toolchain, d.protocol, tmp_path / "demo.jsonl"))
        return screens[0]

    app = BeaverApp(first)
    async with app.run_test(size=SIZE) as pilot:
        await wait_for(pilot, lambda: bool(screens) and screens[0].finished.is_set(), timeout=20)
        await pilot.pause()
        state = screens[0].view.state
        assert [v.category for v in state.verdicts] == ["functional_correctness", "buildability", "passed"]
        assert state.end is not None and state.end.success
        assert "iteration 3/3" in app.screen.query_one("#header").render().plain
    _header, events, problem = read_session(tmp_path / "demo.jsonl")
    assert problem is None
    assert [e.speedup for e in events if isinstance(e, Verdict)][-1] is not None
