"""Reading and writing the attempts table (JSON Lines or CSV).

Files are read in chunks of whole lines; each chunk goes through the vectorised reader (table_fast.py)
and, when that cannot vouch for the chunk, through the standard parsers, so the result never depends on
which path ran. Writing is plain ``json``/``csv``, a CSV text cell guarded against spreadsheet formulas by a
leading quote (engine/csv_cells.py), which both CSV paths take off again. This module computes no metric.
"""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any, TextIO

from beavertui.engine.csv_cells import Writer, unguard
from beavertui.engine.metrics.table import FLAT_COLUMNS, REQUIRED_COLUMNS, AttemptsTable, concat, from_rows
from beavertui.engine.metrics.table_fast import TableFormatError, csv_parser, json_parser, parse_blocks

__all__ = [
    "AttemptsTable",
    "TableFormatError",
    "read_csv",
    "read_jsonl",
    "read_table",
    "write_csv",
    "write_jsonl",
]

try:  # orjson is several times faster than json on the slow path; optional.
    import orjson

    _loads: Any = orjson.loads
except ImportError:  # pragma: no cover - depends on the environment
    _loads = json.loads


# ------------------------------------------------------------------------------------- public API


def _whole(path: Path, skip_header: bool) -> tuple[bytes, int, int, bytes]:
    """The file's bytes followed by 16 bytes of padding (read once, never copied), the data range, and
    the skipped header line."""
    size = path.stat().st_size
    buf = bytearray(size + 17)
    with path.open("rb") as f:
        got = f.readinto(memoryview(buf)[:size])
    stop = got
    if stop and buf[stop - 1] != 10:
        buf[stop] = 10
        stop += 1
    head = b""
    start = 0
    if skip_header:
        cut = buf.find(b"\n", 0, stop)
        head = bytes(buf[: max(cut, 0)])
        start = cut + 1
    return buf, start, stop, head  # type: ignore[return-value]  # a bytearray serves as bytes here


def _slow_json(buf: bytes, start_line: int) -> AttemptsTable:
    rows = []
    for n, line in enumerate(buf.splitlines(), start_line):
        if not line.strip():
            continue
        try:
            rows.append(_loads(line))
        except ValueError:
            raise TableFormatError(f"line {n}: not JSON") from None
    try:
        return from_rows(rows)
    except ValueError as exc:
        raise TableFormatError(str(exc)) from None


def _slow_csv(buf: bytes, header: list[str]) -> AttemptsTable:
    reader = csv.DictReader(io.StringIO(buf.decode("utf-8")), fieldnames=header)
    try:
        return from_rows({k: unguard(v) for k, v in r.items()} for r in reader if any(r.values()))
    except ValueError as exc:
        raise TableFormatError(str(exc)) from None


def read_jsonl(path: Path) -> AttemptsTable:
    whole, start, stop, _ = _whole(path, skip_header=False)
    first = whole[start : whole.find(b"\n", start)] if stop > start else b""
    parse = json_parser(first) if first.strip() else None
    if parse is None:
        return _slow_json(whole[start:stop], 1)
    parts = []
    for item in parse_blocks(whole, start, stop, parse):
        if isinstance(item, tuple):
            pos, end = item
            parts.append(_slow_json(whole[pos:end], whole.count(b"\n", start, pos) + 1))
        else:
            parts.append(item)
    return concat(parts)


def read_csv(path: Path) -> AttemptsTable:
    whole, start, stop, head = _whole(path, skip_header=True)
    header = [unguard(h) for h in next(csv.reader([head.decode("utf-8-sig").rstrip("\r")]), [])]
    missing = sorted(REQUIRED_COLUMNS - set(header))
    if missing:
        raise TableFormatError(f"{path}: CSV lacks columns {', '.join(missing)}")
    parse = csv_parser(header, whole.find(b"\r", start, stop) >= 0)
    if parse is None or start >= stop:
        return _slow_csv(whole[start:stop], header)
    parts = []
    for item in parse_blocks(whole, start, stop, parse):
        parts.append(_slow_csv(whole[item[0] : item[1]], header) if isinstance(item, tuple) else item)
    return concat(parts)


#: The largest sample index an attempts table may hold (1,000 samples of a 100-iteration repeated protocol).
MAX_SAMPLE = 1_000_000


def out_of_range(table: AttemptsTable) -> str | None:
    """What in a table is outside the values a run can produce (None: nothing): a sample index, an
    iteration, a speedup that is not above 0, a protocol's gate, budget, history or temperature."""
    import numpy as np

    from beavertui.engine.session.protocol import MAX_BUDGET

    def first(bad: Any, name: str, values: Any) -> str | None:
        idx = np.flatnonzero(bad)
        return f"row {int(idx[0]) + 1}: {name} {values[idx[0]]!r} is out of range" if idx.size else None

    checks = (
        ((table.sample < 0) | (table.sample > MAX_SAMPLE), "sample", table.sample),
        ((table.iteration < 1) | (table.iteration > MAX_BUDGET), "iteration", table.iteration),
        (~np.isnan(table.speedup) & ~(table.speedup > 0), "speedup", table.speedup),
    )
    for bad, name, values in checks:
        found = first(bad, name, values)
        if found is not None:
            return found
    for p in table.protocols:
        for name, value, low, high in (
            ("gate", p.gate, 0.0, 3.0),
            ("budget", p.budget, 1, MAX_BUDGET),
            ("history", p.history, 0, MAX_BUDGET),
            ("temperature", p.temperature, 0.0, 2.0),
        ):
            if not (low <= value <= high):  # NaN fails too
                return f"protocol {name} {value!r} is out of range ({low} to {high})"
    return None


def read_table(path: Path) -> AttemptsTable:
    """Read a JSON Lines or CSV attempts table (by extension; ``.csv`` is CSV, anything else JSON).

    Anything that is not such a table raises TableFormatError with a one-line reason.
    """
    try:
        table = read_csv(path) if path.suffix.lower() == ".csv" else read_jsonl(path)
        problem = out_of_range(table)
        if problem is not None:
            raise TableFormatError(f"{path}: {problem}")
        return table
    except OverflowError:
        raise TableFormatError(f"{path}: a number too large for an attempts table") from None
    except UnicodeDecodeError as exc:
        raise TableFormatError(f"{path}: not UTF-8 text (byte {exc.start})") from None
    except RecursionError:
        raise TableFormatError(f"{path}: JSON nested too deeply to be an attempts table") from None
    except csv.Error as exc:
        raise TableFormatError(f"{path}: not a CSV table ({exc})") from None


def write_jsonl(rows: Iterable[Mapping[str, Any]], out: TextIO) -> int:
    n = 0
    for row in rows:
        out.write(json.dumps(row, ensure_ascii=False, allow_nan=False) + "\n")
        n += 1
    return n


def _csv_value(v: Any) -> Any:
    """A cell: null empty, a boolean ``true``/``false`` (Writer guards a text against formulas)."""
    if v is None:
        return ""
    if isinstance(v, bool):
        return "true" if v else "false"
    return v


def write_csv(rows: Iterable[Mapping[str, Any]], out: TextIO) -> int:
    writer = Writer(out)
    writer.writerow(FLAT_COLUMNS)
    n = 0
    for row in rows:
        proto = row["protocol"]
        flat = {**row, **{f"protocol.{k}": v for k, v in proto.items()}}
        writer.writerow([_csv_value(flat.get(c)) for c in FLAT_COLUMNS])
        n += 1
    return n
