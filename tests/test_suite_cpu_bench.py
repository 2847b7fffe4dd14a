"""bench/suite_cpu.py sums the per-test CPU records its pytest hook writes, by worker and by module."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _bench():  # type: ignore[no-untyped-def]
    spec = importlib.util.spec_from_file_location("suite_cpu", ROOT / "bench" / "suite_cpu.py")
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_the_summary_sums_tests_by_worker_and_module(tmp_path: Path) -> None:
    rows = [
        {"id": "tests/a.py::t1", "worker": "gw0", "start": 100.0, "wall": 2.0, "self": 1.0, "kids": 3.0},
        {"id": "tests/a.py::t2", "worker": "gw0", "start": 102.0, "wall": 1.0, "self": 0.5, "kids": 0.0},
        {"id": "tests/b.py::t1", "worker": "gw1", "start": 101.0, "wall": 4.0, "self": 0.25, "kids": 0.25},
    ]
    (tmp_path / "cpu-1.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows[:2]))
    (tmp_path / "cpu-2.jsonl").write_text(json.dumps(rows[2]) + "\n")
    lines = _bench().summary(tmp_path, top=10).splitlines()
    assert lines[0] == "3 tests; CPU in the tests 5.0 s"
    assert lines[1] == "gw0: 2 tests, first at 0.0 s, last ends 3.0 s, CPU 4.5 s"
    assert lines[2] == "gw1: 1 tests, first at 1.0 s, last ends 5.0 s, CPU 0.5 s"
    assert lines[4].split() == ["4.5", "(", "1.5", "+", "3.0)", "3.0", "2", "tests/a.py"]
    assert lines[5].split()[-1] == "tests/b.py"


def test_no_records_is_said(tmp_path: Path) -> None:
    assert _bench().summary(tmp_path, top=5) == f"no test records in {tmp_path}"
