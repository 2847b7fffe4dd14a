"""Process-level timing (CUPTI, ncu) samples only until the speedup is known to +/-2% (engine/timing/adaptive.py).

The interval arithmetic is checked against values computed by hand; the stopping rule runs through the real
Timer with a stand-in sampler (each call is one run of a side, as a CUPTI run would be): it stops at 3 runs
a side when the samples agree, goes on up to 10 when they do not, and records the runs in the result.
"""

from __future__ import annotations

import itertools
import math
from pathlib import Path

import pytest

from beavertui.engine.corpus.load import load_corpus
from beavertui.engine.session.events import StageResult
from beavertui.engine.stage import stages
from beavertui.engine.timing import adaptive
from beavertui.engine.timing.speedup import Timer, TimingConfig

DATA = Path(__file__).parents[2] / "data"


def test_t_quantiles_and_the_interval_by_hand() -> None:
    # printed tables of Student's t: 4.303 at 2 degrees of freedom, 2.021 at 40, 1.980 at 120
    assert adaptive.t975(2) == pytest.approx(4.303, abs=5e-4) and adaptive.t975(2.9) == adaptive.t975(2)
    assert adaptive.t975(40) == pytest.approx(2.021, abs=5e-4)
    assert adaptive.t975(120) == pytest.approx(1.980, abs=5e-4) and adaptive.t975(0.5) == math.inf
    r, c = [2.0, 2.02, 1.98], [1.0, 1.01, 0.99]
    lr, lc = [math.log(x) for x in r], [math.log(x) for x in c]

    def var(v: list[float]) -> float:
        m = sum(v) / len(v)
        return sum((x - m) ** 2 for x in v) / (len(v) - 1)

    se2 = var(lr) / 3 + var(lc) / 3
    df = se2**2 / ((var(lr) / 3) ** 2 / 2 + (var(lc) / 3) ** 2 / 2)
    half = adaptive.t975(df) * math.sqrt(se2)
    lo, hi = adaptive.interval(r, c)  # type: ignore[misc]
    assert (lo, hi) == pytest.approx((math.exp(-half), math.exp(half)))
    assert adaptive.halfwidth(r, c) == pytest.approx(math.exp(half) - 1)
    assert adaptive.interval([1.0], [1.0, 2.0]) is None
    assert adaptive.interval([1.0, 1.0], [2.0, 2.0]) == (1.0, 1.0)


def test_the_stopping_rule_needs_the_minimum_runs_and_a_narrow_interval() -> None:
    tight_r, tight_c = [2.0, 2.001, 1.999], [1.0, 1.0005, 0.9995]
    assert adaptive.enough(tight_r, tight_c, 3, 0.02)
    assert not adaptive.enough(tight_r[:2], tight_c[:2], 3, 0.02)  # fewer than 3 a side
    assert not adaptive.enough([2.0, 2.4, 1.7], [1.0, 1.3, 0.8], 3, 0.02)
    assert "3 runs a side" in adaptive.note(tight_r, tight_c, 0.02)
    assert "wider than the +/-2%" in adaptive.note([2.0, 2.4, 1.7], [1.0, 1.3, 0.8], 0.02)


def _timer(tmp_path: Path, samples: dict[str, list[float]]) -> Timer:
    """A CUPTI timer whose one-run sampler returns the next prepared sample of its side."""
    task = load_corpus(DATA / "cpu").get("sleepy")
    timer = Timer(
        task,
        stages.StageConfig(base_dir=tmp_path),
        TimingConfig(cache=tmp_path, method="cupti", prestart="off"),
    )
    feeds = {who: itertools.cycle(v) for who, v in samples.items()}
    ref_dir = stages.WorkDir(path=tmp_path / "ref", task=task, manifest={}, links={})

    def one_run(work: stages.WorkDir) -> tuple[list[float], StageResult]:
        who = "reference" if work is ref_dir else "candidate"
        return [next(feeds[who])], StageResult(stage="benchmark", command=who, rc=0, duration_s=0.5)

    timer.how.sampler = lambda: one_run  # type: ignore[attr-defined]
    timer._ref_dir = ref_dir  # type: ignore[attr-defined]
    return timer


def _measure(timer: Timer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch):  # type: ignore[no-untyped-def]
    from beavertui.engine.timing import reference

    monkeypatch.setattr(reference, "reference_workdir", lambda *a: timer._ref_dir)  # type: ignore[attr-defined]
    cand = stages.WorkDir(path=tmp_path / "cand", task=timer.task, manifest={}, links={})
    return timer.measure(cand)


def test_cupti_stops_at_three_runs_a_side_when_the_speedup_is_known(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    timer = _timer(tmp_path, {"reference": [2.0, 2.002, 1.998], "candidate": [1.0, 1.001, 0.999]})
    t = _measure(timer, tmp_path, monkeypatch)
    assert t.method == "cupti" and t.runs == 3 and len(timer.runs) == 6
    assert [who for who, _ in timer.runs] == ["reference", "candidate"] * 3  # still interleaved
    assert t.speedup == pytest.approx(2.0) and t.note.startswith("3 runs a side")
    assert t.wall_s is not None and 0 <= t.wall_s < 60  # the stage's own duration is recorded


def test_cupti_goes_on_to_ten_runs_when_the_samples_disagree(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    timer = _timer(tmp_path, {"reference": [2.0, 2.5, 1.6, 2.2], "candidate": [1.0, 1.3, 0.8, 1.1]})
    t = _measure(timer, tmp_path, monkeypatch)
    # CV above 3%: the re-measurement is adaptive too, and it is what the result keeps
    assert t.runs == 10 and len(t.candidate_samples) == 10 and len(timer.runs) == 40
    assert t.remeasured and t.note.startswith("re-measured once: CV above 3%; 10 runs a side")
    assert "wider than" in t.note


def test_cupti_stops_between_three_and_ten_runs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # the first runs disagree a little, the rest agree: the interval narrows after a few more runs
    ref = [2.0, 2.06, 1.96] + [2.0] * 7
    cand = [1.0, 1.0, 1.0] + [1.0] * 7
    timer = _timer(tmp_path, {"reference": ref, "candidate": cand})
    t = _measure(timer, tmp_path, monkeypatch)
    assert 3 < t.runs < 10  # type: ignore[operator]
    assert adaptive.halfwidth(t.reference_samples, t.candidate_samples) <= 0.02  # type: ignore[operator]


def _reference_alone(timer: Timer, monkeypatch: pytest.MonkeyPatch):  # type: ignore[no-untyped-def]
    import beavertui.engine.timing.speedup as speedup
    from beavertui.engine.timing import reference

    monkeypatch.setattr(reference, "reference_workdir", lambda *a: timer._ref_dir)  # type: ignore[attr-defined]
    return speedup.time_reference(timer)


def test_a_reference_timed_alone_stops_once_its_time_is_known(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    timer = _timer(tmp_path, {"reference": [2.0, 2.002, 1.998]})
    rt = _reference_alone(timer, monkeypatch)
    assert len(rt.samples) == 3 and rt.median_ms == pytest.approx(2.0)
    assert rt.note.startswith("3 runs; the time's 95% interval is +/-0.")  # type: ignore[union-attr]
    assert adaptive.halfwidth_alone(rt.samples) <= 0.02  # type: ignore[operator]


def test_a_noisy_reference_alone_takes_every_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    timer = _timer(tmp_path, {"reference": [2.0, 2.5, 1.6, 2.2]})
    rt = _reference_alone(timer, monkeypatch)
    assert len(rt.samples) == 10 and rt.unstable  # re-measured once, still above 3%
    assert "re-measured once" in rt.note and "wider than the +/-2%" in rt.note  # type: ignore[operator]


def test_the_interval_of_one_side_by_hand() -> None:
    v = [2.0, 2.02, 1.98]
    logs = [math.log(x) for x in v]
    m = sum(logs) / 3
    half = adaptive.t975(2) * math.sqrt(sum((x - m) ** 2 for x in logs) / 2 / 3)
    assert adaptive.halfwidth_alone(v) == pytest.approx(math.exp(half) - 1)
    assert adaptive.halfwidth_alone([1.0]) is None and not adaptive.enough_alone([1.0, 1.0], 3, 0.02)


#: Passes its check the first time it runs in a work dir, fails it after (a candidate with a race, say).
FLAKY = "compute() { if [ -e ran_once ]; then echo 41; return; fi; : >ran_once; echo $(($1 * $2)); }\n"
GOOD = "compute() { echo $(($1 * $2)); }\n"


@pytest.mark.parametrize(
    ("code", "rc", "timed_out", "whose"),
    [(FLAKY, 1, False, "candidate"), (GOOD, 1, False, "machine"), (FLAKY, None, True, "machine")],
    ids=["fails-again", "passes-again", "time-limit"],
)
def test_a_candidate_s_cupti_run_without_samples_is_run_again_plainly_to_say_whose_failure_it_is(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, code: str, rc: int | None, timed_out: bool, whose: str
) -> None:
    """A CUPTI run is the task's own test command, which the candidate passed as its correctness run. A
    candidate run that exits non-zero is run again without the injection library: failing again, it is the
    candidate's failure (the attempt is flagged timing_run_failed); passing, the machine's or the tool's, as
    is a run that gave no samples at its time limit (not run again)."""
    from beavertui.engine.errors import BeaverError
    from beavertui.engine.timing.speedup import CandidateTimingFailed

    timer = _timer(tmp_path, {"reference": [2.0], "candidate": [1.0]})
    one_run = timer.how.sampler()  # type: ignore[attr-defined]

    def failing_candidate(work: stages.WorkDir) -> tuple[list[float], StageResult]:
        if work is timer._ref_dir:  # type: ignore[attr-defined]
            return one_run(work)
        log = "==CUPTI== injection: 3 kernels\nterminate called after throwing an instance of 'std::runtime_error'"
        return [], StageResult(stage="benchmark", command="sh check.sh", rc=rc, log=log, timed_out=timed_out)

    timer.how.sampler = lambda: failing_candidate  # type: ignore[attr-defined]
    from beavertui.engine.timing import reference, runs

    monkeypatch.setattr(reference, "reference_workdir", lambda *a: timer._ref_dir)  # type: ignore[attr-defined]
    with stages.workdir(timer.task, code, stages.StageConfig(base_dir=tmp_path)) as cand:
        assert stages.test(cand, timer.config).rc == 0  # its correctness run passes
        plain: list[stages.WorkDir] = []  # the test command run again by the timer, plainly
        test = stages.test

        def counted(work: stages.WorkDir, config: stages.StageConfig) -> StageResult:
            plain.append(work)
            return test(work, config)

        monkeypatch.setattr(runs.stages, "test", counted)
        with pytest.raises(BeaverError) as caught:
            timer.measure(cand)
    assert plain == ([] if timed_out else [cand])  # once, the candidate's; never at its time limit
    err = caught.value
    if whose == "candidate":
        assert isinstance(err, CandidateTimingFailed)
        assert err.evidence.startswith("MISMATCH: compute(6, 7) = 41, expected 42")
        assert (
            "run again as its correctness run ran it, after its cupti timing run exited with status 1"
            in err.evidence
        )
        assert err.result.stage == "run" and err.result.rc == 1
        return
    assert not isinstance(err, CandidateTimingFailed)
    assert "cupti timing of the candidate produced no samples" in str(err)
    assert ("run again as its correctness run ran it, passed" in str(err)) == (not timed_out)


def _timing_failure(timer: Timer, code: str) -> tuple[Exception, str | None]:
    """Time a candidate (``code``) whose correctness run passes and whose timing fails: the error, and how many
    times its test ran in its work dir (its ``runs`` file, where it keeps one)."""
    from beavertui.engine.timing.speedup import CandidateTimingFailed, SpeedupUnavailable

    with stages.workdir(timer.task, code, timer.config) as cand:
        assert stages.test(cand, timer.config).rc == 0  # its correctness run passes
        with pytest.raises((CandidateTimingFailed, SpeedupUnavailable)) as caught:
            timer.measure(cand)
        runs = cand.path / "runs"
        return caught.value, runs.read_text().strip() if runs.exists() else None


def _assert_the_candidate_s(err: Exception, method: str) -> None:
    from beavertui.engine.timing.speedup import CandidateTimingFailed

    assert isinstance(err, CandidateTimingFailed)
    assert err.evidence.startswith("MISMATCH: compute(6, 7) = 41, expected 42")
    assert f"after its {method} timing run exited with status 1" in err.evidence


#: Passes the first and third time it runs in a work dir, fails the second (its timing run, between the two).
SECOND_FAILS = (
    "compute() { n=$(cat runs 2>/dev/null || echo 0); echo $((n + 1)) >runs; "
    'if [ "$n" = 1 ]; then echo 41; return; fi; echo $(($1 * $2)); }\n'
)


@pytest.mark.parametrize(
    ("code", "whose"),
    [(FLAKY, "candidate"), (SECOND_FAILS, "testbench")],
    ids=["fails-again", "passes-again"],
)
def test_a_testbench_run_that_fails_its_check_when_timed_is_run_again_to_say_whose_failure_it_is(
    tmp_path: Path, code: str, whose: str
) -> None:
    """A testbench's own speed lines (cufft_samples) come from runs of the task's test command: one that
    fails its check is run again as the correctness run ran it; failing again, the candidate's failure
    (timing_run_failed); passing, the speedup is unavailable as before (the attempt keeps its verdict)."""
    from beavertui.engine.timing.speedup import SpeedupUnavailable

    task = load_corpus(DATA / "cpu").get("sleepy")
    cfg = stages.StageConfig(base_dir=tmp_path)
    timer = Timer(task, cfg, TimingConfig(cache=tmp_path, method="testbench_lines", prestart="off"))
    err, runs = _timing_failure(timer, code)
    if whose == "candidate":
        _assert_the_candidate_s(err, "testbench_lines")
        return
    assert isinstance(err, SpeedupUnavailable) and runs == "3"
    assert "the testbench printed no usable Speedup line (rc 1)" in str(err)
    assert "run again as its correctness run ran it, passed" in str(err)


@pytest.mark.parametrize(
    ("code", "side", "error", "whose"),
    [
        (
            FLAKY,
            "candidate",
            "RuntimeError: CUDA error: an illegal memory access was encountered",
            "candidate",
        ),
        (GOOD, "candidate", "RuntimeError: CUDA error: an illegal memory access was encountered", "driver"),
        (
            FLAKY,
            "candidate",
            "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 6.00 GiB.",
            "driver",
        ),
        (FLAKY, "reference", "RuntimeError: CUDA error: an illegal memory access was encountered", "driver"),
    ],
    ids=["fails-again", "passes-again", "out-of-memory", "reference-side"],
)
def test_a_kernelbench_driver_failing_on_the_candidate_s_side_runs_the_test_again_to_say_whose_failure_it_is(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, code: str, side: str, error: str, whose: str
) -> None:
    """The kernelbench driver calls the candidate's model as the task's eval does: an error on the candidate's
    side is the candidate's when the eval, run again, fails too; otherwise (it passes, the timing ran out
    of memory, or the error was the reference's) the speedup is unavailable, as before."""
    import json

    from beavertui.engine.timing.kernelbench import KernelbenchDriver
    from beavertui.engine.timing.speedup import DRIVER_TAG, SpeedupUnavailable

    task = load_corpus(DATA / "cpu").get("sleepy")
    cfg = stages.StageConfig(base_dir=tmp_path)
    timer = Timer(task, cfg, TimingConfig(cache=tmp_path, method="torch_events_l2flush_interleaved"))
    line = DRIVER_TAG + json.dumps(
        {"method": "torch_events_l2flush_interleaved", "error": error, "side": side}
    )
    failed = StageResult(stage="benchmark", command="driver", rc=1, log=f"{line}\n")
    monkeypatch.setattr(KernelbenchDriver, "go", lambda self, work, reference_only: failed)
    err, _runs = _timing_failure(timer, code)
    if whose == "candidate":
        _assert_the_candidate_s(err, "torch_events_l2flush_interleaved")
        return
    assert isinstance(err, SpeedupUnavailable) and f"kernelbench timing failed on the {side} side" in str(err)
    assert ("run again as its correctness run ran it, passed" in str(err)) == (code == GOOD)
