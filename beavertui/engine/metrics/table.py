"""The attempts table in memory: one numpy column per key of docs/format.md.

Metrics run over a million attempts in seconds only if no Python loop touches a row, so the table is
columnar: numbers are numpy arrays, strings are integer codes into a tuple of labels (-1 = null), and the
protocol object is one code into a tuple of ``ProtocolKey``. This module holds the value types and the
conversion from plain rows; reading files lives in table_io.py. It computes no metric.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt

from beavertui.engine.judge.categories import BUILD_STAGE
from beavertui.engine.session.events import BASELINE_NAMES
from beavertui.engine.session.protocol import LEGACY_KEY_DEFAULTS, protocol_label

IntArray = npt.NDArray[np.int64]
BoolArray = npt.NDArray[np.bool_]
FloatArray = npt.NDArray[np.float64]

#: Keys of the protocol object every table must have, in the order the table writes them.
REQUIRED_PROTOCOL_FIELDS: tuple[str, ...] = ("method", "feedback", "history", "temperature", "gate", "budget")
#: Keys added later (protocol.py ``Protocol.key``); a table without them gets LEGACY_KEY_DEFAULTS.
EXTRA_PROTOCOL_FIELDS: tuple[str, ...] = tuple(LEGACY_KEY_DEFAULTS)
PROTOCOL_FIELDS: tuple[str, ...] = REQUIRED_PROTOCOL_FIELDS + EXTRA_PROTOCOL_FIELDS

#: Top-level string columns (besides the protocol). ``family``, ``label`` and ``infra_error`` extend
#: the basic table: the task's family and broken-start label (for breakdowns) and whether an infrastructure
#: failure hit the attempt (such attempts are counted but never scored). ``flagged``: the attempt's verdict
#: carried an anti-cheat flag (engine/judge/anticheat.py); a flagged success is counted apart, never as a
#: success. ``unstable_timing``: the attempt's speedup comes from a timing whose CV stayed above the 3% rule
#: (a success so timed still counts; the metrics say how many there are).
#: ``corpus``: the name of the corpus folder the task came from (part of every group key).
STRING_COLUMNS: tuple[str, ...] = (
    "run_id",
    "model",
    "task_id",
    "category",
    "stop_reason",
    "family",
    "label",
    "observed_label",
    "corpus",
    "baselines",
)
INT_COLUMNS: tuple[str, ...] = ("sample", "iteration")
BOOL_COLUMNS: tuple[str, ...] = (
    "correct",
    "self_source",
    "infra_error",
    "flagged",
    "unstable_timing",
    "compiled",
)
#: Bounds of the 95% bootstrap interval of the speedup from the attempt's recorded timing samples
#: (speedup_ci.py); null when the attempt has no samples (e.g. a table imported from elsewhere).
INTERVAL_COLUMNS: tuple[str, ...] = ("speedup_lo", "speedup_hi")
#: The attempt's speedup against each named baseline of its session's header (docs/metrics.md, Baselines):
#: the baseline's stored median over the attempt's candidate median (``speedup_roofline``: the fraction of
#: the roofline reached); null where the attempt was not timed or the header has no such baseline. The string
#: column ``baselines`` names the ones the header had (``+``-joined), so that an attempt of a task without a
#: baseline is told from one that was not timed.
BASELINE_COLUMNS: tuple[str, ...] = tuple(f"speedup_{n}" for n in BASELINE_NAMES)

#: Column order of the flat (CSV) form; the JSON form nests the protocol fields under ``protocol``.
FLAT_COLUMNS: tuple[str, ...] = (
    "run_id",
    "model",
    "task_id",
    *(f"protocol.{f}" for f in PROTOCOL_FIELDS),
    "protocol.gate_baseline",
    "sample",
    "iteration",
    "category",
    "compiled",
    "correct",
    "speedup",
    "speedup_lo",
    "speedup_hi",
    "stop_reason",
    "self_source",
    "family",
    "label",
    "observed_label",
    "corpus",
    "infra_error",
    "flagged",
    "unstable_timing",
    "baselines",
    *BASELINE_COLUMNS,
)
#: Columns a table must have; the others default (null, false, or LEGACY_KEY_DEFAULTS).
REQUIRED_COLUMNS: frozenset[str] = frozenset(FLAT_COLUMNS) - {
    "family",
    "label",
    "observed_label",
    "corpus",
    "infra_error",
    "flagged",
    "unstable_timing",
    "compiled",
    "baselines",
    *BASELINE_COLUMNS,
    *INTERVAL_COLUMNS,
    *(f"protocol.{f}" for f in EXTRA_PROTOCOL_FIELDS),
    "protocol.gate_baseline",
}


def _flag(v: Any) -> bool:
    if isinstance(v, str):
        return v.strip().lower() in ("true", "1", "yes")
    return bool(v)


@dataclass(frozen=True, order=True)
class ProtocolKey:
    """The protocol object of the attempts table: every protocol setting that changes behaviour."""

    method: str
    feedback: str
    history: int
    temperature: float
    gate: float
    budget: int
    gate_mode: str = "in_loop"
    continue_after_pass: bool = False
    stagnation: str = "stop"
    feedback_components: str = "all"
    sanitize: str = "on_failure"
    planning: str = "implicit"
    planner: str = "self"
    summariser: str = "self"
    few_shot: str = "none"
    gate_baseline: str = "reference"
    """What the gate p applies to (Protocol.gate_baseline); written only when not the reference."""

    def as_dict(self) -> dict[str, Any]:
        out = {f: getattr(self, f) for f in PROTOCOL_FIELDS}
        if self.gate_baseline != "reference":
            out["gate_baseline"] = self.gate_baseline
        return out

    def short(self) -> str:
        """Compact label, e.g. ``iterative K5 L3 H4 T0.7 p0.7`` (non-default settings appended)."""
        return protocol_label(self.as_dict())

    @property
    def in_loop(self) -> bool:
        return self.gate_mode == "in_loop"

    @staticmethod
    def from_mapping(m: Mapping[str, Any]) -> ProtocolKey:
        def extra(name: str) -> Any:
            v = m.get(name)
            return LEGACY_KEY_DEFAULTS[name] if v is None or v == "" or v == "null" else v

        try:
            gate_mode = str(extra("gate_mode"))
            if gate_mode not in ("after_run", "in_loop"):
                raise ValueError(f"gate_mode must be after_run or in_loop, not {gate_mode!r}")
            return ProtocolKey(
                method=str(m["method"]),
                feedback=str(m["feedback"]),
                history=int(m["history"]),
                temperature=float(m["temperature"]),
                gate=float(m["gate"]),
                budget=int(m["budget"]),
                gate_mode=gate_mode,
                continue_after_pass=_flag(extra("continue_after_pass")),
                stagnation=str(extra("stagnation")),
                feedback_components=str(extra("feedback_components")),
                sanitize=str(extra("sanitize")),
                planning=str(extra("planning")),
                planner=str(extra("planner")),
                summariser=str(extra("summariser")),
                few_shot=str(extra("few_shot")),
                gate_baseline=str(m.get("gate_baseline") or "reference"),
            )
        except (KeyError, TypeError, ValueError) as exc:
            raise ValueError(f"bad protocol object {dict(m)!r}: {exc}") from None


@dataclass(frozen=True)
class Codes:
    """A string column: ``labels[codes[i]]`` is row i's value; code -1 is null."""

    codes: IntArray
    labels: tuple[str, ...]

    def values(self) -> list[str | None]:
        return [self.labels[c] if c >= 0 else None for c in self.codes.tolist()]


@dataclass(frozen=True)
class AttemptsTable:
    """Every attempt, column by column (docs/metrics.md's attempts table)."""

    strings: Mapping[str, Codes]
    """run_id, model, task_id, category, stop_reason, family, label, corpus."""
    protocol: IntArray
    """Code into ``protocols`` per row."""
    protocols: tuple[ProtocolKey, ...]
    sample: IntArray
    iteration: IntArray
    correct: BoolArray
    speedup: FloatArray
    """NaN where null."""
    self_source: BoolArray
    infra_error: BoolArray
    flagged: BoolArray
    """The verdict carried an anti-cheat flag (its success, if any, is counted apart)."""
    speedup_lo: FloatArray | None = None
    """Lower bound of the speedup's 95% bootstrap interval; NaN where no samples were recorded."""
    speedup_hi: FloatArray | None = None
    """Upper bound of it; NaN where no samples were recorded (None: the column is absent, all NaN)."""
    unstable_timing: BoolArray | None = None
    """The speedup comes from a timing above the CV rule (None: the column is absent, all false)."""
    compiled: BoolArray | None = None
    """The attempt's build succeeded within its time limit (None: the column is absent; ``built()`` then
    derives it from the category, which cannot tell a build that hit its time limit from a run that did)."""
    against: Mapping[str, FloatArray] = field(default_factory=dict)
    """Baseline name -> the speedup against it (BASELINE_COLUMNS; NaN where null), for the names some row has."""

    def has_baseline(self, name: str) -> BoolArray:
        """Rows whose session header had the named baseline (``baselines`` column)."""
        col = self.col("baselines")
        known = np.array([name in label.split("+") for label in col.labels] + [False], np.bool_)
        return known[col.codes]

    def with_gate_baselines(self) -> AttemptsTable:
        """The rows of protocols whose gate applies to a named baseline (ProtocolKey.gate_baseline) with
        their speedup the one against it (null where the task has none: p = 0 only); the others as they are."""
        named = [i for i, p in enumerate(self.protocols) if p.gate_baseline != "reference"]
        if not named:
            return self
        speed = self.speedup.copy()
        lo, hi = self.interval("speedup_lo").copy(), self.interval("speedup_hi").copy()
        for i in named:
            rows = self.protocol == i
            col = self.against.get(self.protocols[i].gate_baseline, np.full(len(self), np.nan))
            speed[rows], lo[rows], hi[rows] = col[rows], np.nan, np.nan
        return dataclasses.replace(self, speedup=speed, speedup_lo=lo, speedup_hi=hi)

    def against_baseline(self, name: str) -> AttemptsTable:
        """The rows that have the named baseline, their speedup the one against it (no interval: the
        baseline's samples are not the attempt's timing's)."""
        rows = self.take(self.has_baseline(name))
        speed = rows.against.get(name, np.full(len(rows), np.nan))
        return dataclasses.replace(rows, speedup=speed, speedup_lo=None, speedup_hi=None)

    def built(self) -> BoolArray:
        """``compiled`` as an array; where the column is absent, the category is not a build-stage one."""
        if self.compiled is not None:
            return self.compiled
        cat = self.col("category")
        not_built = np.array(
            [c in BUILD_STAGE or c == "infrastructure" for c in cat.labels] + [True], np.bool_
        )
        return ~not_built[cat.codes]

    def unstable(self) -> BoolArray:
        """``unstable_timing`` as an array (false where absent)."""
        return np.zeros(len(self), np.bool_) if self.unstable_timing is None else self.unstable_timing

    def interval(self, name: str) -> FloatArray:
        """``speedup_lo`` or ``speedup_hi`` as an array (NaN where absent)."""
        v = self.speedup_lo if name == "speedup_lo" else self.speedup_hi
        return np.full(len(self), np.nan) if v is None else v

    def __len__(self) -> int:
        return int(self.sample.shape[0])

    def col(self, name: str) -> Codes:
        return self.strings[name]

    def take(self, index: npt.NDArray[Any]) -> AttemptsTable:
        """Rows selected by a boolean mask or an index array (labels kept)."""
        return AttemptsTable(
            strings={k: Codes(v.codes[index], v.labels) for k, v in self.strings.items()},
            protocol=self.protocol[index],
            protocols=self.protocols,
            sample=self.sample[index],
            iteration=self.iteration[index],
            correct=self.correct[index],
            speedup=self.speedup[index],
            self_source=self.self_source[index],
            infra_error=self.infra_error[index],
            flagged=self.flagged[index],
            speedup_lo=None if self.speedup_lo is None else self.speedup_lo[index],
            speedup_hi=None if self.speedup_hi is None else self.speedup_hi[index],
            unstable_timing=None if self.unstable_timing is None else self.unstable_timing[index],
            compiled=None if self.compiled is None else self.compiled[index],
            against={k: v[index] for k, v in self.against.items()},
        )

    def with_self_source(self, self_source: BoolArray) -> AttemptsTable:
        return AttemptsTable(
            strings=self.strings,
            protocol=self.protocol,
            protocols=self.protocols,
            sample=self.sample,
            iteration=self.iteration,
            correct=self.correct,
            speedup=self.speedup,
            self_source=self_source,
            infra_error=self.infra_error,
            flagged=self.flagged,
            speedup_lo=self.speedup_lo,
            speedup_hi=self.speedup_hi,
            unstable_timing=self.unstable_timing,
            compiled=self.compiled,
            against=self.against,
        )

    def rows(self) -> Iterable[dict[str, Any]]:
        """Rows as plain dicts in docs/metrics.md's JSON shape (slow; for export and tests)."""
        strings = {k: v.values() for k, v in self.strings.items()}
        sample = self.sample.tolist()
        iteration = self.iteration.tolist()
        correct = self.correct.tolist()
        speedup = self.speedup.tolist()
        self_source = self.self_source.tolist()
        infra = self.infra_error.tolist()
        flagged = self.flagged.tolist()
        unstable = self.unstable().tolist()
        compiled = self.built().tolist()
        lo = self.interval("speedup_lo").tolist()
        hi = self.interval("speedup_hi").tolist()
        protocol = self.protocol.tolist()
        against = {f"speedup_{k}": v.tolist() for k, v in self.against.items()}
        for i in range(len(self)):
            extra: dict[str, Any] = {}
            if strings["baselines"][i] is not None:
                extra["baselines"] = strings["baselines"][i]
                for k, v in against.items():
                    extra[k] = None if v[i] != v[i] else v[i]
            yield {
                "run_id": strings["run_id"][i],
                "model": strings["model"][i],
                "task_id": strings["task_id"][i],
                "protocol": self.protocols[protocol[i]].as_dict(),
                "sample": sample[i],
                "iteration": iteration[i],
                "category": strings["category"][i],
                "compiled": compiled[i],
                "correct": correct[i],
                "speedup": None if speedup[i] != speedup[i] else speedup[i],
                "speedup_lo": None if lo[i] != lo[i] else lo[i],
                "speedup_hi": None if hi[i] != hi[i] else hi[i],
                "stop_reason": strings["stop_reason"][i],
                "self_source": self_source[i],
                "family": strings["family"][i],
                "label": strings["label"][i],
                "observed_label": strings["observed_label"][i],
                "corpus": strings["corpus"][i],
                "infra_error": infra[i],
                "flagged": flagged[i],
                "unstable_timing": unstable[i],
                **extra,
            }


def encode(values: Sequence[str | None]) -> Codes:
    """Dictionary-encode a list of strings (None -> -1), labels in first-seen order."""
    index: dict[str, int] = {}
    codes = np.fromiter(
        (-1 if v is None else index.setdefault(v, len(index)) for v in values),
        dtype=np.int64,
        count=len(values),
    )
    return Codes(codes, tuple(index))


def _bool(v: Any, name: str) -> bool:
    if isinstance(v, bool):
        return v
    if v in (None, ""):
        return False
    if isinstance(v, str):
        low = v.strip().lower()
        if low in ("true", "1", "yes"):
            return True
        if low in ("false", "0", "no"):
            return False
    if isinstance(v, int | float):
        return bool(v)
    raise ValueError(f"{name}: not a boolean: {v!r}")


def _float_or_nan(v: Any) -> float:
    """A speedup: NaN stands for null inside the table, so a NaN or infinity in the input is refused."""
    if v is None or v == "" or v == "null":
        return float("nan")
    x = float(v)
    if not math.isfinite(x):
        raise ValueError(f"speedup {v!r} is not a finite number")
    return x


def _str_or_none(v: Any) -> str | None:
    if v is None or v == "":
        return None
    return str(v)


def from_rows(rows: Iterable[Mapping[str, Any]]) -> AttemptsTable:
    """Build a table from dict rows, nested (``protocol`` object) or flat (``protocol.method`` ...).

    Raises ValueError naming the first bad row.
    """
    cols: dict[str, list[Any]] = {name: [] for name in (*STRING_COLUMNS, *INT_COLUMNS, *BOOL_COLUMNS)}
    speed: list[float] = []
    compiled: list[bool | None] = []
    bounds: dict[str, list[float]] = {name: [] for name in (*INTERVAL_COLUMNS, *BASELINE_COLUMNS)}
    protos: list[ProtocolKey] = []
    for n, row in enumerate(rows, 1):
        if not isinstance(row, Mapping):
            raise ValueError(f"row {n}: expected a JSON object, got {type(row).__name__}")
        try:
            proto = row.get("protocol")
            if isinstance(proto, Mapping):
                protos.append(ProtocolKey.from_mapping(proto))
            else:
                flat = {f: row[f"protocol.{f}"] for f in REQUIRED_PROTOCOL_FIELDS}
                flat.update({f: row.get(f"protocol.{f}") for f in (*EXTRA_PROTOCOL_FIELDS, "gate_baseline")})
                protos.append(ProtocolKey.from_mapping(flat))
            for name in ("run_id", "model", "task_id", "category"):
                cols[name].append(str(row[name]))
            for name in ("stop_reason", "family", "label", "observed_label", "corpus", "baselines"):
                cols[name].append(_str_or_none(row.get(name)))
            for name in INT_COLUMNS:
                cols[name].append(int(row[name]))
            for name in ("correct", "self_source"):
                cols[name].append(_bool(row[name], name))
            cols["infra_error"].append(_bool(row.get("infra_error", False), "infra_error"))
            cols["flagged"].append(_bool(row.get("flagged", False), "flagged"))
            cols["unstable_timing"].append(_bool(row.get("unstable_timing", False), "unstable_timing"))
            built = row.get("compiled")
            compiled.append(None if built is None or built == "" else _bool(built, "compiled"))
            speed.append(_float_or_nan(row.get("speedup")))
            for name in (*INTERVAL_COLUMNS, *BASELINE_COLUMNS):
                bounds[name].append(_float_or_nan(row.get(name)))
        except KeyError as exc:
            raise ValueError(f"row {n}: missing key {exc.args[0]!r}") from None
        except (TypeError, ValueError) as exc:
            raise ValueError(f"row {n}: {exc}") from None
    index: dict[ProtocolKey, int] = {}
    proto_codes = np.fromiter((index.setdefault(p, len(index)) for p in protos), np.int64, len(protos))
    return AttemptsTable(
        strings={name: encode(cols[name]) for name in STRING_COLUMNS},
        protocol=proto_codes,
        protocols=tuple(index),
        sample=np.asarray(cols["sample"], dtype=np.int64),
        iteration=np.asarray(cols["iteration"], dtype=np.int64),
        correct=np.asarray(cols["correct"], dtype=np.bool_),
        speedup=np.asarray(speed, dtype=np.float64),
        self_source=np.asarray(cols["self_source"], dtype=np.bool_),
        infra_error=np.asarray(cols["infra_error"], dtype=np.bool_),
        flagged=np.asarray(cols["flagged"], dtype=np.bool_),
        speedup_lo=np.asarray(bounds["speedup_lo"], dtype=np.float64),
        speedup_hi=np.asarray(bounds["speedup_hi"], dtype=np.float64),
        unstable_timing=np.asarray(cols["unstable_timing"], dtype=np.bool_),
        compiled=_compiled_column(compiled, cols["category"]),
        against=against_columns(bounds),
    )


def against_columns(columns: Mapping[str, Sequence[float] | FloatArray]) -> dict[str, FloatArray]:
    """The ``against`` mapping of a table from its BASELINE_COLUMNS (only those with a value)."""
    out = {}
    for name, col in zip(BASELINE_NAMES, BASELINE_COLUMNS, strict=True):
        if col in columns:
            v = np.asarray(columns[col], dtype=np.float64)
            if not np.isnan(v).all():
                out[name] = v
    return out


def _compiled_column(values: Sequence[bool | None], categories: Sequence[str]) -> BoolArray | None:
    """The ``compiled`` column: None when no row has it; rows without it take the category's answer."""
    if all(v is None for v in values):
        return None
    return np.asarray(
        [
            v if v is not None else not (c in BUILD_STAGE or c == "infrastructure")
            for v, c in zip(values, categories, strict=True)
        ],
        dtype=np.bool_,
    )


def concat(tables: Sequence[AttemptsTable]) -> AttemptsTable:
    """Concatenate tables, merging their label dictionaries."""
    if not tables:
        return from_rows([])
    if len(tables) == 1:
        return tables[0]
    strings: dict[str, Codes] = {}
    for name in STRING_COLUMNS:
        labels: dict[str, int] = {}
        parts = []
        for t in tables:
            col = t.strings[name]
            remap = np.array([labels.setdefault(s, len(labels)) for s in col.labels] + [-1], dtype=np.int64)
            parts.append(remap[col.codes])  # code -1 indexes the trailing -1
        strings[name] = Codes(np.concatenate(parts), tuple(labels))
    pindex: dict[ProtocolKey, int] = {}
    pparts = []
    for t in tables:
        remap = np.array([pindex.setdefault(p, len(pindex)) for p in t.protocols], dtype=np.int64)
        pparts.append(remap[t.protocol] if len(t.protocols) else t.protocol)
    return AttemptsTable(
        strings=strings,
        protocol=np.concatenate(pparts),
        protocols=tuple(pindex),
        sample=np.concatenate([t.sample for t in tables]),
        iteration=np.concatenate([t.iteration for t in tables]),
        correct=np.concatenate([t.correct for t in tables]),
        speedup=np.concatenate([t.speedup for t in tables]),
        self_source=np.concatenate([t.self_source for t in tables]),
        infra_error=np.concatenate([t.infra_error for t in tables]),
        flagged=np.concatenate([t.flagged for t in tables]),
        speedup_lo=np.concatenate([t.interval("speedup_lo") for t in tables]),
        speedup_hi=np.concatenate([t.interval("speedup_hi") for t in tables]),
        unstable_timing=np.concatenate([t.unstable() for t in tables]),
        compiled=(
            None if all(t.compiled is None for t in tables) else np.concatenate([t.built() for t in tables])
        ),
        against={
            name: np.concatenate([t.against.get(name, np.full(len(t), np.nan)) for t in tables])
            for name in BASELINE_NAMES
            if any(name in t.against for t in tables)
        },
    )
