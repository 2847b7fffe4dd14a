"""Named baselines in the exports: a session's HTML page lists each stored baseline under an attempt's timing
with the speedup against it, and the run's metrics tables (which the HTML export and `metrics --json`
carry) hold the table against each baseline."""

from __future__ import annotations

import json
from pathlib import Path

from beavertui.reports.html_session import load_session_doc, session_page
from beavertui.reports.render import table_json
from beavertui.service.metrics import compute, with_tables

ROOT = Path(__file__).resolve().parents[2]
DEMO = ROOT / "sessions" / "demo" / "degenerate_repair.jsonl"


def _session(tmp: Path, baselines: list[dict[str, object]]) -> Path:
    lines = DEMO.read_text().splitlines()
    head = json.loads(lines[0])
    head["baselines"] = baselines
    run = tmp / "run"
    run.mkdir()
    (run / "s.jsonl").write_text("\n".join([json.dumps(head), *lines[1:]]) + "\n")
    return run / "s.jsonl"


def test_session_page_and_metrics_tables_carry_the_baselines(tmp_path: Path) -> None:
    cand = next(
        json.loads(ln)["result"]["candidate_ms"]
        for ln in DEMO.read_text().splitlines()
        if json.loads(ln)["kind"] == "timing" and json.loads(ln)["iteration"] == 4
    )
    path = _session(
        tmp_path,
        [
            {
                "name": "compile",
                "median_ms": 0.25,
                "method": "torch_events_l2flush_queued",
                "note": "torch.compile",
            },
            {"name": "roofline", "median_ms": 0.01, "method": "roofline", "note": "536870912 B at 4000 GB/s"},
        ],
    )
    page = session_page(load_session_doc(path))
    assert "against baselines stored for this GPU" in page
    assert f"<b>{0.25 / cand:.2f}x</b>" in page
    assert f"<b>{100 * 0.01 / cand:.1f}% of the roofline</b>" in page
    report = with_tables(compute(path.parent), resamples=20)
    doc = table_json(next(t for t in report.tables if t.name == "baselines"))
    assert [r[2] for r in doc["rows"]] == ["reference", "compile", "roofline"]  # type: ignore[index]


def test_a_session_without_baselines_exports_as_before(tmp_path: Path) -> None:
    page = session_page(load_session_doc(_session(tmp_path, [])))
    assert "against baselines" not in page


def test_a_session_gated_on_a_baseline_says_its_page_gate_is_the_references(tmp_path: Path) -> None:
    named = [{"name": "eager", "median_ms": 0.5, "method": "torch_events_l2flush_queued", "note": "eager"}]
    path = _session(tmp_path, named)
    assert "this protocol's gate applies" not in session_page(load_session_doc(path))
    lines = path.read_text().splitlines()
    head = json.loads(lines[0])
    head["protocol"].update(gate_mode="after_run", gate_baseline="eager")
    path.write_text("\n".join([json.dumps(head), *lines[1:]]) + "\n")
    page = session_page(load_session_doc(path))
    assert "this protocol's gate applies to eager (p-vs=eager), below: metrics judge it there" in page


def test_the_card_says_which_baselines_the_sessions_recorded_and_how(tmp_path: Path) -> None:
    """The evaluation card listed protocols, models, costs and hardware but not the named baselines a run's
    numbers are set against: which, for how many tasks, timed how and with which torch."""
    from beavertui.reports.card import card

    path = _session(tmp_path, [])
    assert "## Named baselines" not in card(path.parent, compute(path.parent).groups, "x")
    named = [
        {"name": "eager", "median_ms": 0.5, "method": "torch_events_l2flush_queued",
         "note": "PyTorch eager, torch 2.11.0+cu130, median of 20 calls, CV 0.4%"},
        {"name": "roofline", "median_ms": 0.01, "method": "roofline", "note": "536870912 B at 4000 GB/s"},
    ]  # fmt: skip
    (tmp_path / "b").mkdir()
    path = _session(tmp_path / "b", named)
    report = compute(path.parent)
    text = card(path.parent, report.groups, "x", headers=report.headers)
    assert (
        "- eager (PyTorch eager): 1 of 1 tasks; timed by torch_events_l2flush_queued (torch 2.11.0+cu130)"
        in text
    )
    assert (
        "- roofline (roofline: declared work at the GPU's measured ceilings): 1 of 1 tasks; from its declared"
        in text
    )
