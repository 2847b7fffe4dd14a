"""Reading and writing the attempts table (JSON Lines or CSV) without a Python loop per row.

A million-row table must load in about a second, which ``json.loads`` per line cannot do. Lines written
with one fixed key order (what ``beavertui export`` writes, and what pandas writes) are cut into fields by
numpy over the raw bytes: key positions are found by vector compares, validated against the expected
key names, and each column is converted in one go. Any chunk the fast path cannot prove it understands
(escapes, quoted CSV, a key order that changes) is parsed with the standard parsers instead, so the
result never depends on which path ran. This module reads and writes; it computes no metric.
"""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any, TextIO

import numpy as np
import numpy.typing as npt

from beavertui.engine.table import (
    FLAT_COLUMNS,
    PROTOCOL_FIELDS,
    REQUIRED_COLUMNS,
    AttemptsTable,
    Codes,
    ProtocolKey,
    concat,
    from_rows,
)

U8 = npt.NDArray[np.uint8]
I64 = npt.NDArray[np.int64]
CHUNK_BYTES = 32 << 20
GATHER_BLOCK = 16384

try:  # orjson is several times faster than json on the slow path; optional.
    import orjson

    _loads: Any = orjson.loads
except ImportError:  # pragma: no cover - depends on the environment
    _loads = json.loads


class TableFormatError(ValueError):
    """The file is not an attempts table; the message names the line or column."""


# ------------------------------------------------------------------------------------- field slicing

U64 = npt.NDArray[np.uint64]


def _gather(arr: U8, start: I64, end: I64) -> U64:
    """Bytes ``arr[start[i]:end[i]]`` for every i, zero-padded into rows of 64-bit words.

    One contiguous byte gather per byte column: numpy's fast path (unaligned 8-byte gathers are far slower).
    """
    n = start.shape[0]
    lens = end - start
    width = int(lens.max()) if n else 1
    nw = max(1, -(-width // 8))
    mat = np.zeros((n, 8 * nw), np.uint8)
    for b0 in range(0, n, GATHER_BLOCK):  # blocks of rows keep the touched bytes in cache across steps
        s, ln, m = start[b0 : b0 + GATHER_BLOCK], lens[b0 : b0 + GATHER_BLOCK], mat[b0 : b0 + GATHER_BLOCK]
        for i in range(width):
            m[:, i] = np.where(ln > i, arr[s + i], np.uint8(0))
    return mat.view(np.uint64)


def _as_bytes(mat: U64) -> npt.NDArray[np.bytes_]:
    return np.ascontiguousarray(mat).view(f"S{8 * mat.shape[1]}").reshape(mat.shape[0])


def _encode_words(mat: U64, null: npt.NDArray[np.bool_] | None = None) -> Codes:
    """Dictionary-encode a gathered column by a 64-bit hash, verified exactly (no collision can pass)."""
    n = mat.shape[0]
    if n == 0:
        return Codes(np.zeros(0, np.int64), ())
    h = np.zeros(n, np.uint64)
    for i in range(mat.shape[1]):
        h = (h ^ mat[:, i]) * np.uint64(1099511628211) + np.uint64(i + 1)
    _, first, inverse = np.unique(h, return_index=True, return_inverse=True)
    inverse = inverse.reshape(n)
    values = _as_bytes(mat)
    reps = values[first]
    if not np.array_equal(mat[first][inverse], mat):  # a hash collision: fall back to exact sorting
        reps, inverse = np.unique(values, return_inverse=True)
    codes = inverse.astype(np.int64).reshape(n)
    labels = tuple(b.decode("utf-8") for b in reps.tolist())
    if null is not None and null.any():
        codes = np.where(null, -1, codes)
    return Codes(codes, labels)


def _is(values: npt.NDArray[np.bytes_], *words: bytes) -> npt.NDArray[np.bool_]:
    out = np.zeros(values.shape[0], dtype=np.bool_)
    for w in words:
        out |= values == w
    return out


def _to_bool(values: npt.NDArray[np.bytes_], name: str, default: bool | None = None) -> npt.NDArray[np.bool_]:
    true = _is(values, b"true", b"True", b"TRUE", b"1")
    false = _is(values, b"false", b"False", b"FALSE", b"0")
    empty = _is(values, b"", b"null")
    if default is not None:
        false |= empty
    if not np.all(true | false):
        bad = values[~(true | false)][0].decode("utf-8", "replace")
        raise TableFormatError(f"column {name}: not a boolean: {bad!r}")
    return true


def _to_int(values: npt.NDArray[np.bytes_], name: str) -> I64:
    try:
        return values.astype(np.int64)
    except ValueError:
        raise TableFormatError(f"column {name}: not an integer") from None


def _to_float(values: npt.NDArray[np.bytes_], name: str) -> npt.NDArray[np.float64]:
    null = _is(values, b"", b"null", b"None")
    try:
        return np.where(null, b"nan", values).astype(np.float64)
    except ValueError:
        raise TableFormatError(f"column {name}: not a number") from None


def _build(columns: Mapping[str, tuple[U64, npt.NDArray[np.bool_]]], n: int) -> AttemptsTable:
    """Typed table from gathered fields: name -> (words, null mask), string quotes already removed."""
    strings: dict[str, Codes] = {}
    for name in ("run_id", "model", "task_id", "category", "stop_reason", "family", "label"):
        if name not in columns:
            strings[name] = Codes(np.full(n, -1, np.int64), ())
            continue
        mat, null = columns[name]
        strings[name] = _encode_words(mat, null)
    for name in ("run_id", "model", "task_id", "category"):
        if (strings[name].codes < 0).any():
            raise TableFormatError(f"column {name}: null value")
    pcodes = [_encode_words(columns[f"protocol.{f}"][0]) for f in PROTOCOL_FIELDS]
    combined = np.zeros(n, np.int64)
    for c in pcodes:
        combined = combined * (len(c.labels) + 1) + c.codes
    _, first, inverse = np.unique(combined, return_index=True, return_inverse=True)
    index: dict[ProtocolKey, int] = {}
    remap = []
    for row in first.tolist():
        parts = {f: c.labels[int(c.codes[row])] for f, c in zip(PROTOCOL_FIELDS, pcodes, strict=True)}
        try:
            key = ProtocolKey.from_mapping(parts)
        except ValueError as exc:
            raise TableFormatError(str(exc)) from None
        remap.append(index.setdefault(key, len(index)))
    protocol = np.asarray(remap, dtype=np.int64)[inverse.reshape(n)] if n else np.zeros(0, np.int64)

    def raw(name: str) -> npt.NDArray[np.bytes_]:
        return _as_bytes(columns[name][0])

    return AttemptsTable(
        strings=strings,
        protocol=protocol,
        protocols=tuple(index),
        sample=_to_int(raw("sample"), "sample"),
        iteration=_to_int(raw("iteration"), "iteration"),
        correct=_to_bool(raw("correct"), "correct"),
        speedup=_to_float(raw("speedup"), "speedup"),
        self_source=_to_bool(raw("self_source"), "self_source"),
        infra_error=(
            np.zeros(n, np.bool_)
            if "infra_error" not in columns
            else _to_bool(raw("infra_error"), "infra_error", False)
        ),
    )


def _rows_in_lines(pos: I64, line_start: I64, line_end: I64, per_line: int) -> bool:
    """Whether sorted positions fall exactly ``per_line`` into each line."""
    n = line_end.shape[0]
    if pos.shape[0] != n * per_line:
        return False
    if per_line == 0:
        return True
    grid = pos.reshape(n, per_line)
    return bool(np.all(grid[:, 0] > line_start) and np.all(grid[:, -1] < line_end))


#: Bytes trimmed from the end of a JSON value: space, comma, closing brace, carriage return.
TRIM = np.zeros(256, np.bool_)
TRIM[[32, 44, 125, 13]] = True


# ------------------------------------------------------------------------------------- fast JSON lines


def _json_layout(line: bytes) -> list[tuple[str, bool]] | None:
    """Key names in order with whether each is a scalar column; None if not a flat-enough object."""
    try:
        obj = json.loads(line)
    except ValueError:
        return None
    if not isinstance(obj, dict):
        return None
    layout: list[tuple[str, bool]] = []

    def walk(d: Mapping[str, Any], prefix: str) -> bool:
        for k, v in d.items():
            name = f"{prefix}{k}"
            if isinstance(v, dict):
                layout.append((k, False))
                if not walk(v, f"{name}."):
                    return False
            elif isinstance(v, list):
                return False
            else:
                layout.append((name, True))
        return True

    return layout if walk(obj, "") else None


def _fast_json_chunk(buf: bytes) -> AttemptsTable | None:
    if b"\\" in buf:
        return None
    layout = _json_layout(buf[: buf.index(b"\n")])
    if layout is None or not {k for k, s in layout if s} >= REQUIRED_COLUMNS:
        return None
    padded = buf + b"\0" * 16
    arr = np.frombuffer(padded, dtype=np.uint8)
    nl = np.flatnonzero(arr == 10)
    n = nl.shape[0]
    line_start = np.concatenate(([-1], nl[:-1]))
    colons = np.flatnonzero(arr == 58)
    kc = colons[arr[colons - 1] == 34] - 1  # closing quote of each key
    nf = len(layout)
    if not _rows_in_lines(kc, line_start, nl, nf):
        return None
    kc = kc.reshape(n, nf)
    keys = [k.rsplit(".", 1)[-1].encode() for k, _ in layout]
    opening = [kc[:, j] - len(key) - 1 for j, key in enumerate(keys)]
    for j, key in enumerate(keys):
        got = _gather(arr, opening[j], opening[j] + len(key) + 2)
        if not np.all(_as_bytes(got) == b'"' + key + b'"'):
            return None
    columns: dict[str, tuple[U64, npt.NDArray[np.bool_]]] = {}
    for j, (name, scalar) in enumerate(layout):
        if not scalar or name not in FLAT_COLUMNS:
            continue
        vs = kc[:, j] + 2
        vs = vs + (arr[vs] == 32)
        ve = opening[j + 1] if j + 1 < nf else nl.copy()
        for _ in range(4):
            ve = ve - (TRIM[arr[ve - 1]] & (ve > vs))
        null = (
            ((ve - vs) == 4)
            & (arr[vs] == 110)
            & (arr[vs + 1] == 117)
            & (arr[vs + 2] == 108)
            & (arr[vs + 3] == 108)
        )
        quoted = arr[vs] == 34
        if quoted.any():
            if not np.all(quoted | null) or not np.all(arr[ve - 1][quoted] == 34):
                return None
            vs = vs + quoted
            ve = ve - quoted
        columns[name] = (_gather(arr, vs, ve), null)
    return _build(columns, n)


# ------------------------------------------------------------------------------------- fast CSV


def _fast_csv_chunk(buf: bytes, header: list[str]) -> AttemptsTable | None:
    if b'"' in buf or not set(header) >= REQUIRED_COLUMNS:
        return None
    padded = buf + b"\0" * 16
    arr = np.frombuffer(padded, dtype=np.uint8)
    nl = np.flatnonzero(arr == 10)
    n = nl.shape[0]
    nf = len(header)
    line_start = np.concatenate(([-1], nl[:-1]))
    commas = np.flatnonzero(arr == 44)
    if not _rows_in_lines(commas, line_start, nl, nf - 1):
        return None
    bounds = np.empty((n, nf + 1), np.int64)
    bounds[:, 0] = line_start
    bounds[:, 1:nf] = commas.reshape(n, nf - 1)
    bounds[:, nf] = nl
    columns: dict[str, tuple[U64, npt.NDArray[np.bool_]]] = {}
    for j, name in enumerate(header):
        if name not in FLAT_COLUMNS:
            continue
        vs, ve = bounds[:, j] + 1, bounds[:, j + 1]
        ve = ve - ((arr[ve - 1] == 13) & (ve > vs))
        columns[name] = (_gather(arr, vs, ve), ve == vs)
    return _build(columns, n)


# ------------------------------------------------------------------------------------- public API


def _chunks(f: io.BufferedReader, first: bytes = b"") -> Iterator[bytes]:
    carry = first
    while True:
        block = f.read(CHUNK_BYTES)
        if not block:
            break
        block = carry + block
        cut = block.rfind(b"\n")
        if cut < 0:
            carry = block
            continue
        carry = block[cut + 1 :]
        yield block[: cut + 1]
    if carry.strip():
        yield carry + b"\n"


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


def read_jsonl(path: Path) -> AttemptsTable:
    parts: list[AttemptsTable] = []
    line = 1
    with path.open("rb") as f:
        for buf in _chunks(f):
            table = None if b"\n\n" in buf or buf.startswith(b"\n") else _fast_json_chunk(buf)
            parts.append(table if table is not None else _slow_json(buf, line))
            line += buf.count(b"\n")
    return concat(parts)


def read_csv(path: Path) -> AttemptsTable:
    parts: list[AttemptsTable] = []
    with path.open("rb") as f:
        head = f.readline()
        header = next(csv.reader([head.decode("utf-8-sig")]), [])
        missing = sorted(REQUIRED_COLUMNS - set(header))
        if missing:
            raise TableFormatError(f"{path}: CSV lacks columns {', '.join(missing)}")
        for buf in _chunks(f):
            table = None if b"\n\n" in buf else _fast_csv_chunk(buf, header)
            if table is None:
                reader = csv.DictReader(io.StringIO(buf.decode("utf-8")), fieldnames=header)
                try:
                    table = from_rows(r for r in reader if any(r.values()))
                except ValueError as exc:
                    raise TableFormatError(str(exc)) from None
            parts.append(table)
    return concat(parts)


def read_table(path: Path) -> AttemptsTable:
    """Read a JSON Lines or CSV attempts table (by extension; ``.csv`` is CSV, anything else JSON).

    Anything that is not such a table raises TableFormatError with a one-line reason.
    """
    try:
        if path.suffix.lower() == ".csv":
            return read_csv(path)
        return read_jsonl(path)
    except UnicodeDecodeError as exc:
        raise TableFormatError(f"{path}: not UTF-8 text (byte {exc.start})") from None
    except RecursionError:
        raise TableFormatError(f"{path}: JSON nested too deeply to be an attempts table") from None
    except csv.Error as exc:
        raise TableFormatError(f"{path}: not a CSV table ({exc})") from None


def write_jsonl(rows: Iterable[Mapping[str, Any]], out: TextIO) -> int:
    n = 0
    for row in rows:
        out.write(json.dumps(row, ensure_ascii=False) + "\n")
        n += 1
    return n


def _csv_value(v: Any) -> Any:
    if v is None:
        return ""
    if isinstance(v, bool):
        return "true" if v else "false"
    return v


def write_csv(rows: Iterable[Mapping[str, Any]], out: TextIO) -> int:
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(FLAT_COLUMNS)
    n = 0
    for row in rows:
        proto = row["protocol"]
        flat = {**row, **{f"protocol.{k}": v for k, v in proto.items()}}
        writer.writerow([_csv_value(flat.get(c)) for c in FLAT_COLUMNS])
        n += 1
    return n
