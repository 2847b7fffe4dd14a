"""Recording named baselines (beavertui/engine/validation/baselines_record.py) end to end on the CPU: the real
driver script in its own processes, with the stand-in torch of tests/torch_standin.py. Tasks sharing one
equivalent are timed once; drivers warm up side by side and are timed in turn; each set is stored where the
task keeps its baselines; the table shows every time beside the reference's; what could not run says why."""

from __future__ import annotations

import csv
import io
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from beavertui.engine.corpus.load import load_corpus
from beavertui.engine.corpus.task import Task
from beavertui.engine.errors import BeaverError
from beavertui.engine.session.events import GpuSignature
from beavertui.engine.timing import named_baselines as nb
from beavertui.engine.validation import baselines_record as rec
from tests import torch_standin
from tests.cli_in_process import run_cli

# 34 s in a serial run on a loaded 2-core machine: a parallel run starts it early
pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[3]
CORPUS = ROOT / "corpus"
H200 = GpuSignature(slug="nvidia_h200_sm_90_cuda_13_0", name="NVIDIA H200", compute_capability="9.0")


def corpus(tmp: Path, sizes: dict[str, int] | None = None) -> list[Task]:
    """reduce_00 and reduce_01 (one equivalent), softmax_00 (another, with a vendor baseline) and
    histogram_00 (no declaration) copied, their equivalents the stand-in problem. ``sizes``: task id -> the
    elements of its input instead (float32: 4 bytes each), a declaration for histogram_00 too where named."""
    root = tmp / "corpus"
    for name in ("_common", "reduce_00", "reduce_01", "softmax_00", "histogram_00"):
        shutil.copytree(CORPUS / name, root / name)
    (root / "_torch").mkdir()
    (root / "_torch" / "standin.py").write_text(torch_standin.PROBLEM)
    n = {"reduce_00": 4, "reduce_01": 4, "softmax_00": 8, **(sizes or {})}
    decl = {
        tid: {"module": "_torch/standin.py", "args": {"n": n[tid], "dtype": "float32"}}
        for tid in ("reduce_00", "reduce_01", "softmax_00", "histogram_00")
        if tid in n
    }
    decl["softmax_00"]["vendor"] = "stand-in BLAS"
    for tid in ("reduce_00", "reduce_01", "softmax_00", "histogram_00"):
        p = root / tid / "input.json"
        doc = json.loads(p.read_text())
        doc.pop("baselines", None)
        if tid in decl:
            doc["baselines"] = {"torch": decl[tid]}
        p.write_text(json.dumps(doc))
    return list(load_corpus(root).tasks)


def test_plan_groups_tasks_by_equivalent(tmp_path: Path) -> None:
    p = rec.plan(corpus(tmp_path))
    assert [[t.id for t in j.tasks] for j in p.jobs] == [["reduce_00", "reduce_01"], ["softmax_00"]]
    assert p.jobs[0].variants == ("eager", "compile", "compile_ro", "graph")
    assert p.jobs[1].variants == ("eager", "compile", "compile_ro", "graph", "vendor")
    assert p.skipped == {"histogram_00": "no PyTorch equivalent declared (input.json baselines.torch)"}


def test_record_stores_each_set_and_the_table_shows_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    tasks = corpus(tmp_path)
    monkeypatch.setenv("PYTHONPATH", str(torch_standin.write(tmp_path / "site")))
    said: list[str] = []
    kept: list[nb.BaselineSet] = []
    out = rec.record(
        tasks,
        H200,
        jobs=2,
        trials=3,
        warmup=1,
        cache=tmp_path / "cache",
        progress=said.append,
        on_stored=kept.append,
    )
    assert sorted(s.task_id for s in kept) == ["reduce_00", "reduce_01", "softmax_00"]  # as each was stored
    by = {o.task_id: o for o in out}
    assert [o.task_id for o in out] == [t.id for t in tasks]  # in the tasks' order
    assert by["histogram_00"].stored is None and "no PyTorch equivalent declared" in (
        by["histogram_00"].reason or ""
    )
    assert by["reduce_01"].shared_with == "reduce_00" and by["reduce_00"].shared_with is None
    tasks_by = {t.id: t for t in tasks}
    for tid in ("reduce_00", "reduce_01", "softmax_00"):
        assert by[tid].stored == tasks_by[tid].root / "baselines" / "named" / f"{H200.slug}.json"
        found = nb.load(tasks_by[tid], H200, tmp_path / "cache")
        assert (
            found is not None and found.task_id == tid and found.measured_for in ("reduce_00", "softmax_00")
        )
        eager = found.time_of("eager")
        assert eager is not None and eager.median_ms == pytest.approx(2.0) and len(eager.samples) == 3
    soft = nb.load(tasks_by["softmax_00"], H200, tmp_path / "cache")
    assert soft is not None
    vendor = soft.time_of("vendor")
    assert vendor is not None and vendor.median_ms == pytest.approx(1.2) and vendor.library == "stand-in BLAS"
    assert any(line.startswith("reduce_00: eager 2 ms;") and "(also 1 other tasks)" in line for line in said)
    rows = {r[0]: r for r in rec.table_rows(tasks, H200, tmp_path / "cache")}
    ref = rows["softmax_00"][1]
    assert ref != "-"  # the reference's stored H200 time, from the task's own baselines/
    ratio = 1.0 / float(ref)
    assert rows["softmax_00"][rec.TABLE_COLUMNS.index("compile ms")] == f"1 [{ratio:.2f}x]"
    assert rows["softmax_00"][rec.TABLE_COLUMNS.index("vendor ms")].startswith("1.2 (stand-in BLAS) [")
    assert rows["histogram_00"][2:7] == ("-",) * 5


def test_a_driver_out_of_memory_beside_others_is_timed_again_alone(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """On the H200, a kernelbench problem's eager model ran out of memory beside 11 other drivers (their
    models and inputs loaded): its driver runs again at the end, by itself, and its set is stored whole."""
    tasks = corpus(tmp_path)
    monkeypatch.setenv("PYTHONPATH", str(torch_standin.write(tmp_path / "site")))
    monkeypatch.setenv("STANDIN_OOM_ONCE", str(tmp_path / "oom-once"))
    said: list[str] = []
    out = rec.record(tasks, H200, jobs=2, trials=3, warmup=1, cache=tmp_path / "cache", progress=said.append)
    assert (tmp_path / "oom-once").exists()  # one driver did run out of memory
    again = [line for line in said if "timed again alone" in line]
    assert len(again) == 1, said
    assert sorted(o.task_id for o in out) == sorted(t.id for t in tasks)  # each task once
    for t in tasks:
        if t.id == "histogram_00":
            continue
        found = nb.load(t, H200, tmp_path / "cache")
        eager = found.time_of("eager") if found is not None else None
        assert eager is not None and eager.median_ms == pytest.approx(2.0), (t.id, found)


GIB = 1 << 30


def test_drivers_are_admitted_side_by_side_only_while_their_memory_fits(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A GPU of 32 GiB, four equivalents: two whose drivers hold 20 and 24 GiB (4 GiB inputs, each variant's
    4 GiB output), two small. Started all at once, the large ones ran out of memory beside each other (as the
    kernelbench problems did on the H100); admitted by their estimated need, the small ones warm up side by
    side, the large ones each alone, and nothing runs out of memory."""
    tasks = corpus(
        tmp_path, {"reduce_00": GIB, "reduce_01": 16, "softmax_00": GIB + 8, "histogram_00": 32}
    )  # reduce_01 its own equivalent now
    monkeypatch.setenv("PYTHONPATH", str(torch_standin.write(tmp_path / "site")))
    monkeypatch.setenv("STANDIN_GPU_BYTES", str(32 * GIB))
    monkeypatch.setenv("STANDIN_GPU_LEDGER", str(tmp_path / "gpu"))
    said: list[str] = []
    out = rec.record(
        tasks, H200, jobs=4, trials=2, warmup=1, cache=tmp_path / "cache", progress=said.append,
        gpu_memory_bytes=32 * GIB,
    )  # fmt: skip
    assert not [line for line in said if "out of memory" in line], said
    assert "2 driver(s) warm up side by side (an estimated 3.0 GiB of the 28.8 GiB of GPU memory they may share); 2 wait for room" in said  # fmt: skip
    for tid, need in (("reduce_00", "65.5"), ("softmax_00", "81.5")):  # 1.5 GiB + variants x 2 x (4 + 4) GiB
        assert (
            f"{tid}: needs an estimated {need} GiB of GPU memory, more than drivers may share (28.8 GiB): "
            "alone, its variants warmed up and timed one at a time" in said
        ), said
    (reduce_line,) = [line for line in said if line.startswith("reduce_00 (variants timed one at a time: ")]
    assert reduce_line.endswith("[GPU memory: estimated 65.5 GiB, peak 16.6 GiB reserved by torch]")
    by = {o.task_id: o for o in out}
    for o in out:
        assert o.found is not None, o
        assert all(m.median_ms is not None for m in o.found.times), (o.task_id, rec.describe(o.found))
    for tid in ("reduce_01", "histogram_00"):
        assert by[tid].note is None and by[tid].found is not None and by[tid].found.one_at_a_time is None
    assert by["reduce_00"].note == (
        "variants timed one at a time: estimated 65.5 GiB of GPU memory with its 4 variants held together, "
        "more than the 28.8 GiB it was given: each variant warmed up, timed and released before the next"
    )


def test_need_is_the_fixed_part_and_two_copies_of_inputs_and_output_per_variant() -> None:
    assert rec.need_bytes({"input_bytes": GIB, "output_bytes": None}, 4) == (3 * GIB) // 2 + 4 * 2 * 2 * GIB
    assert rec.need_bytes({"input_bytes": GIB, "output_bytes": 0, "weight_bytes": GIB}, 5) == (
        (3 * GIB) // 2 + 5 * (2 * GIB + GIB)
    )
    assert rec.need_bytes({"input_bytes": None}, 4) is None and rec.need_bytes({}, 4) is None


def test_the_gpu_s_total_memory_is_read_from_nvidia_smi(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from beavertui.engine.host import gpu

    smi = tmp_path / "bin" / "nvidia-smi"
    smi.parent.mkdir()
    smi.write_text('#!/bin/sh\necho "$@" > "$(dirname "$0")/args"\necho "${SMI_OUT-81559}"\n')
    smi.chmod(0o755)
    monkeypatch.setenv("PATH", f"{smi.parent}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "1")
    assert gpu.memory_total_bytes() == 81559 << 20  # an H100 80GB HBM3: 79.6 GiB
    assert (smi.parent / "args").read_text().split() == [
        "--query-gpu=memory.total", "--format=csv,noheader,nounits", "--id=1"
    ]  # fmt: skip
    monkeypatch.setenv("SMI_OUT", "[N/A]")
    assert gpu.memory_total_bytes() is None


def test_a_driver_out_of_memory_is_timed_again_alone_before_new_drivers(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Three equivalents, two drivers at a time: the one that ran out of memory beside the other is timed
    again by itself next, before the third is started (a run cut by its budget keeps the retries), and its
    tasks' outcomes say so."""
    tasks = corpus(tmp_path, {"histogram_00": 32})
    monkeypatch.setenv("PYTHONPATH", str(torch_standin.write(tmp_path / "site")))
    monkeypatch.setenv("STANDIN_OOM_ONCE", str(tmp_path / "oom-once"))
    said: list[str] = []
    out = rec.record(tasks, H200, jobs=2, trials=2, warmup=1, cache=tmp_path / "cache", progress=said.append)
    (oom,) = [
        line for line in said if "ran out of GPU memory beside 1 other driver: timed again alone next" in line
    ]
    first = oom.split(":")[0]
    assert first in ("histogram_00", "reduce_00")  # the first two drivers (the tasks' order)
    (again,) = [
        i for i, line in enumerate(said) if line.startswith(f"{first} (timed alone after running out")
    ]
    (third,) = [i for i, line in enumerate(said) if line.startswith("softmax_00: ")]
    assert said.index(oom) < again < third, said
    by = {o.task_id: o for o in out}
    assert by[first].note == "timed alone after running out of GPU memory beside 1 other driver"
    eager = by[first].found.time_of("eager") if by[first].found is not None else None
    assert eager is not None and eager.median_ms == pytest.approx(2.0)
    assert by["softmax_00"].note is None


def test_a_driver_without_torch_stores_nothing_and_says_why(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    tasks = corpus(tmp_path)
    monkeypatch.setenv("PYTHONPATH", str(torch_standin.block(tmp_path / "site")))
    out = rec.record(tasks, H200, jobs=4, trials=2, cache=tmp_path / "cache")
    reasons = {o.task_id: o.reason for o in out}
    assert all(o.stored is None for o in out)
    assert (reasons["reduce_00"] or "").startswith("torch is not importable here")
    assert reasons["reduce_01"] == reasons["reduce_00"]


def test_a_spent_budget_starts_no_driver(tmp_path: Path) -> None:
    said: list[str] = []
    out = rec.record(corpus(tmp_path), H200, budget_s=-1.0, cache=tmp_path / "cache", progress=said.append)
    assert {o.task_id: o.reason for o in out}["softmax_00"] == (
        "not reached within the time budget (no driver is started after -1 s; stopped at 0 s)"
    )
    assert said == [
        "time budget of -1 s spent at 0 s: 3 task(s) not reached; the 0 set(s) stored before are kept"
    ]


class _Clock:
    """The recorder's clock, moved on by hand (``sleep`` waits for real, the time does not pass)."""

    def __init__(self) -> None:
        self.now = 1000.0

    def monotonic(self) -> float:
        return self.now

    def sleep(self, s: float) -> None:
        time.sleep(s)


def test_the_sets_stored_before_the_budget_is_spent_are_kept(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """One driver at a time, a budget of 60 s that the first set's driver spends (the clock moved on by 90 s
    as it is stored): its two tasks' sets are stored and handed over as stored (what `--out` writes), the
    third task says it was not reached and when the recording stopped."""
    tasks = corpus(tmp_path)
    monkeypatch.setenv("PYTHONPATH", str(torch_standin.write(tmp_path / "site")))
    clock = _Clock()
    monkeypatch.setattr(rec, "time", clock)
    kept: list[nb.BaselineSet] = []

    def stored(found: nb.BaselineSet) -> None:
        kept.append(found)
        clock.now += 45.0

    said: list[str] = []
    out = rec.record(
        tasks, H200, jobs=1, trials=2, warmup=1, budget_s=60.0, cache=tmp_path / "cache", on_stored=stored,
        progress=said.append,
    )  # fmt: skip
    by = {o.task_id: o for o in out}
    assert sorted(s.task_id for s in kept) == ["reduce_00", "reduce_01"]
    for tid in ("reduce_00", "reduce_01"):
        assert by[tid].stored is not None and by[tid].stored.exists()
    assert by["softmax_00"].stored is None and by["softmax_00"].reason == (
        "not reached within the time budget (no driver is started after 60 s; stopped at 90 s)"
    )
    assert (
        said[-1]
        == "time budget of 60 s spent at 90 s: 1 task(s) not reached; the 2 set(s) stored before are kept"
    )


def test_the_command_prints_the_table_of_stored_times(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    tasks = corpus(tmp_path)
    monkeypatch.setenv("PYTHONPATH", str(torch_standin.write(tmp_path / "site")))
    rec.record(tasks, H200, jobs=2, trials=2, cache=tmp_path / "cache")
    env = {**os.environ, "PYTHONPATH": str(ROOT), "XDG_CACHE_HOME": str(tmp_path / "xdg")}
    cmd = ["corpus", "baselines", "--corpus", str(tmp_path / "corpus"), "--table", "--gpu-slug", H200.slug,
           "--format", "md"]  # fmt: skip
    proc = run_cli(*cmd, env=env)
    assert proc.returncode == 0, proc.stderr
    assert (
        "| task | reference ms | eager ms | compile ms | compile-ro ms | graph ms | vendor ms | roofline ms |"
        in proc.stdout
    )
    assert "| reduce_01 |" in proc.stdout and "ms: median of one call on this GPU" in proc.stdout
    assert "4 tasks, 3 with eager, torch.compile (both modes) and CUDA Graph times" in proc.stdout
    # CSV is for a program: one number a cell, the library and the failures in columns of their own
    proc = run_cli(*cmd[:-1], "csv", env=env)
    assert proc.returncode == 0, proc.stderr
    rows = {r["task"]: r for r in csv.DictReader(io.StringIO(proc.stdout))}
    assert list(next(iter(rows.values()))) == list(rec.MACHINE_COLUMNS) and len(rows) == 4
    for r in rows.values():
        for col, cell in r.items():
            if col.endswith((" ms", "(x)")) and cell:
                float(cell)
    soft = rows["softmax_00"]
    assert soft["vendor library"] == "stand-in BLAS" and soft["failed"] == ""
    assert float(soft["vendor ms"]) == pytest.approx(1.2)
    ratio = float(soft["compile ms"]) / float(soft["reference ms"])
    assert float(soft["compile / reference (x)"]) == pytest.approx(ratio, rel=1e-5)
    assert all(rows["histogram_00"][f"{n} ms"] == "" for n in ("eager", "compile", "graph", "vendor"))
    proc = run_cli(*cmd[:-5], "--table", env=env)
    if proc.returncode == 2:  # no GPU here: the GPU signature must be named
        assert proc.stderr.strip().startswith(
            "beavertui: no GPU here: name the GPU signature whose times to show with --gpu-slug (sets are stored "
            "for "
        )


def test_a_driver_not_ready_in_time_is_stopped_and_says_so(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    tasks = [t for t in corpus(tmp_path) if t.id == "softmax_00"]
    monkeypatch.setenv("PYTHONPATH", str(torch_standin.write(tmp_path / "site")))
    monkeypatch.setenv("STANDIN_IMPORT_S", "60")
    out = rec.record(tasks, H200, warm_s=0.5, cache=tmp_path / "cache")
    assert out[0].stored is None
    assert (
        out[0].reason == "the baselines driver was not ready (compiled and warmed up) within 0.5 s: stopped"
    )


def test_a_task_list_naming_an_unknown_task_is_one_line(tmp_path: Path) -> None:
    listed = tmp_path / "tasks.txt"
    listed.write_text("# the usable ones\nreduce_00\nno_such_task  # gone\n")
    env = {**os.environ, "PYTHONPATH": str(ROOT), "XDG_CACHE_HOME": str(tmp_path / "xdg")}
    cmd = [sys.executable, "-m", "beavertui", "corpus", "baselines", "--tasks-file", str(listed), "--table",
           "--gpu-slug", H200.slug]  # fmt: skip
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=120)  # the real entry point
    assert proc.returncode == 2
    assert proc.stderr.strip() == f"beavertui: {listed}: not in the corpus: no_such_task"


def test_sets_recorded_elsewhere_are_loaded_into_the_store(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    tasks = corpus(tmp_path)
    monkeypatch.setenv("PYTHONPATH", str(torch_standin.write(tmp_path / "site")))
    out = rec.record(tasks, H200, jobs=2, trials=2, cache=tmp_path / "cache")
    lines = tmp_path / "sets.jsonl"
    lines.write_text("".join(o.found.model_dump_json() + "\n" for o in out if o.found is not None))
    for t in tasks:  # another machine: nothing stored
        shutil.rmtree(t.root / "baselines" / "named", ignore_errors=True)
    softmax = next(t for t in tasks if t.id == "softmax_00")
    doc = json.loads((softmax.root / "input.json").read_text())
    doc["baselines"]["torch"]["args"]["n"] = 16  # its equivalent changed since: not loaded
    (softmax.root / "input.json").write_text(json.dumps(doc))
    got = {o.task_id: o for o in rec.load_sets(tasks, lines, tmp_path / "cache2")}
    assert got["reduce_00"].stored is not None and got["reduce_01"].stored is not None
    assert got["softmax_00"].reason == "its PyTorch equivalent changed since it was recorded: not stored"
    found = nb.load(next(t for t in tasks if t.id == "reduce_01"), H200, tmp_path / "cache2")
    assert found is not None and found.time_of("graph") is not None
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"task_id": "reduce_00"}\n')
    with pytest.raises(
        BeaverError, match=r"bad.jsonl: line 1: not a stored set of baselines \(Field required\)"
    ):
        rec.load_sets(tasks, bad)


def _drivers_of(folder: Path) -> list[int]:
    """Processes whose command line names ``folder`` (the drivers of that corpus copy)."""
    out = []
    for proc in Path("/proc").iterdir():
        if proc.name.isdigit():
            try:
                cmd = (proc / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            except OSError:
                continue
            if str(folder) in cmd and "baselines_driver.py" in cmd:
                out.append(int(proc.name))
    return out


def test_an_interrupted_recording_leaves_no_driver_running(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    tasks = corpus(tmp_path)
    monkeypatch.setenv("PYTHONPATH", str(torch_standin.write(tmp_path / "site")))

    def interrupt(line: str) -> None:  # the first set stored: the user presses ^C
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        rec.record(tasks, H200, jobs=4, trials=2, cache=tmp_path / "cache", progress=interrupt)
    assert _drivers_of(tmp_path / "corpus") == []


def test_the_table_says_why_a_task_has_no_set_and_keeps_its_roofline(tmp_path: Path) -> None:
    """A set stored for an older version of its equivalent no longer loads: its row printed "-" in every
    column, the roofline too, with nothing saying why. The note now names it and why (and the tasks without
    a reference time), the CSV has a column for it, and the roofline is the GPU's ceilings from another set."""
    tasks = corpus(tmp_path)
    by = {t.id: t for t in tasks}
    cache = tmp_path / "cache"
    for tid in ("reduce_00", "softmax_00"):
        eq = nb.equivalent(by[tid])
        assert eq is not None
        nb.save(
            by[tid],
            nb.BaselineSet(
                task_id=tid, gpu=H200, method=eq.method, equivalent_hash=eq.digest() if tid == "reduce_00" else "old",
                times=[nb.Measured(name="eager", median_ms=0.5, cv=0.01, samples=[0.5] * 3)],
                copy_gbps=4000.0, bf16_tflops=900.0,
            ),
            cache,
        )  # fmt: skip
    assert nb.load(by["softmax_00"], H200, cache) is None
    assert "another version of the PyTorch equivalent" in nb.why_not_loaded(by["softmax_00"], H200, cache)
    assert nb.why_not_loaded(by["reduce_00"], H200, cache) == ""
    rows = {r[0]: r for r in rec.table_rows(tasks, H200, cache)}
    roof = nb.roofline_ms(by["softmax_00"], nb.BaselineSet(
        task_id="x", gpu=H200, method="m", equivalent_hash="h", copy_gbps=4000.0, bf16_tflops=900.0,
    ).ceilings())  # fmt: skip
    assert roof is not None and rows["softmax_00"][-1] == f"{roof:.4g}" and rows["softmax_00"][2] == "-"
    note = rec.missing_note(tasks, H200, cache)
    assert "histogram_00" in note and "no PyTorch equivalent declared" in note
    assert "softmax_00" in note and "another version of the PyTorch equivalent" in note
    assert "reduce_01" in note and "none stored for this GPU" in note and "reduce_00" not in note
    assert "no reference time" not in note  # the copied tasks keep their H200 reference timings
    for t in tasks:
        (t.root / "baselines" / f"{H200.slug}.json").unlink()
    assert "no reference time stored on this GPU for 4 of 4 task(s)" in rec.missing_note(tasks, H200, cache)
    machine = {
        r[0]: dict(zip(rec.MACHINE_COLUMNS, r, strict=True)) for r in rec.machine_rows(tasks, H200, cache)
    }
    assert (
        "another version" in machine["softmax_00"]["why no set"] and machine["reduce_00"]["why no set"] == ""
    )
    assert "none stored for this GPU" in machine["reduce_01"]["why no set"]


def test_a_task_named_that_is_not_in_the_corpus_is_refused(tmp_path: Path) -> None:
    """--task with a mistyped id printed an empty table ("0 tasks") and exited 0."""
    corpus(tmp_path)
    cmd = ["corpus", "baselines", "--corpus", str(tmp_path / "corpus"), "--table", "--gpu-slug", H200.slug]
    proc = run_cli(*cmd, "--task", "reduce_00", "--task", "reduce_0O")
    assert proc.returncode == 2 and proc.stdout == ""
    assert proc.stderr.strip().splitlines() == [
        f"beavertui: --task reduce_0O: no such task folder in {tmp_path / 'corpus'}"
    ]
    assert run_cli(*cmd, "--task", "reduce_00").returncode == 0


def test_an_option_the_mode_would_ignore_is_refused(tmp_path: Path) -> None:
    """--table and --load measure nothing, so the recording options did nothing beside them (--table --out
    FILE wrote no file), and --gpu-slug did nothing without --table: each is now refused in one line."""
    corpus(tmp_path)
    base = ["corpus", "baselines", "--corpus", str(tmp_path / "corpus")]
    for extra, said in (
        (
            ["--table", "--gpu-slug", H200.slug, "--out", str(tmp_path / "t.jsonl")],
            "--table measures nothing: --out",
        ),
        (
            ["--table", "--gpu-slug", H200.slug, "--jobs", "8", "--missing"],
            "--jobs, --missing would be ignored",
        ),
        (["--load", str(tmp_path / "x.jsonl"), "--trials", "5"], "--load measures nothing: --trials"),
        (["--gpu-slug", H200.slug], "--gpu-slug names the GPU whose stored times --table prints"),
        (["--table", "--load", str(tmp_path / "x.jsonl")], "give one of them"),
    ):
        proc = run_cli(*base, *extra)
        assert proc.returncode == 2, extra
        assert len(proc.stderr.strip().splitlines()) == 1 and said in proc.stderr, extra
    assert not (tmp_path / "t.jsonl").exists()
    assert run_cli(*base, "--table", "--gpu-slug", H200.slug).returncode == 0


def test_a_file_of_sets_for_other_tasks_is_refused_as_bad_input(tmp_path: Path) -> None:
    """--load of a file whose sets name no task of the corpus stored nothing, said only 'stored the named
    baselines of 0 task(s)' and exited 3, an infrastructure failure. It is bad input: one line, exit 2."""
    tasks = corpus(tmp_path)
    other = nb.BaselineSet(task_id="kernelbench_level1_16", gpu=H200, method="m", equivalent_hash="h")
    stale = nb.BaselineSet(task_id="reduce_00", gpu=H200, method="m", equivalent_hash="old")
    base = ["corpus", "baselines", "--corpus", str(tmp_path / "corpus"), "--load"]
    for sets, said in (
        (
            [other],
            "no set of it names a task here (1 set(s) of tasks not in this corpus left out: kernelbench_l",
        ),
        ([other, stale], "no set of it could be stored (1 set(s) of tasks not in this corpus left out"),
        ([], "it holds no set"),
    ):
        f = tmp_path / "sets.jsonl"
        f.write_text("".join(s.model_dump_json() + "\n" for s in sets))
        proc = run_cli(*base, str(f))
        assert proc.returncode == 2, sets
        assert proc.stderr.strip().splitlines()[-1] == f"beavertui: {f}: {said}" or said in proc.stderr, (
            proc.stderr
        )
    assert not any((t.root / "baselines" / "named" / f"{H200.slug}.json").exists() for t in tasks)


def test_missing_with_every_set_stored_is_done_not_failed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """--missing when every chosen task has its set stored for this GPU: the run recorded 0 of 0 tasks and
    exited 3, an infrastructure failure, after measuring the GPU's ceilings for nothing. It is done: exit 0."""
    from beavertui.cli import main
    from beavertui.engine.host import gpu as gpu_mod

    tasks = corpus(tmp_path)
    by = {t.id: t for t in tasks}
    for tid in ("reduce_00", "softmax_00"):
        eq = nb.equivalent(by[tid])
        assert eq is not None
        nb.save(by[tid], nb.BaselineSet(task_id=tid, gpu=H200, method=eq.method, equivalent_hash=eq.digest()))
    monkeypatch.setattr(gpu_mod, "probe", lambda: gpu_mod.Machine(gpu=H200, nvcc=None, cuda=None, torch=True))
    cmd = ["corpus", "baselines", "--corpus", str(tmp_path / "corpus"), "--missing"]
    assert main([*cmd, "--task", "reduce_00", "--task", "softmax_00"]) == 0
    assert (
        f"nothing to time: every task chosen has its named baselines stored for {H200.slug}"
        in capsys.readouterr().err
    )


def test_the_table_without_a_gpu_names_the_signatures_it_could_show(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """--table on a machine without a GPU asked for --gpu-slug without saying which signatures have sets."""
    from beavertui.cli import main
    from beavertui.engine.host import gpu as gpu_mod

    corpus(tmp_path)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    monkeypatch.setattr(
        gpu_mod, "probe", lambda: gpu_mod.Machine(gpu=None, nvcc=None, cuda=None, torch=False)
    )
    assert main(["corpus", "baselines", "--corpus", str(tmp_path / "corpus"), "--table"]) == 2
    err = capsys.readouterr().err.strip()
    assert err == (
        "beavertui: no GPU here: name the GPU signature whose times to show with --gpu-slug "
        "(sets are stored for nvidia_h100_80gb_hbm3_sm_90_cuda_13_0)"
    )


@pytest.mark.parametrize("slug", ["../../etc", "a\x1b[31mb", "", "Nvidia_H200"])
def test_a_gpu_signature_that_names_no_store_is_refused_by_the_parser(tmp_path: Path, slug: str) -> None:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "XDG_CACHE_HOME": str(tmp_path / "xdg")}
    for cmd in (
        ["corpus", "baselines", "--table", "--gpu-slug", slug],
        ["corpus", "minimize", "--replay", slug],
    ):
        proc = run_cli(*cmd, env=env)
        assert proc.returncode == 2, proc.stderr
        assert "must be a GPU signature such as nvidia_h200_sm_90_cuda_13_0" in proc.stderr
        assert "\x1b" not in proc.stderr and len(proc.stderr.splitlines()) == 1


def test_a_gpu_signature_with_no_time_stored_is_one_line_not_a_table_of_nothing(tmp_path: Path) -> None:
    """A mistyped signature printed an empty table (every cell -), exit 0; now it names the stored ones."""
    env = {**os.environ, "PYTHONPATH": str(ROOT), "XDG_CACHE_HOME": str(tmp_path / "xdg")}
    proc = run_cli("corpus", "baselines", "--table", "--gpu-slug", "nvidia_h2oo_sm_90_cuda_13_0", env=env)
    assert proc.returncode == 2 and proc.stdout == ""
    assert proc.stderr.startswith(
        "beavertui: --gpu-slug nvidia_h2oo_sm_90_cuda_13_0: no time is stored for it"
    )
    stored = sorted(p.stem for p in (CORPUS / "softmax_00" / "baselines" / "named").glob("*.json"))
    assert stored and all(s in proc.stderr for s in stored)
    ok = run_cli("corpus", "baselines", "--table", "--gpu-slug", stored[0], "--task", "softmax_00", env=env)
    assert ok.returncode == 0 and "softmax_00" in ok.stdout
