"""corpus validate on the CPU-only fixture: verdicts, label agreement, reference timing, baseline file."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from beavertui.engine.corpus.harness import harness_hash
from beavertui.engine.corpus.load import load_corpus
from beavertui.engine.host.gpu import Machine
from beavertui.engine.session.events import GpuSignature
from beavertui.engine.timing import baselines
from beavertui.engine.timing.speedup import TimingConfig
from beavertui.engine.toolchain.local import LocalConfig
from beavertui.engine.validation.validate import validate
from tests.corpus_copies import with_copies

DATA = Path(__file__).parents[2] / "data"
FAKE_GPU = GpuSignature(
    slug="test_gpu_sm_90_cuda_13_0", name="Test GPU", compute_capability="9.0", cuda="13.0"
)


def test_validate_records_verdicts_timing_and_baseline(tmp_path: Path) -> None:
    root = tmp_path / "corpus"
    shutil.copytree(DATA / "cpu", root)
    task = load_corpus(root).get("sleepy")
    machine = Machine(gpu=FAKE_GPU, nvcc="/usr/local/bin/nvcc", cuda="13.0", torch=False)
    config = LocalConfig(base_dir=tmp_path / "work", timing=TimingConfig(cache=tmp_path / "cache", rounds=1))
    [r] = list(validate([task], machine, config))
    assert r.runnable and r.valid
    assert r.reference_category == "passed"
    assert r.broken_category == "functional_correctness" and r.label_agrees is True
    assert r.method == "beaver_time_ms" and r.reference_ms == 2.0 and r.reference_cv == 0.0
    assert r.baseline_path == str(root / "sleepy" / "baselines" / "test_gpu_sm_90_cuda_13_0.json")
    stored = json.loads(Path(r.baseline_path).read_text())
    assert stored["median_ms"] == 2.0 and len(stored["samples"]) == 12
    assert baselines.load(task, FAKE_GPU, harness_hash(task)) is not None


def test_validate_reports_not_runnable_without_gpu() -> None:
    task = load_corpus(DATA / "cpu").get("sleepy")
    [r] = list(validate([task], Machine(gpu=None, nvcc=None, cuda=None, torch=False), timing=False))
    assert not r.runnable and r.reason == "no NVIDIA GPU visible" and not r.valid


def test_validate_times_on_several_gpus_in_task_order(tmp_path: Path) -> None:
    from beavertui.engine.validation.validate import _PinnedToolchain

    root = tmp_path / "corpus"
    shutil.copytree(DATA / "cpu", root)
    for name in ("sleepy_b", "sleepy_c"):
        shutil.copytree(root / "sleepy", root / name)
        meta = json.loads((root / name / "instance.json").read_text())
        meta["id"] = name
        (root / name / "instance.json").write_text(json.dumps(meta))
        inp = json.loads((root / name / "input.json").read_text())
        inp["task_id"] = name
        (root / name / "input.json").write_text(json.dumps(inp))
    corpus = load_corpus(root)
    tasks = [corpus.get(t) for t in ("sleepy", "sleepy_b", "sleepy_c")]
    machine = Machine(gpu=FAKE_GPU, nvcc="/usr/local/bin/nvcc", cuda="13.0", torch=False)
    config = LocalConfig(base_dir=tmp_path / "work", timing=TimingConfig(cache=tmp_path / "cache", rounds=1))
    got = list(validate(tasks, machine, config, gpus=["0", "1"]))
    assert [r.task_id for r in got] == ["sleepy", "sleepy_b", "sleepy_c"]
    assert all(r.valid and r.reference_ms == 2.0 for r in got)
    env = _PinnedToolchain(config, "1").stage_config().env
    assert env is not None and env["CUDA_VISIBLE_DEVICES"] == "1"


def test_reuse_checks_times_a_task_checked_without_timing(tmp_path: Path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    import beavertui.engine.validation.validate as v
    from beavertui.engine.corpus import verdicts

    root = tmp_path / "corpus"
    shutil.copytree(DATA / "cpu", root)
    task = load_corpus(root).get("sleepy")
    machine = Machine(gpu=FAKE_GPU, nvcc="/usr/local/bin/nvcc", cuda="13.0", torch=False)
    config = LocalConfig(base_dir=tmp_path / "work", timing=TimingConfig(cache=tmp_path / "cache", rounds=1))
    [first] = list(validate([task], machine, config, timing=False))
    stored = verdicts.load(task, FAKE_GPU.slug, tmp_path / "cache")
    assert first.reference_ms is None and stored is not None and v.reusable(task, stored)
    runs: list[str] = []
    real = v._attempt

    def spy(tool, t, code, options):  # type: ignore[no-untyped-def]
        runs.append("broken" if code == t.broken_start() else "other")
        return real(tool, t, code, options)

    monkeypatch.setattr(v, "_attempt", spy)
    [again] = list(validate([task], machine, config, reuse_checks=True))
    assert runs == ["other"]  # the reference was run again, the broken start was not
    assert again.valid and again.broken_category == first.broken_category == "functional_correctness"
    assert again.reference_ms == 2.0 and any("reused from the verdict stored" in n for n in again.notes)
    timed = verdicts.load(task, FAKE_GPU.slug, tmp_path / "cache")
    assert timed is not None and timed.reference_ms == 2.0 and not v.reusable(task, timed)
    # without the flag, or once timed, every check runs again
    [full] = list(validate([task], machine, config))
    assert runs[1:] == ["other", "broken"] and not any("reused" in n for n in full.notes)
    # a stored verdict of another broken start is not this task's
    import hashlib

    code = "compute() { echo 0; }\ncost() { echo 1.0; }\n"
    (root / "sleepy" / "broken_start.sh").write_text(code)
    meta = json.loads((root / "sleepy" / "instance.json").read_text())
    meta["broken_start_hash"] = hashlib.sha256(code.encode()).hexdigest()[:16]
    (root / "sleepy" / "instance.json").write_text(json.dumps(meta))
    assert verdicts.load(load_corpus(root).get("sleepy"), FAKE_GPU.slug, tmp_path / "cache") is None


def test_a_reference_out_of_memory_beside_others_is_run_again_alone_without_the_broken_start(
    tmp_path: Path,
    monkeypatch,  # type: ignore[no-untyped-def]
) -> None:
    """A reference that ran out of GPU memory while other checks shared the GPU is run again alone; the broken
    start, which ran to its own end, keeps its result and is not built and run a second time."""
    import beavertui.engine.validation.validate as v

    tasks, machine, config = _copies(tmp_path, {"sleepy_b": None})
    runs: list[tuple[str, str]] = []
    real = v._attempt

    def spy(tool, t, code, options):  # type: ignore[no-untyped-def]
        side = "broken" if code == t.broken_start() else "reference"
        runs.append((t.id, side))
        got, log = real(tool, t, code, options)
        if (t.id, side) == ("sleepy_b", "reference") and runs.count((t.id, side)) == 1:
            got = got.model_copy(update={"category": "out_of_memory", "signature": "CUDA out of memory"})
        return got, log

    monkeypatch.setattr(v, "_attempt", spy)
    for timed in (False, True):
        runs.clear()
        got = {r.task_id: r for r in validate(tasks, machine, config, timing=timed, workers=2)}
        b = got["sleepy_b"]
        assert sorted(runs) == sorted([("sleepy", "reference"), ("sleepy", "broken"), ("sleepy_b", "reference"),
                                       ("sleepy_b", "broken"), ("sleepy_b", "reference")])  # fmt: skip
        assert b.reference_category == "passed" and b.broken_category == "functional_correctness"
        assert b.valid and any("checked again alone" in n for n in b.notes)
        assert any("kept from its first check" in n for n in b.notes)
        assert (b.reference_ms == 2.0) is timed


def test_a_validation_cut_in_its_timing_phase_keeps_its_checks(tmp_path: Path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """The checks of every task are stored before the first timing: a run stopped by its time budget while
    it times (on the H200, a chunk of 16 kernelbench checks lost all 16) leaves them for --reuse-checks."""
    import beavertui.engine.validation.validate as v
    from beavertui.engine.corpus import verdicts

    tasks, machine, config = _copies(tmp_path, {"sleepy_b": None})
    real = v._timed

    def cut_at_the_second(task, c, *a, **k):  # type: ignore[no-untyped-def]
        if task.id == "sleepy_b":
            raise KeyboardInterrupt  # the budget's SIGINT, while the second task is timed
        return real(task, c, *a, **k)

    monkeypatch.setattr(v, "_timed", cut_at_the_second)
    got = []
    try:
        for r in validate(tasks, machine, config, workers=2):
            got.append(r)
    except KeyboardInterrupt:
        pass
    assert [r.task_id for r in got] == ["sleepy"] and got[0].reference_ms == 2.0
    first, second = (verdicts.load(t, FAKE_GPU.slug, tmp_path / "cache") for t in tasks)
    assert first is not None and first.reference_ms == 2.0
    assert (
        second is not None
        and second.reference_ms is None
        and second.observed_category == "functional_correctness"
    )
    assert v.reusable(tasks[1], second)


def _copies(tmp_path: Path, names: dict[str, str | None]) -> tuple[list[Any], Machine, LocalConfig]:
    """The CPU fixture's task and copies of it (name -> its reference, None: sleepy's own), a fake GPU, and
    a config under tmp_path."""
    root = with_copies(tmp_path / "corpus", names)
    corpus = load_corpus(root)
    machine = Machine(gpu=FAKE_GPU, nvcc="/usr/local/bin/nvcc", cuda="13.0", torch=False)
    config = LocalConfig(base_dir=tmp_path / "work", timing=TimingConfig(cache=tmp_path / "cache", rounds=1))
    return [corpus.get(t) for t in ("sleepy", *names)], machine, config


def _reference_timings(monkeypatch) -> list[str]:  # type: ignore[no-untyped-def]
    """The ids of the tasks whose reference validate times from now on, in order (the real time_reference)."""
    import beavertui.engine.validation.validate as v

    timed: list[str] = []
    real = v.time_reference

    def spy(timer):  # type: ignore[no-untyped-def]
        timed.append(timer.task.id)
        return real(timer)

    monkeypatch.setattr(v, "time_reference", spy)
    return timed


def test_tasks_with_one_reference_have_it_timed_once_per_run(tmp_path: Path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """Tasks of one validation with the same reference, harness and timing configuration have their reference
    timed once, on one GPU or several; each says for which task the measurement was made, and each keeps a
    baseline in its own folder. A task with another reference is timed for itself."""
    other = "compute() { echo $(($1 * $2)); }\ncost() { echo 3.0; }\n"
    tasks, machine, config = _copies(tmp_path, {"sleepy_b": None, "sleepy_c": other, "sleepy_d": None})
    timed = _reference_timings(monkeypatch)
    for gpus in (None, ["0", "1"]):
        timed.clear()
        got = {r.task_id: r for r in validate(tasks, machine, config, workers=2, gpus=gpus)}
        assert sorted(timed) == ["sleepy", "sleepy_c"], gpus
        assert all(r.valid for r in got.values())
        assert [got[t].reference_ms for t in ("sleepy", "sleepy_b", "sleepy_c", "sleepy_d")] == [
            2.0,
            2.0,
            3.0,
            2.0,
        ]
        assert got["sleepy"].reference_measured_for is None and got["sleepy_c"].reference_measured_for is None
        note = baselines.shared_note("sleepy")
        for t in ("sleepy_b", "sleepy_d"):
            assert got[t].reference_measured_for == "sleepy" and note in got[t].notes
            stored = json.loads(Path(got[t].baseline_path or "").read_text())
            assert Path(got[t].baseline_path or "").parent.parent.name == t  # the task's own folder
            assert stored["task_id"] == "sleepy" and stored["median_ms"] == 2.0
        assert not any("measured for" in n for n in got["sleepy"].notes + got["sleepy_c"].notes)
    # a later run's baselines.load of a copy finds its baseline, saying for which task it was measured
    b = baselines.load(tasks[1], FAKE_GPU, harness_hash(tasks[1]), tmp_path / "cache")
    assert b is not None and b.task_id == "sleepy" and b.note == baselines.shared_note("sleepy")


def test_reuse_checks_takes_a_reference_time_an_earlier_run_stored(tmp_path: Path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """With reuse_checks, a task whose reference (same share key) an earlier run timed on this GPU signature
    takes that stored time, saying for which task and when it was measured; without it, it is timed again."""
    tasks, machine, config = _copies(tmp_path, {"sleepy_b": None})
    timed = _reference_timings(monkeypatch)
    first = list(validate(tasks[:1], machine, config, workers=1))
    assert timed == ["sleepy"] and first[0].reference_ms == 2.0
    timed.clear()
    reused = list(validate(tasks[1:], machine, config, workers=1, reuse_checks=True))
    assert timed == []
    r = reused[0]
    assert r.reference_ms == 2.0 and r.reference_measured_for == "sleepy" and r.valid
    assert baselines.shared_note("sleepy") in r.notes
    assert any(n.startswith("reference time reused from the baseline stored") for n in r.notes)
    # a plain validation measures again
    again = list(validate(tasks[1:], machine, config, workers=1))
    assert timed == ["sleepy_b"] and again[0].reference_measured_for is None
    assert not any("reused" in n for n in again[0].notes)


def test_notes_of_a_verdict_reused_again_and_again_do_not_pile_up(tmp_path: Path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """A stored verdict reused by --reuse-checks runs whose timing was cut keeps one reuse note (the newest,
    naming when the verdict it reuses was stored) and no repeated note."""
    import calendar
    import contextlib

    import beavertui.engine.validation.validate as v
    from beavertui.engine.corpus import verdicts

    root = tmp_path / "corpus"
    shutil.copytree(DATA / "cpu", root)
    task = load_corpus(root).get("sleepy")
    machine = Machine(gpu=FAKE_GPU, nvcc="/usr/local/bin/nvcc", cuda="13.0", torch=False)
    cache = tmp_path / "cache"
    config = LocalConfig(base_dir=tmp_path / "work", timing=TimingConfig(cache=cache, rounds=1))
    list(validate([task], machine, config, timing=False))
    rec = verdicts.load(task, FAKE_GPU.slug, cache)
    assert rec is not None
    at = calendar.timegm((2020, 6, 1, 17, 42, 0))
    stands = "the stored verdict's reference check (passed) stands"
    reuse = "broken start's result reused from the verdict stored"
    piled = [
        stands, stands,
        "broken start's result reused from the verdict stored 2026-12-01 17:37 UTC; reference timed again",
        "broken start's result reused from the verdict stored 2026-12-01 17:42 UTC; reference timed again",
        "checked again alone: it ran out of GPU memory beside other checks",
        "checked again alone: it ran out of GPU memory beside other checks",
        "reference not timed: the timing stage ran out of its time",
    ]  # fmt: skip
    verdicts.save(task, rec.model_copy(update={"notes": piled, "measured_at": at}), cache)

    def cut(*a, **k):  # type: ignore[no-untyped-def]
        raise KeyboardInterrupt  # the budget's SIGINT while the task is timed

    real = v._timed
    monkeypatch.setattr(v, "_timed", cut)
    for run in range(3):
        with contextlib.suppress(KeyboardInterrupt):
            list(validate([task], machine, config, reuse_checks=True))
        stored = verdicts.load(task, FAKE_GPU.slug, cache)
        assert stored is not None and v.reusable(task, stored), run
        reused = [n for n in stored.notes if n.startswith(reuse)]
        assert len(reused) == 1 and len(stored.notes) == len(set(stored.notes)), stored.notes
        assert stored.notes == [
            "checked again alone: it ran out of GPU memory beside other checks",
            reused[0],
        ]
        if run == 0:
            assert reused[0].startswith(f"{reuse} 2020-06-01 17:42 UTC;")
        else:
            assert "2020-06-01" not in reused[0]  # the verdict the previous run stored
    monkeypatch.setattr(v, "_timed", real)
    [r] = list(validate([task], machine, config, reuse_checks=True))
    assert r.valid and r.reference_ms == 2.0
    assert len([n for n in r.notes if n.startswith(reuse)]) == 1 and len(r.notes) == len(set(r.notes))


class _Turn:
    """A stand-in timer of _timed_in_turn: it records when it is made and closed."""

    def __init__(self, i: int, seen: list[str]) -> None:
        self.i, self.seen = i, seen
        seen.append(f"warm {i}")

    def close(self) -> None:
        self.seen.append(f"close {self.i}")


@pytest.mark.parametrize("how", ["all", "cut", "fails"])
def test_the_next_tasks_timer_is_made_before_a_task_is_timed(how: str) -> None:
    """corpus validate on one GPU: task i + 1's kernelbench driver starts (importing torch, no GPU visible)
    before task i is timed, each timer is closed once its task is timed, and none is left open when the
    validation is cut or a timing fails."""
    from beavertui.engine.validation.validate import _timed_in_turn

    seen: list[str] = []

    def timed(i: int, timer: Any) -> Any:
        seen.append(f"time {i} with {'its timer' if timer is not None and timer.i == i else timer}")
        if how == "fails" and i == 1:
            raise RuntimeError("timing crashed")
        return f"result {i}"

    turn = _timed_in_turn(3, lambda i: _Turn(i, seen) if i != 1 else None, timed)
    if how == "all":
        assert list(turn) == [(0, "result 0"), (1, "result 1"), (2, "result 2")]
        assert seen == [
            "warm 0", "time 0 with its timer", "close 0",  # task 1 has no timer (not kernelbench, say)
            "warm 2", "time 1 with None", "time 2 with its timer", "close 2",
        ]  # fmt: skip
    elif how == "cut":
        assert next(turn) == (0, "result 0")
        turn.close()  # the consumer stops (a cut validation)
        assert seen == ["warm 0", "time 0 with its timer", "close 0"]
    else:
        with pytest.raises(RuntimeError, match="timing crashed"):
            list(turn)
        assert seen[-3:] == ["warm 2", "time 1 with None", "close 2"]
