"""`beavertui metrics`: the --json object of metrics.md and the human formats, card and plots."""

from __future__ import annotations

import json
import re
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest

from beavertui.cli import main
from beavertui.engine.metrics import table_io
from tests.engine.metrics.test_metrics import iterative_rows, proto


@pytest.fixture
def table(tmp_path: Path) -> Path:
    rows = iterative_rows()
    rows += [{**r, "model": "m2", "protocol": proto(feedback="L1")} for r in iterative_rows()[:4]]
    rows += [{**r, "model": "m2"} for r in iterative_rows()[:4]]
    rows += [{**r, "protocol": proto(feedback="L1")} for r in iterative_rows()]
    path = tmp_path / "attempts.jsonl"
    with path.open("w") as f:
        table_io.write_jsonl(rows, f)
    return path


def test_json_output_is_exactly_the_spec(table: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["metrics", str(table), "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert set(doc) == {"groups", "swing", "kendall_tau", "paper_tables", "interval", "tables"}
    g = next(g for g in doc["groups"] if g["model"] == "m" and g["protocol"]["feedback"] == "L3")
    assert set(g) >= {
        "model",
        "protocol",
        "n_tasks",
        "k",
        "pass@1",
        "pass@k",
        "debug_rate@k",
        "stagnation_rate",
        "dominant_stagnation",
        "dominant_stagnation_share",
        "degenerate_rate",
        "p_sweep",
    }
    assert g["pass@1"] == pytest.approx(0.25) and g["pass@k"] == pytest.approx(0.5)
    assert g["debug_rate@k"] == pytest.approx(1 / 3) and g["dominant_stagnation"] == "duplicate_code"
    assert list(g["p_sweep"]) == ["0.0", "0.1", "0.3", "0.5", "0.7", "1.0", "1.5", "2.0", "3.0"]
    (sw_m2,) = [s for s in doc["swing"] if s["model"] == "m2" and s["from"] == "runs"]
    assert sw_m2["axis"] == "feedback" and sw_m2["swing"] == pytest.approx(0.0)
    assert sw_m2["delta"] == pytest.approx(0.0)
    (kt,) = [k for k in doc["kendall_tau"] if k["from"] == "runs"]
    assert kt["axis"] == "feedback" and kt["n_models"] == 2
    # a table written before the later protocol keys: its sessions ran the in-loop gate
    assert g["protocol"]["gate_mode"] == "in_loop"
    assert g["p_sweep_bound"]["0.7"] == "exact" and g["p_sweep_bound"]["1.0"] == "lower_bound"


def test_human_formats_show_percentages_with_intervals(table: Path, tmp_path: Path) -> None:
    out = {}
    for fmt in ("markdown", "csv", "latex"):
        target = tmp_path / (f"report.{fmt}" if fmt != "csv" else "csv")  # CSV: a folder, a file per table
        assert main(["metrics", str(table), "--format", fmt, "-o", str(target), "--by", "family"]) == 0
        out[fmt] = (
            "".join(p.read_text() for p in sorted(target.iterdir())) if fmt == "csv" else target.read_text()
        )
    assert "| m | iterative K3 L3 H2 T0 p0.7 in-loop | 4 | 25.0 [" in out["markdown"]
    assert "| >=25.0 [" in out["markdown"]  # p = 1.0 above the in-loop gate: a lower bound
    assert "p=1.0 bound" in out["csv"] and ",lower_bound" in out["csv"]
    assert "Repair rates per family" in out["markdown"]
    assert "pass@k (%),pass@k low (%),pass@k high (%)" in out["csv"]
    assert (
        "\\toprule" in out["latex"]
        and "\\bottomrule" in out["latex"]
        and "50.0 {\\scriptsize [" in out["latex"]
    )


def test_card_and_plots(table: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    card = tmp_path / "card.md"
    plots = tmp_path / "plots"
    assert main(["metrics", str(table), "--card", str(card), "--plots", str(plots)]) == 0
    text = card.read_text()
    assert "## Protocols" in text and "Bootstrap: 1000 resamples" in text
    for name in ("p_sweep.svg", "swing.svg"):
        root = ET.fromstring((plots / name).read_text())
        assert root.tag.endswith("svg")
    assert (plots / "p_sweep.svg").read_text().count("<polyline") == 4  # one curve per group
    assert "Repair rates per model and protocol" in capsys.readouterr().out


def test_bad_sources_are_one_line_errors(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "bad.jsonl"
    bad.write_text("{not json\n")
    assert main(["metrics", str(bad)]) == 2
    assert "line 1: not JSON" in capsys.readouterr().err
    assert main(["metrics", str(tmp_path / "nothing.csv")]) == 2
    assert main(["metrics", str(bad), "--resamples", "10"]) == 2


def _named(doc: str, section: str) -> set[str]:
    """The words in code spans of one section (`## section` up to the next) of a doc of docs/."""
    text = (Path(__file__).resolve().parents[2] / "docs" / doc).read_text(encoding="utf-8")
    body = text.split(f"\n## {section}\n", 1)[1].split("\n## ", 1)[0]
    return {w for span in re.findall(r"`([^`]+)`", body) for w in re.findall(r"[\w@.]+", span)}


def test_every_key_of_the_json_object_is_documented(table: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Every key `metrics --json` writes, from an attempts table (swing and Kendall entries) and from a
    recorded run folder (the run's own keys, usage, the paper's tables), is named in the section of the
    docs that defines it: metrics.md's "Machine-readable output" (the object, groups, intervals, swing and
    Kendall entries, tables), "The paper's tables", "Baselines" (`against`) and costs.md's "Where it shows"
    (`usage`). A key added to the output without a word in the reference fails here."""
    run = Path(__file__).resolve().parents[2] / "tests" / "data" / "h200_batch_run"
    docs = []
    for source in (table, run):
        assert main(["metrics", str(source), "--json"]) == 0
        docs.append(json.loads(capsys.readouterr().out))
    machine = _named("metrics.md", "Machine-readable output")
    paper = _named("metrics.md", "The paper's tables")
    usage = _named("costs.md", "Where it shows")
    found: dict[str, set[str]] = {}

    def keys(where: str, objects: list[dict[str, Any]]) -> None:
        found.setdefault(where, set()).update(k for o in objects for k in o)

    for doc in docs:
        keys("object", [doc])
        keys("group", doc["groups"])
        keys("intervals", [g["intervals"] for g in doc["groups"]])
        keys("swing", doc["swing"])
        keys("kendall", doc["kendall_tau"])
        keys("tables", doc["tables"])
        keys("paper", [doc["paper_tables"]])
        keys("paper rows", [*doc["paper_tables"]["table1"], *doc["paper_tables"]["table2"]])
        keys("usage", doc.get("usage", []))
    assert found["kendall"] and found["usage"] and found["paper rows"]  # the sources still have them
    named = {"paper": paper, "paper rows": paper, "usage": usage}
    baselines = _named("metrics.md", "Baselines")
    problems = [
        f"{where}: {key}"
        for where, got in found.items()
        for key in sorted(got)
        if key not in named.get(where, machine)
        and not (where == "group" and key == "against" and key in baselines)
    ]
    assert not problems, "keys the docs do not name:\n" + "\n".join(problems)


def test_every_table_name_is_documented() -> None:
    """Each name a metrics table can carry (`--table NAME`, `tables[].name` in --json, NAME.csv) is in the
    list of metrics.md's "Machine-readable output": the names the report modules give their tables, and
    `by_` with each breakdown of `--by`."""
    root = Path(__file__).resolve().parents[2]
    literal = {
        name
        for module in ("tables.py", "paper.py")
        for name in re.findall(r'\bname="(\w+)"', (root / "beavertui" / "reports" / module).read_text())
        if name != "by_"
    }
    by = {"by_family", "by_category", "by_observed_category"}  # --by family, category, observed
    assert {"main", "p_sweep", "baselines", "paper_table1"} <= literal  # the scan still finds them
    missing = sorted((literal | by) - _named("metrics.md", "Machine-readable output"))
    assert not missing, f"table names metrics.md does not list: {missing}"
