"""The figures beyond the p sweep and swing (reports/svg_figures.py, service.metrics.figures): what each
SVG holds is the computed metrics' numbers, one bar or panel per group, with its labels and notes, and a
figure with nothing to draw says so. Drawn from the demo sessions (sessions/demo: six scripted models,
each ended its own way) and from small attempts tables."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from beavertui.cli import main
from beavertui.engine.metrics import table_io
from beavertui.engine.metrics.figures import STAGNATION_PARTS, group_label
from beavertui.service.metrics import compute, figures
from tests.engine.metrics.test_metrics import proto, row
from tests.reports.axis_runs import FEEDBACK, FEW_SHOT, HISTORY, MODELS, axis_table, few_shot_table

ROOT = Path(__file__).resolve().parents[2]
DEMO = ROOT / "sessions" / "demo"
SVG = "{http://www.w3.org/2000/svg}"


def parsed(svg: str) -> ET.Element:
    root = ET.fromstring(svg)
    assert root.tag == f"{SVG}svg"
    return root


def texts(root: ET.Element) -> list[str]:
    return ["".join(t.itertext()) for t in root.iter(f"{SVG}text")]


def rects(root: ET.Element, attr: str = "data-count") -> list[dict[str, str]]:
    return [dict(r.attrib) for r in root.iter(f"{SVG}rect") if attr in r.attrib]


@pytest.fixture(scope="module")
def demo() -> tuple[object, dict[str, str]]:
    report = compute(DEMO)
    return report, dict(figures(report))


def test_stagnation_modes_bars_are_the_groups_counts(demo: tuple[object, dict[str, str]]) -> None:
    report, figs = demo
    root = parsed(figs["stagnation_modes.svg"])
    shown = texts(root)
    assert "How sessions ended: repaired, stopped by a stagnation detector, or ran to K" in shown
    assert "share of the group's trajectories (%)" in shown
    assert [t for t in shown if t in STAGNATION_PARTS] == list(STAGNATION_PARTS)  # the legend, in order
    assert any("stagnation_rate" in t for t in shown)  # the note saying what a bar counts
    groups = report.groups  # type: ignore[attr-defined]
    bars = rects(root)
    for i, g in enumerate(groups, start=1):
        assert f"{group_label(g)} (n={g.n_trajectories})" in shown
        parts = {b["data-part"]: int(b["data-count"]) for b in bars if b["data-group"] == str(i)}
        want = {"repaired": g.n_trajectories - g.n_never_succeeded, **g.stagnation_counts}
        want["ran to K"] = g.n_never_succeeded - g.n_stagnated
        assert parts == {k: v for k, v in want.items() if v}, g.model
    # one bar a group, each the whole plot's width (every trajectory in one part or another)
    widths = {b["data-group"]: 0.0 for b in bars}
    for b in bars:
        widths[b["data-group"]] += float(b["width"])
    assert len(widths) == 6 and all(w == pytest.approx(460, abs=0.5) for w in widths.values())
    parts = sorted(b["data-part"] for b in bars)
    assert parts == sorted(["code_cycle", "no_progress", "ran to K", "repaired", "repaired", "repaired"])


def test_speedup_histogram_marks_the_gate_and_the_repairs_below_it(
    demo: tuple[object, dict[str, str]],
) -> None:
    report, figs = demo
    root = parsed(figs["speedups.svg"])
    shown = texts(root)
    assert "speedup (x reference, log scale); bar height: repairs (trajectories)" in shown
    groups = [g for g in report.groups if g.repair_speedups.size]  # type: ignore[attr-defined]
    assert len(groups) == 4
    bars = rects(root)
    gates = [ln.attrib for ln in root.iter(f"{SVG}line") if ln.attrib.get("class") == "gate"]
    assert [float(ln["data-gate"]) for ln in gates] == [g.protocol.gate for g in groups]
    for i, g in enumerate(groups, start=1):
        mine = [b for b in bars if b["data-group"] == str(i)]
        assert sum(int(b["data-count"]) for b in mine) == g.repair_speedups.size
        below = sum(int(b["data-count"]) for b in mine if b["data-part"] == "below")
        assert below == int((g.repair_speedups < g.protocol.gate).sum())
        assert any(
            t.startswith(f"{group_label(g)}: {g.repair_speedups.size} repair(s), {below} below")
            for t in shown
        )
    # the 0.59x repair of sanitizer_only (in-loop gate 0.7) is the one bar below the gate
    assert [b["data-count"] for b in bars if b["data-part"] == "below"] == ["1"]
    note = " ".join(t for t in shown if t not in ("",))
    assert "Left out: 2 group(s) with no correct repair:" in note
    assert "scripted:code_cycle.toml" in note and "scripted:no_progress.toml" in note


def write(tmp_path: Path, rows: list[dict[str, object]]) -> Path:
    path = tmp_path / "attempts.jsonl"
    with path.open("w") as f:
        table_io.write_jsonl(rows, f)
    return path


def test_nothing_to_draw_is_said_and_what_is_left_out_is_named(tmp_path: Path) -> None:
    rep = proto(method="repeated", budget=1)
    rows = [row("A", 1, False, protocol=rep, stop_reason="budget"), row("B", 1, False, protocol=rep)]
    figs = dict(figures(compute(write(tmp_path, rows))))
    stag = texts(parsed(figs["stagnation_modes.svg"]))
    assert "No iterative session to break down." in stag
    assert any(t.startswith("Left out: 1 repeated-sampling group(s)") for t in stag)
    speed = texts(parsed(figs["speedups.svg"]))
    assert "No correct repair to show." in speed and not rects(parsed(figs["speedups.svg"]))


def test_metrics_plots_writes_every_figure(tmp_path: Path) -> None:
    plots = tmp_path / "plots"
    assert (
        main(["metrics", str(DEMO), "--plots", str(plots), "--format", "md", "-o", str(tmp_path / "m.md")])
        == 0
    )
    names = sorted(p.name for p in plots.iterdir())
    assert names == [
        "levels.svg",
        "p_sweep.svg",
        "ranks.svg",
        "speedups.svg",
        "stagnation_modes.svg",
        "swing.svg",
    ]
    figs = dict(figures(compute(DEMO)))
    for name in ("stagnation_modes.svg", "speedups.svg", "levels.svg", "ranks.svg"):
        assert (plots / name).read_text() == figs[name]


def test_the_run_page_shows_every_figure(tmp_path: Path) -> None:
    out = tmp_path / "page.html"
    assert main(["export", str(DEMO), "--html", "-o", str(out)]) == 0
    page = out.read_text(encoding="utf-8")
    figs = dict(figures(compute(DEMO)))
    after = page.split('<h2 id="figures">Figures</h2>', 1)[1]
    for name in ("stagnation_modes.svg", "speedups.svg", "levels.svg", "ranks.svg"):
        assert figs[name] in after, name
    heads = (
        "pass@k by speedup threshold p",
        "How sessions ended",
        "Speedups of correct",
        "pass@k over the feedback",
    )
    order = [after.index(t) for t in heads]
    assert order == sorted(order)
    assert len(re.findall(r'<div class="fig"><svg', page)) == 6


def test_levels_draw_each_models_pass_at_k_over_feedback_and_history(tmp_path: Path) -> None:
    report = compute(axis_table(tmp_path))
    root = parsed(dict(figures(report))["levels.svg"])
    shown = texts(root)
    assert (
        "pass@k over the feedback levels, the history windows and the few-shot examples, per model" in shown
    )
    assert "No runs of one model that differ only in the few-shot examples." in shown
    assert any(t.startswith("feedback level") for t in shown) and any(
        t.startswith("history window") for t in shown
    )
    assert "pass@k (%)" in shown and "100%" in shown
    assert [t for t in shown if re.fullmatch(r"L\d|H\d", t)] == [
        "L0",
        "L1",
        "L2",
        "L3",
        "H1",
        "H2",
        "H3",
        "H4",
    ]
    lines = [ln.attrib for ln in root.iter(f"{SVG}polyline")]
    for axis, table, name in (("feedback", FEEDBACK, "{}"), ("history", HISTORY, "H{}")):
        mine = [ln for ln in lines if ln["data-axis"] == axis]
        assert len(mine) == len(MODELS)  # one line per model
        for m, ln in enumerate(mine):
            drawn = dict(kv.split("=") for kv in ln["data-values"].split())
            assert {k: float(v) for k, v in drawn.items()} == pytest.approx(
                {name.format(level): n[m] / 3 for level, n in table.items()}
            )
            assert len(ln["points"].split()) == 4
        # the drawn values are the swing entries' (the metrics' pass@k), and each legend names its swing
        for e in [e for e in report.swing if e["axis"] == axis and e["from"] == "runs"]:
            assert f"{e['model']} (swing {100 * e['swing']:.1f} pp)" in shown


def test_levels_draw_the_few_shot_axis_a_segment_per_strategy(tmp_path: Path) -> None:
    """Three models over none and matched/random/curated x K1/3/5: each model's points are its groups'
    pass@k (the few_shot table's), a polyline per strategy, the strategies named under their ticks."""
    report = compute(few_shot_table(tmp_path))
    root = parsed(dict(figures(report))["levels.svg"])
    shown = texts(root)
    assert "No runs of one model that differ only in the feedback level." in shown
    assert [t for t in shown if t in ("matched", "random", "curated")] == ["matched", "random", "curated"]
    assert [t for t in shown if re.fullmatch(r"none|K\d", t)] == ["none", *["K1", "K3", "K5"] * 3]
    pk = {(g.model, g.protocol.few_shot): g.pass_at_k for g in report.groups}
    lines = [ln.attrib for ln in root.iter(f"{SVG}polyline") if ln.get("data-axis") == "few_shot"]
    assert len(lines) == 4 * len(MODELS)  # none, matched, random, curated: a polyline each
    for m, model in enumerate(MODELS):
        mine = [ln for ln in lines if ln["data-series"] == str(m + 1)]
        drawn = [kv.split("=") for ln in mine for kv in ln["data-values"].split()]
        assert [k for k, _ in drawn] == list(FEW_SHOT)
        assert {k: float(v) for k, v in drawn} == pytest.approx({v: pk[(model, v)] for v in FEW_SHOT})
        assert {k: float(v) for k, v in drawn} == pytest.approx({v: n[m] / 3 for v, n in FEW_SHOT.items()})
        assert [len(ln["points"].split()) for ln in mine] == [1, 3, 3, 3]
    for e in [e for e in report.swing if e["axis"] == "few_shot"]:
        assert f"{e['model']} (swing {100 * e['swing']:.1f} pp)" in shown


def test_levels_say_when_no_run_varies_them() -> None:
    shown = texts(parsed(dict(figures(compute(DEMO)))["levels.svg"]))
    assert "No runs vary the feedback level, the history window or the few-shot examples." in shown


def test_ranks_draw_a_line_per_model_and_print_each_tau(tmp_path: Path) -> None:
    report = compute(axis_table(tmp_path))
    root = parsed(dict(figures(report))["ranks.svg"])
    shown = texts(root)
    assert "Models' ranks by pass@k under each protocol, with Kendall's tau-b between them" in shown
    lines = [ln.attrib for ln in root.iter(f"{SVG}polyline")]
    assert len(lines) == 9 * len(MODELS)  # nine charts (feedback, history, seven p sweeps), a line a model
    feedback = [ln for ln in lines if ln["data-chart"] == "1"]
    # the ranks by hand from axis_runs.FEEDBACK, drawn at the rank rows
    assert {ln["data-model"]: ln["data-ranks"] for ln in feedback} == {
        "A": "1 1.5 3 3",
        "B": "3 1.5 1 2",
        "C": "2 3 2 1",
    }
    assert [t for t in shown if t in ("L0", "L1", "L2", "L3")] == ["L0", "L1", "L2", "L3"]
    assert "rank" in shown and "A: rank 1, 1.5, 3, 3 (pass@k 100.0%, 66.7%, 33.3%, 0.0%)" in shown
    # every tau of the Kendall table is printed: each adjacent pair over its gap, all in the heading
    taus = {
        (k["protocol_a"]["feedback"], k["protocol_b"]["feedback"]): k["tau"]
        for k in report.kendall
        if k["axis"] == "feedback"
    }
    heading = " ".join(t for t in shown if t.startswith("Kendall's tau-b") or "models)" in t)
    for (a, b), tau in taus.items():
        assert f"{a}-{b} {tau:.2f} (3 models)" in heading
    over_gaps = [t for t in shown if t.startswith("tau ")][:3]
    assert over_gaps == [f"tau {taus[(a, b)]:.2f}" for a, b in (("L0", "L1"), ("L1", "L2"), ("L2", "L3"))]


def test_ranks_say_when_there_is_no_tau(tmp_path: Path) -> None:
    rows = [row("A", 1, True, 1.0, stop_reason="passed")]
    shown = texts(parsed(dict(figures(compute(write(tmp_path, rows))))["ranks.svg"]))
    assert "No two protocols with two models in common: no Kendall's tau to draw." in shown
