"""The numbers behind the figures (engine/metrics/figures.py): how sessions ended and the speedups of the
correct repairs, read from the groups' own metrics and checked against the session files and by hand."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from beavertui.engine.metrics.compute import compute_groups
from beavertui.engine.metrics.figures import (
    SPEEDUP_EDGES,
    STAGNATION_PARTS,
    bin_of,
    level_panels,
    rank_charts,
    ranks,
    speedup_histograms,
    stagnation_modes,
)
from beavertui.engine.metrics.kendall import kendall_tau_b
from beavertui.engine.metrics.table import from_rows
from beavertui.engine.session.events import SessionEnd
from beavertui.engine.session.store import read_session
from beavertui.service.metrics import compute, load_source
from tests.engine.metrics.test_metrics import iterative_rows, proto, row
from tests.reports.axis_runs import MODELS, axis_table

ROOT = Path(__file__).resolve().parents[3]
DEMO = ROOT / "sessions" / "demo"


def test_modes_and_speedups_of_the_demo_sessions_are_what_their_files_say() -> None:
    """Each demo session is one model's group: its stop reason is its bar, its best speedup its repair."""
    groups = compute_groups(load_source(DEMO, None))
    modes = {m["model"]: m for m in stagnation_modes(groups)}
    hists = {h["model"]: h for h in speedup_histograms(groups)}
    g_of = {g.model: g for g in groups}
    assert len(modes) == len(groups) == 6
    for path in sorted(DEMO.glob("*.jsonl")):
        header, events, problem = read_session(path)
        assert header is not None and problem is None
        end = events[-1]
        assert isinstance(end, SessionEnd)
        model = header.model.name
        m, g = modes[model], g_of[model]
        part = end.stop_reason if end.stop_reason in STAGNATION_PARTS else None
        if end.success:
            part = "repaired"
        elif part is None:
            part = "ran to K"  # the budget spent, no detector fired
        assert m["counts"][part] == m["n"] == 1 and sum(m["counts"].values()) == 1, (model, m)
        assert m["shares"][part] == 1.0
        # the counts are Table 1's: stagnated and never succeeded
        assert sum(m["counts"][d] for d in STAGNATION_PARTS[1:-1]) == g.n_stagnated
        assert m["n"] - m["counts"]["repaired"] == g.n_never_succeeded
        best = end.best_speedup
        if best is None:
            assert model not in hists
            continue
        h = hists[model]
        assert g.repair_speedups.tolist() == [pytest.approx(best)]
        assert sum(h["counts"]) == h["n"] == 1
        assert h["counts"][int(bin_of(np.array([best]))[0])] == 1
        assert h["below_gate"] == int(best < header.protocol.gate) == sum(h["counts_below_gate"])
    # sanitizer_only: correct at 0.59x under an in-loop gate of 0.7, so never repaired
    assert modes["scripted:sanitizer_only.toml"]["counts"]["ran to K"] == 1
    assert hists["scripted:sanitizer_only.toml"]["below_gate"] == 1


def test_repair_speedups_by_hand() -> None:
    """A: best correct 0.9x; B: 1.2x; C: never correct; D: its only success lies past its self-sourced
    budget; E: correct without a speedup; F: a flagged success, in no rate."""
    rows = iterative_rows()
    rows += [row("E", 1, True, None, stop_reason="passed")]
    rows += [row("F", 1, True, 3.0, stop_reason="passed", flagged=True)]
    (g,) = compute_groups(from_rows(rows))
    assert g.repair_speedups.tolist() == pytest.approx([0.9, 1.2])
    assert g.n_repairs_unspeeded == 1
    (h,) = speedup_histograms([g])
    assert h["n"] == 2 and h["below_gate"] == 0 and h["below_1"] == 1 and h["unspeeded"] == 1
    assert g.stagnation_counts == {
        "duplicate_code": 1,
        "code_cycle": 0,
        "category_oscillation": 0,
        "no_progress": 0,
    }
    (m,) = stagnation_modes([g])
    assert m["n"] == g.n_trajectories == 6
    assert m["counts"]["duplicate_code"] == 1 and m["counts"]["ran to K"] == g.n_never_succeeded - 1
    assert sum(m["counts"].values()) == m["n"]


def test_repeated_groups_have_no_stagnation_bar() -> None:
    rows = [row("A", 1, True, 1.0, protocol=proto(method="repeated", budget=1), stop_reason="passed")]
    (g,) = compute_groups(from_rows(rows))
    assert stagnation_modes([g]) == [] and g.stagnation_counts == {}
    assert speedup_histograms([g])[0]["n"] == 1


def test_bins_and_ranks() -> None:
    edges = np.asarray(SPEEDUP_EDGES)
    assert bin_of(np.array([0.0001, edges[0], 1.0, 1.4, 100.0])).tolist() == [0, 0, 12, 12, 17]
    assert ranks({"a": 0.5, "b": 0.9, "c": 0.5, "d": 0.1}) == {"b": 1, "a": 2.5, "c": 2.5, "d": 4}


def test_level_panels_order_the_axis_values() -> None:
    """Feedback levels by number, a level's variants after it; history windows by number (not as text)."""
    entries = [
        {"model": "m", "corpus": None, "axis": "feedback", "from": "runs", "fixed": {"history": 2}, "swing": 0.5,
         "values": {"L3_raw": 0.5, "L3": 0.25, "L10": 0.0, "L3S": 0.75, "L0": 0.0}},
        {"model": "m", "corpus": None, "axis": "history", "from": "runs", "fixed": {"feedback": "L3"}, "swing": 0.1,
         "values": {"10": 0.5, "2": 0.4}},
        {"model": "m", "corpus": None, "axis": "gate", "from": "p_sweep", "fixed": {}, "swing": 1.0,
         "values": {"0.0": 1.0, "0.7": 0.0}},
    ]  # fmt: skip
    feedback, history, few_shot = level_panels(entries)
    assert few_shot == {"axis": "few_shot", "values": [], "lines": []}
    assert feedback["values"] == ["L0", "L3", "L3S", "L3_raw", "L10"]
    assert [v for v, _ in feedback["lines"][0]["points"]] == feedback["values"]
    assert history["values"] == ["H2", "H10"] and history["lines"][0]["points"] == [("H2", 0.4), ("H10", 0.5)]


def test_level_panels_split_the_few_shot_axis_by_strategy() -> None:
    """Few-shot values none, then matched, random, curated (a seeded draw after its strategy's), each by K as
    a number; a line's segments are its strategies' stretches, none a point of its own."""
    values = {"random_K1": 0.1, "curated_K5": 0.2, "matched_K10": 0.3, "none": 0.4, "matched_K3": 0.5,
              "matched_K3_seed7": 0.6, "random_K5": 0.7}  # fmt: skip
    entries = [
        {"model": "m", "corpus": None, "axis": "few_shot", "from": "runs", "fixed": {"history": 4},
         "swing": 0.6, "values": values},
    ]  # fmt: skip
    *_, few_shot = level_panels(entries)
    names = ["none", "matched K3", "matched K10", "matched K3 seed7", "random K1", "random K5", "curated K5"]
    assert few_shot["values"] == names
    (line,) = few_shot["lines"]
    assert [v for v, _ in line["points"]] == names
    assert dict(line["points"])["matched K3 seed7"] == 0.6 and line["swing"] == 0.6
    assert [[v for v, _ in seg] for seg in line["segments"]] == [
        ["none"], ["matched K3", "matched K10"], ["matched K3 seed7"], ["random K1", "random K5"], ["curated K5"]
    ]  # fmt: skip


def test_rank_charts_rank_the_models_of_each_column_and_keep_the_kendall_taus(tmp_path: Path) -> None:
    """Three models over L0..L3 (tests/reports/axis_runs.py): their ranks by the repaired sessions each
    group holds, and every tau the Kendall table gives, which is also the tau-b of the ranks themselves."""
    report = compute(axis_table(tmp_path))
    charts = rank_charts(report.groups, report.kendall)
    (fb,) = [c for c in charts if c["title"].startswith("feedback")]
    assert fb["from"] == "runs" and fb["columns"] == ["L0", "L1", "L2", "L3"]
    # by hand from FEEDBACK: L0 (3, 1, 2), L1 (2, 2, 1), L2 (1, 3, 2), L3 (0, 2, 3) repaired of 3
    assert fb["ranks"] == {"A": [1, 1.5, 3, 3], "B": [3, 1.5, 1, 2], "C": [2, 3, 2, 1]}
    assert fb["scores"]["A"] == pytest.approx([1, 2 / 3, 1 / 3, 0])
    entries = [k for k in report.kendall if k["axis"] == "feedback" and k["from"] == "runs"]
    assert len(fb["taus"]) == len(entries) == 6
    for t, e in zip(fb["taus"], entries, strict=True):
        assert (fb["columns"][t["a"]], fb["columns"][t["b"]]) == (
            e["protocol_a"]["feedback"],
            e["protocol_b"]["feedback"],
        )
        assert t["tau"] == e["tau"] and t["n_models"] == 3
        tau, _ = kendall_tau_b(
            [fb["ranks"][m][t["a"]] for m in MODELS], [fb["ranks"][m][t["b"]] for m in MODELS]
        )
        assert tau == pytest.approx(e["tau"])
    (hist,) = [c for c in charts if c["title"].startswith("history")]
    assert hist["columns"] == ["H1", "H2", "H3", "H4"]
    sweeps = [c for c in charts if c["from"] == "p_sweep"]
    assert len(sweeps) == 7 and all(c["columns"] == ["p0", "p0.7", "p1.5"] for c in sweeps)
    assert len(charts) == 9
