"""Anti-cheat flags in the session screen's panes: the speedup pane lists a verdict's flags under the
timing (with the host-time median of the side-stream check) and marks flagged iterations in its chart; the
log pane lists them under the verdict."""

from __future__ import annotations

import random

from rich.console import Console

from beavertui.engine.session.events import Flag, Timed, Verdict
from beavertui.engine.session.state import fold
from beavertui.tui.panes.log import LogPane
from beavertui.tui.panes.speedup import SpeedupPane
from beavertui.tui.view import View
from tests.tui.sessions_data import quick_session, timing


def _text(renderable: object) -> str:
    console = Console(width=140, record=True, color_system=None)
    console.print(renderable)
    return console.export_text()


def _flagged_view() -> View:
    hdr, events = quick_session("gemm_tiled_bounds", "model-a", "s1", speed=40.0, seed=3)
    t = timing(random.Random(1), 0.02, 0.812).model_copy(
        update={
            "candidate_host_samples": [2.5] * 20,
            "flags": [Flag(name="side_stream", detail="host 2.5 ms vs event 0.02 ms")],
        }
    )
    flags = [
        Flag(name="side_stream", detail="host 2.5 ms vs event 0.02 ms (medians per timed run)"),
        Flag(name="implausible_speedup", detail="40.6x"),
    ]
    events = [
        e.model_copy(update={"result": t})
        if isinstance(e, Timed)
        else e.model_copy(update={"flags": flags, "speedup": t.speedup})
        if isinstance(e, Verdict)
        else e
        for e in events
    ]
    return View(state=fold(hdr, events), cursor=1)


def test_speedup_pane_shows_flags_and_host_time() -> None:
    out = _text(SpeedupPane().render_view(_flagged_view()))
    assert "flag      side_stream: host 2.5 ms vs event 0.02 ms (medians per timed run)" in out
    assert "flag      implausible_speedup: 40.6x" in out
    assert "host          2.500 ms" in out
    assert "⚑ side_stream, implausible_speedup" in out


def test_speedup_pane_without_flags_shows_none() -> None:
    hdr, events = quick_session("gemm_tiled_bounds", "model-a", "s1", speed=1.1, seed=3)
    out = _text(SpeedupPane().render_view(View(state=fold(hdr, events), cursor=1)))
    assert "flag" not in out and "⚑" not in out and "host " not in out


def test_log_pane_lists_verdict_flags() -> None:
    out = _text(LogPane().render_view(_flagged_view()))
    assert "flag side_stream: host 2.5 ms vs event 0.02 ms (medians per timed run)" in out


def test_speedup_pane_says_timing_pending() -> None:
    """A correct attempt left for the batch's timing lane (a gate applied after the run) reads "timing
    pending", in the pane and in its row of the chart, until the lane appends its timing."""
    hdr, events = quick_session("gemm_tiled_bounds", "model-a", "s1", speed=1.1, seed=3)
    pending = [
        e.model_copy(
            update={"speedup": None, "success": False, "reason": "timing pending", "timing_pending": True}
        )
        if isinstance(e, Verdict) and e.correct
        else e
        for e in events
        if not isinstance(e, Timed)
    ]
    state = fold(hdr, pending)
    cursor = next(a.iteration for a in state.attempts if a.verdict is not None and a.verdict.timing_pending)
    out = _text(SpeedupPane().render_view(View(state=state, cursor=cursor)))
    assert f"iteration {cursor}: timing pending" in out and "— timing pending" in out
    done = _text(SpeedupPane().render_view(View(state=fold(hdr, events), cursor=cursor)))
    assert "timing pending" not in done
