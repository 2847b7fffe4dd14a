"""The kernelbench timing driver's sampling, without a GPU: torch is a stand-in whose CUDA events read a
simulated clock, and whose model calls cost 1 ms, plus 0.5 ms while the caching allocator is cold (after
``torch.cuda.empty_cache()``, until a call has allocated again), as a first cudaMalloc does. Its version
says what ``CUDA_VISIBLE_DEVICES`` was when it was imported, its first CUDA call writes ``cuda_touched`` in
the working folder, and its device name is the ``CUDA_VISIBLE_DEVICES`` of that first call. The driver runs
as the real script, in its own process; started ahead of the GPU hold (``--go-file``), it is also run by the
Timer. (tests/engine/corpus/test_release_real.py runs it against torch on the GPU.)"""

from __future__ import annotations

import dataclasses
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from beavertui.engine.corpus.load import load_corpus
from beavertui.engine.stage import stages
from beavertui.engine.timing import kernelbench, reference
from beavertui.engine.timing.speedup import DRIVER_PHASES, Timer, TimingConfig, phases_note, time_reference

# 43 s in a serial run on a loaded 2-core machine: a parallel run starts it early
pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[3]
DRIVER = ROOT / "beavertui" / "engine" / "timing" / "kernelbench_driver.py"

TORCH = """
import os
import time

time.sleep(float(os.environ.get("STANDIN_IMPORT_S", "0")))
__version__ = "stand-in, imported with CUDA_VISIBLE_DEVICES=" + repr(os.environ.get("CUDA_VISIBLE_DEVICES"))
int64 = "int64"
_clock = [0.0]
_cold = [True]
_visible = []
_calls = [0]
# a process that finds noisy_runs (a count) in its folder takes it down by one and times every other call
# 0.3 ms slower (a CV far above 3%)
_noisy = False
if os.path.exists("noisy_runs"):
    with open("noisy_runs") as _fh:
        _left = int(_fh.read() or 0)
    _noisy = _left > 0
    with open("noisy_runs", "w") as _fh:
        _fh.write(str(max(0, _left - 1)))


def _cuda():
    if os.environ.get("CUDA_VISIBLE_DEVICES") == "" and not _visible:
        raise RuntimeError("No CUDA GPUs are available")  # as CUDA: none visible, none to initialise
    if not _visible:
        _visible.append(os.environ.get("CUDA_VISIBLE_DEVICES"))
        with open("cuda_touched", "w") as fh:
            fh.write(repr(_visible[0]))


class Tensor:
    shape = (4,)
    nbytes = 16

    def numel(self):
        return 4

    def element_size(self):
        return 4

    def cuda(self):
        _cuda()
        return self

    def float(self):
        return self

    def __sub__(self, other):
        return self

    def abs(self):
        return self

    def max(self):
        return self

    def item(self):
        return 0.0

    def zero_(self):
        return self


def manual_seed(seed):
    pass


def empty(n, dtype=None, device=None):
    _cuda()
    return Tensor()


# torch's default device, as a context manager: a get_inputs drawn under it notes the device in
# inputs_device (one line per draw); with STANDIN_DEVICE_FAILS naming it (or "all"), entering it fails, as
# a get_inputs that cannot run there does
class device:

    def __init__(self, name):
        self.name = name

    def __enter__(self):
        if self.name != "meta":
            _cuda()
        if os.environ.get("STANDIN_DEVICE_FAILS", "") in (self.name, "all"):
            raise RuntimeError("stand-in: get_inputs cannot run on " + self.name)
        _device[0] = self.name
        with open("inputs_device", "a") as fh:
            fh.write(self.name + "\\n")
        return self

    def __exit__(self, *exc):
        _device[0] = None
        return False


_device = [None]


class no_grad:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


class nn:
    class Module:
        def cuda(self):
            _cuda()
            return self

        def eval(self):
            return self

        def __call__(self, *args):
            _calls[0] += 1
            _clock[0] += 1.0 + (0.5 if _cold[0] else 0.0) + (0.3 if _noisy and _calls[0] % 2 else 0.0)
            _cold[0] = False
            return Tensor()


class _Props:
    L2_cache_size = 60 << 20


class cuda:
    class Event:
        def __init__(self, enable_timing=False):
            self.t = 0.0

        def record(self):
            self.t = _clock[0]

        def elapsed_time(self, end):
            return end.t - self.t

    @staticmethod
    def synchronize():
        _cuda()

    @staticmethod
    def empty_cache():
        _cold[0] = True

    @staticmethod
    def get_device_properties(i):
        _cuda()
        return _Props()

    @staticmethod
    def get_device_name(i):
        return "stand-in GPU " + repr(_visible[0])
"""

PROBLEM = """
import torch


class Model(torch.nn.Module):
    def forward(self, x):
        return x


def get_init_inputs():
    return []


def get_inputs():
    if torch._device[0] != "meta":  # sized on the meta device: nothing drawn
        open("inputs_drawn", "a").write("x")  # one x per draw
    return [torch.Tensor()]
"""


#: The candidate: the problem's model, and a mark in the working folder once its module has run.
SOLUTION = PROBLEM + "\nModelNew = Model\nopen('solution_loaded', 'w').close()\n"


def _stand_in(tmp_path: Path) -> Path:
    """The stand-in torch under tmp_path/site, and problem.py and solution.py in tmp_path; the site."""
    site = tmp_path / "site"
    (site / "torch").mkdir(parents=True)
    (site / "torch" / "__init__.py").write_text(TORCH)
    (tmp_path / "problem.py").write_text(PROBLEM)
    (tmp_path / "solution.py").write_text(SOLUTION)
    return site


def _result(out: str) -> dict[str, Any]:
    line = next(x for x in out.splitlines() if x.startswith("BEAVER_KB_TIMING "))
    return json.loads(line.split(" ", 1)[1])  # type: ignore[no-any-return]


def test_no_timed_call_pays_the_cold_allocator(tmp_path: Path) -> None:
    site = _stand_in(tmp_path)
    p = subprocess.run(
        [sys.executable, str(DRIVER), "--problem", "problem.py", "--solution", "solution.py", "--trials", "8"],
        cwd=tmp_path, capture_output=True, text=True, env={"PYTHONPATH": str(site)}, timeout=60,
    )  # fmt: skip
    doc = _result(p.stdout)
    assert "error" not in doc, doc
    assert doc["reference_ms"] == [1.0] * 8 and doc["candidate_ms"] == [1.0] * 8, doc
    assert doc["interleaved"] and doc["warmup"] == 3
    # where the host's time went, phase by phase, as the timing's note shows it (no go waited for)
    assert list(doc["phases_s"]) == [
        k
        for k, _ in DRIVER_PHASES
        if k not in ("waited_for_go", "inputs_sized", "inputs_dropped", "inputs_gpu")
    ]
    assert doc["before_go"] == []
    assert all(isinstance(v, float) and v >= 0 for v in doc["phases_s"].values())
    note = phases_note(doc)
    assert note.startswith("; host seconds: torch import ") and note.endswith(
        f"timed trials {doc['phases_s']['trials']:.1f}"
    )
    assert (
        phases_note({}) == ""
        and phases_note({"phases_s": {"inputs": 2.25}}) == "; host seconds: inputs made 2.2"
    )
    warm = {
        "phases_s": {"import": 3.5, "waited_for_go": 12.0, "models": 0.3},
        "before_go": ["import", "waited_for_go"],
    }
    assert phases_note(warm) == (
        "; host seconds before the GPU was held: torch import 3.5, waiting for the GPU 12.0; "
        "with it held: models built 0.3"
    )


# ------------------------------------------------------------------ started ahead of the GPU hold


def _driver(
    tmp_path: Path, site: Path, *args: str, env: dict[str, str] | None = None
) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, str(DRIVER), "--problem", "problem.py", "--solution", "solution.py", "--trials", "4", *args],
        cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
        env={"PYTHONPATH": str(site), **(env or {})},
    )  # fmt: skip


def test_the_driver_waits_for_its_go_before_cuda_and_the_solution(tmp_path: Path) -> None:
    site = _stand_in(tmp_path)
    p = _driver(
        tmp_path, site, "--go-file", "go.json", "--go-timeout", "30", env={"CUDA_VISIBLE_DEVICES": ""}
    )
    try:
        assert p.stdout is not None
        assert p.stdout.readline().strip() == "BEAVER_KB_READY"  # torch imported, problem.py loaded
        time.sleep(0.3)
        # waiting: no CUDA call, the candidate's module not run, the inputs drawn on the host (once)
        assert p.poll() is None
        assert not (tmp_path / "cuda_touched").exists() and not (tmp_path / "solution_loaded").exists()
        assert (tmp_path / "inputs_drawn").read_text() == "x"
        (tmp_path / "go.json").write_text(json.dumps({"env": {"CUDA_VISIBLE_DEVICES": "3"}}))
        out, _ = p.communicate(timeout=60)
    finally:
        p.kill()
    assert p.returncode == 0, out
    assert out.splitlines()[0] == "BEAVER_KB_GO"
    doc = _result(out)
    assert doc["reference_ms"] == [1.0] * 4 and doc["candidate_ms"] == [1.0] * 4, doc
    assert (tmp_path / "solution_loaded").exists()
    # the go's environment was the first CUDA call's; at the import there was no GPU to see
    assert doc["device"] == "stand-in GPU '3'" and doc["torch"].endswith("CUDA_VISIBLE_DEVICES=''")
    assert list(doc["phases_s"]) == [
        k for k, _ in DRIVER_PHASES if k not in ("inputs_sized", "inputs_dropped", "inputs_gpu")
    ]
    # sized on the meta device, drawn on the host and kept from before the go: not drawn on the GPU
    assert (tmp_path / "inputs_device").read_text() == "meta\n"
    assert doc["phases_s"]["waited_for_go"] >= 0.3
    assert doc["before_go"] == ["import", "inputs", "waited_for_go"]
    assert (tmp_path / "inputs_drawn").read_text() == "x"  # not drawn again after the go


def _take_marks(tmp_path: Path) -> tuple[str, str]:
    """What the stand-in marked since the last call, removed: the draws of get_inputs (one x each, none on
    the meta device) and the devices it ran under (one line each)."""
    got = []
    for mark in ("inputs_drawn", "inputs_device"):
        f = tmp_path / mark
        got.append(f.read_text() if f.exists() else "")
        f.unlink(missing_ok=True)
    return got[0], got[1]


def _dropped_run(tmp_path: Path, site: Path, fails: str) -> dict[str, Any]:
    """The driver started ahead with inputs too large to keep (--ahead-max-bytes 15), where get_inputs cannot
    run on the device ``fails`` names; its result."""
    p = _driver(
        tmp_path, site, "--go-file", "go.json", "--ahead-max-bytes", "15",
        env={"CUDA_VISIBLE_DEVICES": "", "STANDIN_DEVICE_FAILS": fails},
    )  # fmt: skip
    out, _ = p.communicate(timeout=60)
    assert p.returncode == 0, out
    doc = _result(out)
    assert doc["reference_ms"] == [1.0] * 4, doc
    return doc


def test_inputs_too_large_to_keep_ahead_are_drawn_again_once_the_gpu_is_held(tmp_path: Path) -> None:
    site = _stand_in(tmp_path)
    (tmp_path / "go.json").write_text(json.dumps({"env": {"CUDA_VISIBLE_DEVICES": "0"}}))
    p = _driver(
        tmp_path, site, "--go-file", "go.json", "--ahead-max-bytes", "15", env={"CUDA_VISIBLE_DEVICES": ""}
    )
    out, _ = p.communicate(timeout=60)
    assert p.returncode == 0, out
    doc = _result(out)
    assert doc["reference_ms"] == [1.0] * 4, doc
    # sized on the meta device ahead (16 bytes > 15), not drawn there; drawn on the GPU after the go
    assert _take_marks(tmp_path) == ("x", "meta\ncuda\n")
    assert doc["before_go"] == ["import", "inputs_sized", "waited_for_go"]
    assert list(doc["phases_s"])[:5] == ["import", "inputs_sized", "waited_for_go", "inputs_gpu", "models"]
    note = phases_note(doc)
    assert "before the GPU was held: torch import" in note and "inputs sized (too large to keep" in note
    assert "with it held: inputs made on the GPU " in note
    # a get_inputs that cannot run on the GPU is drawn on the host after the go
    doc = _dropped_run(tmp_path, site, "cuda")
    assert _take_marks(tmp_path) == ("x", "meta\n")
    assert list(doc["phases_s"])[:5] == ["import", "inputs_sized", "waited_for_go", "inputs", "models"]
    assert "with it held: inputs made " in phases_note(doc) and "on the GPU" not in phases_note(doc)
    # one the meta device cannot size is drawn on the host ahead, dropped, and drawn again on the GPU
    doc = _dropped_run(tmp_path, site, "meta")
    assert _take_marks(tmp_path) == ("xx", "cuda\n")
    assert doc["before_go"] == ["import", "inputs_dropped", "waited_for_go"]
    assert list(doc["phases_s"])[:5] == ["import", "inputs_dropped", "waited_for_go", "inputs_gpu", "models"]
    assert "inputs made and dropped (too large to keep)" in phases_note(doc)
    # without a go file (the GPU held from the start) they are sized and drawn on the GPU at once
    out = subprocess.run(
        [sys.executable, str(DRIVER), "--problem", "problem.py", "--solution", "solution.py", "--trials", "4",
         "--ahead-max-bytes", "15"],
        cwd=tmp_path, capture_output=True, text=True, env={"PYTHONPATH": str(site)}, timeout=60,
    ).stdout  # fmt: skip
    doc = _result(out)
    assert doc["reference_ms"] == [1.0] * 4 and doc["before_go"] == [], doc
    assert list(doc["phases_s"])[:3] == ["import", "inputs_sized", "inputs_gpu"]
    assert _take_marks(tmp_path) == ("x", "meta\ncuda\n")
    # at the limit they are kept
    p = _driver(
        tmp_path, site, "--go-file", "go.json", "--ahead-max-bytes", "16", env={"CUDA_VISIBLE_DEVICES": ""}
    )
    out, _ = p.communicate(timeout=60)
    assert p.returncode == 0 and _take_marks(tmp_path) == ("x", "meta\n"), out
    assert _result(out)["before_go"] == ["import", "inputs", "waited_for_go"]


def test_inputs_made_on_a_gpu_end_a_driver_started_ahead_before_it_is_ready(tmp_path: Path) -> None:
    """A get_inputs that makes its tensors on the GPU cannot run ahead of the hold (no GPU is visible): the
    driver ends with the error line before it says it is ready, so the timing starts one with the GPU held
    (test_a_get_inputs_on_the_gpu_is_timed_with_the_gpu_held), and touches no GPU meanwhile."""
    site = _stand_in(tmp_path)
    (tmp_path / "problem.py").write_text(PROBLEM.replace("[torch.Tensor()]", "[torch.Tensor().cuda()]"))
    p = _driver(tmp_path, site, "--go-file", "go.json", env={"CUDA_VISIBLE_DEVICES": ""})
    out, _ = p.communicate(timeout=60)
    assert p.returncode == 1 and "BEAVER_KB_READY" not in out, out
    doc = _result(out)
    assert doc["side"] == "inputs" and "No CUDA GPUs" in doc["error"], doc
    assert not (tmp_path / "cuda_touched").exists() and not (tmp_path / "solution_loaded").exists()


def test_a_go_can_unset_a_variable(tmp_path: Path) -> None:
    site = _stand_in(tmp_path)
    (tmp_path / "go.json").write_text(json.dumps({"unset": ["CUDA_VISIBLE_DEVICES"]}))
    p = _driver(tmp_path, site, "--go-file", "go.json", env={"CUDA_VISIBLE_DEVICES": ""})
    out, _ = p.communicate(timeout=60)
    assert p.returncode == 0, out
    assert _result(out)["device"] == "stand-in GPU None"


def test_no_go_in_time_is_the_error_line(tmp_path: Path) -> None:
    site = _stand_in(tmp_path)
    p = _driver(tmp_path, site, "--go-file", "go.json", "--go-timeout", "0.2")
    out, _ = p.communicate(timeout=60)
    assert p.returncode == 1, out
    doc = _result(out)
    assert doc["side"] == "go" and "no go" in doc["error"] and "0.2 s" in doc["error"], doc
    assert not (tmp_path / "cuda_touched").exists() and not (tmp_path / "solution_loaded").exists()


# ------------------------------------------------------------------ the Timer's driver started ahead


@pytest.fixture
def kb(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[stages.WorkDir, stages.StageConfig, Path]:
    """A work dir of problem.py and solution.py, a config whose stand-in torch takes 0.6 s to import, and the
    copy of the driver the timer runs (its path, unique to the test, finds its processes)."""
    work = tmp_path / "work"
    work.mkdir()
    site = _stand_in(work)
    driver = tmp_path / "kernelbench_driver.py"
    shutil.copy(DRIVER, driver)
    monkeypatch.setattr(kernelbench, "KERNELBENCH_DRIVER", driver)
    task = dataclasses.replace(
        load_corpus(ROOT / "tests" / "data" / "cpu").get("sleepy"), solution_file="solution.py"
    )
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "PYTHONPATH": str(site),
        "STANDIN_IMPORT_S": "0.6",
    }
    cfg = stages.StageConfig(base_dir=tmp_path, env=env)
    return stages.WorkDir(path=work, task=task, manifest={}, links={}), cfg, driver


def _imported_at_once(kb: Any) -> tuple[stages.WorkDir, stages.StageConfig, Path]:
    """The same, with a stand-in torch imported at once: for the tests whose point is not where the import's
    time goes (every driver process of theirs would wait 0.6 s for nothing)."""
    work, cfg, driver = kb
    return work, dataclasses.replace(cfg, env={**(cfg.env or {}), "STANDIN_IMPORT_S": "0"}), driver


def _timer(kb: tuple[stages.WorkDir, stages.StageConfig, Path], **tcfg: Any) -> Timer:
    work, cfg, _ = kb
    timing = TimingConfig(
        method="torch_events_l2flush_interleaved", process_runs=5, cache=work.path.parent / "c", **tcfg
    )
    return Timer(work.task, cfg, timing)


def _drivers(driver: Path) -> list[int]:
    """The processes running this copy of the driver."""
    found = []
    for proc in Path("/proc").iterdir():
        try:
            if proc.name.isdigit() and str(driver).encode() in (proc / "cmdline").read_bytes():
                found.append(int(proc.name))
        except OSError:
            continue
    return found


def _gone(driver: Path, within_s: float = 10.0) -> bool:
    end = time.monotonic() + within_s
    while _drivers(driver) and time.monotonic() < end:
        time.sleep(0.05)
    return not _drivers(driver)


def _on_gpu(timer: Timer, index: str) -> None:
    """What the batch does once it holds a GPU alone: the timer's config names it."""
    timer.config = dataclasses.replace(
        timer.config, env={**(timer.config.env or {}), "CUDA_VISIBLE_DEVICES": index}
    )


def test_a_driver_started_ahead_gives_the_same_timing_and_run(kb: Any) -> None:
    work, _, driver = kb
    cold = _timer(kb)
    _on_gpu(cold, "0")
    cold_result = cold.measure(work)
    [(who, cold_run)] = cold.runs
    for mark in ("cuda_touched", "solution_loaded"):
        (work.path / mark).unlink()
    with _timer(kb) as timer:
        timer.prepare_candidate(work)  # before the GPU hold: torch imported, waiting for its go
        assert _drivers(driver) and not (work.path / "cuda_touched").exists()
        assert not (work.path / "solution_loaded").exists()
        _on_gpu(timer, "0")
        result = timer.measure(work)
    assert result.candidate_samples == cold_result.candidate_samples == [1.0] * 10
    assert result.reference_samples == cold_result.reference_samples
    [(who2, run)] = timer.runs
    assert who2 == who == "candidate" and run.stage == cold_run.stage == "benchmark"
    assert (
        (run.rc, run.timed_out, run.signal)
        == (cold_run.rc, cold_run.timed_out, cold_run.signal)
        == (0, False, None)
    )
    # the same log but for the driver's ready and go lines, and the same result line but for its phases
    assert len(run.log.splitlines()) == len(cold_run.log.splitlines()) and "BEAVER_KB_" in run.log
    assert "BEAVER_KB_READY" not in run.log and "BEAVER_KB_GO" not in run.log
    assert run.log_bytes == len(run.log.encode())
    doc = _result(run.log)
    assert doc["device"] == _result(cold_run.log)["device"] == "stand-in GPU '0'"  # the GPU its go named
    assert doc["torch"].endswith("CUDA_VISIBLE_DEVICES=''")  # imported with no GPU visible
    # the 0.6 s import ran before the go: not in the run's seconds, and the note says where it went
    assert cold_run.duration_s is not None and cold_run.duration_s >= 0.6
    assert run.duration_s is not None and run.duration_s < cold_run.duration_s - 0.4
    assert "--go-file" in (run.command or "") and "--go-file" not in (cold_run.command or "")
    assert result.driver_phases_s["import"] == pytest.approx(0.6, abs=0.05)
    assert {"import", "inputs"} <= set(result.driver_before_go)  # the inputs made before the go too
    assert cold_result.driver_phases_s["import"] == pytest.approx(0.6, abs=0.05)
    assert cold_result.driver_before_go == []
    assert _gone(driver) and not list(work.path.glob(".beaver-kb-go-*"))


def test_the_driver_loads_the_candidate_in_the_environment_its_eval_compiles_it_in(kb: Any) -> None:
    """The release's eval compiles a candidate's extension with its test command's set_gpu_arch([...]) list
    and TORCH_USE_CUDA_DSA=1 (the build stage's pre-build too); a driver that loaded it under the machine's
    own arch list would compile it again with the GPU held."""
    kb = _imported_at_once(kb)
    work, cfg, _ = kb
    probe = "import os\nopen('solution_env', 'w').write(repr((os.environ.get('TORCH_CUDA_ARCH_LIST'), os.environ.get('TORCH_USE_CUDA_DSA'))))\n"
    (work.path / "solution.py").write_text(probe + SOLUTION)
    test = "python -c \"from kernelbench.utils import set_gpu_arch; set_gpu_arch(['Ampere']); run()\""
    task = dataclasses.replace(work.task, test_command=test)
    hopper = dataclasses.replace(cfg, sm=90, env={**(cfg.env or {}), "CUDA_VISIBLE_DEVICES": "0"})
    for prepared in (False, True):
        with Timer(task, hopper, _timer(kb).tcfg) as timer:
            if prepared:
                timer.prepare_candidate(dataclasses.replace(work, task=task))
            timer.measure(dataclasses.replace(work, task=task))
        # the command adapted to this machine names its family (Hopper), as the test run's does, not 9.0
        assert (work.path / "solution_env").read_text() == repr(("Hopper", "1")), prepared
        (work.path / "solution_env").unlink()


def test_close_ends_a_driver_started_ahead_and_never_used(kb: Any) -> None:
    work, _, driver = kb
    timer = _timer(kb)
    timer.prepare_candidate(work)
    assert _drivers(driver)
    timer.close()
    assert _gone(driver, 5.0)
    assert not (work.path / "cuda_touched").exists() and not (work.path / "solution_loaded").exists()


def test_a_driver_gone_before_its_go_is_timed_without_it(kb: Any) -> None:
    work, _, driver = kb
    with _timer(kb, go_s=0.2) as timer:
        timer.prepare_candidate(work)
        assert _gone(driver)  # it gave up waiting for its go
        _on_gpu(timer, "1")
        result = timer.measure(work)
    assert result.candidate_samples == [1.0] * 10
    [(_, run)] = timer.runs
    assert run.rc == 0 and "--go-file" not in (run.command or "") and run.duration_s >= 0.6
    assert _result(run.log)["device"] == "stand-in GPU '1'"
    assert result.driver_phases_s["import"] == pytest.approx(0.6, abs=0.05) and result.driver_before_go == []


def test_a_get_inputs_on_the_gpu_is_timed_with_the_gpu_held(kb: Any) -> None:
    kb = _imported_at_once(kb)
    work, _, driver = kb
    (work.path / "problem.py").write_text(PROBLEM.replace("[torch.Tensor()]", "[torch.Tensor().cuda()]"))
    with _timer(kb) as timer:
        timer.prepare_candidate(work)  # the driver ends before it is ready: nothing is kept
        assert _gone(driver) and not (work.path / "cuda_touched").exists()
        _on_gpu(timer, "2")
        result = timer.measure(work)
    assert result.candidate_samples == [1.0] * 10
    [(_, run)] = timer.runs
    assert run.rc == 0 and "--go-file" not in (run.command or "")
    assert _result(run.log)["device"] == "stand-in GPU '2'"


def test_the_reference_alone_takes_a_driver_started_ahead(kb: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    work, _, driver = kb
    monkeypatch.setattr(reference, "reference_workdir", lambda *a: work)
    with _timer(kb) as timer:
        timer.prepare_reference()
        assert _drivers(driver)
        rt = time_reference(timer)
    assert rt.samples == [1.0] * 10 and not (work.path / "solution_loaded").exists()
    assert rt.note and "before the GPU was held: torch import 0.6" in rt.note
    [(_, run)] = timer.runs
    assert "--reference-only" in (run.command or "") and "--go-file" in (run.command or "")


def test_a_driver_started_without_waiting_is_waited_for_at_its_go(
    kb: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """corpus validate starts the next task's driver while one is timed and does not wait for it: the go
    waits for it to be ready first, and the import still counts as done before the GPU was held."""
    work, _, driver = kb
    monkeypatch.setattr(reference, "reference_workdir", lambda *a: work)
    with _timer(kb) as timer:
        began = time.monotonic()
        timer.prepare_reference(wait=False)
        assert time.monotonic() - began < 0.5  # back at once, the 0.6 s import going on
        end = time.monotonic() + 10.0  # the process may not have exec'd the driver yet
        while not _drivers(driver) and time.monotonic() < end:
            time.sleep(0.01)
        assert _drivers(driver)
        rt = time_reference(timer)
    assert rt.samples == [1.0] * 10
    assert rt.note and "before the GPU was held: torch import 0.6" in rt.note
    [(_, run)] = timer.runs
    assert "--go-file" in (run.command or "") and _gone(driver)


@pytest.mark.parametrize("noisy", [1, 2])
def test_a_timing_with_a_cv_above_3_percent_is_measured_again_once(
    kb: Any, monkeypatch: pytest.MonkeyPatch, noisy: int
) -> None:
    """The timing rules: a measurement whose CV is above 3% is measured again once, and that one is kept;
    still above 3%, it is kept and marked unstable. Both for the reference alone and for the pair."""
    kb = _imported_at_once(kb)
    work, _, _ = kb
    monkeypatch.setattr(reference, "reference_workdir", lambda *a: work)
    (work.path / "noisy_runs").write_text(str(noisy))
    timer = _timer(kb)
    rt = time_reference(timer)
    assert len(timer.runs) == 2 and rt.note and rt.note.startswith("re-measured once: CV above 3%; ")
    assert rt.unstable == (noisy == 2) and (rt.samples == [1.0] * 10) == (noisy == 1)
    (work.path / "noisy_runs").write_text(str(noisy))
    timer = _timer(kb)
    _on_gpu(timer, "0")
    result = timer.measure(work)
    assert len(timer.runs) == 2 and result.remeasured
    assert result.unstable == (noisy == 2)
    assert (result.candidate_samples == result.reference_samples == [1.0] * 10) == (noisy == 1)
    # a steady measurement is taken once
    timer = _timer(kb)
    assert time_reference(timer).samples == [1.0] * 10 and len(timer.runs) == 1


@pytest.mark.parametrize("timing", ["succeeds", "fails"])
def test_the_batch_starts_the_driver_before_it_holds_the_gpu_and_ends_it(
    kb: Any, monkeypatch: pytest.MonkeyPatch, timing: str
) -> None:
    from beavertui.batch.build_slots import BuildSlots
    from beavertui.batch.gpu_pool import GpuPool
    from beavertui.batch.placement import scheduled_local
    from beavertui.engine.errors import BeaverError
    from beavertui.engine.toolchain.base import AttemptOptions
    from beavertui.engine.toolchain.local import LocalConfig, TimingFailed

    work, cfg, driver = kb
    timing_config = TimingConfig(
        method="torch_events_l2flush_interleaved", process_runs=5, cache=work.path.parent / "c"
    )
    tool = scheduled_local(GpuPool(["0"]), BuildSlots(1), None, LocalConfig(timing=timing_config))
    measure = Timer.measure
    seen: list[tuple[list[int], bool]] = []

    def held(timer: Timer, cand: stages.WorkDir, gate: float | None = None) -> Any:
        seen.append((_drivers(driver), (work.path / "cuda_touched").exists()))
        if timing == "fails":
            raise BeaverError("the timing failed")
        return measure(timer, cand, gate)

    monkeypatch.setattr(Timer, "measure", held)
    if timing == "fails":
        with pytest.raises(TimingFailed) as info:  # the GPU's, as any failure of a timing but the candidate's
            tool._measure(work.task, work, cfg, AttemptOptions(iteration=1))
        assert info.value.failure.who == "gpu"
    else:
        result = tool._measure(work.task, work, cfg, AttemptOptions(iteration=1))
        assert "import" in result.driver_before_go and result.driver_phases_s["import"] == pytest.approx(
            0.6, abs=0.05
        )
    # with the GPU held alone, the driver was there already, and had touched no GPU
    assert len(seen) == 1 and seen[0][0] and not seen[0][1]
    assert _gone(driver, 5.0)
