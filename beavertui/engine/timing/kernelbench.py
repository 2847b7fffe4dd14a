"""kernelbench's timing: one driver process (kernelbench_driver.py) times the eager Model against the
candidate's ModelNew, interleaved, the L2 flushed before each call, with CUDA events.

The driver may be started ahead of the GPU hold (warm: torch imported, the task's problem.py loaded, no GPU
visible) and given its go once the GPU is held (its CUDA_ variables then). A driver that fails on the
candidate's side is the candidate's failure when the test command, run again as the correctness run ran it,
fails again (TimedRuns.candidate_failure)."""

from __future__ import annotations

import json
import os
import shlex
import time
import uuid
from contextlib import nullcontext
from dataclasses import dataclass, replace
from pathlib import Path

from beavertui.engine.corpus import families
from beavertui.engine.fileio import write_atomic
from beavertui.engine.host.adapt import adapt_command
from beavertui.engine.session.events import StageResult, TimingResult
from beavertui.engine.stage import stages
from beavertui.engine.timing.method import TimingMethod
from beavertui.engine.timing.reference import ReferenceTiming
from beavertui.engine.timing.runs import LATE_ENV, TimedRuns
from beavertui.engine.timing.samples import (
    CV_LIMIT,
    CandidateNoSamples,
    SpeedupUnavailable,
    phases_note,
    stats,
    timing_result,
)

#: Prefix of the driver's result line.
DRIVER_TAG = "BEAVER_KB_TIMING "

#: The in-process kernelbench timing driver (a standalone script run with the task's interpreter).
KERNELBENCH_DRIVER = Path(__file__).with_name("kernelbench_driver.py")

#: The driver's lines when, started ahead of the GPU hold (``--go-file``), it is ready for its go and when it
#: took it (kernelbench_driver.py).
DRIVER_READY = "BEAVER_KB_READY"
DRIVER_GO = "BEAVER_KB_GO"

#: The longest KernelbenchDriver.warm waits for the driver to be ready (torch imported), seconds.
READY_S = 120.0


@dataclass
class _Warm:
    """A kernelbench driver started ahead of the GPU hold, waiting for its go (KernelbenchDriver.warm)."""

    work: Path
    reference_only: bool
    stage: stages.StartedStage
    go: Path
    """The file whose appearance is its go."""
    config: stages.StageConfig
    """The timer's config when it was started, its environment and pausable aside (_as_run)."""
    ready: bool = True
    """Whether its ready line was seen (warm(wait=False) leaves that to the go)."""


def _as_run(config: stages.StageConfig) -> stages.StageConfig:
    """What of ``config`` a process started ahead of the GPU hold must share with the hold's: all but its
    environment (the GPU comes with the go: LATE_ENV) and who may stop it meanwhile (a batch's build slots
    before the hold, nothing in it)."""
    return replace(config, env=None, pausable=None)


class KernelbenchDriver(TimingMethod):
    """``torch_events_l2flush_interleaved``: the task's reference is its eager Model, nothing to build."""

    warms = True

    def __init__(self, ctx: TimedRuns, name: str) -> None:
        super().__init__(ctx, name)
        self._warm: _Warm | None = None

    def close(self) -> None:
        """End the driver warm() started that no timing used (nothing when there is none)."""
        warm, self._warm = self._warm, None
        if warm is not None:
            warm.stage.process.stop()
            warm.go.unlink(missing_ok=True)

    def prepare_candidate(self, cand: stages.WorkDir, park: bool = True) -> None:
        """The driver started up to its go in the candidate's work dir (warm)."""
        self.warm(cand)

    def prepare_reference(self, wait: bool = True) -> None:
        """The reference-only driver started in the reference's work dir up to its go (warm; ``wait=False``:
        started, not waited for)."""
        self.warm(self.ctx.reference(), reference_only=True, wait=wait)

    def command(self, reference_only: bool) -> str:
        """The driver's command: run in the environment the task's own eval compiles the candidate in
        (families.kernelbench_compile_env), so that it loads the build stage's pre-build of the candidate's
        extension instead of compiling it again with the GPU held."""
        task, ctx = self.ctx.task, self.ctx
        trials = max(2 * ctx.tcfg.process_runs, 10)
        test = adapt_command(task.test_command, ctx.config.sm)
        env = " ".join(
            f"{k}={shlex.quote(v)}" for k, v in sorted(families.kernelbench_compile_env(test).items())
        )
        return (
            f"{env} python {shlex.quote(str(KERNELBENCH_DRIVER))} --problem problem.py "
            f"--solution {shlex.quote(task.solution_file)} --trials {trials}"
            + (" --reference-only" if reference_only else "")
        )

    def warm(self, work: stages.WorkDir, reference_only: bool = False, wait: bool = True) -> bool:
        """Start the kernelbench driver in ``work`` ahead of the GPU hold, up to its go: torch imported and
        the task's problem.py loaded, with no GPU visible (``CUDA_VISIBLE_DEVICES`` empty), nothing run on
        one and the candidate's solution not loaded. Waits at most READY_S for it to be ready, and keeps it
        for the next samples() of this work dir and side, which gives it its go. False, with nothing kept,
        when it did not get ready (that timing then starts its own driver). ``wait=False`` returns once it is
        started (corpus validate starts the next task's driver while one is timed): the go then waits for it
        to be ready first."""
        self.close()
        ctx, tcfg = self.ctx, self.ctx.tcfg
        go = work.path / f".beaver-kb-go-{uuid.uuid4().hex[:12]}"
        command = (
            self.command(reference_only) + f" --go-file {shlex.quote(go.name)} --go-timeout {tcfg.go_s:g}"
        )
        base = dict(ctx.config.env if ctx.config.env is not None else os.environ)
        ahead = replace(ctx.config, env={**base, "CUDA_VISIBLE_DEVICES": ""})
        life = READY_S + tcfg.go_s + tcfg.stage_s
        try:
            stage = stages.start_stage(work, command, life, ahead, stage="benchmark")
        except OSError:
            return False
        # importing torch, it counts as a build (a batch may stop it for a timing)
        with nullcontext() if ctx.config.pausable is None else ctx.config.pausable(stage.process):
            ready = not wait or stage.process.until(DRIVER_READY.encode(), READY_S)
        if not ready:
            stage.process.stop()
            return False
        self._warm = _Warm(work.path, reference_only, stage, go, _as_run(ctx.config), ready=wait)
        return True

    def go(self, work: stages.WorkDir, reference_only: bool) -> StageResult | None:
        """The run of the driver warm() started for this work dir and side, given its go with the environment
        of the timer's config (the GPU now held); None, the driver ended, when there is none, it is gone, or
        it could not take that environment or never took its go. Its record is that of the driver run started
        now: the stage time limit counts from the go, and so does its duration; the driver's ready and go
        lines are left out of its log."""
        warm, self._warm = self._warm, None
        if warm is None:
            return None
        ctx = self.ctx
        try:
            now = (work.path, reference_only, _as_run(ctx.config))
            if (warm.work, warm.reference_only, warm.config) != now or not warm.stage.process.alive():
                return None
            if not warm.ready and not warm.stage.process.until(DRIVER_READY.encode(), READY_S):
                return None  # started without waiting (warm(wait=False)) and not ready in time
            want = stages.stage_env(ctx.task, ctx.config)
            env = {k: v for k, v in want.items() if warm.stage.env.get(k) != v}
            unset = sorted(k for k in warm.stage.env if k not in want)
            if not all(LATE_ENV.match(k) for k in (*env, *unset)):
                return None
            try:  # whole, at once: the driver never reads half of it
                write_atomic(warm.go, json.dumps({"env": env, "unset": unset}), durable=False)
            except OSError:
                return None
            went = time.monotonic()
            out = warm.stage.finish(ctx.tcfg.stage_s)
        finally:
            warm.stage.process.stop()  # nothing once finished
            warm.go.unlink(missing_ok=True)
        lines = out.log.splitlines(keepends=True)
        if not any(ln.strip() == DRIVER_GO for ln in lines):
            return None  # it gave up waiting (its go timeout) before the go came
        kept = [ln for ln in lines if ln.strip() not in (DRIVER_READY, DRIVER_GO)]
        dropped = len("".join(lines).encode()) - len("".join(kept).encode())
        res = stages.stage_result("benchmark", warm.stage.command, out)
        return res.model_copy(
            update={
                "log": "".join(kept),
                "log_bytes": max(0, res.log_bytes - dropped),
                "duration_s": round(max(0.0, out.duration_s - (went - warm.stage.process.began)), 4),
            }
        )

    def samples(self, work: stages.WorkDir, reference_only: bool = False) -> dict[str, object]:
        """Run the in-process driver in ``work`` (eager Model against its ModelNew); its result object. A
        driver warm() started for this work dir and side is given its go instead (go); without one, or when
        it cannot be used, the driver is started here."""
        ctx = self.ctx
        res = self.go(work, reference_only)
        if res is None:
            res = stages.run_stage(
                work, "benchmark", self.command(reference_only), ctx.tcfg.stage_s, ctx.config
            )
        ctx.runs.append(("candidate", res))
        doc: dict[str, object] | None = None
        for line in res.log.splitlines():
            if line.startswith(DRIVER_TAG):
                try:
                    doc = json.loads(line[len(DRIVER_TAG) :])
                except ValueError:
                    doc = None
        if doc is None:
            tail = [ln for ln in res.log.splitlines() if ln.strip()][-1:] or ["no output"]
            raise SpeedupUnavailable(
                f"the kernelbench timing driver printed no result (rc {res.rc}): {tail[0][:200]}"
            )
        if "error" in doc:
            error = SpeedupUnavailable(
                f"kernelbench timing failed on the {doc.get('side')} side: {doc['error']}"
            )
            raise CandidateNoSamples(error, res) if doc.get("side") == "candidate" else error
        return doc

    def _pair(self, cand: stages.WorkDir) -> tuple[dict[str, object], list[float], list[float]]:
        try:
            doc = self.samples(cand)
        except CandidateNoSamples as exc:  # the driver has ended: the candidate's failure, or not?
            raise self.ctx.candidate_failure(self.name, cand, exc.result, exc.error) from None
        r = [float(x) for x in doc["reference_ms"]]  # type: ignore[attr-defined]
        c = [float(x) for x in doc["candidate_ms"]]  # type: ignore[attr-defined]
        if not r or not c:
            raise SpeedupUnavailable("the kernelbench timing driver returned no samples")
        return doc, r, c

    def measure(self, cand: stages.WorkDir, gate: float | None) -> TimingResult:
        self.ctx.runs = []
        doc, r, c = self._pair(cand)
        again = max(stats(r)[1], stats(c)[1]) > CV_LIMIT
        if again:  # the timing rules: re-measured once, that measurement kept
            doc, r, c = self._pair(cand)
        flush = int(doc.get("flush_bytes") or 0) >> 20  # type: ignore[call-overload]
        note = ("re-measured once: CV above 3%; " if again else "") + (
            f"one process, interleaved, {doc.get('warmup')} warm-up calls, L2 flushed ({flush} MiB) before "
            "each call, CUDA events" + phases_note(doc)
        )
        return timing_result(self.name, r, c, note=note, remeasured=again, driver=doc)

    def time_reference(self) -> ReferenceTiming:
        """The eager Model alone, L2 flushed per call; re-measured once when CV is above 3%."""
        ref = self.ctx.reference()

        def alone() -> tuple[dict[str, object], list[float]]:
            doc = self.samples(ref, reference_only=True)
            got = [float(x) for x in doc["reference_ms"]]  # type: ignore[attr-defined]
            if not got:
                raise SpeedupUnavailable("the kernelbench timing driver returned no reference samples")
            return doc, got

        doc, got = alone()
        med, cv = stats(got)
        again = ""
        if cv > CV_LIMIT:  # the timing rules: re-measured once, that measurement kept
            doc, got = alone()
            med, cv = stats(got)
            again = "re-measured once: CV above 3%; "
        said = again + "eager Model alone, L2 flushed per call" + phases_note(doc)
        return ReferenceTiming(self.name, med, cv, got, cv > CV_LIMIT, said)
