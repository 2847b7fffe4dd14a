"""The vectorised reader of the attempts table: lines cut into fields by numpy over the raw bytes.

A million-row table must load in about a second, which ``json.loads`` per line cannot do. When every line
of a chunk has the layout of its first line (what ``beavertui export`` and pandas write), field positions
are found by vector compares (``":`` for JSON keys, commas for CSV), each key is checked at its position
(length, opening quote, first and last letter: the layout's keys must differ there, else the chunk is
refused), and each column is converted in one go. A chunk this cannot prove it understands (escapes,
quoted CSV, a different key count or spacing) returns None and table_io.py parses it with the standard
parsers. Nothing here computes a metric.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Mapping
from typing import Any

import numpy as np
import numpy.typing as npt

from beavertui.engine.metrics.table import (
    BASELINE_COLUMNS,
    FLAT_COLUMNS,
    PROTOCOL_FIELDS,
    REQUIRED_COLUMNS,
    STRING_COLUMNS,
    AttemptsTable,
    Codes,
    ProtocolKey,
    against_columns,
)

U8 = npt.NDArray[np.uint8]
U64 = npt.NDArray[np.uint64]
I64 = npt.NDArray[np.int64]
B = npt.NDArray[np.bool_]
#: Rows per block of a byte gather: keeps the bytes a block touches in cache across its steps.
GATHER_BLOCK = 16384


class TableFormatError(ValueError):
    """The file is not an attempts table; the message names the line or column."""


def gather(arr: U8, start: I64, end: I64) -> U64:
    """Bytes ``arr[start[i]:end[i]]`` for every i, zero-padded into rows of 64-bit words. A byte past a
    value's end is never read into the result, but its index is formed: it is clamped to ``arr``, so that a
    short value near the end of the buffer beside a column's widest one reads nothing out of bounds."""
    n = start.shape[0]
    last = arr.shape[0] - 1
    lens = end - start
    width = int(lens.max()) if n else 1
    nw = max(1, -(-width // 8))
    mat = np.zeros((n, 8 * nw), np.uint8)
    for b0 in range(0, n, GATHER_BLOCK):
        s, ln, m = start[b0 : b0 + GATHER_BLOCK], lens[b0 : b0 + GATHER_BLOCK], mat[b0 : b0 + GATHER_BLOCK]
        for i in range(width):
            m[:, i] = np.where(ln > i, arr[np.minimum(s + i, last)], np.uint8(0))
    return mat.view(np.uint64)


def as_bytes(mat: U64) -> npt.NDArray[np.bytes_]:
    return np.ascontiguousarray(mat).view(f"S{8 * mat.shape[1]}").reshape(mat.shape[0])


def _hash(mat: U64) -> U64:
    h = np.zeros(mat.shape[0], np.uint64)
    for i in range(mat.shape[1]):
        h = (h ^ mat[:, i]) * np.uint64(1099511628211) + np.uint64(i + 1)
    return h


def factorize(h: U64) -> tuple[I64, I64]:
    """Dense codes of a hash column and one row index per code (values found on a sample first)."""
    n = h.shape[0]
    rows = np.arange(0, n, max(1, n // 2048))
    vals, first = np.unique(h[rows], return_index=True)
    reps = rows[first]
    pos = np.minimum(np.searchsorted(vals, h), vals.shape[0] - 1)
    miss = np.flatnonzero(vals[pos] != h)
    if miss.size:
        more, f2 = np.unique(h[miss], return_index=True)
        vals = np.concatenate([vals, more])
        reps = np.concatenate([reps, miss[f2]])
        order = np.argsort(vals, kind="stable")
        vals, reps = vals[order], reps[order]
        pos = np.searchsorted(vals, h)
    return pos.astype(np.int64), reps.astype(np.int64)


def encode(mat: U64, null: B | None = None) -> Codes:
    """Dictionary-encode a gathered column, verified byte for byte (a hash collision cannot pass)."""
    n = mat.shape[0]
    if n == 0:
        return Codes(np.zeros(0, np.int64), ())
    codes, reps = factorize(_hash(mat))
    if not np.array_equal(mat[reps][codes], mat):  # a collision: exact sorting instead
        uniq, inv = np.unique(as_bytes(mat), return_inverse=True)
        labels = tuple(b.decode("utf-8") for b in uniq.tolist())
        codes = inv.reshape(n).astype(np.int64)
    else:
        labels = tuple(b.decode("utf-8") for b in as_bytes(mat[reps]).tolist())
    if null is not None and null.any():
        codes = np.where(null, -1, codes)
    return Codes(codes, labels)


def _is(values: npt.NDArray[np.bytes_], *words: bytes) -> B:
    out = np.zeros(values.shape[0], dtype=np.bool_)
    for w in words:
        out |= values == w
    return out


def to_bool(values: npt.NDArray[np.bytes_], name: str, default: bool | None = None) -> B:
    true = _is(values, b"true", b"True", b"TRUE", b"1")
    false = _is(values, b"false", b"False", b"FALSE", b"0")
    if default is not None:
        false |= _is(values, b"", b"null")
    if not np.all(true | false):
        bad = values[~(true | false)][0].decode("utf-8", "replace")
        raise TableFormatError(f"column {name}: not a boolean: {bad!r}")
    return true


def _digits(mat: U64) -> tuple[npt.NDArray[np.uint8], I64, B]:
    """Bytes of each row, their count, and whether the row is digits only (possibly one '.')."""
    b = mat.view(np.uint8).reshape(mat.shape[0], -1)
    lens = (b != 0).sum(axis=1).astype(np.int64)
    ok = np.all((b == 0) | ((b >= 48) & (b <= 57)) | (b == 46), axis=1) & ((b == 46).sum(axis=1) <= 1)
    return b, lens, ok


def to_int(mat: U64, name: str) -> I64:
    """Decimal integers: digits summed by place in numpy; anything else through numpy's parser."""
    b, lens, ok = _digits(mat)
    ok &= ~np.any(b == 46, axis=1) & (lens > 0) & (lens <= 18)
    out = np.zeros(b.shape[0], np.int64)
    for i in range(b.shape[1]):
        live = i < lens
        out = np.where(live, out * 10 + (b[:, i].astype(np.int64) - 48), out)
    if not ok.all():
        bad = ~ok
        try:
            out[bad] = as_bytes(mat[bad]).astype(np.int64)
        except ValueError:
            raise TableFormatError(f"column {name}: not an integer") from None
    return out


def to_float(mat: U64, name: str) -> npt.NDArray[np.float64]:
    """Plain decimals (up to 15 digits) exactly as strtod rounds them; the rest through numpy's parser."""
    b, lens, ok = _digits(mat)
    n = b.shape[0]
    raw = as_bytes(mat)
    null = _is(raw, b"", b"null", b"None")
    is_digit = (b >= 48) & (b <= 57)
    ok &= (is_digit.sum(axis=1) <= 15) & ~null & (lens > 0)
    mant = np.zeros(n, np.float64)
    frac = np.zeros(n, np.int64)
    seen_dot = np.zeros(n, np.bool_)
    for i in range(b.shape[1]):
        d = is_digit[:, i]
        mant = np.where(d, mant * 10.0 + (b[:, i].astype(np.float64) - 48.0), mant)
        frac += d & seen_dot
        seen_dot |= b[:, i] == 46
    out = mant / np.power(10.0, frac)
    out[null] = np.nan
    rest = ~ok & ~null
    if rest.any():
        try:
            out[rest] = raw[rest].astype(np.float64)
        except ValueError:
            raise TableFormatError(f"column {name}: not a number") from None
        if not np.isfinite(out[rest]).all():  # NaN means null here, so a spelled NaN or inf is refused
            raise TableFormatError(f"column {name}: not a finite number")
    return out


def build(columns: Mapping[str, tuple[U64, B]], n: int) -> AttemptsTable:
    """Typed table from gathered fields: name -> (words, null mask), string quotes already removed."""
    strings: dict[str, Codes] = {}
    for name in STRING_COLUMNS:
        if name not in columns:
            strings[name] = Codes(np.full(n, -1, np.int64), ())
            continue
        mat, null = columns[name]
        strings[name] = encode(mat, null)
    for name in ("run_id", "model", "task_id", "category"):
        if (strings[name].codes < 0).any():
            raise TableFormatError(f"column {name}: null value")
    # the protocol: one factorization over its fields together (the later keys only where present)
    fields = [f for f in (*PROTOCOL_FIELDS, "gate_baseline") if f"protocol.{f}" in columns]
    parts = [columns[f"protocol.{f}"][0] for f in fields]
    nulls = [columns[f"protocol.{f}"][1] for f in fields]
    joined = np.concatenate(parts, axis=1)
    codes, reps = factorize(_hash(joined))
    if not np.array_equal(joined[reps][codes], joined):
        _, reps, codes = np.unique(as_bytes(joined), return_index=True, return_inverse=True)
        codes = codes.reshape(n)
    index: dict[ProtocolKey, int] = {}
    remap = []
    for row in reps.tolist():
        values: dict[str, str | None] = {
            f: None if null[row] else as_bytes(p[row : row + 1])[0].decode()
            for f, p, null in zip(fields, parts, nulls, strict=True)
        }
        try:
            key = ProtocolKey.from_mapping(values)
        except ValueError as exc:
            raise TableFormatError(str(exc)) from None
        remap.append(index.setdefault(key, len(index)))
    protocol = np.asarray(remap, dtype=np.int64)[codes] if n else np.zeros(0, np.int64)

    def raw(name: str) -> npt.NDArray[np.bytes_]:
        return as_bytes(columns[name][0])

    table = AttemptsTable(
        strings=strings,
        protocol=protocol,
        protocols=tuple(index),
        sample=to_int(columns["sample"][0], "sample"),
        iteration=to_int(columns["iteration"][0], "iteration"),
        correct=to_bool(raw("correct"), "correct"),
        speedup=to_float(columns["speedup"][0], "speedup"),
        self_source=to_bool(raw("self_source"), "self_source"),
        infra_error=(
            np.zeros(n, np.bool_)
            if "infra_error" not in columns
            else to_bool(raw("infra_error"), "infra_error", False)
        ),
        flagged=(
            np.zeros(n, np.bool_) if "flagged" not in columns else to_bool(raw("flagged"), "flagged", False)
        ),
        speedup_lo=None if "speedup_lo" not in columns else to_float(columns["speedup_lo"][0], "speedup_lo"),
        speedup_hi=None if "speedup_hi" not in columns else to_float(columns["speedup_hi"][0], "speedup_hi"),
        unstable_timing=(
            None
            if "unstable_timing" not in columns
            else to_bool(raw("unstable_timing"), "unstable_timing", False)
        ),
    )
    present = {c: to_float(columns[c][0], c) for c in BASELINE_COLUMNS if c in columns}
    if present:
        table = dataclasses.replace(table, against=against_columns(present))
    if "compiled" not in columns:
        return table
    # rows without the column's value take the category's answer, as from_rows does
    blank = columns["compiled"][1] | _is(raw("compiled"), b"", b"null")
    if blank.all():
        return table
    built = to_bool(raw("compiled"), "compiled", False)
    return dataclasses.replace(table, compiled=np.where(blank, table.built(), built))


def _rows_in_lines(pos: I64, line_start: I64, line_end: I64, per_line: int) -> bool:
    """Whether sorted positions fall exactly ``per_line`` into each line."""
    n = line_end.shape[0]
    if pos.shape[0] != n * per_line:
        return False
    if per_line == 0:
        return True
    grid = pos.reshape(n, per_line)
    return bool(np.all(grid[:, 0] > line_start) and np.all(grid[:, -1] < line_end))


def _lines(whole: bytes, pos: int, end: int) -> tuple[U8, I64, I64]:
    """A view of ``whole[pos:end + 16]`` (no copy; ``whole`` has 16 bytes of padding past its data) and the
    newline positions and line starts of ``[pos, end)``, relative to ``pos``."""
    arr = np.frombuffer(whole, dtype=np.uint8, count=end - pos + 16, offset=pos)
    nl = np.flatnonzero(arr[: end - pos] == 10)
    return arr, nl, np.concatenate(([-1], nl[:-1])).astype(np.int64)


# ------------------------------------------------------------------------------------- JSON lines


#: Bytes that may stand between a JSON value and the next key: space, comma, braces, carriage return.
TRIM = np.zeros(256, np.bool_)
TRIM[[32, 44, 123, 125, 13]] = True


def _json_layout(line: bytes) -> list[tuple[str, bool, int, int]] | None:
    """Per key in order: flat name, whether a scalar column, and from this (first) line the number of
    spaces between colon and value and of separator bytes between the value and the next key."""
    try:
        obj = json.loads(line)
    except ValueError:
        return None
    if not isinstance(obj, dict):
        return None
    names: list[tuple[str, bool]] = []

    def walk(d: Mapping[str, Any], prefix: str) -> bool:
        for k, v in d.items():
            if '"' in k or ":" in k or "\\" in k:
                return False
            if isinstance(v, dict):
                names.append((f"{prefix}{k}", False))
                if not walk(v, f"{prefix}{k}."):
                    return False
            elif isinstance(v, list):
                return False
            else:
                names.append((f"{prefix}{k}", True))
        return True

    if not walk(obj, ""):
        return None
    marks = []
    pos = 0
    for name, _ in names:
        key = b'"' + name.rsplit(".", 1)[-1].encode() + b'":'
        at = line.find(key, pos)
        if at < 0:
            return None
        marks.append((at, at + len(key)))
        pos = at + len(key)
    out = []
    for j, (name, scalar) in enumerate(names):
        seg = line[marks[j][1] : marks[j + 1][0] if j + 1 < len(names) else len(line)]
        lead = len(seg) - len(seg.lstrip(b" "))
        trail = len(seg) - len(seg.rstrip(b" ,{}\r"))
        out.append((name, scalar, lead, trail))
    return out


def _keys_distinct(keys: list[bytes]) -> bool:
    sig = [(len(k), k[:1], k[-1:]) for k in keys]
    return len(set(sig)) == len(sig)


def json_parser(first_line: bytes) -> Any:
    """A block parser for JSON lines laid out like ``first_line``, or None if it cannot have one."""
    layout = _json_layout(first_line)
    if layout is None or not {k for k, s, _, _ in layout if s} >= REQUIRED_COLUMNS:
        return None
    keys = [k.rsplit(".", 1)[-1].encode() for k, _, _, _ in layout]
    if not _keys_distinct(keys):
        return None

    def parse(whole: bytes, pos: int, end: int) -> tuple[dict[str, tuple[U64, B]], int] | None:
        if whole.find(b"\\", pos, end) >= 0:
            return None
        return _json_columns(whole, pos, end, layout, keys)

    return parse


def fast_json_chunk(buf: bytes) -> AttemptsTable | None:
    """One buffer of whole JSON lines, entirely by the fast path, or None."""
    parse = json_parser(buf[: buf.index(b"\n")])
    if parse is None:
        return None
    whole = buf + b"\0" * 16
    got = parse(whole, 0, len(buf))
    return None if got is None else build(*got)


def _json_columns(
    whole: bytes, pos: int, end: int, layout: list[tuple[str, bool, int, int]], keys: list[bytes]
) -> tuple[dict[str, tuple[U64, B]], int] | None:
    arr, nl, line_start = _lines(whole, pos, end)
    n = nl.shape[0]
    colons = np.flatnonzero(arr[: end - pos] == 58)
    kc = colons[arr[colons - 1] == 34] - 1  # closing quote of each key
    nf = len(layout)
    if not _rows_in_lines(kc, line_start, nl, nf):
        return None
    kcols = np.ascontiguousarray(kc.reshape(n, nf).T)
    opening = [kcols[j] - len(key) - 1 for j, key in enumerate(keys)]
    for j, key in enumerate(keys):  # each key: opening quote, first and last letter at their places
        o = opening[j]
        if not (
            np.all(arr[o] == 34) and np.all(arr[o + 1] == key[0]) and np.all(arr[kcols[j] - 1] == key[-1])
        ):
            return None
    columns: dict[str, tuple[U64, B]] = {}
    for j, (name, scalar, lead, trail) in enumerate(layout):
        if not scalar or name not in FLAT_COLUMNS:
            continue
        vs = kcols[j] + 2 + lead
        ve = (opening[j + 1] if j + 1 < nf else nl) - trail
        first, last = arr[vs], arr[ve - 1]
        if (
            np.any(first == 32)
            or np.any(TRIM[last])
            or np.any(ve <= vs)
            or (trail and np.any(~TRIM[arr[ve]]))
        ):
            return None  # spacing differs from the first line
        null = first == 110  # 'n': only null starts so (strings start with a quote)
        quoted = first == 34
        if quoted.any():
            if not np.all(last[quoted] == 34):
                return None
            vs = vs + quoted
            ve = ve - quoted
        columns[name] = (gather(arr, vs, ve), null)
    return columns, n


#: Bytes parsed at once for positions and gathers (fits in cache); encoding runs over whole runs of blocks.
BLOCK_BYTES = 4 << 20


def _merge(parts: list[tuple[dict[str, tuple[U64, B]], int]]) -> AttemptsTable:
    if len(parts) == 1:
        return build(*parts[0])
    total = sum(p[1] for p in parts)
    merged: dict[str, tuple[U64, B]] = {}
    for name in parts[0][0]:
        width = max(p[0][name][0].shape[1] for p in parts)
        mat = np.zeros((total, width), np.uint64)
        null = np.empty(total, np.bool_)
        at = 0
        for cols, n in parts:
            m, nl = cols[name]
            mat[at : at + n, : m.shape[1]] = m
            null[at : at + n] = nl
            at += n
        merged[name] = (mat, null)
    return build(merged, total)


def parse_blocks(whole: bytes, start: int, stop: int, parse: Any) -> list[AttemptsTable | tuple[int, int]]:
    """Tables for runs of blocks the fast path took, ``(pos, end)`` byte ranges for the others.

    ``whole[start:stop]`` is whole lines and ``whole`` has 16 bytes of padding after ``stop``.
    """
    out: list[AttemptsTable | tuple[int, int]] = []
    run: list[tuple[dict[str, tuple[U64, B]], int]] = []
    pos = start
    while pos < stop:
        cut = whole.rfind(b"\n", pos, min(stop, pos + BLOCK_BYTES))
        end = stop if cut < 0 or pos + BLOCK_BYTES >= stop else cut + 1
        got = parse(whole, pos, end) if whole.find(b"\n\n", pos, end) < 0 and whole[pos] != 10 else None
        if got is None:
            if run:
                out.append(_merge(run))
                run = []
            out.append((pos, end))
        else:
            run.append(got)
        pos = end
    if run:
        out.append(_merge(run))
    return out


# ------------------------------------------------------------------------------------- CSV


def csv_parser(header: list[str], crlf: bool) -> Any:
    """A block parser for CSV lines with this header, or None if the header lacks required columns."""
    if not set(header) >= REQUIRED_COLUMNS:
        return None

    def parse(whole: bytes, pos: int, end: int) -> tuple[dict[str, tuple[U64, B]], int] | None:
        if whole.find(b'"', pos, end) >= 0 or whole.find(b"\0", pos, end) >= 0:  # quoted, or a NUL (padding)
            return None
        return _csv_columns(whole, pos, end, header, crlf)

    return parse


def fast_csv_chunk(buf: bytes, header: list[str]) -> AttemptsTable | None:
    """One buffer of whole CSV lines (no header), entirely by the fast path, or None."""
    parse = csv_parser(header, b"\r" in buf)
    got = None if parse is None else parse(buf + b"\0" * 16, 0, len(buf))
    return None if got is None else build(*got)


def _csv_columns(
    whole: bytes, pos: int, end: int, header: list[str], crlf: bool
) -> tuple[dict[str, tuple[U64, B]], int] | None:
    arr, nl, line_start = _lines(whole, pos, end)
    n = nl.shape[0]
    nf = len(header)
    commas = np.flatnonzero(arr[: end - pos] == 44)
    if not _rows_in_lines(commas, line_start, nl, nf - 1):
        return None
    bounds = np.empty((nf + 1, n), np.int64)  # one contiguous row per field boundary
    bounds[0] = line_start
    bounds[1:nf] = commas.reshape(n, nf - 1).T
    bounds[nf] = nl
    columns: dict[str, tuple[U64, B]] = {}
    for j, name in enumerate(header):
        if name not in FLAT_COLUMNS:
            continue
        vs, ve = bounds[j] + 1, bounds[j + 1]
        if crlf and j == nf - 1:
            ve = ve - ((arr[ve - 1] == 13) & (ve > vs))
        vs = vs + ((arr[vs] == 39) & (ve > vs))  # a text guarded by a leading quote (engine/csv_cells.py)
        columns[name] = (gather(arr, vs, ve), ve == vs)
    return columns, n
