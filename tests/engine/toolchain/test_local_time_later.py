"""A local toolchain's timing after the loop (LocalToolchain.time_later), on the CPU fixture ``sleepy``
(tests/data/cpu: its harness prints BEAVER_TIME_MS lines) with a stand-in GPU signature: real builds, runs
and timing processes."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from beavertui.engine.corpus.load import load_corpus
from beavertui.engine.session.events import GpuSignature, Timed, Verdict
from beavertui.engine.toolchain.base import AttemptOptions
from beavertui.engine.toolchain.local import LocalConfig, LocalToolchain

SIG = GpuSignature(slug="test_gpu_sm_90_cuda_13_0", name="Test GPU", compute_capability="9.0", cuda="13.0")
DATA = Path(__file__).resolve().parents[2] / "data"


def test_a_deferred_timing_gives_what_the_inline_one_gives(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    shutil.copytree(DATA / "cpu", tmp_path / "corpus")
    task = load_corpus(tmp_path / "corpus").get("sleepy")
    tool = LocalToolchain(LocalConfig(base_dir=tmp_path / "work", keep_start_logs=False))
    tool.gpu = lambda: SIG  # type: ignore[method-assign]
    code = task.reference() or ""
    inline = list(tool.attempt(task, code, AttemptOptions(iteration=1, gate=0.7)))
    deferred = list(tool.attempt(task, code, AttemptOptions(iteration=1, gate=0.7, defer_timing=True)))
    assert not any(isinstance(e, Timed) for e in deferred)
    pending = deferred[-1]
    assert isinstance(pending, Verdict) and pending.correct and pending.timing_pending
    assert pending.speedup is None and not pending.success and pending.reason == "timing pending"
    late = list(tool.time_later(task, code, pending, 0.7))
    assert [e.kind for e in late] == ["timing", "verdict"]
    first, final = inline[-1], late[-1]
    assert isinstance(first, Verdict) and isinstance(final, Verdict)
    # the reference against itself: the same claimed times either way (the fixture prints its cost)
    assert final.speedup == first.speedup == pytest.approx(1.0)
    assert (final.correct, final.success, final.reason, final.timing_pending) == (True, True, "passed", False)
    # judged at another gate: below it
    high = list(tool.time_later(task, code, pending, 1.5))[-1]
    assert isinstance(high, Verdict) and high.correct and not high.success and high.reason == "below gate"
