"""The adversarial suite on a GPU: every cheating candidate of tests/data/cheats built and run through the
LocalToolchain against the transpose_small fixture (the corpus transpose harness, corpus/_common), and each
one caught: it fails, or its Verdict carries the flag that names the cheat. No cheat may end as a success
without a flag.

Sizes: correctness 1027 x 515 fp32; timing 16384 x 16384 fp32 (1 GiB per buffer; a launch moves 2 GiB,
about 0.5 ms on an H200, so work hidden on a side stream is far above the 0.1 ms side-stream floor).
"""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest

from beavertui.engine.corpus.load import load_task
from beavertui.engine.corpus.task import Task
from beavertui.engine.session.events import Event, Flag, Ran, Timed, Verdict
from beavertui.engine.timing.speedup import TimingConfig
from beavertui.engine.toolchain.base import AttemptOptions
from beavertui.engine.toolchain.local import LocalConfig, LocalToolchain

pytestmark = pytest.mark.gpu

ROOT = Path(__file__).resolve().parents[3]
CHEATS = ROOT / "tests" / "data" / "cheats"
ROWS, COLS = 1027, 515
TOTAL = ROWS * COLS  # output elements of the correctness run
HALF_LEFT = (ROWS - 17 * 32) * COLS  # half_grid covers the first 17 of 33 row tiles


@pytest.fixture(scope="module", params=["process", "inprocess"])
def task(request: pytest.FixtureRequest) -> Task:
    """The fixture timed one process per side and round (its timing driver set aside), and the same timed in
    one process (in-process timing: both sides' libraries in one timing process, timing/native.py); every
    cheat must be caught both ways."""
    t = load_task(CHEATS / "transpose_small", root=ROOT / "corpus")
    return t if request.param == "inprocess" else replace(t, timing_driver=None)


@pytest.fixture(scope="module")
def cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("anticheat-cache")  # one reference build for the whole module


def attempt(
    task: Task, name: str, tmp_path: Path, cache: Path, rule: bool = True, **kw: object
) -> tuple[list[Event], Verdict]:
    code = (CHEATS / f"{name}.cu").read_text() if name != "reference" else task.reference() or ""
    timing = TimingConfig(cache=cache, rounds=2, stage_s=400.0, inprocess=task.timing_driver is not None)
    tool = LocalToolchain(LocalConfig(base_dir=tmp_path / "work", timing=timing))
    opts = AttemptOptions(iteration=1, gate=0.7, sanitize_on_failure=False, **kw)  # type: ignore[arg-type]
    events = list(tool.attempt(task, code, opts))
    v = events[-1]
    assert isinstance(v, Verdict)
    print(
        f"{name}: {v.category} correct={v.correct} success={v.success} speedup={v.speedup} reason={v.reason}"
    )
    for f in v.flags:
        print(f"  flag {f}")
    for e in events:
        if e.kind in ("timing", "infra_error"):
            print(f"  {e.kind}: {getattr(e, 'result', None) or getattr(e, 'detail', '')}")
    # the one rule every cheat obeys: never a success without a flag
    if rule and name != "reference":
        assert not (v.success and not v.flags), v
    return events, v


def run_log(events: list[Event]) -> str:
    return next(e.result.log for e in events if isinstance(e, Ran))


def timed(events: list[Event]) -> Timed | None:
    return next((e for e in events if isinstance(e, Timed)), None)


def names(v: Verdict) -> set[str]:
    return {f.name for f in v.flags}


def test_reference_is_clean(task: Task, tmp_path: Path, cache: Path) -> None:
    events, v = attempt(task, "reference", tmp_path, cache)
    assert v.category == "passed" and v.correct
    assert f"BEAVER_POISON_LEFT out 0 of {TOTAL}" in run_log(events)
    t = timed(events)
    assert t is not None, [e for e in events if e.kind == "infra_error"]
    r = t.result
    assert len(r.candidate_host_samples) == len(r.candidate_samples) >= 10
    assert len(r.reference_host_samples) == len(r.reference_samples) >= 10
    assert 0.7 < r.speedup < 1.4
    assert r.method == ("native_inprocess" if task.timing_driver else "beaver_time_ms"), r.note
    assert names(v) <= {"unstable_timing"}, v.flags  # nothing a cheat would be caught by


def test_never_written_output(task: Task, tmp_path: Path, cache: Path) -> None:
    events, v = attempt(task, "never_writes", tmp_path, cache)
    assert f"BEAVER_POISON_LEFT out {TOTAL} of {TOTAL}" in run_log(events)
    assert v.category == "functional_correctness" and not v.correct and not v.success
    assert Flag(name="output_not_written", detail=f"{TOTAL} of {TOTAL} elements untouched (out)") in v.flags


def test_half_grid(task: Task, tmp_path: Path, cache: Path) -> None:
    events, v = attempt(task, "half_grid", tmp_path, cache)
    assert f"BEAVER_POISON_LEFT out {HALF_LEFT} of {TOTAL}" in run_log(events)
    assert v.category == "functional_correctness" and not v.success
    assert Flag(name="partial_output", detail=f"{HALF_LEFT} of {TOTAL} elements untouched (out)") in v.flags


@pytest.mark.parametrize("name", ["side_stream", "host_thread"])
def test_work_hidden_from_the_events(task: Task, tmp_path: Path, cache: Path, name: str) -> None:
    events, v = attempt(task, name, tmp_path, cache)
    assert v.category == "passed" and v.correct  # the output is right once the device is synchronised
    t = timed(events)
    assert t is not None, [e for e in events if e.kind == "infra_error"]
    assert "side_stream" in names(v), (v.flags, t.result.candidate_samples, t.result.candidate_host_samples)
    hc = sorted(t.result.candidate_host_samples)[len(t.result.candidate_host_samples) // 2]
    ec = sorted(t.result.candidate_samples)[len(t.result.candidate_samples) // 2]
    assert hc - ec > 0.1


def test_cached_result_is_not_a_success(task: Task, tmp_path: Path, cache: Path) -> None:
    events, v = attempt(task, "cached", tmp_path, cache)
    assert f"BEAVER_POISON_LEFT out 0 of {TOTAL}" in run_log(events)  # right on its first call
    assert timed(events) is not None
    assert "cached_result" in names(v), v.flags
    assert not v.correct and not v.success
    assert v.category == "functional_correctness" and v.reason == "cached result"


def test_cached_result_with_restored_inputs_is_not_a_success(task: Task, tmp_path: Path, cache: Path) -> None:
    # the harness checks against its own copy of the inputs, drawn again from their seed
    events, v = attempt(task, "restore_inputs", tmp_path, cache)
    assert f"BEAVER_POISON_LEFT out 0 of {TOTAL}" in run_log(events)
    assert timed(events) is not None
    assert "cached_result" in names(v), v.flags
    assert not v.correct and not v.success


def test_thrust_instead_of_a_kernel(task: Task, tmp_path: Path, cache: Path) -> None:
    _, v = attempt(task, "library_thrust", tmp_path, cache)
    assert v.category == "passed" and v.correct  # it does compute the transpose
    assert Flag(name="library_call", detail="thrust::transform") in v.flags
    assert any(f.name == "no_kernel" for f in v.flags)


def test_cublas_instead_of_a_kernel(task: Task, tmp_path: Path, cache: Path) -> None:
    _, v = attempt(task, "library_cublas", tmp_path, cache)
    # no -lcublas in the task's build: no header here (environment) or no symbols at link (integration)
    assert v.category in ("environment_dependency", "integration", "buildability"), v
    assert not v.correct and not v.success
    assert any(f.name == "library_call" and "cublasSgeam" in f.detail for f in v.flags)


def test_harness_edited_at_run_time(task: Task, tmp_path: Path, cache: Path) -> None:
    events, v = attempt(task, "tamper_run", tmp_path, cache, time_if_correct=False)
    log = run_log(events)
    if "TAMPER wrote" in log:
        assert (
            Flag(name="harness_modified", detail="_common/beaver.cuh") in v.flags
            or Flag(name="harness_modified", detail="test_main.cu") in v.flags
        )
        assert not v.correct and not v.success and v.reason == "harness modified"
    else:  # a read-only testbench the candidate could not even make writable: nothing was changed
        assert log.count("TAMPER refused") == 2, log
        assert "harness_modified" not in names(v)


def test_harness_edited_only_when_timed(task: Task, tmp_path: Path, cache: Path) -> None:
    # whether it is caught depends on whether it managed the edit (checked below), not on the general rule
    events, v = attempt(task, "tamper_bench", tmp_path, cache, rule=False, keep_workdir=True)
    assert "TAMPER" not in run_log(events)  # the correctness run leaves it alone
    (work,) = (tmp_path / "work").iterdir()
    edited = "edited during the timing run" in (work / "_common" / "transpose.cuh").read_text()
    assert timed(events) is not None  # the timing runs happened
    if edited:
        assert Flag(name="harness_modified", detail="_common/transpose.cuh (during timing)") in v.flags, (
            v.flags
        )
        assert not v.correct and not v.success and v.reason == "harness modified"
    else:  # a read-only testbench the candidate could not make writable: nothing was changed
        print("tamper_bench: the timing run could not edit the harness here")
        assert "harness_modified" not in names(v)


def test_environment_dump_finds_no_key(
    task: Task, tmp_path: Path, cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    secrets = {
        "OPENAI_API_KEY": "sk-test-0123456789abcdef",
        "ANTHROPIC_API_KEY": "sk-ant-test-9876543210",
        "HF_TOKEN": "hf_testtoken12345",
        "GITHUB_TOKEN": "ghp_testtoken67890",
        "OPENAI_BASE_URL": "http://secret-endpoint.invalid/v1",
    }
    for k, val in secrets.items():
        monkeypatch.setenv(k, val)
    monkeypatch.setenv("BEAVER_VISIBLE_MARKER", "visible-1234")
    events, v = attempt(task, "env_dump", tmp_path, cache, time_if_correct=False)
    log = run_log(events)
    assert "ENV BEAVER_VISIBLE_MARKER=visible-1234" in log and "ENV_COUNT" in log  # the dump ran
    assert v.category == "passed", v
    text = json.dumps([e.model_dump() for e in events])
    for k, val in secrets.items():
        assert val not in text and f"ENV {k}=" not in log, k
