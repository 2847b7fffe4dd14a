"""A session whose model name and task family are spreadsheet formulas, exported with ``export --csv`` and
reported with ``metrics --format csv``: every such text cell comes out behind a leading quote, the numbers
stay plain numbers, and ``metrics`` reading the exported table back gets the original names."""

from __future__ import annotations

import csv
import json
from pathlib import Path

from beavertui.cli import main
from beavertui.engine.metrics import table_io

ROOT = Path(__file__).resolve().parents[2]
DEMO = ROOT / "sessions" / "demo" / "repair_in_three.jsonl"
MODEL = '=HYPERLINK("http://example.invalid/x","open")'
FAMILY = "-2+3+cmd|' /C calc'!A0"
#: How a cell a spreadsheet evaluates as a formula begins.
FORMULA = ("=", "+", "-", "@", "\t", "\r")


def hostile_session(tmp_path: Path) -> Path:
    lines = DEMO.read_text(encoding="utf-8").splitlines()
    header = json.loads(lines[0])
    header["model"]["name"] = MODEL
    header["task"]["family"] = FAMILY
    path = tmp_path / "transpose_00__s0.jsonl"
    path.write_text("\n".join([json.dumps(header), *lines[1:]]) + "\n", encoding="utf-8")
    return path


def is_number(cell: str) -> bool:
    try:
        float(cell)
    except ValueError:
        return False
    return True


def unguarded_formulas(rows: list[list[str]]) -> list[str]:
    return [c for row in rows for c in row if c.startswith(FORMULA) and not is_number(c) and c != "-"]


def test_export_csv_guards_formula_cells_and_reads_them_back(tmp_path: Path) -> None:
    session = hostile_session(tmp_path)
    out = tmp_path / "attempts.csv"
    assert main(["export", str(session), "--csv", "-o", str(out)]) == 0
    rows = list(csv.reader(out.read_text(encoding="utf-8").splitlines()))
    head = rows[0]
    body = [dict(zip(head, r, strict=True)) for r in rows[1:]]
    assert [r["model"] for r in body] == ["'" + MODEL] * 3
    assert [r["family"] for r in body] == ["'" + FAMILY] * 3
    assert unguarded_formulas(rows) == []
    passed = [r for r in body if r["category"] == "passed"]
    assert len(passed) == 1 and float(passed[0]["speedup"]) > 0  # a number, not a guarded text
    assert not passed[0]["speedup"].startswith("'")

    table = table_io.read_table(out)
    assert {r["model"] for r in table.rows()} == {MODEL}
    assert {r["family"] for r in table.rows()} == {FAMILY}


def test_metrics_csv_guards_the_model_and_keeps_negative_numbers_numeric(tmp_path: Path) -> None:
    session = hostile_session(tmp_path)
    folder = tmp_path / "tables"
    assert main(["metrics", str(session), "--format", "csv", "-o", str(folder)]) == 0
    main_rows = list(csv.reader((folder / "main.csv").read_text(encoding="utf-8").splitlines()))
    assert main_rows[1][0] == "'" + MODEL
    swing = list(csv.DictReader((folder / "swing.csv").read_text(encoding="utf-8").splitlines()))
    assert swing[0]["model"] == "'" + MODEL
    assert float(swing[0]["delta (pp)"]) < 0 and swing[0]["delta (pp)"].startswith("-")  # numeric, unquoted
    for name in ("main.csv", "p_sweep.csv", "swing.csv"):
        rows = list(csv.reader((folder / name).read_text(encoding="utf-8").splitlines()))
        assert unguarded_formulas(rows) == [], name
