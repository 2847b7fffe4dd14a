"""Toolchains under the scheduler: the same attempt, with each stage waiting for its resource.

``ScheduledLocalToolchain`` is LocalToolchain's attempt with the build behind a CPU slot and the compile
cache, the correctness run holding a shared GPU slot (``CUDA_VISIBLE_DEVICES`` set to it), sanitizer and
profiler runs a shared slot of their own (marked long, so the pool keeps them away from a GPU that timing
waits for), and timing holding a GPU alone once everything it needs is built: nothing is built for it
while a GPU is held alone, and where the build slots stop builds for timing (BuildSlots.stop_for_timing),
the other sessions' builds are stopped during the measurement too. Classification, sanitizer policy and
verdicts are LocalToolchain's own methods, so a batch judges exactly as ``beavertui live`` does. ``ScheduledToolchain`` wraps any other toolchain (recorded,
remote) and gates its whole run phase on a GPU slot. Neither decides what runs.

A run whose log says the GPU itself is gone (driver messages, lost device) is an infrastructure failure of
that GPU, never the candidate's verdict. A run that ends in a sticky CUDA error (an illegal memory access,
an unspecified launch failure...) is ambiguous: the candidate or the GPU. A known-good probe kernel then
runs on the same GPU: if it fails too, the GPU is blamed; if it passes, the verdict stands.

A correctness run that runs out of GPU memory while other runs share its GPU is made again holding the GPU
alone, and the second run is the verdict (marked ``rerun_alone`` with the first run's line): the memory may
have been the other runs'. Only out of memory alone on a GPU is the candidate's category. The rerun waits for
the GPU's other runs to end (a stopped process would keep its memory) and after any waiting timing stage;
a timing stage that comes while it runs stops it rather than wait for it (GpuPool), and a timing that then
runs out of memory beside it is made again once it has ended (``_measure``).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
import threading
import time
from collections.abc import Iterator, Mapping
from dataclasses import replace
from functools import partial

from beavertui.batch.cache import CompileCache, cache_key, changed, snapshot, toolkit_id
from beavertui.batch.resources import BuildSlots, GpuPool, GpuState
from beavertui.engine.corpus import families, harness
from beavertui.engine.corpus.task import Task
from beavertui.engine.errors import BeaverError, ToolchainError
from beavertui.engine.host.adapt import adapt_command
from beavertui.engine.judge.classify import Classification, classify
from beavertui.engine.judge.evidence import out_of_memory
from beavertui.engine.session.events import (
    Built,
    Event,
    GpuSignature,
    InfraError,
    Profiled,
    Ran,
    Sanitized,
    StageResult,
    TimingResult,
    Verdict,
)
from beavertui.engine.stage import stages
from beavertui.engine.timing.speedup import (
    CandidateTimingFailed,
    SpeedupUnavailable,
    Timer,
    reference_key,
    reference_workdir,
)
from beavertui.engine.toolchain.base import AttemptOptions, Toolchain, profiler_unavailable
from beavertui.engine.toolchain.local import LocalConfig, LocalToolchain, family_oracle


class ScheduledLocalToolchain(LocalToolchain):
    """LocalToolchain whose stages run where the pool says."""

    def __init__(
        self,
        pool: GpuPool,
        builds: BuildSlots,
        cache: CompileCache | None,
        config: LocalConfig | None = None,
        probe: GpuProbe | None = None,
    ) -> None:
        super().__init__(config)
        self.pool, self.builds, self.cache = pool, builds, cache
        self.probe = probe or GpuProbe()
        self.toolkit = toolkit_id() if cache is not None else ""
        self._harness: dict[str, str] = {}
        self._gpu: GpuSignature | None = None
        self._gpu_known = False
        self._ref_locks: dict[str, threading.Lock] = {}
        self._ref_locks_guard = threading.Lock()
        self._run_s: dict[str, float] = {}
        """The seconds of each task's latest correctness run here (_correctness): a task whose runs outlast the
        pool's patience is run in a long slot, like a sanitizer."""
        self._expect: dict[tuple[str, str], float] = {}
        """(task, "run" or "sanitize"): the seconds the task's latest such stage took here, when it ended
        before its time limit: what the pool expects the next one to take (GpuPool.hold's ``expect_s``). A
        stage that ran to its limit leaves no expectation: how long a hang lasts says nothing of the next."""

    def learn_run_seconds(self, task_id: str, seconds: float, timed_out: bool = False) -> None:
        """How long a run of ``task_id`` took on this machine before this toolchain saw one (a kept start
        check, a resumed session's earlier attempts): the next run of the task is placed by it."""
        self._run_s[task_id] = seconds
        self._learn(task_id, "run", seconds, timed_out)

    def _learn(self, task_id: str, kind: str, seconds: float | None, timed_out: bool) -> None:
        if seconds is None or timed_out:
            self._expect.pop((task_id, kind), None)
        else:
            self._expect[(task_id, kind)] = seconds

    def gpu(self) -> GpuSignature | None:
        if not self._gpu_known:
            self._gpu, self._gpu_known = super().gpu(), True
        return self._gpu

    def _harness_hash(self, task: Task) -> str:
        if task.id not in self._harness:
            self._harness[task.id] = harness.harness_hash(task)
        return self._harness[task.id]

    def _build(self, task: Task, code: str, work: stages.WorkDir, cfg: stages.StageConfig) -> StageResult:
        with self.builds.hold():
            key = None
            # a build whose outputs are bound to its work dir's path is made again, not restored elsewhere
            if self.cache is not None and not families.build_is_path_bound(task):
                command = adapt_command(task.build_command, cfg.sm)
                key = cache_key(code, self._harness_hash(task), command, self.toolkit)
                hit = self.cache.get(key, work.path)
                if hit is not None:
                    return hit
            before = snapshot(work.path)
            build = stages.build(work, self._building(cfg))
            if self.cache is not None and key is not None and not build.timed_out:
                self.cache.put(key, build, work.path, changed(before, snapshot(work.path)))
            return build

    def _building(self, cfg: stages.StageConfig) -> stages.StageConfig:
        """A build's configuration: its processes are registered with the build slots while they run, so
        that a timing stage holding a GPU alone may stop them (BuildSlots.stopped)."""
        return replace(cfg, pausable=self.builds.running)

    @staticmethod
    def _on(cfg: stages.StageConfig, g: GpuState) -> stages.StageConfig:
        base = dict(cfg.env if cfg.env is not None else os.environ)
        base["CUDA_VISIBLE_DEVICES"] = g.index
        return replace(cfg, env=base)

    def _shared_on(self, cfg: stages.StageConfig, g: GpuState) -> stages.StageConfig:
        """A correctness or sanitizer run's configuration on ``g``: its processes are registered with the pool
        while they run, so that a timing stage waiting for ``g`` may stop them instead of waiting for them to
        end (a shared run's, or a run's made again alone for its memory)."""
        return replace(self._on(cfg, g), pausable=partial(self.pool.running, g))

    def attempt(self, task: Task, code: str, options: AttemptOptions) -> Iterator[Event]:
        it = options.iteration
        cfg = self._stage_config()
        task = families.for_code(task, code)
        with stages.workdir(task, code, cfg, keep=options.keep_workdir) as work:
            build = self._build(task, code, work, cfg)
            yield Built(iteration=it, result=build)
            tampered = work.note_build()
            run: StageResult | None = None
            sanitized: list[Sanitized] = []
            profiled: Profiled | None = None
            verdict = classify(build.rc, build.log, None, "", build.timed_out)
            if build.rc == 0 and not build.timed_out:
                tools: list[str] = []
                g, run, lost, verdict, shared = self._correctness(task, work, cfg, build, exclusive=False)
                if lost is None and shared and verdict.category == "out_of_memory":
                    # other runs shared the GPU: the memory may have been theirs; run again holding it alone
                    first = _oom_line(run.log)
                    self.pool.report(g, ok=True)
                    g, run, lost, verdict, _ = self._correctness(task, work, cfg, build, exclusive=True)
                    note = f"ran again alone on GPU {g.index}: beside other runs its first run ran out of memory ({first})"
                    run = run.model_copy(update={"rerun_alone": note[:500]})
                if lost is None:
                    tampered += work.verify()
                    tools = self._sanitizer_tools(task, options, run, verdict)
                    if not tools:  # nothing more to run: a harness's own sanitizer output, or none
                        sanitized = list(
                            self._sanitize(task, work, self._shared_on(cfg, g), options, run, verdict)
                        )
                self.pool.report(g, ok=lost is None, detail=lost or "")
                # said as soon as it ends, as the live toolchain does: a sanitizer or profiler run after it may
                # take minutes (and a start check's record of what it has cost so far then holds the run)
                yield Ran(iteration=it, result=run)
                if lost is not None:
                    # the GPU's failure, not the candidate's: no verdict; the session records it as such
                    raise ToolchainError(f"GPU {g.index} failed: {lost}", source="gpu")
                profile = options.profile and not run.timed_out
                if profile and f"{task.id}:{reference_key(task)}" not in self._reference_profiles:
                    self._reference_build(task, cfg)  # profiled beside the candidate: built before the hold
                if tools or profile:  # long runs: a slot of their own, placed away from waiting timing
                    expect = self._expect.get((task.id, "sanitize")) if not profile else None
                    with self.pool.hold(long=True, expect_s=expect, instrumented=True) as g:
                        gpu_cfg = self._shared_on(cfg, g)
                        if tools:
                            sanitized = list(self._sanitize(task, work, gpu_cfg, options, run, verdict))
                            took = [x.result.duration_s for x in sanitized]
                            self._learn(
                                task.id,
                                "sanitize",
                                sum(t for t in took if t is not None) if took and None not in took else None,
                                any(x.result.timed_out for x in sanitized),
                            )
                        if profile:
                            profiled = self._profile(task, work, gpu_cfg, it)
            else:
                tampered += work.verify()
            if profiled is not None:
                yield profiled
            yield from self._judge(task, code, work, cfg, options, build, run, verdict, sanitized, tampered)

    def _correctness(
        self, task: Task, work: stages.WorkDir, cfg: stages.StageConfig, build: StageResult, exclusive: bool
    ) -> tuple[GpuState, StageResult, str | None, Classification, bool]:
        """The correctness run on a GPU slot (or the GPU alone): the GPU, the run, why the GPU is to blame
        (None: it is not), the verdict, and whether other runs were on the GPU at some point meanwhile."""
        # A run expected to outlast the pool's patience (the task's last run here did) is a long run: it waits
        # out a timing stage's drain instead of being admitted while the drain waits for an earlier run, so a
        # task whose test command takes a minute (one that compiles at test time) cannot keep a timing stage
        # waiting run after run.
        long = not exclusive and self._run_s.get(task.id, 0.0) > self.pool.patience_s
        expect = self._expect.get((task.id, "run"))
        with self.pool.hold(exclusive=exclusive, long=long, expect_s=expect, memory=exclusive) as g:
            gpu_cfg = self._shared_on(cfg, g)  # a rerun alone for its memory too: a timing stage may stop it
            before = (g.shared, g.runs)
            run = stages.test(work, gpu_cfg)
            self._run_s[task.id] = run.duration_s or 0.0
            self._learn(task.id, "run", run.duration_s, run.timed_out)
            shared = not exclusive and (before[0] > 1 or g.shared > 1 or g.runs != before[1])
            lost = _gpu_fault(run.log, gpu_cfg, self.probe)
        if lost is None:
            verdict = family_oracle(task, classify(build.rc, build.log, run.rc, run.log, run.timed_out), run)
        else:  # the GPU's failure: the caller records no verdict of this run
            verdict = classify(build.rc, build.log, None, "", build.timed_out)
        return g, run, lost, verdict, shared

    def _measure(
        self, task: Task, work: stages.WorkDir, cfg: stages.StageConfig, options: AttemptOptions
    ) -> TimingResult:
        """Everything timing builds first, on a build slot (the reference, the CUPTI library, and for in-process
        timing the task's driver and the candidate's side library: Timer.prepare, prepare_candidate; for
        kernelbench, the timing driver started up to its go, torch imported; for a testbench's own speed
        lines on a machine with one GPU, its runs started and parked before CUDA); then the timing with a GPU
        held alone, in which nothing is built (and, with BuildSlots.stop_for_timing, the other sessions'
        builds are stopped). A GPU whose timing fails for the machine's reasons is reported to the pool; a
        candidate's own failure is not. A timing that runs out of GPU memory beside runs stopped for it (they
        keep their memory) is made again once, holding the GPU's memory (GpuPool.hold's ``memory``: after its
        runs end), and its note says so. A driver or runs started ahead and not used are ended (Timer.close)."""
        with Timer(task, cfg, self.config.timing) as timer:
            if timer.prepares:
                try:
                    self._reference_build(task, cfg, timer)
                except SpeedupUnavailable:
                    raise  # the reference's problem: the attempt keeps its verdict, without a speedup
                except BeaverError as exc:
                    raise ToolchainError(f"timing could not be prepared: {exc}", source="toolchain") from exc
            # a testbench's runs are parked before the hold only where the GPU it will give is known
            sole = self.pool.sole_gpu()
            park = timer.parks and sole is not None
            if timer.inprocess or timer.warms or park:  # side library, driver, parked runs: a build slot
                with self.builds.hold():
                    timer.config = self._building(cfg if sole is None else self._on(cfg, sole))
                    timer.prepare_candidate(work, park=park)
            again: str | None = None
            while True:
                with self.pool.hold(exclusive=True, memory=again is not None) as g:
                    try:
                        timer.config = self._on(cfg, g)
                        with self.builds.stopped() as stopped:
                            measured = timer.measure(work, options.gate)
                    except BeaverError as exc:
                        if again is None and g.pause_note is not None and out_of_memory(str(exc)):
                            # the runs stopped for it kept their GPU memory: time it again once they end (a
                            # candidate's CUPTI run out of memory too, which would read as the machine's)
                            self.pool.report(g, ok=True)
                            again = timed_again_note(g.index, _oom_line(str(exc)))
                            continue
                        lost: str | None = str(exc)  # why the GPU is to blame (None: it is not)
                        if isinstance(exc, CandidateTimingFailed):  # as a correctness run's: a sticky error
                            lost = _gpu_fault(exc.result.log, timer.config, self.probe)  # may be the GPU's
                        elif isinstance(exc, SpeedupUnavailable):
                            lost = None
                        self.pool.report(g, ok=lost is None, detail=lost or "")
                        if lost is None:
                            raise
                        raise ToolchainError(f"on GPU {g.index}: {lost}", source="gpu") from exc
                    self.pool.report(g, ok=True)
                    stops = [x for x in (g.pause_note, stopped_note(stopped), again) if x]
                    if stops:  # what was stopped for it, and why it was timed again: said with it
                        note = "; ".join(x for x in (measured.note, *stops) if x)
                        measured = measured.model_copy(update={"note": note})
                    return measured

    def _reference_build(self, task: Task, cfg: stages.StageConfig, timer: Timer | None = None) -> None:
        """What timing (``timer``) or profiling needs built, the task's reference first, built (or found in
        the cache) while holding a build slot, once per task at a time, so that no GPU hold waits for nvcc."""
        with self._ref_locks_guard:
            lock = self._ref_locks.setdefault(task.id, threading.Lock())
        with lock, self.builds.hold():
            if timer is None:
                reference_workdir(task, self._building(cfg), self.config.timing)
            else:
                timer.config = self._building(cfg)
                timer.prepare()


def timed_again_note(gpu: str, line: str) -> str:
    """What a timing stage says when it was made again holding its GPU's memory (``line``: the first
    timing's out-of-memory line)."""
    return (
        f"timed again holding GPU {gpu}'s memory: beside the runs stopped for it, its first timing ran out of "
        f"memory ({line})"
    )


def stopped_note(n: int) -> str | None:
    """What a timing stage says of the builds it stopped (BuildSlots.stopped); None when none were."""
    if not n:
        return None
    return f"{n} build{'s' if n != 1 else ''} stopped (SIGSTOP) for this timing, continued after it"


#: Driver messages that mean the GPU itself is gone or broken, not the candidate.
_LOST = (
    "no CUDA-capable device is detected",
    "CUDA driver version is insufficient",
    "GPU has fallen off the bus",
    "uncorrectable ECC error",
    "all CUDA-capable devices are busy or unavailable",
    "CUDA-capable device(s) is/are busy or unavailable",
)

#: Sticky CUDA errors (the context is unusable afterwards): the candidate's bug or a failing GPU.
_STICKY = (
    "an illegal memory access was encountered",
    "unspecified launch failure",
    "misaligned address",
    "an illegal instruction was encountered",
    "hardware stack error",
    "the launch timed out and was terminated",
    "initialization error",
    "unknown error",
)


def _oom_line(log: str) -> str:
    """The first line of a log that says the GPU ran out of memory (for the note of a run made again alone)."""
    line = next((ln.strip() for ln in log.splitlines() if out_of_memory(ln)), "out of memory")
    return line[:200]


def _gpu_lost(log: str) -> bool:
    return any(s in log for s in _LOST)


def _first_line(log: str, markers: tuple[str, ...] = _LOST) -> str:
    return next((ln.strip() for ln in log.splitlines() if any(s in ln for s in markers)), "GPU failure")[:200]


def _gpu_fault(log: str, cfg: stages.StageConfig, probe: GpuProbe) -> str | None:
    """Why a run's failure is the GPU's (one line), or None when the GPU is not to blame."""
    if _gpu_lost(log):
        return _first_line(log)
    if not any(s in log for s in _STICKY):
        return None
    why = probe.check(cfg.env)
    if why is None:
        return None
    return f"{_first_line(log, _STICKY)}; a known-good probe kernel then failed on it too: {why}"


_PROBE_CU = r"""
#include <cstdio>
__global__ void fill(int* a, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) a[i] = 2 * i + 1;
}
static int fail(const char* what, cudaError_t e) {
    std::printf("%s: %s\n", what, cudaGetErrorString(e));
    return 1;
}
int main() {
    const int n = 1 << 20;
    static int h[1 << 20];
    int* d = nullptr;
    cudaError_t e = cudaMalloc(&d, n * sizeof(int));
    if (e != cudaSuccess) return fail("cudaMalloc", e);
    fill<<<(n + 255) / 256, 256>>>(d, n);
    if ((e = cudaDeviceSynchronize()) != cudaSuccess) return fail("kernel", e);
    if ((e = cudaMemcpy(h, d, n * sizeof(int), cudaMemcpyDeviceToHost)) != cudaSuccess) return fail("copy", e);
    for (int i = 0; i < n; ++i)
        if (h[i] != 2 * i + 1) { std::printf("wrong value at %d\n", i); return 1; }
    std::printf("probe ok\n");
    return 0;
}
"""


_PROBE_LOCK = threading.Lock()
_PROBE_DIRS: dict[str, str] = {}


class GpuProbe:
    """A known-good kernel run on one GPU: None when it passes, else why it failed (one line).

    Built once with nvcc (no ``-arch``: PTX for the toolkit's default, JIT-compiled for any newer GPU);
    ``command`` replaces it (a tool of the site's own, or a test stand-in).
    """

    def __init__(self, command: list[str] | None = None, timeout_s: float = 60.0) -> None:
        self.command = command
        self.timeout_s = timeout_s
        self.runs = 0

    def _built(self) -> list[str] | str:
        with _PROBE_LOCK:  # one build per process, shared by every toolchain in it
            if self.command is not None:
                return self.command
            nvcc = shutil.which("nvcc")
            if nvcc is None:
                return "nvcc not found, cannot build the probe kernel"
            if nvcc not in _PROBE_DIRS:
                _PROBE_DIRS[nvcc] = tempfile.mkdtemp(prefix="beavertui-probe-")
            exe = os.path.join(_PROBE_DIRS[nvcc], "probe")
            if not os.path.exists(exe):
                src = os.path.join(_PROBE_DIRS[nvcc], "probe.cu")
                with open(src, "w", encoding="utf-8") as fh:
                    fh.write(_PROBE_CU)
                try:
                    out = subprocess.run(
                        [nvcc, "-O2", "-o", exe, src], capture_output=True, text=True, timeout=300
                    )
                except (OSError, subprocess.TimeoutExpired) as exc:
                    return f"the probe kernel did not build: {exc}"
                if out.returncode != 0:
                    return "the probe kernel did not build: " + _one_line(out.stderr or out.stdout)
            self.command = [exe]
            return self.command

    def check(self, env: Mapping[str, str] | None) -> str | None:
        cmd = self._built()
        if isinstance(cmd, str):
            return None  # no probe available: the verdict stands (the candidate is not blamed on a guess)
        self.runs += 1
        try:
            out = subprocess.run(
                cmd,
                capture_output=True,
                text=True,
                timeout=self.timeout_s,
                env=dict(env) if env is not None else None,
                stdin=subprocess.DEVNULL,
            )
        except subprocess.TimeoutExpired:
            return f"the probe kernel did not finish within {self.timeout_s:g} s"
        except OSError as exc:
            return f"the probe kernel did not start: {exc}"
        if out.returncode == 0:
            return None
        return _one_line(out.stdout + out.stderr) or f"the probe kernel exited with {out.returncode}"


def _one_line(text: str) -> str:
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    return (lines[-1] if lines else "")[:200]


class ScheduledToolchain:
    """Any toolchain, with its run phase (everything after the build) holding a GPU slot."""

    def __init__(self, inner: Toolchain, pool: GpuPool, builds: BuildSlots) -> None:
        self.inner, self.pool, self.builds = inner, pool, builds
        self.stage_s = {"build": 0.0, "run": 0.0}

    def gpu(self) -> GpuSignature | None:
        return self.inner.gpu()

    def judges(self, task: Task, code: str) -> bool:
        """Whether the inner toolchain can judge this candidate (a replay: whether it is recorded)."""
        judges = getattr(self.inner, "judges", None)
        return bool(judges(task, code)) if callable(judges) else True

    def profiler_unavailable(self) -> str | None:
        return profiler_unavailable(self.inner)

    def attempt(self, task: Task, code: str, options: AttemptOptions) -> Iterator[Event]:
        events = self.inner.attempt(task, code, options)
        with self.builds.hold():
            first = next(events, None)
        if first is None:
            return
        yield first
        if isinstance(first, Verdict):
            return
        with self.pool.hold() as g:
            t0 = time.monotonic()
            rest = list(events)
            self.stage_s["run"] += time.monotonic() - t0
            infra = any(isinstance(e, InfraError) and e.source == "gpu" for e in rest)
        self.pool.report(g, ok=not infra)
        yield from rest
