"""In-process timing of native tasks (engine/timing/native.py) without a GPU.

The CPU fixture tests/data/cpu_inproc/inproc has a timing driver written in shell that speaks the protocol of
corpus/_common/beaver_timing.cuh (sections per side, timed lines, checks, threads, early stop, exit status),
and side libraries that are solution scripts. Everything else is the real engine: the reference build cache,
the side-library builds, the sandboxed driver run, the reading of its output, the flags, the fallback to the
process contract, and the batch's scheduled toolchain building everything before it holds the GPU alone.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from beavertui.batch.build_slots import BuildSlots
from beavertui.batch.gpu_pool import GpuPool
from beavertui.batch.placement import PoolPlacement, scheduled_local
from beavertui.engine.corpus.load import load_corpus, load_task
from beavertui.engine.errors import BeaverError
from beavertui.engine.session.events import Flag, GpuSignature, StageResult, Verdict
from beavertui.engine.stage import stages
from beavertui.engine.timing import native
from beavertui.engine.timing.speedup import (
    RULES,
    CandidateTimingFailed,
    Timer,
    TimingConfig,
    reference_workdir,
    time_reference,
)
from beavertui.engine.toolchain.base import AttemptOptions
from beavertui.engine.toolchain.local import LocalConfig, LocalToolchain
from beavertui.service.environment import local_config, timing_config

DATA = Path(__file__).parents[2] / "data" / "cpu_inproc"
GPU = GpuSignature(slug="test_gpu_sm_90_cuda_13_0", name="Test GPU", compute_capability="9.0")
MUL = "compute() { echo $(($1 * $2)); }\n"


@pytest.fixture
def inproc():  # type: ignore[no-untyped-def]
    return load_corpus(DATA).get("inproc")


def solution(cost: str, *hooks: str) -> str:
    return MUL + f"cost() {{ {cost}; }}\n" + "".join(h + "\n" for h in hooks)


def measure(task, tmp_path: Path, code: str, gate: float | None = None, rounds: int = 3, **tcfg):  # type: ignore[no-untyped-def]
    cfg = stages.StageConfig(base_dir=tmp_path / "w")
    timer = Timer(task, cfg, TimingConfig(inprocess=True, cache=tmp_path / "cache", rounds=rounds, **tcfg))
    with stages.workdir(task, code, cfg) as cand:
        return timer.measure(cand, gate), timer


def test_the_fixture_declares_a_timing_driver(inproc) -> None:  # type: ignore[no-untyped-def]
    d = inproc.timing_driver
    assert (
        d is not None
        and d.library == "solution.so"
        and d.driver == "timing.out"
        and d.driver_args == "--bench 5"
    )


def test_one_process_interleaves_reference_and_candidate(inproc, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    t, timer = measure(inproc, tmp_path, solution("echo 1.0"))
    assert t.method == "native_inprocess"
    assert [who for who, _ in timer.runs] == ["driver"]  # one timing process for the whole stage
    assert t.speedup == pytest.approx(2.0) and t.reference_ms == 2.0 and t.candidate_ms == 1.0
    assert len(t.candidate_samples) == len(t.reference_samples) == 15  # 3 rounds x 5 timed launches
    assert len(t.candidate_host_samples) == 15 and t.flags == [] and t.note is None and t.runs is None
    (_, res) = timer.runs[0]
    assert "--reference" in res.command and "--candidate" in res.command and "--rounds 3" in res.command
    # the driver and the reference's side library were built once beside the cached reference build
    built = reference_workdir(
        inproc, stages.StageConfig(), TimingConfig(inprocess=True, cache=tmp_path / "cache")
    )
    ref = native.reference_side(inproc, built, stages.StageConfig())
    assert (ref.path / "timing.out").is_file() and (ref.path / "solution.so").is_file()
    assert (ref.path / native.BUILT).is_file()


def test_the_reference_alone_is_timed_in_one_process_too(inproc, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    timer = Timer(
        inproc,
        stages.StageConfig(base_dir=tmp_path / "w"),
        TimingConfig(inprocess=True, cache=tmp_path / "cache"),
    )
    rt = time_reference(timer)
    assert rt.method == "native_inprocess" and rt.median_ms == 2.0 and len(rt.samples) == 15
    assert len(timer.runs) == 1 and "--candidate" not in timer.runs[0][1].command


def test_far_below_the_gate_stops_after_one_round(inproc, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    t, timer = measure(inproc, tmp_path, solution("echo 10.0"), gate=0.7)
    assert len(timer.runs) == 1 and "--stop-below 0.35" in timer.runs[0][1].command
    assert len(t.candidate_samples) == 5 and t.speedup == pytest.approx(0.2)
    assert t.note.startswith("stopped after 1 of 3 rounds: 0.2x, below 0.35x")
    t, _ = measure(inproc, tmp_path, solution("echo 5.0"), gate=0.7)  # 0.4x: not below half the gate
    assert len(t.candidate_samples) == 15 and t.note is None


def test_a_side_of_slow_launches_stops_at_its_budget_and_says_so(  # type: ignore[no-untyped-def]
    inproc, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # the fixture times 5 launches a round, the engine's least is 5
    monkeypatch.setattr(native, "MIN_ITERS", 2)
    assert TimingConfig().side_budget_ms == 2000.0  # the default
    t, timer = measure(inproc, tmp_path, solution("echo 1500.0"))  # 1.5 s a launch against a 2 s budget
    cmd = timer.runs[0][1].command
    assert "--side-budget-ms 2000 --min-iters 2" in cmd
    assert len(t.reference_samples) == 15  # 2 ms launches: never cut
    assert len(t.candidate_samples) == 6  # 2 of 5 in each of 3 rounds: 3 s was over the budget after 2
    assert t.candidate_ms == 1500.0 and t.speedup == pytest.approx(2.0 / 1500.0)
    assert t.note == "the candidate's launches took over 2 s a round: 2/2/2 of 5 timed in 3 rounds"
    t, _ = measure(inproc, tmp_path, solution("echo 1500.0"), gate=0.7)  # with the early stop: one round
    assert len(t.candidate_samples) == 2 and t.note is not None
    assert t.note.startswith("stopped after 1 of 3 rounds") and t.note.endswith("2 of 5 timed in 1 round")
    t, timer = measure(inproc, tmp_path, solution("echo 1500.0"), side_budget_ms=0)  # off: every launch
    assert "--side-budget-ms" not in timer.runs[0][1].command
    assert len(t.candidate_samples) == 15 and t.note is None
    # the setting users give, read where a command starts
    assert timing_config({}).side_budget_ms == 2000.0
    assert timing_config({"BEAVERTUI_SIDE_BUDGET_MS": "0"}).side_budget_ms == 0.0
    assert timing_config({"BEAVERTUI_SIDE_BUDGET_MS": " 500 "}).side_budget_ms == 500.0
    for bad in ("2s", "-1", "inf", "nan"):
        with pytest.raises(BeaverError, match=f"BEAVERTUI_SIDE_BUDGET_MS='{bad}': expected milliseconds"):
            timing_config({"BEAVERTUI_SIDE_BUDGET_MS": bad})
    with pytest.raises(BeaverError, match="expected milliseconds >= 0"):
        TimingConfig(side_budget_ms=-1.0)


def test_an_unstable_measurement_is_remeasured_once_in_a_second_process(inproc, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    jumpy = solution("if [ $(($1 % 2)) = 0 ]; then echo 1.0; else echo 3.0; fi")
    t, timer = measure(inproc, tmp_path, jumpy)
    assert len(timer.runs) == 2 and t.unstable and t.remeasured
    assert len(t.candidate_samples) == 15  # the second process's samples only


def test_a_candidate_wrong_at_the_timing_size_fails_before_any_sample(inproc, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(CandidateTimingFailed, match="MISMATCH y at the timing size"):
        measure(inproc, tmp_path, solution("echo 1.0", "ok_at_size() { return 1; }"))


def test_a_candidate_that_fails_after_its_samples_is_a_cached_result(inproc, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    t, _ = measure(inproc, tmp_path, solution("echo 1.0", "ok_after() { return 1; }"))
    assert [f.name for f in t.flags] == ["cached_result"]
    assert "MISMATCH y after timing" in t.flags[0].detail


def test_timed_lines_the_harness_did_not_write_disqualify(inproc, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    forged = solution("echo 1.0", 'extra() { echo "BEAVER_TIME_MS 0.001"; }')
    with pytest.raises(
        CandidateTimingFailed, match="timing output not written by the harness: 6 timed lines"
    ):
        measure(inproc, tmp_path, forged)


def test_host_threads_left_by_the_candidate_are_a_side_stream_finding(inproc, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    t, _ = measure(inproc, tmp_path, solution("echo 1.0", "round_threads() { echo 1; }"))
    assert t.flags == [
        Flag(
            name="side_stream",
            detail="the candidate started host threads in timed round 1 (4 -> 5 in the timing process)",
        )
    ]
    t, _ = measure(inproc, tmp_path, solution("echo 1.0", "load_threads() { echo 2; }"))
    assert t.flags[0].name == "side_stream"
    assert t.flags[0].detail.startswith("the candidate started host threads when its library was loaded")
    # work hidden from the events shows in the host times, per side, as with one process per side
    t, _ = measure(inproc, tmp_path, solution("echo 1.0", "host() { echo 5.0; }"))
    assert [f.name for f in t.flags] == ["side_stream"] and "host" in t.flags[0].detail


def test_a_candidate_that_does_not_build_as_a_library_falls_back_to_one_process_per_side(
    inproc, tmp_path: Path
) -> None:  # type: ignore[no-untyped-def]
    t, timer = measure(inproc, tmp_path, solution("echo 1.0", "# NOLIB"))
    assert t.method == "beaver_time_ms" and t.speedup == pytest.approx(2.0)
    assert t.note.startswith("in-process timing unavailable (the candidate does not build as a side library")
    assert [who for who, _ in timer.runs] == ["reference", "candidate"] * 3


def test_parsing_attributes_lines_and_failures_to_sides() -> None:
    log = (
        "BEAVER_SIDE reference load\nBEAVER_THREADS 3\nBEAVER_SIDE candidate load\nBEAVER_THREADS 3\n"
        "BEAVER_DRIVER sides 2 rounds 3 iters 2 warmup 3 seed 9\n"
        "BEAVER_SIDE reference round 1\nBEAVER_TIME_MS 2\nBEAVER_HOST_MS 2.1\nBEAVER_TIME_MS 2\n"
        "BEAVER_SIDE candidate round 1\nBEAVER_TIME_MS 1\nCUDA error cudaErrorIllegalAddress\n"
    )
    res = StageResult(stage="benchmark", command="x", rc=3, duration_s=1.0, log=log)
    run = native.DriverRun.read(res, RULES.parse_times)
    assert [(s.side, s.phase, s.round) for s in run.parts] == [
        ("driver", "start", None), ("reference", "load", None), ("candidate", "load", None),
        ("reference", "round", 1), ("candidate", "round", 1),
    ]  # fmt: skip
    assert run.samples("reference") == [2.0, 2.0] and run.samples("candidate") == [1.0]
    assert run.culprit() == "candidate" and not run.done and run.iters == 2 and run.forged() is None
    assert "cudaErrorIllegalAddress" in run.text("candidate") and "cudaError" not in run.text("reference")


def _tool(tmp_path: Path, kind: str) -> LocalToolchain:
    config = LocalConfig(
        base_dir=tmp_path / "work", timing=TimingConfig(inprocess=True, cache=tmp_path / "cache", rounds=2)
    )
    tool = (
        scheduled_local(GpuPool(["0"]), BuildSlots(2), None, config)
        if kind == "batch"
        else LocalToolchain(config)
    )
    tool.gpu = lambda: GPU  # type: ignore[method-assign]
    return tool


@pytest.mark.parametrize("kind", ["local", "batch"])
def test_both_toolchains_time_in_one_process(inproc, tmp_path: Path, kind: str) -> None:  # type: ignore[no-untyped-def]
    tool = _tool(tmp_path, kind)
    events = list(tool.attempt(inproc, solution("echo 1.0"), AttemptOptions(iteration=1, gate=0.7)))
    v = events[-1]
    assert isinstance(v, Verdict) and v.success and v.speedup == pytest.approx(2.0)
    timed = next(e for e in events if e.kind == "timing").result
    assert timed.method == "native_inprocess" and len(timed.candidate_samples) == 10


def test_the_batch_builds_everything_before_it_holds_the_gpu_alone(inproc, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    tool = _tool(tmp_path, "batch")
    assert isinstance(tool.placement, PoolPlacement)
    order: list[str] = []
    hold, build_hold, run_stage = tool.placement.pool.hold, tool.placement.builds.hold, stages.run_stage

    def watched_hold(**kw):  # type: ignore[no-untyped-def]
        order.append("gpu exclusive" if kw.get("exclusive") else "gpu shared")
        return hold(**kw)

    def watched_stage(work, stage, command, *a, **kw):  # type: ignore[no-untyped-def]
        order.append(f"{stage}: {command.split()[0]}")
        out = run_stage(work, stage, command, *a, **kw)
        order.append(f"end {stage}")
        return out

    tool.placement.pool.hold = watched_hold  # type: ignore[method-assign]
    tool.placement.builds.hold = build_hold  # type: ignore[method-assign]
    mp = pytest.MonkeyPatch()
    mp.setattr(stages, "run_stage", watched_stage)
    try:
        events = list(tool.attempt(inproc, solution("echo 1.0"), AttemptOptions(iteration=1, gate=0.7)))
    finally:
        mp.undo()
    assert events[-1].success  # type: ignore[attr-defined]
    held = order.index("gpu exclusive")
    after = [x for x in order[held:] if not x.startswith("end")]
    assert after == ["gpu exclusive", f"benchmark: {after[1].split()[1]}"], order  # nothing built held alone
    assert after[1].endswith("/timing.out")  # one timing process
    builds = [x for x in order[:held] if x.startswith("build")]
    # the candidate's test build; the reference's test build, side library and driver; the candidate's side library
    assert len(builds) == 5, order


def test_a_failure_outside_the_candidates_sections_falls_back_rather_than_blaming_anyone() -> None:
    log = (
        "BEAVER_SIDE reference load\nBEAVER_THREADS 3\nBEAVER_SIDE reference check\nFAILED y: 9 of 10\nFAIL\n"
    )
    run = native.DriverRun.read(
        StageResult(stage="benchmark", command="x", rc=1, duration_s=1.0, log=log), RULES.parse_times
    )
    with pytest.raises(native.NativeUnavailable, match="stopped in the reference's section"):
        native._samples(run, True, RULES)
    loaded = "BEAVER_SIDE candidate load\nBEAVER_LOAD_FAILED candidate: cannot load x.so: undefined symbol\n"
    run = native.DriverRun.read(
        StageResult(stage="benchmark", command="x", rc=4, duration_s=1.0, log=loaded), RULES.parse_times
    )
    with pytest.raises(native.NativeUnavailable, match="candidate's side library does not load"):
        native._samples(run, True, RULES)


def test_in_process_timing_is_the_default_and_process_timing_is_asked_for(
    inproc, tmp_path: Path, monkeypatch
) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.delenv("BEAVERTUI_TIMING", raising=False)
    assert TimingConfig().inprocess and timing_config().inprocess and local_config().timing.inprocess
    monkeypatch.setenv("BEAVERTUI_TIMING", "process")
    cfg = stages.StageConfig(base_dir=tmp_path / "w")
    assert TimingConfig().inprocess  # the engine reads no environment: the edge hands it the setting
    tool = LocalToolchain(local_config(timing=timing_config(cache=tmp_path / "cache")))
    timer = Timer(inproc, cfg, tool.config.timing)
    assert not timer.inprocess
    with stages.workdir(inproc, solution("echo 1.0"), cfg) as cand:
        t = timer.measure(cand, None)
    assert t.method == "beaver_time_ms" and t.note is None  # one process per side and round
    assert [who for who, _ in timer.runs] == ["reference", "candidate"] * 3
    assert Timer(
        inproc, cfg, timing_config({"BEAVERTUI_TIMING": "inprocess"}, cache=tmp_path / "c2")
    ).inprocess
    with pytest.raises(BeaverError, match="BEAVERTUI_TIMING='in-process': expected 'inprocess' or 'process'"):
        local_config({"BEAVERTUI_TIMING": "in-process"})


def test_timing_sources_are_not_harness_and_a_change_rebuilds_the_timing_side(tmp_path: Path) -> None:
    """corpus/_timing is outside the correctness harness (recordings, baselines and verdicts keyed on
    harness_hash stand when it changes), yet a change of it builds the reference's timing side again."""
    from beavertui.engine.corpus.harness import harness_hash

    root = tmp_path / "corpus"
    shutil.copytree(DATA, root)
    task = load_corpus(root).get("inproc")
    before = harness_hash(task)
    t, _ = measure(task, tmp_path, solution("echo 1.0"))
    assert t.method == "native_inprocess"
    cfg, tcfg = stages.StageConfig(), TimingConfig(inprocess=True, cache=tmp_path / "cache")
    ref = reference_workdir(task, cfg, tcfg)
    assert task.timing_driver is not None
    key = native.timing_key(task.timing_driver)
    assert (ref.path / native.BUILT).read_text().splitlines()[0] == key
    driver = root / "_timing" / "driver.sh"
    driver.write_text(driver.read_text() + "# the timing driver, changed\n")
    changed = load_corpus(root).get("inproc")
    assert harness_hash(changed) == before
    assert changed.timing_driver is not None and native.timing_key(changed.timing_driver) != key
    t, _ = measure(changed, tmp_path, solution("echo 1.0"))
    assert t.method == "native_inprocess"
    assert reference_workdir(changed, cfg, tcfg).path == ref.path  # the same cached reference build
    assert (ref.path / native.BUILT).read_text().splitlines()[0] == native.timing_key(changed.timing_driver)
    assert "changed" in (ref.path / "timing.out").read_text()


def test_a_task_copied_without_its_timing_folder_loads_and_is_timed_the_old_way_saying_why(
    tmp_path: Path,
) -> None:  # type: ignore[no-untyped-def]
    root = tmp_path / "corpus"
    shutil.copytree(DATA, root)
    shutil.rmtree(root / "_timing")
    task = load_task(root / "inproc", root)
    t, timer = measure(task, tmp_path, solution("echo 1.0"))
    assert t.method == "beaver_time_ms" and t.speedup == pytest.approx(2.0)
    assert t.note is not None and "its timing sources (_timing/) are not in the corpus" in t.note
    assert [who for who, _ in timer.runs] == ["reference", "candidate"] * 3


def test_the_batch_says_why_it_timed_the_old_way(tmp_path: Path) -> None:
    root = tmp_path / "corpus"
    shutil.copytree(DATA, root)
    shutil.rmtree(root / "_timing")
    task = load_task(root / "inproc", root)
    events = list(
        _tool(tmp_path, "batch").attempt(task, solution("echo 1.0"), AttemptOptions(iteration=1, gate=0.7))
    )
    timed = next(e for e in events if e.kind == "timing").result
    assert timed.method == "beaver_time_ms"
    assert "in-process timing unavailable (its timing sources (_timing/) are not in the corpus" in (
        timed.note or ""
    )
