"""Speedup as shared/spec/timing.md defines it: interleaved reference/candidate runs, median, CV.

Three ways to get samples, always named in TimingResult.method: the native contract (the task's
benchmark_command prints ``BEAVER_TIME_MS <ms>`` per timed run), CUPTI kernel records injected into the
unmodified test command (``cupti``), or ncu's ``gpu__time_duration.sum`` (``ncu``) when CUPTI cannot be
used. The reference is built once per (reference, harness, toolkit) in a cached work dir. Baselines
are stored per GPU signature (baselines.py). This module never classifies.

Anti-cheat side of the native contract (anticheat.py): each timed run also prints ``BEAVER_HOST_MS`` (host
clock to a full device synchronisation), kept per sample in TimingResult but never used as a sample, for the
side-stream check against the reference timed in the same session. Every corpus harness checks the output
of its last timed launch against that launch's own fresh inputs and exits non-zero when it is wrong, so a
candidate benchmark run that fails after printing its samples is flagged ``cached_result``; one that fails
before any sample (right only at the correctness size) raises CandidateTimingFailed, a failure of the
candidate rather than of the machine. The flags travel in TimingResult.flags.
"""

from __future__ import annotations

import csv
import hashlib
import io
import re
import shlex
import shutil
import statistics
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from beavertui.engine.corpus.task import Task
from beavertui.engine.errors import BeaverError
from beavertui.engine.host.adapt import adapt_command
from beavertui.engine.host.gpu import nvcc_version
from beavertui.engine.judge import anticheat
from beavertui.engine.session.events import StageResult, TimingResult
from beavertui.engine.timing import cupti
from beavertui.engine.toolchain import stages as runner

#: One timed run's event time. ``BEAVER_HOST_MS`` lines (host time to a full device sync, anticheat.py)
#: are not samples: they only serve the side-stream check.
TIME_RE = re.compile(r"^BEAVER_TIME_MS\s+([0-9.eE+-]+)\s*$", re.M)
CV_LIMIT = 0.03
IMPLAUSIBLE = 10.0
#: Kernels of the framework around a Python harness (torch itself), not of the solution.
FRAMEWORK_KERNEL = re.compile(r"at::native::|at::cuda::|at_cuda_detail|c10::|\bvoid at::")


def stats(samples: list[float]) -> tuple[float, float]:
    """(median, coefficient of variation) of samples; CV is stdev/mean as a fraction."""
    if not samples:
        raise ValueError("no samples")
    med = statistics.median(samples)
    mean = statistics.fmean(samples)
    cv = statistics.stdev(samples) / mean if len(samples) > 1 and mean > 0 else 0.0
    return med, cv


def parse_times(log: str) -> list[float]:
    """Every ``BEAVER_TIME_MS`` value of a benchmark log, milliseconds."""
    out = []
    for m in TIME_RE.finditer(log):
        try:
            out.append(float(m.group(1)))
        except ValueError:
            continue
    return out


def parse_ncu_csv(text: str) -> list[tuple[str, float]]:
    """(kernel name, milliseconds) per profiled kernel of ``ncu --csv --print-units base`` output."""
    start = text.find('"ID"')
    if start < 0:
        return []
    rows = csv.DictReader(io.StringIO(text[start:]))
    out = []
    for row in rows:
        if row.get("Metric Name") != "gpu__time_duration.sum":
            continue
        try:
            value = float((row.get("Metric Value") or "").replace(",", ""))
        except ValueError:
            continue
        unit = (row.get("Metric Unit") or "ns").strip()
        scale = {"ns": 1e-6, "nsecond": 1e-6, "us": 1e-3, "usecond": 1e-3, "ms": 1.0, "msecond": 1.0}.get(
            unit, 1e-6
        )
        out.append((row.get("Kernel Name") or "?", value * scale))
    return out


_SANITIZER_WRAP = re.compile(
    r"\S*python3?\s+\S*run_sanitizer\.py\s+|\bcompute-sanitizer(?:\s+--?[\w-]+(?:[= ](?!\./)\S+)?)*\s+"
)


def timing_command(test_command: str) -> str:
    """The test command without a sanitizer wrapper (a harness that runs compute-sanitizer itself)."""
    return _SANITIZER_WRAP.sub("", test_command)


@dataclass(frozen=True)
class TimingConfig:
    """How many timed runs and where caches live."""

    rounds: int = 3
    """Interleaved (reference, candidate) rounds of the benchmark command (native contract)."""
    process_runs: int = 10
    """Runs of each side for process-level methods (cupti, ncu): one sample per run."""
    stage_s: float = 300.0
    """Time limit of one benchmark command, seconds."""
    cache: Path | None = None
    """Cache dir (reference builds, CUPTI library); default ~/.cache/beavertui."""
    method: str | None = None
    """Force ``beaver_time_ms``, ``cupti`` or ``ncu``; None picks the best available."""
    nvtx_range: str | None = None
    """ncu only: profile only kernels inside this NVTX push/pop range (``--nvtx --nvtx-include``)."""


def reference_key(task: Task) -> str:
    ref = task.reference() or ""
    h = hashlib.sha256(ref.encode())
    h.update(runner.harness_hash(task).encode())
    h.update((nvcc_version() or "").encode())
    return h.hexdigest()[:20]


def _refbuild_dir(task: Task, tcfg: TimingConfig) -> Path:
    """Where the reference build of this task, harness and toolkit is cached."""
    return (tcfg.cache or cupti.cache_dir()) / "refbuild" / f"{task.id[:60]}-{reference_key(task)}"


def reference_workdir(task: Task, config: runner.RunnerConfig, tcfg: TimingConfig) -> runner.WorkDir:
    """The reference built in its own work dir, cached per reference + harness + toolkit."""
    code = task.reference()
    if code is None:
        raise BeaverError(f"{task.id}: no reference solution to time against")
    final = _refbuild_dir(task, tcfg)
    root = final.parent
    if (final / ".beaver-built").is_file():
        return runner.WorkDir(path=final, task=task, manifest={}, links={})
    root.mkdir(parents=True, exist_ok=True)
    work = runner.prepare(task, code, root)
    result = runner.build(work, config)
    if result.rc != 0:
        runner.remove(work)
        last = [ln for ln in result.log.splitlines() if ln.strip()][-1:] or ["(no output)"]
        raise BeaverError(f"{task.id}: the reference does not build here ({last[0][:200]})")
    (work.path / ".beaver-built").write_text((result.command or "") + "\n")
    if final.exists():
        shutil.rmtree(final, ignore_errors=True)
    try:
        work.path.rename(final)
    except OSError:
        return work  # another process won the race; use this copy
    return runner.WorkDir(path=final, task=task, manifest={}, links={})


def adopt_reference_build(task: Task, tcfg: TimingConfig, work: runner.WorkDir, build_command: str) -> None:
    """Keep an already built and passing reference work dir as the cached reference build (no rebuild)."""
    final = _refbuild_dir(task, tcfg)
    if (final / ".beaver-built").is_file():
        runner.remove(work)
        return
    final.parent.mkdir(parents=True, exist_ok=True)
    (work.path / ".beaver-built").write_text(build_command + "\n")
    try:
        shutil.move(str(work.path), str(final))
    except OSError:
        runner.remove(work)  # reference_workdir builds it again when timing needs it


Sampler = Callable[[runner.WorkDir], tuple[list[float], StageResult]]


class CandidateTimingFailed(BeaverError):
    """The candidate's own timing run failed its harness's check before any timed launch (for example a
    candidate that is right at the correctness size only): a failure of the candidate, not of the machine."""

    def __init__(self, result: StageResult, evidence: str) -> None:
        super().__init__(f"the candidate's timing run failed (rc {result.rc}): {evidence}")
        self.result = result
        self.evidence = evidence


class Timer:
    """Times a candidate work dir against the task's reference on this GPU."""

    def __init__(self, task: Task, config: runner.RunnerConfig, tcfg: TimingConfig | None = None) -> None:
        self.task = task
        self.config = config
        self.tcfg = tcfg or TimingConfig()
        self.method = self.tcfg.method or ("beaver_time_ms" if task.benchmark_command else "cupti")
        self._lib: Path | None = None
        self.runs: list[tuple[str, StageResult]] = []
        """Every benchmark run of the latest measure(): (``reference`` or ``candidate``, its stage result)."""
        self.stopped_early: str | None = None
        """Why the latest measure() stopped after its first round, or None."""

    # ------------------------------------------------------------------ samplers

    def _contract(self, work: runner.WorkDir) -> tuple[list[float], StageResult]:
        assert self.task.benchmark_command
        res = runner.run_stage(work, "benchmark", self.task.benchmark_command, self.tcfg.stage_s, self.config)
        return parse_times(res.log), res

    def _cupti(self, work: runner.WorkDir) -> tuple[list[float], StageResult]:
        if self._lib is None:
            self._lib = cupti.build_library(self.tcfg.cache)
        with tempfile.NamedTemporaryFile(prefix="beaver-cupti-", suffix=".txt", delete=False) as fh:
            out = Path(fh.name)
        try:
            env = {**runner.stage_env(self.task, self.config), **cupti.environment(self._lib, out)}
            cfg = runner.RunnerConfig(**{**self.config.__dict__, "env": env})
            command = timing_command(self.task.test_command)
            res = runner.run_stage(work, "benchmark", command, self.tcfg.stage_s, cfg)
            recs, _problems = cupti.parse(out.read_text(errors="replace"))
        finally:
            out.unlink(missing_ok=True)
        python = self.task.language == "python" or "python" in self.task.test_command
        kept = [r for r in recs if not (python and FRAMEWORK_KERNEL.search(r.name))]
        if res.rc != 0 or not kept:
            return [], res
        return [sum(r.ms for r in kept)], res

    def _ncu(self, work: runner.WorkDir) -> tuple[list[float], StageResult]:
        nvtx = (
            f"--nvtx --nvtx-include {shlex.quote(self.tcfg.nvtx_range + '/')} "
            if self.tcfg.nvtx_range
            else ""
        )
        cmd = (
            f"ncu --metrics gpu__time_duration.sum --clock-control none --csv --print-units base {nvtx}"
            f"--target-processes all /bin/bash -c {shlex.quote(adapt_command(timing_command(self.task.test_command), self.config.sm))}"
        )
        res = runner.run_stage(work, "benchmark", cmd, self.tcfg.stage_s, self.config, adapt=False)
        rows = parse_ncu_csv(res.log)
        python = self.task.language == "python" or "python" in self.task.test_command
        kept = [ms for name, ms in rows if not (python and FRAMEWORK_KERNEL.search(name))]
        return ([sum(kept)] if kept else []), res

    # ------------------------------------------------------------------ measurement

    def _sampler(self) -> Sampler:
        return {"beaver_time_ms": self._contract, "cupti": self._cupti, "ncu": self._ncu}[self.method]

    def _interleaved(
        self, ref: runner.WorkDir, cand: runner.WorkDir, stop_below: float | None = None
    ) -> tuple[list[float], list[float]]:
        sample = self._sampler()
        rounds = self.tcfg.rounds if self.method == "beaver_time_ms" else self.tcfg.process_runs
        r_all: list[float] = []
        c_all: list[float] = []
        self.stopped_early = None
        for done in range(rounds):
            if done == 1 and stop_below is not None and self.method == "beaver_time_ms" and r_all and c_all:
                (rm, rcv), (cm, ccv) = stats(r_all), stats(c_all)
                if cm > 0 and rm / cm < stop_below and max(rcv, ccv) <= CV_LIMIT:
                    self.stopped_early = (
                        f"stopped after 1 of {rounds} rounds: {rm / cm:.3g}x, below {stop_below:.3g}x "
                        "(half the gate), with both CVs under 3%"
                    )
                    break
            for work, acc, who in ((ref, r_all, "reference"), (cand, c_all, "candidate")):
                got, res = sample(work)
                if not got:
                    tail = [ln for ln in res.log.splitlines() if ln.strip()][-1:] or ["no output"]
                    if (
                        who == "candidate"
                        and self.method == "beaver_time_ms"
                        and res.rc
                        and not res.timed_out
                    ):
                        raise CandidateTimingFailed(res, anticheat.failure_evidence(res.log, res.rc))
                    raise BeaverError(
                        f"{self.method} timing of the {who} produced no samples (rc {res.rc}): {tail[0][:200]}"
                    )
                acc.extend(got)
                self.runs.append((who, res))
        return r_all, c_all

    def measure(self, cand: runner.WorkDir, gate: float | None = None) -> TimingResult:
        """Interleaved timing; re-measured once when either CV is above 3%. With a ``gate``, a candidate whose
        first (reference, candidate) round is below half the gate, both CVs under 3%, is not timed further:
        the remaining rounds cannot bring it near the gate, and a degenerate candidate (often hundreds of
        times slower) would otherwise hold the GPU for every round. The result's note says so."""
        ref = reference_workdir(self.task, self.config, self.tcfg)
        self.runs = []
        stop_below = gate / 2 if gate else None
        try:
            r, c = self._interleaved(ref, cand, stop_below)
        except BeaverError:
            if self.method != "cupti" or self.tcfg.method is not None or shutil.which("ncu") is None:
                raise
            self.method = "ncu"
            r, c = self._interleaved(ref, cand)
        note = self.stopped_early
        (rm, rcv), (cm, ccv) = stats(r), stats(c)
        first = len(self.runs)
        if max(rcv, ccv) > CV_LIMIT:
            r, c = self._interleaved(ref, cand)
            (rm, rcv), (cm, ccv) = stats(r), stats(c)
            note = "re-measured once: CV above 3%"
        else:
            first = 0
        speedup = rm / cm if cm > 0 else float("inf")
        pairs: dict[str, list[tuple[float, float]]] = {"reference": [], "candidate": []}
        for who, res in self.runs[first:]:
            pairs[who].extend(anticheat.timed_pairs(res.log) if self.method == "beaver_time_ms" else [])
        flags = self.audit(pairs["candidate"], pairs["reference"])
        return TimingResult(
            method=self.method,
            candidate_ms=cm,
            reference_ms=rm,
            candidate_cv=ccv,
            reference_cv=rcv,
            speedup=speedup,
            candidate_samples=c,
            reference_samples=r,
            unstable=max(rcv, ccv) > CV_LIMIT,
            implausible=speedup > IMPLAUSIBLE,
            note=note,
            candidate_host_samples=[h for _, h in pairs["candidate"]],
            reference_host_samples=[h for _, h in pairs["reference"]],
            flags=flags,
        )

    def audit(self, cand: list[tuple[float, float]], ref: list[tuple[float, float]]) -> list[str]:
        """Anti-cheat flags of the benchmark runs: a candidate run that failed after its timed launches
        (``cached_result``), output left poisoned in a timed launch, work hidden from the events."""
        found: list[str] = []
        for who, res in self.runs:
            if who != "candidate":
                continue
            hit = anticheat.cached_result_flag(res.rc, res.log, res.timed_out)
            found += [hit] if hit and self.method == "beaver_time_ms" else []
            found += anticheat.poison_flags(res.log, " in a timing run")
        side = anticheat.side_stream_flag(
            [e for e, _ in cand], [h for _, h in cand], [e for e, _ in ref], [h for _, h in ref]
        )
        found += [side] if side else []
        flags: list[str] = []
        for f in found:  # the first evidence of each kind
            if anticheat.flag_name(f) not in {anticheat.flag_name(x) for x in flags}:
                flags.append(f)
        return flags


@dataclass(frozen=True)
class ReferenceTiming:
    """The reference alone, for baselines (corpus validate)."""

    method: str
    median_ms: float
    cv: float
    samples: list[float]
    unstable: bool
    note: str | None = None


def time_reference(timer: Timer) -> ReferenceTiming:
    """Time the task's reference alone with the timer's method; re-measured once when CV is above 3%."""
    ref = reference_workdir(timer.task, timer.config, timer.tcfg)
    sample = timer._sampler()
    rounds = timer.tcfg.rounds if timer.method == "beaver_time_ms" else timer.tcfg.process_runs

    def collect() -> list[float]:
        acc: list[float] = []
        for _ in range(rounds):
            got, res = sample(ref)
            if not got:
                tail = [ln for ln in res.log.splitlines() if ln.strip()][-1:] or ["no output"]
                raise BeaverError(
                    f"{timer.method} timing of the reference produced no samples: {tail[0][:200]}"
                )
            acc.extend(got)
        return acc

    samples = collect()
    med, cv = stats(samples)
    note = None
    if cv > CV_LIMIT:
        samples = collect()
        med, cv = stats(samples)
        note = "re-measured once: CV above 3%"
    return ReferenceTiming(timer.method, med, cv, samples, cv > CV_LIMIT, note)
