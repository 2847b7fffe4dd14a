"""LocalToolchain: the Toolchain of toolchain/base.py on this machine's GPU, the one attempt of every mode.

One attempt = work dir, build, test, compute-sanitizer where docs/format.md (categories) asks for it or the user
does, interleaved timing of a correct candidate, and exactly one Verdict (or an infrastructure failure). It ties
stages, classify, sanitizer and timing together; whose failure a failed run is comes from judge/gpu_fault.py
and the verdict from toolchain/verdict.py. Where and when each stage runs is its placement's
(toolchain/placement.py): nothing in ``live``, ``check`` and ``branch``, a semaphore in ``corpus validate``,
the GPU pool in a batch. Every mode judges alike:

- a run whose log says the GPU is gone, or whose sticky CUDA error a known-good probe kernel then repeats on
  the same GPU, is the GPU's failure: no verdict, the session ends in an infrastructure failure (resumable);
- a correctness run that runs out of GPU memory while other runs shared its GPU is made again holding the GPU
  alone, and the second run is the verdict (marked ``rerun_alone``): the memory may have been the other runs';
- a timing that runs out of memory beside runs stopped for it (they keep their memory) is made again once they
  have ended; a timing that fails is the candidate's, the reference's, the GPU's or the machine's
  (verdict.timing_failure).
"""

from __future__ import annotations

import re
import tempfile
import threading
from collections.abc import Generator, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from beavertui.engine.corpus import families
from beavertui.engine.corpus.task import Task
from beavertui.engine.errors import BeaverError, ToolchainError
from beavertui.engine.host import ceilings
from beavertui.engine.host.adapt import adapt_command
from beavertui.engine.host.gpu import gpu_signature
from beavertui.engine.host.sandbox import Limits
from beavertui.engine.judge import sanitizer
from beavertui.engine.judge.classify import Classification
from beavertui.engine.judge.evidence import out_of_memory
from beavertui.engine.judge.gpu_fault import GpuProbe, gpu_fault, oom_line
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
    SpeedupUnavailable,
    Timer,
    TimingConfig,
    reference_key,
    reference_workdir,
    timing_command,
)
from beavertui.engine.toolchain.base import AttemptOptions
from beavertui.engine.toolchain.placement import GpuUse, Lease, Placement
from beavertui.engine.toolchain.verdict import (
    Evidence,
    TimingFailure,
    correct_so_far,
    floor_note,
    judge,
    judge_late,
    run_category,
    timing_failure,
)

#: A passing run whose output shows these is suspicious: memcheck looks at it too.
SUSPICIOUS = re.compile(r"(?<![\w.])-?(nan|inf)(?![\w.])", re.I)


@dataclass(frozen=True)
class LocalConfig:
    """Settings of the local toolchain. The engine reads no environment variable: the settings users give
    that way (timing's four, the build and timing CPUs) are read once where a command starts
    (service/environment.py ``local_config``) and arrive here; each default is what an unset variable means."""

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
    build_nice: int = stages.BUILD_NICE
    """Niceness added to build stages (StageConfig.build_nice; ``BEAVERTUI_BUILD_NICE``)."""
    build_cpus: str | None = None
    """The CPUs build stages may use (StageConfig.build_cpus; ``BEAVERTUI_BUILD_CPUS``); None: every CPU."""
    timing_cpus: str | None = None
    """The CPUs timing stages may use (StageConfig.timing_cpus; ``BEAVERTUI_TIMING_CPUS``); None: every CPU."""
    keep_start_logs: bool = True
    """Keep the log of a broken start's fresh check (a task without a recorded log) in the cache, so that
    later sessions of the same task, harness, GPU and protocol settings reuse it (loop/startlog.py)."""


class LocalToolchain:
    """Builds, runs, sanitizes and times candidates on the local GPU, each stage where ``placement`` says."""

    def __init__(
        self,
        config: LocalConfig | None = None,
        placement: Placement | None = None,
        probe: GpuProbe | None = None,
    ) -> None:
        self.config = config or LocalConfig()
        self.placement = placement or Placement()
        """Where and when each stage runs (toolchain/placement.py)."""
        self.probe = probe or GpuProbe()
        """The known-good kernel that tells a failing GPU from a candidate's sticky CUDA error."""
        self.last_workdir: Path | None = None
        """Work dir of the latest attempt (still on disk only when it was kept)."""
        self._reference_profiles: dict[str, tuple[list[KernelMetrics], str]] = {}
        self._gpu: GpuSignature | None = None
        self._gpu_known = False
        self._ref_locks: dict[str, threading.Lock] = {}
        self._ref_locks_guard = threading.Lock()

    @property
    def cache_root(self) -> Path:
        """beavertui's cache here: stored validation verdicts (corpus/verdicts.py), kept start logs, timing."""
        from beavertui.engine.paths import cache_dir

        return self.config.timing.cache or cache_dir()

    @property
    def start_log_cache(self) -> Path | None:
        """Where fresh checks of broken starts are kept (loop/startlog.py), or None to make each anew."""
        return self.cache_root if self.config.keep_start_logs else None

    def profiler_unavailable(self) -> str | None:
        """Why feedback level L4 cannot run here (no ncu, no GPU), or None."""
        return ncu.profiler_unavailable(self.gpu() is not None)

    def gpu(self) -> GpuSignature | None:
        """This machine's GPU (asked once)."""
        if not self._gpu_known:
            self._gpu, self._gpu_known = gpu_signature(), True
        return self._gpu

    def learn_run_seconds(self, task_id: str, seconds: float, timed_out: bool = False) -> None:
        """How long a run of ``task_id`` took here before this toolchain ran one (a kept start check, a
        resumed session's earlier attempts): the placement may place the next run by it."""
        self.placement.learn_run_seconds(task_id, seconds, timed_out)

    def stage_config(self) -> stages.StageConfig:
        """The configuration of this machine's stages (its GPU's architecture, the limits, the work dirs)."""
        g = self.gpu()
        sm = None
        if g is not None:
            major, _, minor = g.compute_capability.partition(".")
            sm = int(major) * 10 + int(minor or 0)
        c = self.config
        return stages.StageConfig(
            sm=sm, limits=c.limits, base_dir=c.base_dir,
            build_nice=c.build_nice, build_cpus=c.build_cpus, timing_cpus=c.timing_cpus,
        )  # fmt: skip

    def attempt(self, task: Task, code: str, options: AttemptOptions) -> Iterator[Event]:
        it = options.iteration
        cfg = self.stage_config()
        task = families.for_code(task, code)
        place = self.placement
        with stages.workdir(task, code, cfg, keep=options.keep_workdir) as work:
            self.last_workdir = work.path
            build = place.build(task, code, work, cfg, lambda c: stages.build(work, c))
            yield Built(iteration=it, result=build)
            tampered = work.note_build()
            run: StageResult | None = None
            category = run_category(task, build, None)
            sanitized: list[Sanitized] = []
            if build.rc == 0 and not build.timed_out:
                run, category, fault, lease = self._correctness(task, work, cfg, build, "run")
                if fault is None and lease.shared and category.category == "out_of_memory":
                    # other runs shared the GPU: the memory may have been theirs; run again holding it alone
                    first = oom_line(run.log)
                    place.report(lease, ok=True)
                    run, category, fault, lease = self._correctness(task, work, cfg, build, "alone")
                    note = f"ran again alone on {lease.where}: beside other runs its first run ran out of memory ({first})"
                    run = run.model_copy(update={"rerun_alone": note[:500]})
                place.report(lease, ok=fault is None, detail=fault or "")
                # said as soon as it ends: a sanitizer or profiler run after it may take minutes (and a start
                # check's record of what it has cost so far then holds the run)
                yield Ran(iteration=it, result=run)
                if fault is not None:
                    # the GPU's failure, not the candidate's: no verdict; the session records it as such
                    raise ToolchainError(f"{lease.where} failed: {fault}", source="gpu")
                tampered += work.verify()
                sanitized = yield from self._instrumented(task, work, cfg, options, run, category)
            else:
                tampered += work.verify()
            ev = Evidence(build, run, category, sanitized, tampered)
            timed = options.time_if_correct and families.family_of(task).timed
            if timed and correct_so_far(task, ev) and self.gpu() is not None:
                if options.defer_timing:  # timed after the loop, by the batch's timing lane (time_later)
                    final = judge(task, code, ev, it, options.gate)
                    if final.correct:  # not disqualified
                        pending = {"timing_pending": True, "success": False, "reason": "timing pending"}
                        final = final.model_copy(update=pending)
                    yield final
                    return
                ev = yield from self._timed(task, work, cfg, options, ev)
            yield judge(task, code, ev, it, options.gate)

    def time_later(self, task: Task, code: str, pending: Verdict, gate: float) -> Iterator[Event]:
        """The timing of a correct candidate whose verdict was left ``timing_pending``: built again in a work
        dir of its own (a batch's compile cache serves it), timed as ``attempt`` would have timed it (the
        same ``_measure``: prepared on a build slot, then the GPU held alone), then its verdict with the
        speedup and success at ``gate`` (verdict.judge_late). A failure of the GPU or the machine yields only
        its InfraError: the timing stays pending."""
        it = pending.iteration
        cfg = self.stage_config()
        task = families.for_code(task, code)
        with stages.workdir(task, code, cfg) as work:
            build = self.placement.build(task, code, work, cfg, lambda c: stages.build(work, c))
            if build.rc != 0 or build.timed_out:
                detail = f"timing failed: the candidate did not build again ({build.log[-300:]})"
                yield InfraError(iteration=it, source="toolchain", detail=detail)
                return
            passed = Classification("passed", "", (), "none")
            ev = Evidence(build, None, passed, (), work.note_build())
            ev = yield from self._timed(task, work, cfg, AttemptOptions(iteration=it, gate=gate), ev)
        failed = ev.timing_failed
        if failed is not None and failed.who in ("gpu", "machine"):
            return  # its InfraError was yielded
        yield judge_late(pending, ev.timing, failed, ev.tampered_in_timing, gate)

    def _correctness(
        self, task: Task, work: stages.WorkDir, cfg: stages.StageConfig, build: StageResult, use: GpuUse
    ) -> tuple[StageResult, Classification, str | None, Lease]:
        """The correctness run where the placement says (``use``: shared, or the GPU alone): the run, its
        category, why the GPU is to blame (None: it is not; then the run has no category of its own), and the
        lease it ran on."""
        with self.placement.gpu(use, cfg, task) as lease:
            run = stages.test(work, lease.config)
            lease.took(run)
            fault = self._gpu_fault(run.log, lease)
        category = run_category(task, build, run) if fault is None else run_category(task, build, None)
        return run, category, fault, lease

    def _gpu_fault(self, log: str, lease: Lease) -> str | None:
        """Why a run's failure is the GPU's (gpu_fault), or None. On a machine with no GPU at all (none seen,
        none placed) there is no GPU to blame: such a log is the machine's lack, judged by its category."""
        if lease.gpu is None and self.gpu() is None:
            return None
        return gpu_fault(log, lease.config.env, self.probe)

    def _instrumented(
        self,
        task: Task,
        work: stages.WorkDir,
        cfg: stages.StageConfig,
        options: AttemptOptions,
        run: StageResult,
        category: Classification,
    ) -> Generator[Event, None, list[Sanitized]]:
        """The profiler and compute-sanitizer runs after a correctness run, on one GPU lease (instrumented
        runs, long); yields their events as they end and returns the Sanitized ones."""
        tools = self._sanitizer_tools(task, options, run, category)
        profile = options.profile and not run.timed_out
        sanitized: list[Sanitized] = []
        if not tools and not profile:  # nothing more to run: a harness's own sanitizer output, or none
            sanitized = list(self._sanitize(task, work, cfg, options, run, tools))
            yield from sanitized
            return sanitized
        if profile and f"{task.id}:{reference_key(task)}" not in self._reference_profiles:
            self._reference_build(task, cfg)  # profiled beside the candidate: built before the hold
        with self.placement.gpu("profile" if profile else "sanitize", cfg, task) as lease:
            if profile:
                yield self._profile(task, work, lease.config, options.iteration)
            for event in self._sanitize(task, work, lease.config, options, run, tools):
                sanitized.append(event)
                yield event
            if tools:
                lease.took(*(x.result for x in sanitized))
        return sanitized

    def _timed(
        self, task: Task, work: stages.WorkDir, cfg: stages.StageConfig, options: AttemptOptions, ev: Evidence
    ) -> Generator[Event, None, Evidence]:
        """The timing of a correct candidate: yields its Timed event (or the infrastructure failure of a timing
        that was the GPU's or the machine's) and returns the evidence with it."""
        it = options.iteration
        timing: TimingResult | None = None
        failed: TimingFailure | None = None
        try:
            timing = self._below_floor(task, self._measure(task, work, cfg, options))
            yield Timed(iteration=it, result=timing)
        except (TimingFailed, BeaverError) as exc:
            failed = exc.failure if isinstance(exc, TimingFailed) else timing_failure(exc, None, self.probe)
            if failed.who in ("gpu", "machine"):
                yield InfraError(
                    iteration=it,
                    source="toolchain" if failed.who == "machine" else "gpu",
                    detail=f"timing failed: {failed.detail}",
                )
        # a candidate may edit the harness only when it is timed
        late = [rel for rel in work.verify() if rel not in ev.tampered]
        return Evidence(ev.build, ev.run, ev.category, ev.sanitized, ev.tampered, timing, failed, tuple(late))

    def _measure(
        self, task: Task, work: stages.WorkDir, cfg: stages.StageConfig, options: AttemptOptions
    ) -> TimingResult:
        """Everything timing builds first, on a build slot (the reference, the CUPTI library, and for in-process
        timing the task's driver and the candidate's side library: Timer.prepare, prepare_candidate; for
        kernelbench, the timing driver started up to its go, torch imported; for a testbench's own speed
        lines, where the placement knows the GPU the hold will give, its runs started and parked before
        CUDA); then the timing with the GPU held alone, in which nothing is built (and the placement may stop
        other builds). A timing that runs out of GPU memory beside runs stopped for it (they keep their
        memory) is made again once, holding the GPU's memory (after its runs end), and its note says so. A
        failed timing raises TimingFailed with whose failure it is (verdict.timing_failure); one that is the
        GPU's is reported to the placement. A driver or runs started ahead and not used are ended
        (Timer.close)."""
        place = self.placement
        with Timer(task, cfg, self.config.timing) as timer:
            if timer.prepares:
                try:
                    self._reference_build(task, cfg, timer)
                except SpeedupUnavailable as exc:  # the reference's problem: the attempt keeps its verdict
                    raise TimingFailed(TimingFailure("reference", str(exc))) from exc
                except BeaverError as exc:
                    failure = TimingFailure("machine", f"timing could not be prepared: {exc}")
                    raise TimingFailed(failure) from exc
            ahead = place.ahead(
                cfg
            )  # a testbench's runs are parked before the hold only where its GPU is known
            park = timer.parks and ahead is not None
            if timer.inprocess or timer.warms or park:  # side library, driver, parked runs: a build slot
                with place.build_slot(cfg if ahead is None else ahead) as building:
                    timer.config = building
                    try:
                        timer.prepare_candidate(work, park=park)
                    except BeaverError as exc:
                        raise TimingFailed(timing_failure(exc, building.env, self.probe)) from exc
            again: str | None = None
            while True:
                with place.gpu("timing" if again is None else "timing_memory", cfg, task) as lease:
                    timer.config = lease.config
                    try:
                        with place.builds_stopped() as stopped:
                            measured = timer.measure(work, options.gate)
                    except BeaverError as exc:
                        if again is None and lease.stopped_runs and out_of_memory(str(exc)):
                            # the runs stopped for it kept their GPU memory: time it again once they end (a
                            # candidate's CUPTI run out of memory too, which would read as the machine's)
                            place.report(lease, ok=True)
                            again = oom_line(str(exc))
                            continue
                        failure = timing_failure(exc, lease.config.env, self.probe)
                        place.report(lease, ok=failure.who != "gpu", detail=failure.detail)
                        if failure.who == "gpu" and lease.gpu is not None:
                            failure = TimingFailure("gpu", f"on {lease.where}: {failure.detail}")
                        raise TimingFailed(failure) from exc
                    place.report(lease, ok=True)
                    return with_stops(measured, lease, stopped, again)

    def _reference_build(self, task: Task, cfg: stages.StageConfig, timer: Timer | None = None) -> None:
        """What timing (``timer``) or profiling needs built, the task's reference first, built (or found in
        the cache) on a build slot, once per task at a time, so that no GPU hold waits for nvcc."""
        with self._ref_locks_guard:
            lock = self._ref_locks.setdefault(task.id, threading.Lock())
        with lock, self.placement.build_slot(cfg) as building:
            if timer is None:
                reference_workdir(task, building, self.config.timing)
            else:
                timer.config = building
                timer.prepare()

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
        note = floor_note(t.candidate_ms, floor)
        return t.model_copy(
            update={"implausible": True, "floor_ms": floor, "note": "; ".join(x for x in (t.note, note) if x)}
        )

    def _sanitize(
        self,
        task: Task,
        work: stages.WorkDir,
        cfg: stages.StageConfig,
        options: AttemptOptions,
        run: StageResult | None,
        tools: list[str],
    ) -> Iterator[Sanitized]:
        """The sanitizer events of a run: the records of a harness that runs compute-sanitizer itself, else
        one compute-sanitizer run per tool in ``tools`` (_sanitizer_tools)."""
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
        if not tools:
            return
        code = (work.path / task.solution_file).read_text(encoding="utf-8", errors="replace")
        scope, env = families.sanitizer_scope(task, code)  # kernelbench: the candidate's kernels only
        test = adapt_command(task.test_command, cfg.sm)
        test = f"{env} {test}" if env else test
        for tool in tools:
            cmd = sanitizer.wrap(test, tool, self.config.sanitizer_exe, scope)
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


def metrics_of(raw: str) -> list[KernelMetrics]:
    """The per-kernel summary of one ncu CSV."""
    return [
        KernelMetrics(name=k.name, launches=k.launches, metrics=k.metrics, stalls=k.stalls)
        for k in ncu.summarise(ncu.parse_ncu_profile(raw))
    ]


class TimingFailed(Exception):
    """A timing that failed, with whose failure it is."""

    def __init__(self, failure: TimingFailure) -> None:
        super().__init__(failure.detail)
        self.failure = failure


def with_stops(measured: TimingResult, lease: Lease, builds: int, again: str | None) -> TimingResult:
    """A timing made holding ``lease``'s GPU alone, with what was stopped for it (its runs: ``lease.pause``;
    ``builds``) and why it was timed again (``again``: its first timing's out-of-memory line), as fields and
    in words (its note)."""
    pause = lease.pause
    stops = [
        x
        for x in (
            pause.note() if pause is not None else None,
            stopped_note(builds),
            timed_again_note(lease.where, again) if again is not None else None,
        )
        if x
    ]
    note = "; ".join(x for x in (measured.note, *stops) if x) if stops else measured.note
    return measured.model_copy(
        update={
            "note": note,
            "gpu": lease.gpu,
            "runs_stopped": pause.runs if pause is not None else 0,
            "rerun_stopped": pause is not None and pause.rerun,
            "idle_s": pause.idle_s if pause is not None else None,
            "builds_stopped": builds,
            "timed_again": again,
        }
    )


def stopped_note(n: int) -> str | None:
    """What a timing stage says of the builds it stopped (Placement.builds_stopped); None when none were."""
    if not n:
        return None
    return f"{n} build{'s' if n != 1 else ''} stopped (SIGSTOP) for this timing, continued after it"


def timed_again_note(where: str, line: str) -> str:
    """What a timing stage says when it was made again holding its GPU's memory (``where``: "GPU 0";
    ``line``: the first timing's out-of-memory line)."""
    return (
        f"timed again holding {where}'s memory: beside the runs stopped for it, its first timing ran out of "
        f"memory ({line})"
    )
