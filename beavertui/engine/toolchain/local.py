"""LocalToolchain: the Toolchain of toolchain.py on this machine's GPU.

One attempt = work dir, build, test, compute-sanitizer where docs/format.md (categories) asks for it or the user
does, interleaved timing of a correct candidate, and exactly one Verdict. It ties stages, classify,
sanitizer and timing together and adds nothing of its own beyond the verdict's reasons and flags.
"""

from __future__ import annotations

import contextlib
import re
import tempfile
import threading
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from beavertui.engine.corpus import families
from beavertui.engine.corpus.task import Task
from beavertui.engine.errors import BeaverError, ToolchainError
from beavertui.engine.host import ceilings
from beavertui.engine.host.adapt import adapt_command
from beavertui.engine.host.gpu import gpu_signature
from beavertui.engine.host.sandbox import Limits
from beavertui.engine.judge import anticheat, sanitizer
from beavertui.engine.judge.classify import Classification, classify
from beavertui.engine.session.events import (
    Built,
    Event,
    GpuSignature,
    InfraError,
    KernelMetrics,
    Profiled,
    Ran,
    Sanitized,
    StageResult,
    Timed,
    TimingResult,
    Verdict,
)
from beavertui.engine.stage import stages
from beavertui.engine.timing import profile as ncu
from beavertui.engine.timing.speedup import (
    CandidateTimingFailed,
    SpeedupUnavailable,
    Timer,
    TimingConfig,
    reference_key,
    reference_workdir,
    timing_command,
)
from beavertui.engine.toolchain.base import AttemptOptions

#: A passing run whose output shows these is suspicious: memcheck looks at it too.
SUSPICIOUS = re.compile(r"(?<![\w.])-?(nan|inf)(?![\w.])", re.I)


@dataclass(frozen=True)
class LocalConfig:
    """Settings of the local toolchain."""

    limits: Limits = field(default_factory=Limits)
    """Resource limits of every stage."""
    base_dir: Path | None = None
    """Where work dirs are made."""
    sanitizer_factor: float = 10.0
    """A sanitizer run may take this many times the task's run limit (at least 60 s, at most 300 s)."""
    timing: TimingConfig = field(default_factory=TimingConfig)
    """Timing settings."""
    sanitizer_exe: str = "compute-sanitizer"
    """compute-sanitizer executable."""
    keep_start_logs: bool = True
    """Keep the log of a broken start's fresh check (a task without a recorded log) in the cache, so that
    later sessions of the same task, harness, GPU and protocol settings reuse it (loop/startlog.py)."""


def family_oracle(task: Task, verdict: Classification, run: StageResult | None) -> Classification:
    """A passing classification overruled by the family's own oracle (cudabench's compare_output prints
    ``F`` and still exits 0)."""
    if run is None or verdict.category != "passed":
        return verdict
    wrong = families.oracle_failure(task, run.rc, run.log)
    if wrong is None:
        return verdict
    return Classification("functional_correctness", wrong, (wrong,), "run")


class LocalToolchain:
    """Builds, runs, sanitizes and times candidates on the local GPU."""

    def __init__(
        self, config: LocalConfig | None = None, gpu_slots: threading.Semaphore | None = None
    ) -> None:
        self.config = config or LocalConfig()
        self.gpu_slots = gpu_slots
        """Shared by the toolchains of one validation: at most its count of GPU stages (test and sanitizer
        runs) at once among them, while their builds go on (None: no limit)."""
        self.last_workdir: Path | None = None
        """Work dir of the latest attempt (still on disk only when it was kept)."""
        self._reference_profiles: dict[str, tuple[list[KernelMetrics], str]] = {}

    @property
    def cache_root(self) -> Path:
        """beavertui's cache here: stored validation verdicts (corpus/verdicts.py), kept start logs, timing."""
        from beavertui.engine.paths import cache_dir

        return self.config.timing.cache or cache_dir()

    @property
    def start_log_cache(self) -> Path | None:
        """Where fresh checks of broken starts are kept (loop/startlog.py), or None to make each anew."""
        return self.cache_root if self.config.keep_start_logs else None

    @contextmanager
    def _gpu_slot(self) -> Iterator[None]:
        """Hold one of ``gpu_slots`` for a GPU stage (nothing to hold without them)."""
        if self.gpu_slots is None:
            yield
            return
        with self.gpu_slots:
            yield

    def profiler_unavailable(self) -> str | None:
        """Why feedback level L4 cannot run here (no ncu, no GPU), or None."""
        return ncu.profiler_unavailable(self.gpu() is not None)

    def gpu(self) -> GpuSignature | None:
        return gpu_signature()

    def _stage_config(self) -> stages.StageConfig:
        g = self.gpu()
        sm = None
        if g is not None:
            major, _, minor = g.compute_capability.partition(".")
            sm = int(major) * 10 + int(minor or 0)
        return stages.StageConfig(sm=sm, limits=self.config.limits, base_dir=self.config.base_dir)

    def attempt(self, task: Task, code: str, options: AttemptOptions) -> Iterator[Event]:
        it = options.iteration
        cfg = self._stage_config()
        task = families.for_code(task, code)
        with stages.workdir(task, code, cfg, keep=options.keep_workdir) as work:
            self.last_workdir = work.path
            build = stages.build(work, cfg)
            yield Built(iteration=it, result=build)
            tampered = work.note_build()
            run: StageResult | None = None
            if build.rc == 0 and not build.timed_out:
                with self._gpu_slot():
                    run = stages.test(work, cfg)
                yield Ran(iteration=it, result=run)
            tampered += work.verify()
            timed_out = build.timed_out or (run is not None and run.timed_out)
            verdict = family_oracle(
                task,
                classify(build.rc, build.log, run.rc if run else None, run.log if run else "", timed_out),
                run,
            )
            if options.profile and run is not None and not run.timed_out:
                with self._gpu_slot():
                    profiled = self._profile(task, work, cfg, it)
                yield profiled
            sanitized = self._sanitize(task, work, cfg, options, run, verdict)
            yield from self._judge(task, code, work, cfg, options, build, run, verdict, sanitized, tampered)

    def _judge(
        self,
        task: Task,
        code: str,
        work: stages.WorkDir,
        cfg: stages.StageConfig,
        options: AttemptOptions,
        build: StageResult,
        run: StageResult | None,
        verdict: Classification,
        sanitized: Iterable[Sanitized],
        tampered: list[str],
    ) -> Iterator[Event]:
        """After the run: the sanitizer events (a memcheck record can change the category), anti-cheat
        flags, the timing of a correct candidate, the verdict. Shared by every local toolchain (the batch's
        scheduled one runs the sanitizers on its GPU and times through ``_measure``)."""
        it = options.iteration
        memcheck_log: str | None = None
        for event in sanitized:
            yield event
            if event.tool == "memcheck" and event.result.stage == "sanitize" and not event.result.timed_out:
                memcheck_log = event.result.log
        if memcheck_log is not None and run is not None:
            timed_out = build.timed_out or run.timed_out
            verdict = classify(build.rc, build.log, run.rc, run.log, timed_out, memcheck_log, run.signal)
            verdict = family_oracle(task, verdict, run)
        flags = [f"harness_modified: {rel}" for rel in sorted(set(tampered))]
        flags += anticheat.static_flags(code, task.reference())
        allowed = f"{task.broken_start()}\n{task.reference() or ''}"
        flags += anticheat.include_flags(code, allowed, _protected_names(task))
        flags += anticheat.poison_flags(run.log) if run is not None else []
        skipped = run is not None and (run.harness_proof or "").startswith("skipped")
        if skipped:
            assert run is not None and run.harness_proof is not None
            flags.append(f"harness_skipped: {run.harness_proof.removeprefix('skipped: ')}")
        correct = verdict.category == "passed" and not tampered and not skipped
        if families.is_reference_submission(task, code):
            flags.append("reference_submission: judged under the family's reference semantics")
        timing: TimingResult | None = None
        speedup_note: str | None = None
        if correct and families.semantics(task).speed == "none":
            speedup_note = families.NO_REFERENCE
        elif correct and options.time_if_correct and self.gpu() is not None:
            try:
                timing = self._below_floor(task, self._measure(task, work, cfg, options))
                yield Timed(iteration=it, result=timing)
            except CandidateTimingFailed as exc:  # the candidate's failure, not the machine's
                flags.append(f"timing_run_failed: {exc.evidence}")
            except SpeedupUnavailable as exc:  # the reference's problem: the attempt keeps its verdict
                speedup_note = str(exc)
            except BeaverError as exc:
                toolchain = isinstance(exc, ToolchainError) and exc.source == "toolchain"
                yield InfraError(
                    iteration=it, source="toolchain" if toolchain else "gpu", detail=f"timing failed: {exc}"
                )
            # a candidate may edit the harness only when it is timed
            late = [rel for rel in work.verify() if rel not in tampered]
            flags += [f"harness_modified: {rel} (during timing)" for rel in late]
        flags = anticheat.merge(flags, timing.flags if timing else [])
        final = self._verdict(it, verdict, correct, timing, options.gate, flags)
        if speedup_note is not None and final.correct:
            final = final.model_copy(update={"speedup_note": speedup_note, "reason": "passed, no speedup"})
        yield final

    def _ncu(self, work: stages.WorkDir, command: str, cfg: stages.StageConfig) -> tuple[StageResult, str]:
        """One profiler run of ``command`` in ``work``: its stage result and the CSV ncu wrote."""
        with tempfile.NamedTemporaryFile(prefix="beaver-ncu-", suffix=".csv", delete=False) as fh:
            log = Path(fh.name)
        try:
            cmd = ncu.ncu_command(adapt_command(timing_command(command), cfg.sm), str(log))
            limit = min(max(work.task.timeouts.run_s * self.config.sanitizer_factor, 60.0), 600.0)
            res = stages.run_stage(work, "benchmark", cmd, limit, cfg, adapt=False)
            raw = log.read_text(errors="replace")
        finally:
            log.unlink(missing_ok=True)
        if ncu.NO_PERMISSION in raw or ncu.NO_PERMISSION in res.log:
            raise ToolchainError(
                "ncu cannot read this GPU's performance counters (ERR_NVGPUCTRPERM): L4 needs profiling "
                "permission (NVreg_RestrictProfilingToAdminUsers=0, or run as an administrator)",
                source="toolchain",
            )
        if res.rc == 127 or "ncu: command not found" in res.log:
            raise ToolchainError(
                "ncu (Nsight Compute) could not be started for L4 feedback", source="toolchain"
            )
        return res, raw

    def _profile(self, task: Task, work: stages.WorkDir, cfg: stages.StageConfig, it: int) -> Profiled:
        """ncu metrics of the candidate's kernels beside the reference's (profiled once per task)."""
        res, raw = self._ncu(work, task.test_command, cfg)
        key = f"{task.id}:{reference_key(task)}"
        if key not in self._reference_profiles:
            ref_work = reference_workdir(task, cfg, self.config.timing)
            _, ref_raw = self._ncu(ref_work, task.test_command, cfg)
            self._reference_profiles[key] = (metrics_of(ref_raw), ref_raw)
        reference, ref_raw = self._reference_profiles[key]
        return Profiled(
            iteration=it,
            candidate=metrics_of(raw),
            reference=reference,
            result=res,
            raw=raw,
            reference_raw=ref_raw,
        )

    def _measure(
        self, task: Task, work: stages.WorkDir, cfg: stages.StageConfig, options: AttemptOptions
    ) -> TimingResult:
        """Interleaved timing of a correct candidate against the reference (raises CandidateTimingFailed
        for the candidate's own failure, another BeaverError for the machine's)."""
        return Timer(task, cfg, self.config.timing).measure(work, options.gate)

    def _below_floor(self, task: Task, t: TimingResult) -> TimingResult:
        """Mark a candidate faster than this GPU's measured floor for the task's work as implausible."""
        gpu = self.gpu()
        native = t.method in ("beaver_time_ms", "native_inprocess")
        if gpu is None or not native or not (task.work_flop or task.work_bytes):
            return t
        measured = ceilings.cached(gpu, self.config.timing.cache)
        floor = ceilings.floor_ms(measured, task.work_flop, task.work_bytes) if measured else None
        if floor is None or t.candidate_ms >= floor:
            return t
        note = f"candidate {t.candidate_ms:.4g} ms is below the hardware floor {floor:.4g} ms for this work"
        return t.model_copy(update={"implausible": True, "note": "; ".join(x for x in (t.note, note) if x)})

    def _sanitize(
        self,
        task: Task,
        work: stages.WorkDir,
        cfg: stages.StageConfig,
        options: AttemptOptions,
        run: StageResult | None,
        verdict: Classification,
    ) -> Iterator[Sanitized]:
        if run is None or run.timed_out:
            return
        it = options.iteration
        if sanitizer.harness_runs_sanitizer(task.test_command):
            recs = sanitizer.parse_records(run.log)
            if recs or sanitizer.error_count(run.log) is not None:
                tool = sanitizer.detect_tool(run.log) or "memcheck"
                yield Sanitized(
                    iteration=it,
                    tool=tool,
                    result=run,
                    records=recs,
                    error_count=sanitizer.error_count(run.log),
                )
            return
        limit = min(max(task.timeouts.run_s * self.config.sanitizer_factor, 60.0), 300.0)
        tools = self._sanitizer_tools(task, options, run, verdict)
        if not tools:
            return
        code = (work.path / task.solution_file).read_text(encoding="utf-8", errors="replace")
        scope, env = families.sanitizer_scope(task, code)  # kernelbench: the candidate's kernels only
        test = adapt_command(task.test_command, cfg.sm)
        test = f"{env} {test}" if env else test
        for tool in tools:
            cmd = sanitizer.wrap(test, tool, self.config.sanitizer_exe, scope)
            with self._gpu_slot():
                res = stages.run_stage(work, "sanitize", cmd, limit, cfg, adapt=False)
            yield Sanitized(
                iteration=it,
                tool=tool,
                result=res,
                records=sanitizer.parse_records(res.log, tool),
                error_count=sanitizer.error_count(res.log),
            )

    @staticmethod
    def _sanitizer_tools(
        task: Task, options: AttemptOptions, run: StageResult | None, verdict: Classification
    ) -> list[str]:
        """The compute-sanitizer runs an attempt needs after its test run (none when the harness runs the
        sanitizer itself or the run timed out)."""
        if run is None or run.timed_out or sanitizer.harness_runs_sanitizer(task.test_command):
            return []
        tools: list[str] = list(dict.fromkeys(options.sanitize_tools))
        failing = verdict.category in ("functional_correctness", "illegal_memory_access")
        suspicious = verdict.category == "passed" and bool(SUSPICIOUS.search(run.log))
        if options.sanitize_on_failure and (failing or suspicious) and "memcheck" not in tools:
            tools.insert(0, "memcheck")
        return tools

    @staticmethod
    def _verdict(
        it: int, c: Classification, correct: bool, timing: TimingResult | None, gate: float, flags: list[str]
    ) -> Verdict:
        speedup = timing.speedup if timing else None
        if timing is not None:
            if timing.implausible:
                why = timing.note if timing.note and "floor" in timing.note else f"{timing.speedup:.1f}x"
                flags.append(f"implausible_speedup: {why}")
            if timing.unstable:
                flags.append(
                    f"unstable_timing: CV {100 * timing.candidate_cv:.1f}% candidate, "
                    f"{100 * timing.reference_cv:.1f}% reference"
                )
        disqualified = [
            anticheat.flag_name(f) for f in flags if anticheat.flag_name(f) in anticheat.DISQUALIFYING
        ]
        correct = correct and not disqualified
        success = correct and (gate == 0 or (speedup is not None and speedup >= gate))
        if disqualified:
            reason = disqualified[0].replace("_", " ")
        elif not correct:
            reason = c.category
        elif success:
            reason = "passed"
        elif speedup is None:
            reason = "passed, speedup not measured"
        else:
            reason = "below gate"
        category = c.category
        signature = c.signature
        if c.category == "passed" and not correct:
            category, signature = "functional_correctness", reason
        return Verdict(
            iteration=it,
            category=category,
            signature=signature,
            correct=correct,
            speedup=speedup,
            gate=gate,
            success=success,
            reason=reason,
            decisive=list(c.decisive),
            flags=flags,
        )


def _protected_names(task: Task) -> list[str]:
    """Base names a candidate may not include: the task's reference and its harness's own files."""
    names = [task.reference_path.name] if task.reference_path is not None else []
    with contextlib.suppress(OSError):
        names += [p.name for p in task.testbench.iterdir() if p.is_file()]
    return names


def metrics_of(raw: str) -> list[KernelMetrics]:
    """The per-kernel summary of one ncu CSV."""
    return [
        KernelMetrics(name=k.name, launches=k.launches, metrics=k.metrics, stalls=k.stalls)
        for k in ncu.summarise(ncu.parse_ncu_profile(raw))
    ]
