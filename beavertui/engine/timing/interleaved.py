"""Interleaved (reference, candidate) runs of processes: the native contract, CUPTI and ncu.

The native contract (``beaver_time_ms``): the task's benchmark_command prints ``BEAVER_TIME_MS <ms>`` per
timed launch, ``rounds`` rounds of one process per side. CUPTI (``cupti``): kernel records injected into the
unmodified test command, one sample per run, runs started ahead of their turn (TimingConfig.prestart) and
sampled until the speedup's interval is narrow enough (adaptive.py). ncu (``ncu``): its
``gpu__time_duration.sum``, when CUPTI cannot be used (a CUPTI timing that fails falls back to it).

Anti-cheat side of the native contract (anticheat.py): each timed run also prints ``BEAVER_HOST_MS``, kept per
sample, for the side-stream check; a candidate benchmark run that fails after printing its samples is flagged
``cached_result``; one that fails before any sample raises CandidateTimingFailed."""

from __future__ import annotations

import math
import shlex
import shutil
from collections.abc import Callable

from beavertui.engine.errors import BeaverError
from beavertui.engine.host.adapt import adapt_command
from beavertui.engine.judge import anticheat
from beavertui.engine.session.events import Flag, StageResult, TimingResult
from beavertui.engine.stage import stages
from beavertui.engine.timing import adaptive, cupti
from beavertui.engine.timing.method import TimingMethod
from beavertui.engine.timing.reference import ReferenceTiming
from beavertui.engine.timing.runs import TimedRuns
from beavertui.engine.timing.samples import (
    CV_LIMIT,
    CandidateNoSamples,
    CandidateTimingFailed,
    kernels_ms,
    parse_ncu_csv,
    parse_times,
    stats,
    timing_command,
    timing_result,
)

Sampler = Callable[[stages.WorkDir], tuple[list[float], StageResult]]

#: The method of the native contract (one process per side and round).
CONTRACT = "beaver_time_ms"


class Interleaved(TimingMethod):
    """``beaver_time_ms``, ``cupti`` or ``ncu``: the reference built in its own work dir, then rounds of
    (reference, candidate) processes."""

    builds = True

    def __init__(self, ctx: TimedRuns, name: str) -> None:
        super().__init__(ctx, name)
        self.stopped_early: str | None = None
        """Why the latest measure() stopped after its first round, or None."""

    @property
    def process(self) -> bool:
        """One sample per process (cupti, ncu), sampled adaptively, rather than many per process."""
        return self.name != CONTRACT

    @property
    def gated(self) -> bool:
        """Whether CUPTI runs are started ahead of their turn (TimingConfig.prestart; not once a run did not
        see its go here, gate_broken)."""
        tcfg = self.ctx.tcfg
        return self.name == "cupti" and tcfg.prestart in ("cupti", "all") and self.ctx.gate_broken is None

    def falls_back(self) -> bool:
        """Whether a failed CUPTI timing is tried again with ncu (CUPTI not forced, ncu installed)."""
        return self.name == "cupti" and self.ctx.tcfg.method is None and shutil.which("ncu") is not None

    def prepare(self) -> None:
        """The reference's work dir (cached per reference, harness and toolkit) and, for CUPTI, the injection
        library. Raises SpeedupUnavailable when the reference does not build here, and BeaverError when the
        CUPTI library does not build and there is no ncu to fall back to; otherwise that failure is
        remembered and measure() goes straight to ncu without building again."""
        self.prepared(self.ctx.reference())
        ctx = self.ctx
        if self.name == "cupti" and ctx.lib is None and ctx.lib_error is None:
            ctx.build_library()
            if ctx.lib_error is not None and not self.falls_back():
                raise BeaverError(ctx.lib_error)

    def prepared(self, ref: stages.WorkDir) -> None:
        """What a subclass builds beside the reference build (nothing here)."""

    # ------------------------------------------------------------------ samplers

    def contract(self, work: stages.WorkDir) -> tuple[list[float], StageResult]:
        task, ctx = self.ctx.task, self.ctx
        assert task.benchmark_command
        res = stages.run_stage(work, "benchmark", task.benchmark_command, ctx.tcfg.stage_s, ctx.config)
        return parse_times(res.log), res

    def kernel_ms(self, text: str) -> float | None:
        """The sum of the kernels an injection file records (a Python harness's framework kernels left out),
        or None when it records none."""
        recs, _problems = cupti.parse(text)
        return kernels_ms([(r.name, r.ms) for r in recs], self.ctx.python)

    def cupti_samples(self, text: str, res: StageResult) -> list[float]:
        ms = self.kernel_ms(text)
        return [] if res.rc != 0 or ms is None else [ms]

    def cupti(self, work: stages.WorkDir) -> tuple[list[float], StageResult]:
        text, res = self.ctx.end_run(self.ctx.start_run(work, "run", gated=False))
        return self.cupti_samples(text, res), res

    def ncu(self, work: stages.WorkDir) -> tuple[list[float], StageResult]:
        ctx = self.ctx
        tcfg = ctx.tcfg
        nvtx = f"--nvtx --nvtx-include {shlex.quote(tcfg.nvtx_range + '/')} " if tcfg.nvtx_range else ""
        test = adapt_command(timing_command(ctx.task.test_command), ctx.config.sm)
        cmd = (
            f"ncu --metrics gpu__time_duration.sum --clock-control none --csv --print-units base {nvtx}"
            f"--target-processes all /bin/bash -c {shlex.quote(test)}"
        )
        res = stages.run_stage(work, "benchmark", cmd, tcfg.stage_s, ctx.config, adapt=False)
        ms = kernels_ms(parse_ncu_csv(res.log), ctx.python)
        return ([] if ms is None else [ms]), res

    def sampler(self) -> Sampler:
        return {CONTRACT: self.contract, "cupti": self.cupti, "ncu": self.ncu}[self.name]

    # ------------------------------------------------------------------ measurement

    def interleaved(
        self, ref: stages.WorkDir, cand: stages.WorkDir, stop_below: float | None = None
    ) -> tuple[list[float], list[float]]:
        ctx, tcfg = self.ctx, self.ctx.tcfg
        if self.gated:
            return ctx.gated_or_in_turn(
                lambda: self.interleaved_gated(ref, cand), lambda: self.interleaved(ref, cand, stop_below)
            )
        sample = self.sampler()
        rounds = tcfg.process_runs if self.process else tcfg.rounds
        r_all: list[float] = []
        c_all: list[float] = []
        self.stopped_early = None
        for done in range(rounds):
            if done == 1 and stop_below is not None and not self.process and r_all and c_all:
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
                    if who == "candidate" and not self.process and res.rc and not res.timed_out:
                        raise CandidateTimingFailed(res, anticheat.failure_evidence(res.log, res.rc))
                    if who == "candidate":
                        raise ctx.candidate_failure(self.name, cand, res, rerun=self.process)
                    raise ctx.no_samples(self.name, who, res)
                acc.extend(got)
                ctx.runs.append((who, res))
            if self.process and adaptive.enough(r_all, c_all, tcfg.min_process_runs, tcfg.target_halfwidth):
                break
        return r_all, c_all

    def cupti_chain(
        self,
        order: tuple[tuple[stages.WorkDir, str], ...],
        total: int,
        enough: Callable[[str, dict[str, list[float]]], bool],
    ) -> dict[str, list[float]]:
        """At most ``total`` CUPTI runs of the sides in ``order``, in turn, started ahead (TimedRuns.chain),
        until ``enough(side just run, samples so far)``; the samples of each side, by name. With
        TimingConfig.go_at_exit a run is let go at the exit mark of the one before, unless the kernels that
        one recorded end the sampling."""
        got: dict[str, list[float]] = {who: [] for _, who in order}

        def take(who: str, text: str, res: StageResult) -> bool:
            samples = self.cupti_samples(text, res)
            if not samples:
                error = self.ctx.no_samples(self.name, who, res)
                raise CandidateNoSamples(error, res) if who == "candidate" else error
            got[who].extend(samples)
            self.ctx.runs.append((who, res))
            return enough(who, got)

        def would_end(who: str, text: str) -> bool:
            ms = self.kernel_ms(text)
            return ms is not None and enough(who, {**got, who: [*got[who], ms]})

        self.ctx.chain(order, total, take, would_end=would_end if self.ctx.tcfg.go_at_exit else None)
        return got

    def interleaved_gated(self, ref: stages.WorkDir, cand: stages.WorkDir) -> tuple[list[float], list[float]]:
        """CUPTI runs in (reference, candidate) rounds as interleaved, started ahead of their turn
        (cupti_chain), until adaptive sampling has enough after a candidate's run."""
        tcfg = self.ctx.tcfg
        target, least = tcfg.target_halfwidth, tcfg.min_process_runs
        self.stopped_early = None

        def enough(who: str, got: dict[str, list[float]]) -> bool:
            return who == "candidate" and adaptive.enough(got["reference"], got["candidate"], least, target)

        try:
            got = self.cupti_chain(((ref, "reference"), (cand, "candidate")), 2 * tcfg.process_runs, enough)
        except CandidateNoSamples as exc:  # the runs started ahead have ended: whose failure was it?
            raise self.ctx.candidate_failure(self.name, cand, exc.result, exc.error) from None
        return got["reference"], got["candidate"]

    def measure(self, cand: stages.WorkDir, gate: float | None) -> TimingResult:
        return self.measure_processes(self.ctx.reference(), cand, gate, None)

    def measure_processes(
        self, ref: stages.WorkDir, cand: stages.WorkDir, gate: float | None, fallback: str | None
    ) -> TimingResult:
        """Interleaved rounds, re-measured once when either CV is above 3%; ``fallback`` says why an
        earlier way did not apply (the result's note starts with it)."""
        ctx, tcfg = self.ctx, self.ctx.tcfg
        ctx.runs = []
        stop_below = gate / 2 if gate else None
        try:
            r, c = self.interleaved(ref, cand, stop_below)
        except CandidateTimingFailed:
            raise  # the candidate's own failure: the profiler would find it again
        except BeaverError:
            if not self.falls_back():
                raise
            self.name = "ncu"
            r, c = self.interleaved(ref, cand)
        note = self.stopped_early
        if ctx.gate_broken is not None:
            fallback = "; ".join(x for x in (fallback, f"runs started in turn: {ctx.gate_broken}") if x)
        (rm, rcv), (cm, ccv) = stats(r), stats(c)
        if self.process:
            note = adaptive.note(r, c, tcfg.target_halfwidth)
        first = len(ctx.runs)
        again = max(rcv, ccv) > CV_LIMIT
        if again:
            r, c = self.interleaved(ref, cand)
            (rm, rcv), (cm, ccv) = stats(r), stats(c)
            note = "re-measured once: CV above 3%"
            if self.process:
                note += "; " + adaptive.note(r, c, tcfg.target_halfwidth)
        else:
            first = 0
        speedup = rm / cm if cm > 0 else math.inf
        if not (math.isfinite(speedup) and speedup > 0):
            raise BeaverError(
                f"{self.name} timing gave no usable speedup (reference {rm:g} ms, candidate {cm:g} ms)"
            )
        pairs: dict[str, list[tuple[float, float]]] = {"reference": [], "candidate": []}
        for who, res in ctx.runs[first:]:
            pairs[who].extend(anticheat.timed_pairs(res.log) if not self.process else [])
        return timing_result(
            self.name,
            r,
            c,
            note="; ".join(x for x in (fallback, note) if x) or None,
            flags=self.audit(pairs["candidate"], pairs["reference"]),
            candidate_host=[h for _, h in pairs["candidate"]],
            reference_host=[h for _, h in pairs["reference"]],
            runs=len(c) if self.process else None,
            remeasured=again,
        )

    def audit(self, cand: list[tuple[float, float]], ref: list[tuple[float, float]]) -> list[Flag]:
        """Anti-cheat flags of the benchmark runs: a candidate run that failed after its timed launches
        (``cached_result``), output left poisoned in a timed launch, work hidden from the events."""
        found: list[Flag] = []
        runs = self.ctx.runs
        reference_logs = "\n".join(res.log for who, res in runs if who == "reference")
        for who, res in runs:
            if who != "candidate":
                continue
            hit = anticheat.cached_result_flag(res.rc, res.log, res.timed_out)
            found += [hit] if hit and not self.process else []
            found += anticheat.poison_flags(res.log, " in a timing run", reference_logs)
        side = anticheat.side_stream_of_pairs(cand, ref)
        found += [side] if side else []
        return anticheat.first_of_each_kind(found)

    def time_reference(self) -> ReferenceTiming:
        """The reference alone in the same runs as a timing stage; re-measured once when CV is above 3%."""
        ctx, tcfg = self.ctx, self.ctx.tcfg
        ref = ctx.reference()
        sample = self.sampler()
        rounds = tcfg.process_runs if self.process else tcfg.rounds
        target = tcfg.target_halfwidth

        def ahead() -> list[float]:  # runs started ahead of their turn, as in a timing stage
            def enough(_who: str, got: dict[str, list[float]]) -> bool:
                return adaptive.enough_alone(got["reference"], tcfg.min_process_runs, target)

            return self.cupti_chain(((ref, "reference"),), rounds, enough)["reference"]

        def in_turn() -> list[float]:
            acc: list[float] = []
            for _ in range(rounds):
                got, res = sample(ref)
                if not got:
                    raise ctx.no_samples(self.name, "reference", res)
                acc.extend(got)
                if self.process and adaptive.enough_alone(acc, tcfg.min_process_runs, target):
                    break
            return acc

        def collect() -> list[float]:
            return ctx.gated_or_in_turn(ahead, in_turn) if self.gated else in_turn()

        samples = collect()
        med, cv = stats(samples)
        note = adaptive.note_alone(samples, target) if self.process else None
        if cv > CV_LIMIT:
            samples = collect()
            med, cv = stats(samples)
            note = "re-measured once: CV above 3%" + (
                f"; {adaptive.note_alone(samples, target)}" if self.process else ""
            )
        return ReferenceTiming(self.name, med, cv, samples, cv > CV_LIMIT, note)
