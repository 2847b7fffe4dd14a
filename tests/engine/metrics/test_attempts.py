"""Sessions -> attempts table: one row per judged attempt, the last carrying the stop reason."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from beavertui.cli import main
from beavertui.engine.errors import BeaverError
from beavertui.engine.metrics import table_io
from beavertui.engine.metrics.attempts import SourceModels, export_rows, load_source_models
from beavertui.engine.metrics.table import from_rows

ROOT = Path(__file__).resolve().parents[3]
CORPUS = ROOT / "tests" / "data" / "recorded"
RECORDED = f"recorded:{CORPUS / 'vec_scale.recordings.jsonl'}"


def run(tmp: Path, corpus: Path, protocol: str, run_id: str, *extra: str, status: int = 0) -> Path:
    rc = main(
        [
            "batch",
            "--corpus",
            str(corpus),
            "--models",
            "scripted:vec_scale_demo.toml",
            "--toolchain",
            RECORDED,
            "--sessions-dir",
            str(tmp),
            "--protocol",
            protocol,
            "--run-id",
            run_id,
            "--quiet",
            *extra,
        ]
    )
    assert rc == status
    return tmp / run_id


def test_iterative_rows(tmp_path: Path) -> None:
    run_dir = run(tmp_path, CORPUS, "default", "it")
    rows = list(export_rows(run_dir))
    assert [(r["iteration"], r["category"], r["correct"], r["stop_reason"]) for r in rows] == [
        (1, "buildability", False, None),
        (2, "passed", True, None),  # correct but 0.0157x: below the 0.7 gate
        (3, "passed", True, "passed"),
    ]
    assert rows[1]["speedup"] == pytest.approx(0.0157)
    assert {r["run_id"] for r in rows} == {"it"}
    assert rows[0]["protocol"] == {
        "method": "iterative",
        "feedback": "L3",
        "history": 2,
        "temperature": 0.0,
        "gate": 0.7,
        "budget": 5,
        "gate_mode": "in_loop",
        "continue_after_pass": False,
        "stagnation": "stop",
        "feedback_components": "all",
        "sanitize": "on_failure",
        "planning": "implicit",
        "planner": "self",
        "summariser": "self",
        "few_shot": "none",
    }
    assert rows[0]["corpus"] == CORPUS.name
    assert rows[0]["family"] == "elementwise" and rows[0]["label"] == "illegal_memory_access"
    assert not any(r["self_source"] or r["infra_error"] for r in rows)


def test_repeated_sessions_become_samples(tmp_path: Path) -> None:
    # status 3: the repeated session ends by its script running out, with no verdict
    run_dir = run(tmp_path, CORPUS, "method", "rep", "--samples", "1", status=3)
    rows = [r for r in export_rows(run_dir, include_unfinished=True) if r["protocol"]["method"] == "repeated"]
    # the three scripted replies are three samples of iteration 1; the fourth call fails (no reply left)
    assert [(r["sample"], r["iteration"], r["infra_error"]) for r in rows] == [
        (0, 1, False),
        (1, 1, False),
        (2, 1, False),
        (3, 1, True),
    ]
    # that failure ended the session with samples left to draw: unless asked, its samples are in no rate, and
    # the failure itself is counted
    rows = [r for r in export_rows(run_dir) if r["protocol"]["method"] == "repeated"]
    assert [(r["sample"], r["infra_error"]) for r in rows] == [(3, True)]


def test_self_source_from_instance_json_and_side_table(tmp_path: Path) -> None:
    corpus = tmp_path / "corpus"
    shutil.copytree(CORPUS, corpus)
    inst = corpus / "vec_scale" / "instance.json"
    data = json.loads(inst.read_text())
    data["source_model"] = "scripted:vec_scale_demo.toml"
    inst.write_text(json.dumps(data))
    run_dir = run(tmp_path, corpus, "default", "ss")
    rows = list(export_rows(run_dir))
    assert all(r["self_source"] for r in rows)
    # the loop spent K - 1 = 4 iterations at most; the demo repairs at 3 either way
    assert [r["iteration"] for r in rows] == [1, 2, 3]
    header = json.loads(next(run_dir.rglob("*.jsonl")).read_text().splitlines()[0])
    assert header["protocol"]["self_source"] is True
    # a side table marks tasks of runs whose corpus did not say (the header flag, when set, stays)
    plain = run(tmp_path, CORPUS, "default", "plain")
    side = tmp_path / "side.json"
    side.write_text(json.dumps({"vec_scale": "scripted:vec_scale_demo.toml"}))
    assert all(
        r["self_source"] for r in export_rows(plain, source_models=SourceModels(load_source_models(side)))
    )
    side.write_text(json.dumps({"vec_scale": "another-model"}))
    assert not any(
        r["self_source"] for r in export_rows(plain, source_models=SourceModels(load_source_models(side)))
    )
    csv_side = tmp_path / "side.csv"
    csv_side.write_text("task_id,source_model\nvec_scale,scripted:vec_scale_demo.toml\n")
    assert load_source_models(csv_side) == {"vec_scale": "scripted:vec_scale_demo.toml"}


@pytest.mark.parametrize(
    ("name", "text", "says"),
    [
        ("side.jsonl", '{"task_id": "vec_scale", "sourcemodel": "m"}\n', "row 1: unknown key 'sourcemodel'"),
        ("side.csv", "task_id,source_modle\nvec_scale,m\n", "row 1: unknown key 'source_modle'"),
        ("side.json", '{"vec_scale": 5}', "row 1: source_model 5 is not a model name"),
    ],
    ids=["jsonl-typo", "csv-typo", "not-a-name"],
)
def test_a_side_table_with_a_misspelt_key_is_refused(tmp_path: Path, name: str, text: str, says: str) -> None:
    """Before: a misspelt source_model was dropped and the task's source read as unknown, so the self-source
    rule silently did not apply; a number was taken as a model name."""
    side = tmp_path / name
    side.write_text(text)
    with pytest.raises(BeaverError, match=says):
        load_source_models(side)


def test_export_jsonl_and_csv_agree(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    run_dir = run(tmp_path, CORPUS, "feedback", "ex")
    assert main(["export", str(run_dir), "-o", str(tmp_path / "a.jsonl")]) == 0
    assert main(["export", str(run_dir), "--csv", "-o", str(tmp_path / "a.csv")]) == 0
    assert "15 attempts from 5 sessions" in capsys.readouterr().err
    a = table_io.read_table(tmp_path / "a.jsonl")
    b = table_io.read_table(tmp_path / "a.csv")
    key = lambda t: sorted(json.dumps(r, sort_keys=True) for r in t.rows())  # noqa: E731
    assert key(a) == key(b) == key(from_rows(export_rows(run_dir)))
    assert main(["export", str(tmp_path / "missing")]) == 2


def test_a_side_table_of_one_json_lines_row_is_that_row(tmp_path: Path) -> None:
    """Before: one row of JSON Lines parsed as a JSON object keyed by task id: task 'task_id', model
    'vec_scale'."""
    side = tmp_path / "side.jsonl"
    side.write_text('{"task_id": "vec_scale", "source_model": "m"}\n')
    assert load_source_models(side) == {"vec_scale": "m"}
