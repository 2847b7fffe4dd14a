"""Metrics against named baselines (docs/metrics.md, Baselines): a session whose header records baselines gets
a speedup against each in its attempts rows, the table keeps them through its JSON Lines and CSV files, and
`metrics` reports pass@k and degeneration against each; sessions written before baselines existed read and
score as before."""

from __future__ import annotations

import io
import json
import shutil
from pathlib import Path

import numpy as np
import pytest

from beavertui.engine.metrics.attempts import export_rows
from beavertui.engine.metrics.table import from_rows
from beavertui.engine.metrics.table_io import read_table, write_csv, write_jsonl
from beavertui.service.metrics import compute, with_tables

ROOT = Path(__file__).resolve().parents[3]
DEMO = ROOT / "sessions" / "demo" / "degenerate_repair.jsonl"


def _candidate_ms(path: Path) -> dict[int, float]:
    out = {}
    for line in path.read_text().splitlines():
        d = json.loads(line)
        if d["kind"] == "timing":
            out[d["iteration"]] = d["result"]["candidate_ms"]
    return out


def run_with_baselines(tmp: Path, baselines: list[dict[str, object]]) -> Path:
    """The demo's degenerate_repair session (correct at iteration 2 at 0.079x, success at 4 at 0.99x) in a run
    folder, its header given ``baselines``."""
    run = tmp / "run"
    run.mkdir(parents=True)
    lines = DEMO.read_text().splitlines()
    head = json.loads(lines[0])
    head["baselines"] = baselines
    (run / "s.jsonl").write_text("\n".join([json.dumps(head), *lines[1:]]) + "\n")
    return run


EAGER_MS = 0.5
ROOF_MS = 0.05


def test_rows_carry_the_speedup_against_each_baseline(tmp_path: Path) -> None:
    run = run_with_baselines(
        tmp_path,
        [
            {"name": "eager", "median_ms": EAGER_MS, "method": "torch_events_l2flush_queued"},
            {"name": "roofline", "median_ms": ROOF_MS, "method": "roofline"},
        ],
    )
    cand = _candidate_ms(run / "s.jsonl")
    rows = list(export_rows(run))
    assert [r["baselines"] for r in rows] == ["eager+roofline"] * 4
    by_it = {r["iteration"]: r for r in rows}
    for it in (2, 4):
        assert by_it[it]["speedup_eager"] == pytest.approx(EAGER_MS / cand[it])
        assert by_it[it]["speedup_roofline"] == pytest.approx(ROOF_MS / cand[it])
    assert by_it[1]["speedup_eager"] is None and by_it[3]["speedup_roofline"] is None  # not timed
    assert "speedup_compile" not in by_it[2]  # the header has no compile baseline
    table = from_rows(rows)
    assert set(table.against) == {"eager", "roofline"}
    for fmt in ("jsonl", "csv"):
        buf = io.StringIO()
        (write_jsonl if fmt == "jsonl" else write_csv)(table.rows(), buf)
        p = tmp_path / f"t.{fmt}"
        p.write_text(buf.getvalue())
        back = read_table(p)
        assert set(back.against) == {"eager", "roofline"}, fmt
        np.testing.assert_allclose(back.against["eager"], table.against["eager"])
        assert back.has_baseline("eager").all() and not back.has_baseline("vendor").any()


def test_a_header_without_baselines_adds_no_column(tmp_path: Path) -> None:
    run = tmp_path / "run"
    run.mkdir()
    shutil.copy(DEMO, run / "s.jsonl")
    rows = list(export_rows(run))
    assert all("baselines" not in r and "speedup_eager" not in r for r in rows)
    table = from_rows(rows)
    assert table.against == {}
    assert list(table.rows()) == rows
    assert compute(run).against == []


def test_metrics_against_each_baseline(tmp_path: Path) -> None:
    cand = _candidate_ms(DEMO)
    # eager takes 20x the success's time, graph 0.5x
    run = run_with_baselines(
        tmp_path,
        [
            {"name": "eager", "median_ms": 20.0 * cand[4], "method": "torch_events_l2flush_queued"},
            {"name": "graph", "median_ms": 0.5 * cand[4], "method": "torch_events_l2flush_queued"},
        ],
    )
    report = with_tables(compute(run), resamples=50)
    got = {name: g for name, g in report.against}
    assert set(got) == {"eager", "graph"}
    # the demo ran the in-loop gate: iteration 2 (0.079x) failed it, iteration 4 (0.99x) passed and ended it
    assert report.groups[0].protocol.gate_mode == "in_loop"
    assert report.groups[0].pass_at_k == 1.0
    assert got["eager"].pass_at_k == 1.0  # 20x eager at iteration 4
    # degeneration judges the first correct attempt (iteration 2): 0.079x the reference, but faster than eager
    assert 20.0 * cand[4] / cand[2] > 1.0
    assert report.groups[0].degenerate_rate_raw == 1.0 and got["eager"].degenerate_rate_raw == 0.0
    assert got["graph"].pass_at_k == 0.0  # 0.5x at iteration 4, 0.04x at 2,: below p = 0.7 against graph
    assert got["eager"].n_tasks == 1 and got["graph"].n_tasks == 1
    table = next(t for t in report.tables if t.name == "baselines")
    assert [r[2] for r in table.rows] == ["reference", "eager", "graph"]
    # the in-loop gate stopped the loop at the first pass against the reference: a lower bound against the others
    assert [r[5].lower_bound for r in table.rows] == [False, True, True]
    assert "a lower bound" in table.title
    assert "the fraction of the roofline reached" in table.note


def test_a_protocol_may_apply_its_gate_to_a_named_baseline(tmp_path: Path) -> None:
    cand = _candidate_ms(DEMO)
    named = [{"name": "eager", "median_ms": 20.0 * cand[4], "method": "torch_events_l2flush_queued"}]
    scores = {}
    for gated in ("reference", "eager"):
        run = run_with_baselines(tmp_path / gated, named)
        lines = (run / "s.jsonl").read_text().splitlines()
        head = json.loads(lines[0])
        head["protocol"].update(gate_mode="after_run", gate_baseline=gated)
        (run / "s.jsonl").write_text("\n".join([json.dumps(head), *lines[1:]]) + "\n")
        scores[gated] = compute(run)
    by_ref, by_eager = scores["reference"], scores["eager"]
    assert by_eager.groups[0].protocol.gate_baseline == "eager"
    assert "p-vs=eager" in by_eager.groups[0].protocol.short()
    assert by_ref.groups[0].protocol.gate_baseline == "reference"
    # the main numbers of the protocol gated on eager are those against eager of the one gated on the reference
    eager = dict(by_ref.against)["eager"]
    main = by_eager.groups[0]
    assert (main.pass_at_1, main.pass_at_k, main.degenerate_rate_raw) == (
        eager.pass_at_1, eager.pass_at_k, eager.degenerate_rate_raw,
    )  # fmt: skip
    # the first correct attempt (iteration 2) is 0.079x the reference, but faster than eager
    assert by_ref.groups[0].degenerate_rate_raw == 1.0 and main.degenerate_rate_raw == 0.0
    assert main.p_sweep[3.0] == 1.0 and by_ref.groups[0].p_sweep[3.0] == 0.0
    row = next(r for r in export_rows(tmp_path / "eager" / "run"))
    assert row["protocol"]["gate_baseline"] == "eager"
    # the attempts table keeps it, written as JSON Lines (read by the fast path: one session, every row laid
    # out alike) and as CSV; both dropped it, and metrics of the file judged the reference
    rows = list(export_rows(tmp_path / "eager" / "run"))
    for fmt in ("jsonl", "csv"):
        buf = io.StringIO()
        (write_jsonl if fmt == "jsonl" else write_csv)(rows, buf)
        f = tmp_path / f"eager.{fmt}"
        f.write_text(buf.getvalue())
        assert [p.gate_baseline for p in read_table(f).protocols] == ["eager"], fmt
        again = compute(f).groups[0]
        assert (again.pass_at_k, again.degenerate_rate_raw) == (main.pass_at_k, main.degenerate_rate_raw), fmt


def test_the_gate_of_a_named_baseline_is_applied_after_the_run_only() -> None:
    from pydantic import ValidationError

    from beavertui.engine.session.protocol import Protocol

    assert Protocol(gate_baseline="graph").key()["gate_baseline"] == "graph"
    assert "gate_baseline" not in Protocol().key()  # the reference: keys as before
    with pytest.raises(ValidationError, match="needs gate_mode after_run"):
        Protocol(gate_baseline="eager", gate_mode="in_loop")
    with pytest.raises(ValidationError, match="gate_baseline 'fast': expected reference or one of eager"):
        Protocol(gate_baseline="fast")


def test_metrics_json_carries_each_group_against_each_baseline(tmp_path: Path) -> None:
    import os
    import subprocess
    import sys

    cand = _candidate_ms(DEMO)
    run = run_with_baselines(
        tmp_path,
        [
            {"name": "eager", "median_ms": 20.0 * cand[4], "method": "torch_events_l2flush_queued"},
            {"name": "roofline", "median_ms": 0.5 * cand[4], "method": "roofline"},
        ],
    )
    proc = subprocess.run(
        [sys.executable, "-m", "beavertui", "metrics", str(run), "--json"],
        capture_output=True, text=True, timeout=120, env={**os.environ, "PYTHONPATH": str(ROOT)},
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    group = json.loads(proc.stdout)["groups"][0]
    assert group["against"]["eager"] == {
        "n_tasks": 1,
        "pass@1": 0.0,
        "pass@k": 1.0,
        "pass@k_lower_bound": True,  # the demo's in-loop gate stopped its loop at the first pass
        "degenerate_rate_raw": 0.0,
        "degenerate_raw_noise_floor": None,  # the speedups against a named baseline carry no interval
    }
    assert group["against"]["roofline"]["degenerate_rate_raw"] is None
    assert group["against"]["roofline"]["pass@k"] == 0.0  # 50% of the roofline at best: below p = 0.7


def test_a_csv_whose_last_cell_is_empty_beside_long_speedups_reads(tmp_path: Path) -> None:
    """`export --csv` puts the speedups against the baselines last: a last row whose last cell is empty, under
    cells of 18 characters (a float's repr), read past the end of the file's buffer and raised IndexError."""
    run = run_with_baselines(
        tmp_path,
        [
            {"name": "eager", "median_ms": EAGER_MS, "method": "torch_events_l2flush_queued"},
            {"name": "roofline", "median_ms": ROOF_MS, "method": "roofline"},
        ],
    )
    rows = list(export_rows(run))
    assert rows[-1]["speedup_roofline"] is not None
    rows[-1] = {**rows[-1], "speedup_roofline": None}  # the last cell of the file empty
    for r in rows[:-1]:
        if r["speedup_roofline"] is not None:
            assert len(repr(r["speedup_roofline"])) > 16
    buf = io.StringIO()
    write_csv(rows, buf)
    p = tmp_path / "t.csv"
    p.write_text(buf.getvalue())
    back = read_table(p)
    assert len(back) == len(rows)
    want = [np.nan if r["speedup_roofline"] is None else r["speedup_roofline"] for r in rows]
    np.testing.assert_allclose(back.against["roofline"], want)


def test_a_protocol_gated_on_a_baseline_is_also_shown_against_the_reference(tmp_path: Path) -> None:
    """Gated on eager, a run where one task has no eager stored: the baselines table keeps the reference's
    row and eager's over the tasks that have it beside the main row, the notes name the task that counts at
    p = 0 only and why, and every table that judges by eager says so."""
    from beavertui.engine.metrics.paper_tables import paper_tables

    cand = _candidate_ms(DEMO)
    named = [{"name": "eager", "median_ms": 20.0 * cand[4], "method": "torch_events_l2flush_queued"}]
    run = run_with_baselines(tmp_path, named)
    other = (ROOT / "sessions" / "demo" / "repair_in_three.jsonl").read_text().splitlines()
    (run / "t.jsonl").write_text("\n".join(other) + "\n")  # transpose_00: no baseline in its header
    for p in run.glob("*.jsonl"):
        lines = p.read_text().splitlines()
        head = json.loads(lines[0])
        head["protocol"].update(gate_mode="after_run", gate_baseline="eager", budget=4)
        head["model"]["name"] = "m"  # one model, one protocol: one group
        p.write_text("\n".join([json.dumps(head), *lines[1:]]) + "\n")
    report = with_tables(compute(run), resamples=50)
    main = report.groups[0]
    assert main.n_tasks == 2
    assert main.pass_at_k == 0.5  # softmax_00 at 20x eager; transpose_00 has no eager: p = 0 only
    table = next(t for t in report.tables if t.name == "baselines")
    assert [(r[2], r[3]) for r in table.rows] == [("eager (gate)", "2"), ("reference", "2"), ("eager", "1")]
    ref = dict(report.against)["reference"]
    assert ref.pass_at_k == 1.0  # both repaired at >= 0.7x the reference
    # softmax_00 first correct attempt is 0.079x the reference but faster than eager: degenerate against the
    # reference only
    assert ref.degenerate_rate_raw is not None and ref.degenerate_rate_raw > main.degenerate_rate_raw
    assert dict(report.against)["eager"].n_tasks == 1
    notes = report.notes()
    assert any(
        "1 task(s) with a correct attempt have no eager baseline" in n and "transpose_00" in n for n in notes
    )
    assert not any("but no speedup" in n for n in notes)
    said = "p-vs=NAME (p-vs=eager): the protocol's gate names a baseline (gate_baseline)"
    for name in ("main", "p_sweep", "analysis"):
        assert said in next(t for t in report.tables if t.name == name).note, name
    by_family = with_tables(compute(run), resamples=20, by=("family",))
    assert said in next(t for t in by_family.tables if t.name == "by_family").note
    deps = paper_tables(report.groups).departures
    assert any("gate p applies to the eager baseline" in d for d in deps)
