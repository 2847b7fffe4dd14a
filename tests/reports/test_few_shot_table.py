"""The few-shot axis's tables (the release's Exp 5): `metrics` lays out the groups of matched, random and
curated x K (and none beside them) per model, each number the group's own, and the release's pivot of
pass@k. The runs are tests/reports/axis_runs.py's, built from the recorded demo sessions."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from beavertui.cli import main
from beavertui.engine.metrics.swing import few_shot_order, few_shot_parts
from beavertui.reports.cells import Rate
from beavertui.service.metrics import compute, with_tables
from tests.reports.axis_runs import FEW_SHOT, MODELS, axis_table, few_shot_table

#: The release's pivot_tables.py column order of its exp5 table.
RELEASE_ORDER = [f"{s}_K{k}" for s in ("matched", "random", "curated") for k in (1, 3, 5)]


def _tables(source: Path) -> dict[str, object]:
    report = compute(source)
    with_tables(report, resamples=50)
    return {"report": report, **{t.slug: t for t in report.tables}}


def test_the_few_shot_table_gives_each_group_its_own_numbers(tmp_path: Path) -> None:
    got = _tables(few_shot_table(tmp_path))
    report, table = got["report"], got["few_shot"]
    by_key = {
        (g.model, g.protocol.few_shot): (g, r) for g, r in zip(report.groups, report.rates, strict=True)
    }  # type: ignore[attr-defined]
    cols = table.columns  # type: ignore[attr-defined]
    assert cols[:5] == ("model", "protocol", "strategy", "K", "tasks")
    expected_order = [(m, v) for m in MODELS for v in ["none", *RELEASE_ORDER]]
    seen = []
    for row in table.rows:  # type: ignore[attr-defined]
        cell = dict(zip(cols, row, strict=True))
        value = "none" if cell["strategy"] == "none" else f"{cell['strategy']}_K{cell['K']}"
        seen.append((cell["model"], value))
        g, r = by_key[(cell["model"], value)]
        # the construction's count of repaired sessions, and the group's own numbers
        assert cell["pass@k"].value == pytest.approx(FEW_SHOT[value][MODELS.index(g.model)] / 3)
        assert (
            cell["pass@k"] == r["pass@k"] and cell["pass@1"] == r["pass@1"] and cell["debug@k"] == r["debug"]
        )
        assert cell["compile@1"] == Rate(g.compile_at_1)
        assert cell["avg iterations"] == f"{g.avg_iterations:.2f}"
        assert cell["tasks"] == str(g.n_tasks) == "3"
        assert "few-shot" not in cell["protocol"]
    assert seen == expected_order
    assert "Exp 5" in table.title and "bootstrap" in table.note  # type: ignore[attr-defined]


def test_the_grid_is_the_releases_exp5_pivot_of_the_swing_entries(tmp_path: Path) -> None:
    got = _tables(few_shot_table(tmp_path))
    report, grid = got["report"], got["few_shot_grid"]
    assert grid.columns == ("model", "protocol", "none", *RELEASE_ORDER)  # type: ignore[attr-defined]
    swing = {e["model"]: e for e in report.swing if e["axis"] == "few_shot"}  # type: ignore[attr-defined]
    pk = {(g.model, g.protocol.few_shot): g.pass_at_k for g in report.groups}  # type: ignore[attr-defined]
    assert [row[0] for row in grid.rows] == list(MODELS)  # type: ignore[attr-defined]
    for row in grid.rows:  # type: ignore[attr-defined]
        model = row[0]
        values = dict(zip(grid.columns[2:], (c.value for c in row[2:]), strict=True))  # type: ignore[attr-defined]
        assert values == {v: pk[(model, v)] for v in values}
        assert values == pytest.approx(swing[model]["values"])
        assert list(swing[model]["values"]) == list(values)  # the swing's axis order is the grid's


def test_without_a_none_group_the_grid_is_the_nine_arms(tmp_path: Path) -> None:
    got = _tables(few_shot_table(tmp_path, tuple(RELEASE_ORDER)))
    assert got["few_shot_grid"].columns == ("model", "protocol", *RELEASE_ORDER)  # type: ignore[attr-defined]
    assert len(got["few_shot"].rows) == 9 * len(MODELS)  # type: ignore[attr-defined]


def test_no_few_shot_table_where_no_group_has_examples(tmp_path: Path) -> None:
    got = _tables(axis_table(tmp_path))
    assert "few_shot" not in got and "few_shot_grid" not in got
    assert "swing" in got


def test_a_none_group_of_other_settings_is_not_the_axiss_baseline(tmp_path: Path) -> None:
    """The feedback runs (L0..L3, no examples) beside few-shot runs at L3: only the L3 none group is a row."""
    a = [json.loads(x) for x in axis_table(tmp_path).read_text().splitlines()]
    b = [json.loads(x) for x in few_shot_table(tmp_path, ("matched_K1",)).read_text().splitlines()]
    both = tmp_path / "both.jsonl"
    both.write_text("".join(json.dumps(r) + "\n" for r in a + b))
    table = _tables(both)["few_shot"]
    rows = [(r[0], r[1], r[2]) for r in table.rows]  # type: ignore[attr-defined]
    assert [(m, s) for m, _, s in rows] == [(m, s) for m in MODELS for s in ("none", "matched")]
    assert all(" L3 H2 " in p for _, p, _ in rows)


def test_metrics_prints_the_tables_in_every_format(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    source = str(few_shot_table(tmp_path))
    assert main(["metrics", source, "--format", "latex", "--table", "few_shot_grid"]) == 0
    tex = capsys.readouterr().out
    assert "matched\\_K1 & matched\\_K3" in tex and "\\begin{tabular}" in tex
    assert main(["metrics", source, "--table", "few_shot", "--format", "md"]) == 0
    assert "| A | iterative K4 L3 H2 T0 p0.7 in-loop [corpus] | curated | 5 | 3 |" in capsys.readouterr().out
    assert main(["metrics", source, "--json", "--table", "few_shot"]) == 0
    doc = json.loads(capsys.readouterr().out)
    (table,) = doc["tables"]
    assert table["name"] == "few_shot" and len(table["rows"]) == 10 * len(MODELS)


def test_few_shot_values_split_and_order() -> None:
    assert few_shot_parts("matched_K3") == ("matched", 3, "")
    assert few_shot_parts("random_K1_seed7") == ("random", 1, "seed7")
    assert few_shot_parts("none") == ("none", 0, "")
    shuffled = ["curated_K5", "random_K1_seed7", "none", "matched_K5", "random_K3", "matched_K1", "random_K1"]
    assert sorted(shuffled, key=few_shot_order) == [
        "none", "matched_K1", "matched_K5", "random_K1", "random_K3", "random_K1_seed7", "curated_K5",
    ]  # fmt: skip
