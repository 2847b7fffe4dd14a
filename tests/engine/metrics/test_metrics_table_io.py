"""Reading the attempts table: the vectorised paths agree with the standard parsers, chunk by chunk."""

from __future__ import annotations

import io
import json
import random
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from beavertui.engine.metrics import table_fast, table_io
from beavertui.engine.metrics.compute import compute_groups
from beavertui.engine.metrics.table import from_rows


def random_rows(n: int, seed: int = 3) -> list[dict[str, Any]]:
    rng = random.Random(seed)
    rows = []
    for i in range(n):
        ok = rng.random() < 0.4
        rows.append(
            {
                "run_id": "run-1",
                "model": rng.choice(["alpha", "beta/β-model", "gamma"]),
                "task_id": f"t{rng.randrange(30):03d}",
                "protocol": {
                    "method": "iterative",
                    "feedback": rng.choice(["L0", "L3"]),
                    "history": 2,
                    "temperature": rng.choice([0.0, 0.7]),
                    "gate": 0.7,
                    "budget": 5,
                },
                "sample": rng.randrange(2),
                "iteration": i % 5 + 1,
                "category": "passed" if ok else rng.choice(["buildability", "timeout"]),
                "correct": ok,
                "speedup": round(rng.uniform(0.2, 3.0), 5) if ok else None,
                "stop_reason": rng.choice([None, "passed", "code_cycle"]),
                "self_source": rng.random() < 0.1,
                "family": rng.choice(["gemm", "reduce"]),
                "label": None,
                "infra_error": rng.random() < 0.05,
            }
        )
    return rows


def canonical(table: table_io.AttemptsTable) -> list[str]:
    return sorted(json.dumps(r, sort_keys=True) for r in table.rows())


@pytest.mark.parametrize("fmt", ["jsonl", "csv"])
def test_fast_path_equals_standard_parsers(tmp_path: Path, fmt: str, monkeypatch: pytest.MonkeyPatch) -> None:
    rows = random_rows(700)
    path = tmp_path / f"a.{fmt}"
    with path.open("w") as f:
        (table_io.write_jsonl if fmt == "jsonl" else table_io.write_csv)(rows, f)
    monkeypatch.setattr(table_fast, "BLOCK_BYTES", 1500)  # many blocks, lines cut at block edges
    fast = table_io.read_table(path)
    assert len(fast) == 700
    assert canonical(fast) == canonical(from_rows(rows))
    a = [g.as_json() for g in compute_groups(fast)]
    b = [g.as_json() for g in compute_groups(from_rows(rows))]
    assert a == b


def test_fast_json_chunk_is_really_taken_and_refuses_escapes() -> None:
    rows = random_rows(50)
    buf = io.StringIO()
    table_io.write_jsonl([{**r, "model": "plain"} for r in rows], buf)
    data = buf.getvalue().encode()
    assert table_fast.fast_json_chunk(data) is not None
    escaped = data.replace(b'"plain"', b'"pl\\"ain"', 1)
    assert table_fast.fast_json_chunk(escaped) is None
    # ... and the file still reads through the standard parser
    assert table_io._slow_json(escaped, 1).col("model").labels[0] == 'pl"ain'


def test_compact_separators_and_other_key_orders(tmp_path: Path) -> None:
    rows = random_rows(40)
    path = tmp_path / "c.jsonl"
    with path.open("w") as f:
        for r in rows:
            f.write(
                json.dumps(dict(reversed(list(r.items()))), separators=(",", ":"), ensure_ascii=False) + "\n"
            )
    assert canonical(table_io.read_table(path)) == canonical(from_rows(rows))


def test_changing_key_order_midway_falls_back(tmp_path: Path) -> None:
    rows = random_rows(20)
    path = tmp_path / "m.jsonl"
    with path.open("w") as f:
        for i, r in enumerate(rows):
            items = list(r.items())
            f.write(json.dumps(dict(items if i % 2 else reversed(items))) + "\n")
    assert canonical(table_io.read_table(path)) == canonical(from_rows(rows))


def test_bad_inputs_name_the_problem(tmp_path: Path) -> None:
    p = tmp_path / "bad.jsonl"
    p.write_text('{"run_id": "r"}\n')
    with pytest.raises(table_io.TableFormatError, match="missing key"):
        table_io.read_table(p)
    p.write_text("not json\n")
    with pytest.raises(table_io.TableFormatError, match="line 1"):
        table_io.read_table(p)
    c = tmp_path / "bad.csv"
    c.write_text("run_id,model\nr,m\n")
    with pytest.raises(table_io.TableFormatError, match="lacks columns"):
        table_io.read_table(c)
    rows = random_rows(3)
    with c.open("w") as f:
        table_io.write_csv(rows, f)
    text = c.read_text().replace(",true,", ",maybe,", 1)
    c.write_text(text)
    with pytest.raises((table_io.TableFormatError, ValueError)):
        table_io.read_table(c)


def test_hash_encoding_is_exact() -> None:
    values = [b"a", b"ab", b"a\x00"[:1], b"zz" * 9, b""]
    mat = np.zeros((len(values), 3), np.uint64)
    for i, v in enumerate(values):
        mat[i] = np.frombuffer(v.ljust(24, b"\0"), "<u8")
    codes = table_fast.encode(mat)
    decoded = [codes.labels[c] for c in codes.codes]
    assert decoded == ["a", "ab", "a", "zz" * 9, ""]


def _matrix(values: list[bytes], width: int = 32) -> np.ndarray:
    mat = np.zeros((len(values), width), np.uint8)
    for i, v in enumerate(values):
        mat[i, : len(v)] = np.frombuffer(v, np.uint8)
    return mat.view(np.uint64)


@settings(max_examples=50, deadline=None)
@given(
    st.lists(st.floats(0, 1e6, allow_nan=False) | st.integers(0, 10**6).map(float), min_size=1, max_size=30)
)
def test_vectorised_numbers_equal_the_standard_parser(xs: list[float]) -> None:
    texts = [repr(x).encode() for x in xs] + [b"1e-05", b"-2.5", b"null", b""]
    got = table_fast.to_float(_matrix(texts), "speedup")
    want = [float(t) if t not in (b"null", b"") else float("nan") for t in texts]
    assert [g if g == g else None for g in got.tolist()] == [w if w == w else None for w in want]
    ints = [str(int(x)).encode() for x in xs] + [b"-3", b"+4"]
    assert table_fast.to_int(_matrix(ints), "sample").tolist() == [int(t) for t in ints]
    with pytest.raises(table_io.TableFormatError):
        table_fast.to_int(_matrix([b"1.5"]), "sample")


def test_clean_files_never_touch_the_standard_parsers(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    rows = random_rows(400)
    for fmt, write in (("jsonl", table_io.write_jsonl), ("csv", table_io.write_csv)):
        path = tmp_path / f"clean.{fmt}"
        with path.open("w") as f:
            write(rows, f)
        monkeypatch.setattr(table_fast, "BLOCK_BYTES", 2000)

        def refuse(*a: object) -> None:
            raise AssertionError("fell back to the standard parser")

        monkeypatch.setattr(table_io, "_slow_json", refuse)
        monkeypatch.setattr(table_io, "_slow_csv", refuse)
        assert canonical(table_io.read_table(path)) == canonical(from_rows(rows))
        monkeypatch.undo()
