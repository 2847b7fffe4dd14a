"""One attempt, one judge: the same faults give the same verdicts through ``live``'s toolchain and the batch's.

``live`` runs LocalToolchain with no placement (toolchain/resolve.py); a batch runs the same LocalToolchain
with the GPU pool's placement (service/batch.py make_toolchain: batch/placement.py scheduled_local). Each
fault is a real process: a test command that prints what the CUDA runtime would and exits as it would (no
GPU here); the probe kernel is a real process too, one that passes (a healthy GPU) or fails (a failing one).
What stands for the GPU's state (another run's memory on it, a candidate's run count) is a file outside the
work dir, so both toolchains run their stages without a private /tmp, alike.
"""

from __future__ import annotations

import json
import shutil
import threading
from collections.abc import Callable
from pathlib import Path

from beavertui.batch.build_slots import BuildSlots
from beavertui.batch.gpu_pool import GpuPool
from beavertui.batch.placement import scheduled_local
from beavertui.engine.corpus.load import load_corpus
from beavertui.engine.corpus.task import Task
from beavertui.engine.errors import ToolchainError
from beavertui.engine.host.sandbox import Limits
from beavertui.engine.judge.gpu_fault import GpuProbe
from beavertui.engine.session.events import Event, GpuSignature, Ran, Verdict
from beavertui.engine.toolchain.base import AttemptOptions
from beavertui.engine.toolchain.local import LocalConfig, LocalToolchain

DATA = Path(__file__).resolve().parents[2] / "data" / "recorded"

STICKY = "CUDA error at test_main.cu:41: an illegal memory access was encountered"
LOST = "CUDA error at test_main.cu:12: no CUDA-capable device is detected"
OOM = "CUDA error at test_main.cu:30: out of memory"


def task_with(tmp: Path, test: str, run_s: int = 60) -> Task:
    """vec_scale with nothing to build and ``test`` (a shell script) as its test command."""
    dst = tmp / "corpus" / "vec_scale"
    shutil.copytree(DATA / "vec_scale", dst)
    (dst / "testbench" / "fault.sh").write_text(test)
    meta = json.loads((dst / "input.json").read_text())
    meta["build_command"] = "true"
    meta["test_command"] = "sh fault.sh"
    meta["timeouts"]["run_s"] = run_s
    (dst / "input.json").write_text(json.dumps(meta))
    return load_corpus(dst.parent).get("vec_scale")


def fails_with(line: str) -> str:
    return f"echo '{line}' >&2\nexit 1\n"


#: A GPU that passes the probe kernel, and one that fails it as a dying GPU would.
HEALTHY, DYING = ["true"], ["sh", "-c", "echo 'kernel: unspecified launch failure'; exit 1"]


def config(tmp: Path, name: str) -> LocalConfig:
    return LocalConfig(base_dir=tmp / name, limits=Limits(private_tmp=False))


#: The GPU ``live`` saw when it started (it refuses to start without one: toolchain/resolve.py require_gpu).
H200 = GpuSignature(slug="nvidia_h200_sm_90_cuda_13_0", name="NVIDIA H200", compute_capability="9.0")


def live(tmp: Path, probe: list[str]) -> LocalToolchain:
    tool = LocalToolchain(config(tmp, "live"), probe=GpuProbe(command=probe))
    tool.gpu = lambda: H200  # type: ignore[method-assign]
    return tool


def batch(tmp: Path, probe: list[str], pool: GpuPool | None = None) -> LocalToolchain:
    pool = pool or GpuPool(["0"], fail_limit=3)
    return scheduled_local(pool, BuildSlots(2), None, config(tmp, "batch"), GpuProbe(command=probe))


def outcome(tool: LocalToolchain, task: Task, it: int = 1) -> tuple[str, ...]:
    """What an attempt came to: the verdict's category, correctness and reason, or whose failure it was."""
    events: list[Event] = []
    try:
        for e in tool.attempt(
            task, task.reference() or "", AttemptOptions(iteration=it, gate=0.0, time_if_correct=False)
        ):
            events.append(e)
    except ToolchainError as exc:
        fault = str(exc).split("failed: ", 1)[1]  # "GPU 0 failed: ..." or "the GPU failed: ..."
        return ("infrastructure", exc.source, fault)
    v = events[-1]
    assert isinstance(v, Verdict)
    return (v.category, str(v.correct), v.reason)


def both(tmp_path: Path, test: str, probe: list[str], run_s: int = 60) -> tuple[tuple[str, ...], ...]:
    task = task_with(tmp_path, test, run_s)
    got = (outcome(live(tmp_path, probe), task), outcome(batch(tmp_path, probe), task))
    assert got[0] == got[1]
    return got


def test_a_sticky_error_on_a_gpu_that_fails_the_probe_is_the_gpus_in_both(tmp_path: Path) -> None:
    got = both(tmp_path, fails_with(STICKY), DYING)
    assert got[0][:2] == ("infrastructure", "gpu")
    assert "illegal memory access" in got[0][2] and "probe kernel then failed on it too" in got[0][2]


def test_a_sticky_error_on_a_healthy_gpu_is_the_candidates_in_both(tmp_path: Path) -> None:
    assert both(tmp_path, fails_with(STICKY), HEALTHY)[0] == (
        "illegal_memory_access",
        "False",
        "illegal_memory_access",
    )


def test_a_lost_gpu_is_the_gpus_in_both_and_no_verdict(tmp_path: Path) -> None:
    """Before, live judged this log ``environment_dependency`` against the candidate, a batch the GPU's."""
    got = both(tmp_path, fails_with(LOST), HEALTHY)
    assert got[0] == ("infrastructure", "gpu", LOST)


def test_a_hung_kernel_is_a_timeout_in_both(tmp_path: Path) -> None:
    assert both(tmp_path, "exec sleep 30\n", HEALTHY, run_s=1)[0] == ("timeout", "False", "timeout")


def test_a_flaky_candidate_gets_the_same_verdict_run_by_run_and_leaves_the_gpu_healthy(
    tmp_path: Path,
) -> None:
    """A candidate whose every other run faults: the probe passes, so each fault is the candidate's, in both."""
    count = tmp_path / "runs"
    task = task_with(
        tmp_path,
        f"n=$(cat '{count}' 2>/dev/null || echo 0); echo $((n + 1)) > '{count}'\n"
        f"if [ $((n % 2)) -eq 0 ]; then echo '{STICKY}' >&2; exit 1; fi\necho 'PASSED'\n",
    )
    pool = GpuPool(["0"], fail_limit=2)
    tools = {"live": live(tmp_path, HEALTHY), "batch": batch(tmp_path, HEALTHY, pool)}
    seen: dict[str, list[str]] = {}
    for name, tool in tools.items():
        count.unlink(missing_ok=True)
        seen[name] = [outcome(tool, task, it)[0] for it in range(1, 5)]
    assert seen["live"] == seen["batch"] == ["illegal_memory_access", "passed"] * 2
    assert pool.gpus[0].healthy and pool.gpus[0].consecutive_failures == 0


def _neighbour(pool: GpuPool, mark: Path) -> Callable[[], None]:
    """Another session's correctness run holding a shared slot of the GPU and memory (``mark`` exists) until
    a run asks for the GPU alone; returns the join of its thread."""
    ready = threading.Event()

    def hold() -> None:
        with pool.hold():
            mark.touch()
            ready.set()
            assert pool.wait_queued(1, 60)  # the rerun alone waits for this run to end
            mark.unlink()

    t = threading.Thread(target=hold, daemon=True)
    t.start()
    assert ready.wait(60)
    return lambda: t.join(60)


def test_out_of_memory_beside_other_runs_is_judged_as_the_candidate_alone_in_both(tmp_path: Path) -> None:
    """A candidate that runs out of memory only while another run holds memory on its GPU: in a batch, its first
    run shares the GPU with another session's and fails, and the run made again alone is its verdict; live has
    no other run on the GPU. Both judge what the candidate does alone: it passes."""
    mark = tmp_path / "neighbour-memory"
    task = task_with(tmp_path, f"if [ -e '{mark}' ]; then echo '{OOM}' >&2; exit 1; fi\necho 'PASSED'\n")
    assert outcome(live(tmp_path, HEALTHY), task) == ("passed", "True", "passed")
    pool = GpuPool(["0"], shared=4)
    tool = batch(tmp_path, HEALTHY, pool)
    join = _neighbour(pool, mark)
    events = list(
        tool.attempt(
            task, task.reference() or "", AttemptOptions(iteration=1, gate=0.0, time_if_correct=False)
        )
    )
    join()
    v, run = events[-1], next(e for e in events if isinstance(e, Ran))
    assert isinstance(v, Verdict) and (v.category, v.correct, v.reason) == ("passed", True, "passed")
    assert run.result.rerun_alone is not None and "ran out of memory" in run.result.rerun_alone


def test_out_of_memory_alone_is_the_candidates_in_both(tmp_path: Path) -> None:
    got = both(tmp_path, fails_with(OOM), HEALTHY)
    assert got[0][0] == "out_of_memory" and got[0][1] == "False"
