"""LocalToolchain and Timer on a CPU-only fixture (a shell 'kernel' with the BEAVER_TIME_MS contract)."""

from __future__ import annotations

from pathlib import Path

import pytest

from beavertui.engine.corpus.harness import harness_hash, reference_hash
from beavertui.engine.corpus.load import load_corpus
from beavertui.engine.session.events import Built, Flag, GpuSignature, Ran, Sanitized, Verdict
from beavertui.engine.stage import stages
from beavertui.engine.timing import baselines
from beavertui.engine.timing.speedup import (
    Timer,
    TimingConfig,
    parse_ncu_csv,
    parse_times,
    stats,
    timing_command,
)
from beavertui.engine.toolchain.base import AttemptOptions
from beavertui.engine.toolchain.local import LocalConfig, LocalToolchain

DATA = Path(__file__).parents[2] / "data"


@pytest.fixture
def sleepy():
    return load_corpus(DATA / "cpu").get("sleepy")


def test_failing_attempt_yields_events_in_order_and_asks_memcheck(sleepy, tmp_path: Path) -> None:
    tool = LocalToolchain(LocalConfig(base_dir=tmp_path, sanitizer_exe="compute-sanitizer-not-here"))
    events = list(tool.attempt(sleepy, sleepy.broken_start(), AttemptOptions(iteration=3)))
    assert [type(e) for e in events] == [Built, Ran, Sanitized, Verdict]
    assert events[1].result.rc == 1
    san = events[2]
    assert san.tool == "memcheck" and san.result.stage == "sanitize"
    assert san.result.command.startswith("compute-sanitizer-not-here --tool memcheck")
    assert "--target-processes all /bin/bash -c 'sh check.sh'" in san.result.command
    v = events[3]
    assert v.iteration == 3 and v.category == "functional_correctness" and not v.success
    assert v.signature == "MISMATCH: compute(#, #) = #, expected #"
    assert list(tmp_path.iterdir()) == []


def test_passing_attempt_without_gpu_is_correct_but_not_timed(sleepy, tmp_path: Path) -> None:
    tool = LocalToolchain(LocalConfig(base_dir=tmp_path))
    tool.gpu = lambda: None  # type: ignore[method-assign]
    events = list(tool.attempt(sleepy, sleepy.reference() or "", AttemptOptions(iteration=1, gate=0.7)))
    v = events[-1]
    assert [e.kind for e in events] == ["build", "run", "verdict"]
    assert v.category == "passed" and v.correct and not v.success
    assert v.reason == "passed, speedup not measured"
    assert v.speedup is None
    v0 = list(tool.attempt(sleepy, sleepy.reference() or "", AttemptOptions(iteration=1, gate=0.0)))[-1]
    assert v0.success and v0.reason == "passed"


def test_tampering_candidate_is_not_correct(sleepy, tmp_path: Path) -> None:
    code = "compute() { echo 42; }\ncost() { echo 1; }\necho '# hacked' >> check.sh\n"
    tool = LocalToolchain(LocalConfig(base_dir=tmp_path))
    v = list(tool.attempt(sleepy, code, AttemptOptions(iteration=1, gate=0.0, sanitize_on_failure=False)))[-1]
    assert v.correct is False and v.reason == "harness modified"
    assert v.flags == [Flag(name="harness_modified", detail="check.sh")]


def test_timer_interleaves_reference_and_candidate_with_the_contract(sleepy, tmp_path: Path) -> None:
    cfg = stages.StageConfig(base_dir=tmp_path / "work")
    timer = Timer(sleepy, cfg, TimingConfig(cache=tmp_path / "cache", rounds=2))
    with stages.workdir(sleepy, sleepy.broken_start(), cfg) as cand:
        t = timer.measure(cand)
    assert t.method == "beaver_time_ms"
    assert t.reference_samples == [2.0] * 24 and t.candidate_samples == [1.0] * 24
    assert t.speedup == 2.0 and t.reference_cv == 0.0 and not t.unstable and not t.implausible
    built = list((tmp_path / "cache" / "refbuild").iterdir())
    assert len(built) == 1 and (built[0] / ".beaver-built").is_file()
    with stages.workdir(sleepy, "compute() { :; }\ncost() { echo 0.1; }\n", cfg) as cand:
        fast = timer.measure(cand)
    assert fast.speedup == pytest.approx(20.0) and fast.implausible
    assert len(list((tmp_path / "cache" / "refbuild").iterdir())) == 1  # reference build reused


def test_stats_and_parsers() -> None:
    med, cv = stats([1.0, 1.0, 1.0, 1.3])
    assert med == 1.0 and cv == pytest.approx(0.1386, abs=1e-3)
    assert parse_times("x\nBEAVER_TIME_MS 0.5\nBEAVER_TIME_MS 1e-1\nBEAVER_TIME_MS nope\n") == [0.5, 0.1]
    csv_text = (
        "==PROF== Disconnected\n"
        '"ID","Process ID","Process Name","Host Name","Kernel Name","Context","Stream","Block Size","Grid Size",'
        '"Device","CC","Section Name","Metric Name","Metric Unit","Metric Value"\n'
        '"0","1","test","h","gemm_tiled(int, int, int, const float *, const float *, float *)","1","7","(16, 16, 1)",'
        '"(32, 32, 1)","0","9.0","Command line profiler metrics","gpu__time_duration.sum","ns","52,384"\n'
    )
    assert parse_ncu_csv(csv_text) == [
        ("gemm_tiled(int, int, int, const float *, const float *, float *)", 0.052384)
    ]
    assert timing_command("python test/run_sanitizer.py ./test.out --n 3") == "./test.out --n 3"


def test_baseline_round_trip_is_keyed_by_signature_and_hashes(sleepy, tmp_path: Path) -> None:
    gpu = GpuSignature(slug="nvidia_h200_sm_90_cuda_13_0", name="NVIDIA H200", compute_capability="9.0")
    release = load_corpus(DATA / "release").get("cuda_901__compile_error__a0000001")
    harness = harness_hash(release)
    b = baselines.Baseline(
        task_id=release.id, gpu=gpu, method="cupti", median_ms=1.5, cv=0.01, samples=[1.5],
        reference_hash=reference_hash(release), harness_hash=harness,
    )  # fmt: skip
    path = baselines.save(release, b, cache=tmp_path)
    assert path == tmp_path / "baselines" / release.id / "nvidia_h200_sm_90_cuda_13_0.json"
    assert baselines.load(release, gpu, harness, cache=tmp_path) == b
    assert baselines.load(release, gpu, "other-harness", cache=tmp_path) is None
    other = gpu.model_copy(update={"slug": "nvidia_h100_sm_90_cuda_13_0"})
    assert baselines.load(release, other, harness, cache=tmp_path) is None


def test_kept_work_dir_is_left_on_disk(sleepy, tmp_path: Path) -> None:
    tool = LocalToolchain(LocalConfig(base_dir=tmp_path))
    list(tool.attempt(sleepy, sleepy.reference() or "", AttemptOptions(iteration=1, keep_workdir=True)))
    assert tool.last_workdir is not None and (tool.last_workdir / "solution.sh").is_file()
    assert list(tmp_path.iterdir()) == [tool.last_workdir]


def test_candidate_faster_than_the_hardware_floor_is_flagged(tmp_path: Path) -> None:
    import json
    import shutil

    from beavertui.engine.host.ceilings import Ceilings

    root = tmp_path / "corpus"
    shutil.copytree(DATA / "cpu", root)
    meta = json.loads((root / "sleepy" / "input.json").read_text())
    meta["work"] = {"bytes": 3e9}  # 3 GB at 2000 GB/s: at least 1.5 ms
    (root / "sleepy" / "input.json").write_text(json.dumps(meta))
    task = load_corpus(root).get("sleepy")
    gpu = GpuSignature(slug="test_gpu_sm_90_cuda_13_0", name="Test GPU", compute_capability="9.0")
    cache = tmp_path / "cache"
    (cache / "ceilings").mkdir(parents=True)
    (cache / "ceilings" / f"{gpu.slug}.json").write_text(
        Ceilings(gpu=gpu, copy_gbps=2000.0).model_dump_json()
    )
    tool = LocalToolchain(LocalConfig(base_dir=tmp_path / "work", timing=TimingConfig(cache=cache, rounds=1)))
    tool.gpu = lambda: gpu  # type: ignore[method-assign]
    code = "compute() { echo $(($1 * $2)); }\ncost() { echo 1.0; }\n"  # claims 1.0 ms
    events = list(tool.attempt(task, code, AttemptOptions(iteration=1, gate=0.7)))
    timed = next(e for e in events if e.kind == "timing").result
    assert timed.speedup == 2.0 and timed.implausible
    assert "below the hardware floor 1.5 ms" in (timed.note or "")
    v = events[-1]
    assert timed.floor_ms == pytest.approx(1.5)
    assert v.success and v.flags == [Flag(name="implausible_speedup", detail=f"{timed.note}")]
