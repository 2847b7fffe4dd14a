"""Named baselines of a task besides its expert reference (docs/metrics.md, Baselines).

A task may have, on each GPU:

- ``eager``, ``compile``, ``compile_ro``, ``graph``: its PyTorch equivalent run eagerly, through
  ``torch.compile`` (default mode and ``mode="reduce-overhead"``) and as a CUDA Graph replay of the eager call;
- ``vendor``: a vendor library doing the same work (cuBLASLt, cuDNN attention...), where the task declares one;
- ``roofline``: the least time the task's declared work (input.json ``work.flop`` and ``work.bytes``) can
  take at this GPU's measured ceilings (host/ceilings.py); a candidate's "speedup" against it is the
  fraction of the roofline it reaches.

The PyTorch equivalent is declared by the task. A bundled task names a small Python file of the corpus
(``_torch/<family>.py``) and the arguments that give it the inputs and shapes its harness times, in
input.json::

    "baselines": {"torch": {"module": "_torch/softmax.py", "args": {"rows": 16384, "cols": 4096,
                  "dtype": "float32"}, "vendor": null}}

A kernelbench release instance needs no declaration: its problem.py is a PyTorch program already. The
module defines ``Model``, ``get_inputs`` and ``get_init_inputs`` (both called with the declared args), and
``VendorModel`` where ``vendor`` names a library. baselines_driver.py times them on the GPU; the times are
stored once per GPU signature (``BaselineSet``), beside the reference's (baselines.py): in the task folder
for a bundled task (``baselines/named/<slug>.json``), in the user cache for the release.

Speedups against a named baseline are ratios of medians from different timing stages: the baseline's stored
median over the attempt's candidate median (speedup_against). Nothing here runs anything on a GPU.
"""

from __future__ import annotations

import hashlib
import json
import os
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from beavertui.engine.corpus import families
from beavertui.engine.corpus.task import Task
from beavertui.engine.errors import BeaverError
from beavertui.engine.fileio import parse_json, write_atomic
from beavertui.engine.host import ceilings as ceilings_mod
from beavertui.engine.paths import cache_dir
from beavertui.engine.session.events import BASELINE_NAMES, BaselineTime, GpuSignature
from beavertui.engine.timing.samples import stats

#: Every named baseline, in the order tables show them.
NAMES: tuple[str, ...] = BASELINE_NAMES
#: The ones the driver times from the PyTorch equivalent (``vendor`` too, where declared).
TORCH_NAMES: tuple[str, ...] = ("eager", "compile", "compile_ro", "graph")
#: What each is, in words (tables, panes, docs).
TITLES: dict[str, str] = {
    "reference": "the task's expert reference",
    "eager": "PyTorch eager",
    "compile": "torch.compile, default mode",
    "compile_ro": 'torch.compile, mode="reduce-overhead"',
    "graph": "CUDA Graph replay of the eager call",
    "vendor": "vendor library",
    "roofline": "roofline: declared work at the GPU's measured ceilings",
}
#: Short column headings.
SHORT: dict[str, str] = {
    "reference": "ref",
    "eager": "eager",
    "compile": "compile",
    "compile_ro": "compile-ro",
    "graph": "graph",
    "vendor": "vendor",
    "roofline": "roofline",
}
#: The timing method of the driver per family style: kernelbench synchronises before every timed call (its
#: family's driver does), the bundled tasks' in-process timing queues the timed call behind the L2 flush.
METHODS: dict[str, str] = {"kernelbench": "torch_events_l2flush", "native": "torch_events_l2flush_queued"}

#: Argument values a declaration may give (JSON scalars).
ArgValue = int | float | str | bool


class TorchDeclaration(BaseModel):
    """input.json ``baselines.torch``: the task's PyTorch equivalent."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    module: str
    """The Python file, relative to the corpus root (bundled tasks: ``_torch/<family>.py``)."""
    args: dict[str, ArgValue] = Field(default_factory=dict)
    """Keyword arguments of its ``get_inputs``, ``get_init_inputs`` (the harness's timing shape and type)."""
    vendor: str | None = None
    """The vendor library its ``VendorModel`` calls (e.g. ``cuBLASLt``); None: no vendor baseline."""
    eager_library: str | None = None
    """The library the eager call itself runs, where it is a vendor's (e.g. ``cuSPARSE``), for the tables."""


class Declaration(BaseModel):
    """input.json ``baselines``."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    torch: TorchDeclaration | None = None


@dataclass(frozen=True)
class Equivalent:
    """A task's PyTorch equivalent, resolved: what the driver loads and how it times it."""

    module: Path
    args: Mapping[str, ArgValue]
    style: str
    """``native`` or ``kernelbench`` (METHODS)."""
    vendor: str | None
    eager_library: str | None

    @property
    def method(self) -> str:
        return METHODS[self.style]

    def digest(self) -> str:
        """What decides the driver's measurement: the module's text, the args and the style."""
        h = hashlib.sha256(self.module.read_bytes())
        h.update(json.dumps({"args": dict(self.args), "style": self.style, "vendor": self.vendor},
                            sort_keys=True).encode())  # fmt: skip
        return h.hexdigest()[:16]

    def share_key(self) -> str:
        """Two tasks with the same key time the very same thing (several tasks share one equivalent)."""
        return self.digest()


def declaration(task: Task) -> Declaration:
    """A bundled task's declaration from its input.json (an empty one when it declares none). Raises
    BeaverError with one line for a malformed one."""
    if task.layout != "native":
        return Declaration()
    p = task.root / "input.json"
    try:
        doc = parse_json(p.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise BeaverError(f"{task.id}: input.json unreadable: {exc}") from None
    block = doc.get("baselines") if isinstance(doc, dict) else None
    if block is None:
        return Declaration()
    try:
        return Declaration.model_validate(block)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(x) for x in first["loc"])
        raise BeaverError(f"{task.id}: input.json baselines.{where}: {first['msg']}") from None


def equivalent(task: Task) -> Equivalent | None:
    """The task's PyTorch equivalent, or None (why_none says why)."""
    if task.layout != "native":
        problem = families.family_of(task).torch_equivalent(task)
        return Equivalent(problem, {}, "kernelbench", None, None) if problem is not None else None
    decl = declaration(task).torch
    if decl is None:
        return None
    module = (task.corpus_root / decl.module).resolve()
    if not module.is_relative_to(task.corpus_root.resolve()):
        raise BeaverError(
            f"{task.id}: input.json baselines.torch.module {decl.module!r} is outside the corpus"
        )
    if not module.is_file():
        raise BeaverError(f"{task.id}: input.json baselines.torch.module {decl.module!r}: no such file")
    return Equivalent(module, dict(decl.args), "native", decl.vendor, decl.eager_library)


def why_none(task: Task) -> str:
    """Why a task has no PyTorch baselines (for tables)."""
    if task.layout == "native":
        return "no PyTorch equivalent declared (input.json baselines.torch)"
    return families.family_of(task).why_no_torch_equivalent(task)


# ------------------------------------------------------------------ stored times


class Measured(BaseModel):
    """One named baseline as the driver measured it (or why it could not)."""

    model_config = ConfigDict(extra="ignore")

    name: str
    median_ms: float | None = None
    """Median of the samples, milliseconds; None when it failed."""
    cv: float | None = None
    """Coefficient of variation of the samples (fraction)."""
    samples: list[float] = Field(default_factory=list)
    """Every timed call, milliseconds."""
    error: str | None = None
    """Why it has no time (one line: torch.compile failed, capture failed, out of memory...)."""
    library: str | None = None
    """The library it runs, where that is a vendor's."""
    replays: str | None = None
    """``graph`` only: the class of the equivalent its CUDA Graph captured where that is not ``Model``
    (``GraphModel``, the equivalent's capturable form, its output checked equal to Model's before timing);
    None: the eager call itself (and every set stored before this field)."""
    note: str | None = None
    """What the replayed form computes (the first line of its docstring), where ``replays`` is set."""

    def replay_note(self) -> str:
        """One line saying that a graph time replays the capturable form, not the eager call; "" otherwise."""
        if not self.replays:
            return ""
        what = f": {self.note}" if self.note else ""
        return (
            f"replays {self.replays}, the equivalent's capturable form checked equal to Model's output{what}"
        )


class BaselineSet(BaseModel):
    """A task's named baselines on one GPU signature."""

    model_config = ConfigDict(extra="ignore")

    task_id: str
    gpu: GpuSignature
    method: str
    """How the PyTorch variants were timed (METHODS)."""
    equivalent_hash: str
    """Equivalent.digest of what was timed; a stored set holds only while it matches."""
    times: list[Measured] = Field(default_factory=list)
    torch: str | None = None
    """torch.__version__ of the driver."""
    trials: int = 0
    """Timed calls per variant."""
    warmup: int = 0
    """Untimed calls per variant first (torch.compile's compilation among them)."""
    flush_bytes: int = 0
    """Bytes written to flush the L2 before each timed call."""
    measured_at: float = Field(default_factory=time.time)
    measured_for: str = ""
    """The task the driver ran for (another task with the same equivalent reuses it)."""
    copy_gbps: float | None = None
    """The GPU's measured copy bandwidth when the set was recorded, GB/s (host/ceilings.py), for the roofline."""
    bf16_tflops: float | None = None
    """Its measured bf16 matrix-product rate then, TFLOP/s."""
    one_at_a_time: str | None = None
    """Why the variants were warmed up and timed one at a time, each released before the next and its trials
    in a row (its estimated GPU memory with every variant held exceeded the room given); None: side by side,
    the trials interleaved."""

    def ceilings(self) -> ceilings_mod.Ceilings | None:
        """The ceilings recorded with the set (None: none were)."""
        if self.copy_gbps is None and self.bf16_tflops is None:
            return None
        return ceilings_mod.Ceilings(gpu=self.gpu, copy_gbps=self.copy_gbps, bf16_tflops=self.bf16_tflops)

    def time_of(self, name: str) -> Measured | None:
        return next((m for m in self.times if m.name == name), None)


def path_for(task: Task, slug: str, cache: Path | None = None) -> Path:
    """Where ``task``'s named baselines on GPU ``slug`` live: the task folder for a writable bundled task,
    else the user cache."""
    if task.layout == "native" and os.access(task.root, os.W_OK):
        return task.root / "baselines" / "named" / f"{slug}.json"
    return (cache or cache_dir()) / "baselines" / task.id / "named" / f"{slug}.json"


def _read(p: Path) -> BaselineSet | None:
    if not p.is_file():
        return None
    try:
        return BaselineSet.model_validate_json(p.read_text(encoding="utf-8"))
    except (OSError, ValidationError):
        return None


def load(task: Task, gpu: GpuSignature, cache: Path | None = None) -> BaselineSet | None:
    """The stored set of ``task`` on ``gpu`` while it matches the task's equivalent; else None."""
    try:
        eq = equivalent(task)
    except BeaverError:
        return None
    if eq is None:
        return None
    digest = eq.digest()
    for p in (task.root / "baselines" / "named" / f"{gpu.slug}.json", path_for(task, gpu.slug, cache)):
        s = _read(p)
        if s is not None and s.gpu.slug == gpu.slug and s.equivalent_hash == digest:
            return s
    return None


def why_not_loaded(task: Task, gpu: GpuSignature, cache: Path | None = None) -> str:
    """Why ``load`` finds no set of ``task`` on ``gpu`` (one line; "" when it finds one)."""
    try:
        eq = equivalent(task)
    except BeaverError as exc:
        return str(exc)
    if eq is None:
        return why_none(task)
    digest = eq.digest()
    stale = False
    for p in (task.root / "baselines" / "named" / f"{gpu.slug}.json", path_for(task, gpu.slug, cache)):
        s = _read(p)
        if s is not None and s.gpu.slug == gpu.slug:
            if s.equivalent_hash == digest:
                return ""
            stale = True
    if stale:
        return (
            "the set stored for this GPU timed another version of the PyTorch equivalent (its module, arguments "
            "or form changed since): corpus baselines times it again"
        )
    return "none stored for this GPU (corpus baselines times it)"


def save(task: Task, found: BaselineSet, cache: Path | None = None) -> Path:
    """Store ``found`` as ``task``'s; returns where."""
    p = path_for(task, found.gpu.slug, cache)
    p.parent.mkdir(parents=True, exist_ok=True)
    write_atomic(p, found.model_dump_json(indent=2) + "\n")
    return p


# ------------------------------------------------------------------ the driver's result


def _graph_form(doc: Mapping[str, Any]) -> tuple[str | None, str | None]:
    """(replays, note) of the graph variant from the driver's ``graph_replays``; (None, None): it replays Model."""
    g = doc.get("graph_replays")
    if not isinstance(g, Mapping) or not g.get("class"):
        return None, None
    return str(g["class"])[:100], str(g.get("doc") or "")[:300] or None


def from_driver(
    task: Task, eq: Equivalent, gpu: GpuSignature, doc: Mapping[str, Any],
    measured: ceilings_mod.Ceilings | None = None,
) -> BaselineSet:  # fmt: skip
    """The BaselineSet of a driver's result object (baselines_driver.py). Raises BeaverError with the
    driver's one-line reason when it timed nothing (torch missing, the module failed to load)."""
    if "error" in doc and not doc.get("variants"):
        raise BeaverError(f"{task.id}: {doc['error']}")
    times = []
    variants = doc.get("variants")
    if not isinstance(variants, Mapping):
        raise BeaverError(f"{task.id}: the baselines driver's result has no variants")
    for name in (*TORCH_NAMES, "vendor"):
        v = variants.get(name)
        if not isinstance(v, Mapping):
            continue
        samples = [float(x) for x in v.get("samples_ms") or []]
        err = v.get("error")
        lib = eq.vendor if name == "vendor" else eq.eager_library if name in ("eager", "graph") else None
        replays, note = _graph_form(doc) if name == "graph" else (None, None)
        if samples and not err:
            med, cv = stats(samples)
            times.append(
                Measured(
                    name=name, median_ms=med, cv=cv, samples=samples, library=lib, replays=replays, note=note
                )
            )
        else:
            times.append(
                Measured(
                    name=name, error=str(err or "no samples")[:300], library=lib, replays=replays, note=note
                )
            )
    return BaselineSet(
        task_id=task.id, gpu=gpu, method=eq.method, equivalent_hash=eq.digest(), times=times,
        torch=str(doc.get("torch") or "") or None, trials=int(doc.get("trials") or 0),
        warmup=int(doc.get("warmup") or 0), flush_bytes=int(doc.get("flush_bytes") or 0), measured_for=task.id,
        copy_gbps=measured.copy_gbps if measured else None, bf16_tflops=measured.bf16_tflops if measured else None,
        one_at_a_time=str(doc["one_at_a_time"])[:300] if doc.get("one_at_a_time") else None,
    )  # fmt: skip


# ------------------------------------------------------------------ what a session carries


def roofline_ms(task: Task, measured: ceilings_mod.Ceilings | None) -> float | None:
    """The least time of one call of ``task``'s declared work at ``measured`` ceilings (None: no work
    declared or no ceilings)."""
    if measured is None:
        return None
    return ceilings_mod.floor_ms(measured, task.work_flop, task.work_bytes)


def roofline_note(task: Task, measured: ceilings_mod.Ceilings) -> str:
    parts = []
    if task.work_bytes and measured.copy_gbps:
        parts.append(f"{task.work_bytes:.4g} B at {measured.copy_gbps:g} GB/s (device copy)")
    if task.work_flop and measured.bf16_tflops:
        parts.append(f"{task.work_flop:.4g} FLOP at {measured.bf16_tflops:g} TFLOP/s (bf16 matrix product)")
    return "the larger of " + " and ".join(parts) if len(parts) > 1 else (parts[0] if parts else "")


def ceilings_of(
    gpu: GpuSignature, found: BaselineSet | None, cache: Path | None = None
) -> ceilings_mod.Ceilings | None:
    """This GPU's ceilings: those stored in the cache, else those recorded with ``found``."""
    return ceilings_mod.cached(gpu, cache) or (found.ceilings() if found is not None else None)


def header_times(
    task: Task, gpu: GpuSignature | None, cache: Path | None = None, found: BaselineSet | None = None
) -> list[BaselineTime]:
    """The named baselines a session of ``task`` on ``gpu`` records in its header: every stored time that
    was measured, then the roofline where the GPU's ceilings are stored. Empty without a GPU."""
    if gpu is None:
        return []
    out: list[BaselineTime] = []
    s = found if found is not None else load(task, gpu, cache)
    if s is not None:
        for m in s.times:
            if m.median_ms is None or m.median_ms <= 0:
                continue
            what = [TITLES[m.name]]
            if m.replays:
                what.append(m.replay_note())
            if m.library:
                what.append(m.library)
            if s.torch:
                what.append(f"torch {s.torch}")
            what.append(f"median of {len(m.samples)} calls, CV {100 * (m.cv or 0):.1f}%")
            out.append(
                BaselineTime(name=m.name, median_ms=m.median_ms, method=s.method, note=", ".join(what))
            )
    measured = ceilings_of(gpu, s, cache)
    floor = roofline_ms(task, measured)
    if floor is not None and floor > 0 and measured is not None:
        out.append(BaselineTime(name="roofline", median_ms=floor, method="roofline",
                                note=roofline_note(task, measured)))  # fmt: skip
    return out


def speedup_against(baseline_ms: float, candidate_ms: float | None) -> float | None:
    """A candidate's speedup against a baseline: the baseline's median over the candidate's (the roofline's:
    the fraction of the roofline reached). None without a candidate time."""
    if candidate_ms is None or candidate_ms <= 0 or baseline_ms <= 0:
        return None
    return baseline_ms / candidate_ms


def speedups(times: Iterable[BaselineTime], candidate_ms: float | None) -> dict[str, float]:
    """Every named baseline's speedup for one candidate time (only those that can be computed)."""
    out: dict[str, float] = {}
    for b in times:
        s = speedup_against(b.median_ms, candidate_ms)
        if s is not None:
            out[b.name] = s
    return out


def check_name(name: str) -> str:
    """``name`` when it is ``reference`` or a named baseline; else BeaverError listing them."""
    if name == "reference" or name in NAMES:
        return name
    raise BeaverError(f"unknown baseline {name!r}: expected reference or one of {', '.join(NAMES)}")
