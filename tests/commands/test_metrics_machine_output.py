"""`metrics`' machine-readable output: --json carries every interval the tables print, and CSV is one
table per file (-o FOLDER, or --table NAME), each read whole by one csv read."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest

from beavertui.cli import main
from beavertui.reports.tables import Rate

ROOT = Path(__file__).resolve().parents[2]
H200 = ROOT / "tests" / "data" / "h200_batch_run"


def metrics(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(["metrics", str(H200), *args])
    got = capsys.readouterr()
    return code, got.out, got.err


def test_json_carries_every_interval_the_tables_print(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = metrics(capsys, "--json", "--by", "family")
    assert code == 0
    doc = json.loads(out)
    assert doc["interval"] == {
        "level": 0.95,
        "method": "percentile bootstrap over tasks",
        "resamples": 1000,
        "seed": doc["interval"]["seed"],
    }
    names = [t["name"] for t in doc["tables"]]
    assert names[:2] == ["main", "p_sweep"] and "analysis" in names and "by_family" in names
    # the tables as the terminal prints them, every rate with its interval
    from beavertui.service.metrics import compute, with_tables

    report = with_tables(compute(H200), by=["family"])
    printed = 0
    for table, shown in zip(report.tables, doc["tables"], strict=True):
        assert shown["columns"] == list(table.columns)
        for row, got in zip(table.rows, shown["rows"], strict=True):
            for c, g in zip(row, got, strict=True):
                if isinstance(c, Rate):
                    assert g == {"value": c.value, "lo": c.lo, "hi": c.hi, "lower_bound": c.lower_bound}
                    printed += c.lo is not None
    assert printed > 20
    # and per group, named as the group object's keys
    (group,) = doc["groups"]
    main_row = report.tables[0].rows[0]
    iv = group["intervals"]
    for key, col in (("pass@1", 3), ("pass@k", 4), ("debug_rate@k", 5), ("degenerate_rate", 8)):
        rate = main_row[col]
        assert isinstance(rate, Rate)
        assert iv[key] == ([rate.lo, rate.hi] if rate.lo is not None else None), key
    sweep_row = report.tables[1].rows[0]
    for (p, got), rate in zip(iv["p_sweep"].items(), sweep_row[2:], strict=True):
        assert isinstance(rate, Rate) and got == [rate.lo, rate.hi], p
    analysis = report.tables[names.index("analysis")].rows[0]
    assert iv["edit_precision"] == [analysis[4].lo, analysis[4].hi]  # type: ignore[union-attr]


def test_csv_is_one_table_per_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    folder = tmp_path / "csv"
    code, out, err = metrics(capsys, "--format", "csv", "-o", str(folder))
    assert code == 0 and out == ""
    files = sorted(p.name for p in folder.iterdir())
    assert files == ["analysis.csv", "main.csv", "p_sweep.csv", "swing.csv"]
    assert f"wrote 4 CSV file(s) to {folder}" in err
    for path in folder.iterdir():
        with path.open(newline="") as f:
            rows = list(csv.reader(f))
        assert len(rows) >= 2 and all(len(r) == len(rows[0]) for r in rows), path.name
        assert not any(r and r[0].startswith("#") for r in rows)
    with (folder / "main.csv").open(newline="") as f:
        (row,) = list(csv.DictReader(f))
    assert row["pass@k (%)"] == "100.00" and row["pass@k low (%)"] == "100.00"
    # a swing is a difference of two percentages: its unit is the percentage point, as its table says
    with (folder / "swing.csv").open(newline="") as f:
        (swing,) = [r for r in csv.DictReader(f) if r["axis"] == "gate"]
    assert {"swing (pp)", "swing low (pp)", "swing high (pp)", "delta (pp)"} <= set(swing)
    assert not any(k.startswith("swing") and k.endswith("(%)") for k in swing)
    assert float(swing["swing (pp)"]) == pytest.approx(abs(float(swing["delta (pp)"])), abs=0.05)

    # one table to standard output, or to a .csv file
    code, out, _ = metrics(capsys, "--format", "csv", "--table", "p_sweep")
    assert code == 0
    rows = list(csv.reader(out.splitlines()))
    assert rows[0][:3] == ["model", "protocol", "p=0.0 (%)"] and len(rows) == 2
    code, _, _ = metrics(capsys, "--format", "csv", "--table", "main", "-o", str(tmp_path / "m.csv"))
    assert code == 0 and (tmp_path / "m.csv").read_text() == (folder / "main.csv").read_text()


def test_csv_of_several_tables_to_one_stream_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = metrics(capsys, "--format", "csv")
    assert code == 2 and out == ""
    (line,) = err.strip().splitlines()[-1:]
    assert "CSV holds one table" in line and "--table NAME" in line and "main, p_sweep" in line
    code, _, err = metrics(capsys, "--format", "csv", "-o", str(tmp_path / "all.csv"))
    assert code == 2 and "a CSV file holds one table" in err and not (tmp_path / "all.csv").exists()
    code, _, err = metrics(capsys, "--table", "nope")
    assert code == 2 and "--table nope: no such table here (tables: main, p_sweep" in err
    # a table the source has none of says why (its sessions recorded no named baselines)
    code, _, err = metrics(capsys, "--table", "baselines")
    assert (
        code == 2 and "--table baselines: no such table here: no session of the source recorded named " in err
    )


def test_csv_of_tokens_and_cost_is_numbers(capsys: pytest.CaptureFixture[str]) -> None:
    """The usage table reads "3.2k" and "$0.0069" on screen; as CSV each cell is the number --json gives
    (tokens, US dollars), empty where it is unknown, with the unit in the column's name."""
    source = str(ROOT / "tests" / "data" / "planning" / "gpu")
    assert main(["metrics", source, "--json"]) == 0
    usage = json.loads(capsys.readouterr().out)["usage"]
    assert main(["metrics", source, "--format", "csv", "--table", "usage"]) == 0
    rows = list(csv.DictReader(capsys.readouterr().out.splitlines()))
    from beavertui.engine.metrics.table import ProtocolKey

    assert rows[-1]["model"] == "whole run" and len(rows) == len(usage) + 1
    by = {(u["model"], ProtocolKey.from_mapping(u["protocol"]).short()): u for u in usage}
    assert any(u["cost_usd"] is not None for u in usage) and any(u["cost_usd"] is None for u in usage)
    for r in rows[:-1]:
        u = by[(r["model"], r["protocol"])]
        assert int(r["prompt tokens"]) == u["prompt_tokens"] and int(r["replies"]) == u["replies"]
        assert int(r["completion tokens"]) == u["completion_tokens"]
        for col, key in (("cost (USD)", "cost_usd"), ("per repair (USD)", "cost_per_repair_usd")):
            assert (r[col] == "") if u[key] is None else float(r[col]) == pytest.approx(u[key], rel=1e-5)
    assert int(rows[-1]["prompt tokens"]) == sum(u["prompt_tokens"] for u in usage)
