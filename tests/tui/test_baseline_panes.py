"""Named baselines on the session screen: the Speedup pane lists each stored baseline's time, the attempt's
speedup against it (the roofline's as the fraction reached) and how it was measured, beside the reference's;
the header's second line sums them up. A session without baselines shows neither."""

from __future__ import annotations

from rich.console import Console

from beavertui.engine.session.events import BaselineTime, Timed
from beavertui.engine.session.state import fold
from beavertui.tui.panes.header import _against
from beavertui.tui.panes.speedup import SpeedupPane
from beavertui.tui.view import View
from tests.tui.sessions_data import quick_session

BASELINES = [
    BaselineTime(
        name="eager", median_ms=0.5, method="torch_events_l2flush_queued", note="PyTorch eager, torch 2.9"
    ),
    BaselineTime(
        name="graph", median_ms=0.25, method="torch_events_l2flush_queued", note="CUDA Graph replay"
    ),
    BaselineTime(
        name="roofline", median_ms=0.05, method="roofline", note="5.4e+08 B at 4000 GB/s (device copy)"
    ),
]


def _text(renderable: object) -> str:
    console = Console(width=160, record=True, color_system=None)
    console.print(renderable)
    return console.export_text()


def _view(baselines: list[BaselineTime]) -> tuple[View, float, float]:
    hdr, events = quick_session("gemm_tiled_bounds", "model-a", "s1", speed=1.1, seed=3)
    hdr = hdr.model_copy(update={"baselines": baselines})
    state = fold(hdr, events)
    it = next(a.iteration for a in state.attempts if a.timing is not None)
    t = next(e for e in events if isinstance(e, Timed) and e.iteration == it).result
    return View(state=state, cursor=it), t.candidate_ms, t.speedup


def test_speedup_pane_lists_every_baseline() -> None:
    view, cand, _ = _view(BASELINES)
    out = _text(SpeedupPane().render_view(view))
    assert "against baselines stored for this GPU (their median over the candidate's)" in out
    assert (
        f"eager         0.500 ms  {0.5 / cand:7.2f}x  torch_events_l2flush_queued: PyTorch eager, torch 2.9"
        in out
    )
    assert f"graph         0.250 ms  {0.25 / cand:7.2f}x" in out
    assert (
        f"roofline      0.050 ms  {100 * 0.05 / cand:5.1f}% of the roofline  roofline: 5.4e+08 B at 4000 GB/s"
        in out
    )


def test_header_sums_them_up() -> None:
    view, cand, ref = _view(BASELINES)
    assert str(_against(view)) == (
        f"  {ref:.2f}x ref · {0.5 / cand:.2f}x eager · {0.25 / cand:.2f}x graph · {100 * 0.05 / cand:.0f}% of roofline"
    )


def test_without_baselines_nothing_is_added() -> None:
    view, _, _ = _view([])
    assert "against baselines" not in _text(SpeedupPane().render_view(view))
    assert str(_against(view)) == ""


def test_a_protocol_gated_on_a_baseline_says_the_pane_gate_is_the_references() -> None:
    """Gated on eager, the pane's 'passes the gate' / 'BELOW GATE' line judged the reference with nothing
    saying that the protocol's gate, as metrics apply it, is against eager."""
    view, _, _ = _view(BASELINES)
    assert "this protocol's gate applies to" not in _text(SpeedupPane().render_view(view))
    hdr, events = quick_session("gemm_tiled_bounds", "model-a", "s1", speed=1.1, seed=3)
    protocol = hdr.protocol.model_copy(update={"gate_baseline": "eager", "gate_mode": "after_run"})
    state = fold(hdr.model_copy(update={"baselines": BASELINES, "protocol": protocol}), events)
    out = _text(SpeedupPane().render_view(View(state=state, cursor=view.cursor)))
    assert (
        "against the reference, as the loop judged it; this protocol's gate applies to eager (p-vs=eager)"
        in out
    )
