"""The named-baselines driver (beavertui/engine/timing/baselines_driver.py) run as the real script, in its own
process: where torch is missing it says so in one line; with the stand-in torch of tests/torch_standin.py it
times every variant in turn, reports a variant torch.compile refuses and times the others, and waits for its
go; on a GPU with torch, the real softmax equivalent of the bundled corpus is timed."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from tests import torch_standin

ROOT = Path(__file__).resolve().parents[3]
DRIVER = ROOT / "beavertui" / "engine" / "timing" / "baselines_driver.py"
TAG = "BEAVER_BASELINES "


def run(
    tmp: Path, pythonpath: Path | None, *args: str, env: dict[str, str] | None = None
) -> tuple[int, list[str]]:
    e = {**os.environ, **(env or {})}
    if pythonpath is not None:
        e["PYTHONPATH"] = str(pythonpath)
    proc = subprocess.run(
        [sys.executable, str(DRIVER), *args], capture_output=True, text=True, env=e, cwd=tmp, timeout=120
    )
    return proc.returncode, [ln for ln in (proc.stdout + proc.stderr).splitlines() if ln.strip()]


def result(lines: list[str]) -> dict[str, Any]:
    docs = [json.loads(ln[len(TAG) :]) for ln in lines if ln.startswith(TAG)]
    assert len(docs) == 1, lines
    return docs[0]


def problem(tmp: Path) -> Path:
    p = tmp / "problem.py"
    p.write_text(torch_standin.PROBLEM)
    return p


def _wait_for(marker: str, out: Path, proc: subprocess.Popen[bytes]) -> None:
    """Until the driver printed ``marker`` (it must not end first, nor take a minute)."""
    deadline = time.monotonic() + 60
    while marker not in out.read_text():
        assert proc.poll() is None and time.monotonic() < deadline, out.read_text()
        time.sleep(0.02)


def _go_then_result(out: Path, proc: subprocess.Popen[bytes], go: Path) -> dict[str, Any]:
    """Once the driver says it is ready: its go, its exit, its result."""
    _wait_for("BEAVER_BASELINES_READY", out, proc)
    go.write_text("go\n")
    assert proc.wait(timeout=60) == 0
    return result(out.read_text().splitlines())


def test_without_torch_one_line_says_why(tmp_path: Path) -> None:
    blocked = torch_standin.block(tmp_path / "site")
    rc, lines = run(tmp_path, blocked, "--module", str(problem(tmp_path)), "--args", '{"n": 4, "dtype": "x"}')
    assert rc == 3
    assert len(lines) == 1
    doc = result(lines)
    assert doc["skip"] is True
    assert doc["error"].startswith("torch is not importable here")
    assert "PyTorch baselines need it" in doc["error"]


def test_bad_arguments_say_why_before_torch(tmp_path: Path) -> None:
    blocked = torch_standin.block(tmp_path / "site")
    rc, lines = run(tmp_path, blocked, "--module", "p.py", "--variants", "eager,fast")
    assert rc == 3 and "unknown variants ['fast']" in result(lines)["error"]
    rc, lines = run(tmp_path, blocked, "--module", "p.py", "--args", "[1]")
    assert rc == 3 and "--args is not a JSON object" in result(lines)["error"]


def test_every_variant_timed_in_alternating_order(tmp_path: Path) -> None:
    site = torch_standin.write(tmp_path / "site")
    calls = tmp_path / "calls"
    rc, lines = run(
        tmp_path, site, "--module", str(problem(tmp_path)), "--args", '{"n": 4, "dtype": "float32"}',
        "--trials", "4", "--warmup", "2", "--variants", "eager,compile,compile_ro,graph,vendor",
        env={"STANDIN_CALLS": str(calls)},
    )  # fmt: skip
    assert rc == 0, lines
    doc = result(lines)
    v = doc["variants"]
    expected = {"eager": 2.0, "compile": 1.0, "compile_ro": 0.8, "graph": 1.5, "vendor": 1.2}
    for name, ms in expected.items():
        assert v[name]["samples_ms"] == pytest.approx([ms] * 4), name
        assert v[name]["max_abs_diff"] == 0.0
    assert doc["trials"] == 4 and doc["warmup"] == 2 and doc["style"] == "native"
    assert doc["flush_bytes"] == 256 << 20  # at least 256 MiB: the stand-in's L2 is 50 MiB
    trials = calls.read_text().split()[-20:]  # the 4 trials of 5 variants, after the warm-up calls
    order = ["eager", "compile", "compile_ro", "graph", "vendor"]
    assert trials == order + order[::-1] + order + order[::-1]


def test_a_variant_compile_refuses_fails_alone(tmp_path: Path) -> None:
    site = torch_standin.write(tmp_path / "site")
    rc, lines = run(
        tmp_path, site, "--module", str(problem(tmp_path)), "--args", '{"n": 4, "dtype": "float32"}',
        "--trials", "3", "--style", "kernelbench", env={"STANDIN_COMPILE_FAILS": "1"},
    )  # fmt: skip
    assert rc == 0
    v = result(lines)["variants"]
    assert set(v) == {"eager", "compile", "compile_ro", "graph"}
    for name in ("compile", "compile_ro"):
        assert "torch.compile refuses this model" in v[name]["error"]
        assert "samples_ms" not in v[name]
    assert len(v["eager"]["samples_ms"]) == 3 and len(v["graph"]["samples_ms"]) == 3


def test_a_module_that_fails_to_load_says_why(tmp_path: Path) -> None:
    site = torch_standin.write(tmp_path / "site")
    bad = tmp_path / "bad.py"
    bad.write_text("import torch\nraise ValueError('no such shape')\n")
    rc, lines = run(tmp_path, site, "--module", str(bad))
    assert rc == 3
    assert result(lines)["error"] == "bad.py: ValueError: no such shape"


def test_waits_for_its_go_after_warming_up(tmp_path: Path) -> None:
    site = torch_standin.write(tmp_path / "site")
    go = tmp_path / "go"
    out = tmp_path / "out.log"
    with out.open("w") as fh:
        proc = subprocess.Popen(
            [sys.executable, str(DRIVER), "--module", str(problem(tmp_path)), "--args",
             '{"n": 4, "dtype": "float32"}', "--trials", "2", "--go-file", str(go), "--go-timeout", "60"],
            stdout=fh, stderr=subprocess.STDOUT, env={**os.environ, "PYTHONPATH": str(site)}, cwd=tmp_path,
        )  # fmt: skip
    try:
        _wait_for("BEAVER_BASELINES_READY", out, proc)
        assert TAG not in out.read_text()  # nothing timed before the go
        assert proc.poll() is None
        go.write_text("go\n")
        assert proc.wait(timeout=60) == 0
    finally:
        proc.kill()
    doc = result(out.read_text().splitlines())
    assert len(doc["variants"]["eager"]["samples_ms"]) == 2
    assert "waited_for_go" in doc["phases_s"]


def test_sizes_what_it_will_hold_and_waits_for_its_admission_before_touching_the_gpu(tmp_path: Path) -> None:
    """Inputs of 2^20 float32 elements: 4 MiB of inputs, the model's output as much, no weights, all sized on
    the meta device; nothing is held on the (stand-in) GPU until the driver is admitted."""
    site = torch_standin.write(tmp_path / "site")
    admit, go, out, ledger = tmp_path / "admit", tmp_path / "go", tmp_path / "out.log", tmp_path / "gpu"
    env = {
        **os.environ,
        "PYTHONPATH": str(site),
        "STANDIN_GPU_BYTES": str(1 << 40),
        "STANDIN_GPU_LEDGER": str(ledger),
    }
    with out.open("w") as fh:
        proc = subprocess.Popen(
            [sys.executable, str(DRIVER), "--module", str(problem(tmp_path)), "--args",
             json.dumps({"n": 1 << 20, "dtype": "float32"}), "--trials", "2", "--admit-file", str(admit),
             "--go-file", str(go), "--go-timeout", "60"],
            stdout=fh, stderr=subprocess.STDOUT, env=env, cwd=tmp_path,
        )  # fmt: skip
    try:
        _wait_for("BEAVER_BASELINES_SIZED", out, proc)
        (line,) = [ln for ln in out.read_text().splitlines() if ln.startswith("BEAVER_BASELINES_SIZED ")]
        sized = json.loads(line.split(" ", 1)[1])
        assert sized == {"input_bytes": 4 << 20, "output_bytes": 4 << 20, "weight_bytes": 0}
        assert proc.poll() is None and not ledger.exists()  # waiting, nothing held on the GPU
        admit.write_text("admitted\n")
        doc = _go_then_result(out, proc, go)
    finally:
        proc.kill()
    assert doc["sized"] == sized and "waited_for_room" in doc["phases_s"]
    # the flush buffer (256 MiB), the inputs, each of the four variants' output (4 MiB each) and eager's copy
    # kept for the comparison; held together, the variants side by side, the trials interleaved
    assert doc["peak_reserved_bytes"] == (256 << 20) + 6 * (4 << 20)
    assert "one_at_a_time" not in doc and "trials" in doc["phases_s"]


def test_inputs_the_meta_device_cannot_draw_are_sized_on_the_host(tmp_path: Path) -> None:
    """A get_inputs that reads values (the spmv equivalent's row lengths) fails on the meta device: the inputs
    are drawn on the host and measured, the output left unknown, and the timing goes on as ever."""
    site = torch_standin.write(tmp_path / "site")
    module = tmp_path / "reads_values.py"
    module.write_text(
        torch_standin.PROBLEM.replace(
            "def get_inputs(n, dtype):\n",
            "def get_inputs(n, dtype):\n    if torch._device[0] == 'meta':\n"
            "        raise NotImplementedError('reads a value')\n",
        )
    )
    rc, lines = run(tmp_path, site, "--module", str(module), "--args", '{"n": 64, "dtype": "float32"}',
                    "--trials", "2")  # fmt: skip
    assert rc == 0, lines
    doc = result(lines)
    assert doc["sized"] == {"input_bytes": 256, "output_bytes": None, "weight_bytes": 0}
    assert len(doc["variants"]["eager"]["samples_ms"]) == 2


@pytest.mark.gpu
def test_softmax_equivalent_on_the_gpu(tmp_path: Path) -> None:
    """The bundled softmax equivalent, small, through real torch on a real GPU: every variant timed or its
    failure said, eager's output the reference of the others."""
    pytest.importorskip("torch")
    rc, lines = run(
        tmp_path, None, "--module", str(ROOT / "corpus" / "_torch" / "softmax.py"), "--args",
        '{"rows": 256, "cols": 1024, "dtype": "float32"}', "--trials", "5",
    )  # fmt: skip
    assert rc == 0, lines[-5:]
    v = result(lines)["variants"]
    assert len(v["eager"]["samples_ms"]) == 5 and all(x > 0 for x in v["eager"]["samples_ms"])
    for name in ("compile", "compile_ro", "graph"):
        assert "error" in v[name] or v[name]["max_abs_diff"] < 1e-5, (name, v[name])


#: Every bundled family's equivalent at a small shape (the GPU script times them at the harness's).
SMALL = {
    "softmax": {"rows": 64, "cols": 1000, "dtype": "float16"},
    "layernorm": {"rows": 64, "cols": 4095, "dtype": "float32"},
    "gemm_tc": {"m": 256, "n": 256, "k": 264, "dtype": "bfloat16"},
    "reduce": {"n": 1 << 20},
    "scan": {"n": 1 << 20, "dtype": "int32"},
    "transpose": {"rows": 512, "cols": 256, "dtype": "float16"},
    "histogram": {"n": 1 << 20},
    "flashattn": {"batch": 1, "heads": 2, "seqlen": 256, "head_dim": 64, "causal": True, "dtype": "bfloat16"},
    "spmv_csr": {"rows": 20003, "cols": 10003, "mean_len": 24.0},
}


@pytest.mark.gpu
@pytest.mark.parametrize("family", sorted(SMALL))
def test_every_bundled_equivalent_runs_eagerly_on_the_gpu(tmp_path: Path, family: str) -> None:
    """Each family's module through real torch: eager timed (a vendor model too where it has one), the CUDA
    Graph replay timed or its failure said in one line."""
    pytest.importorskip("torch")
    module = ROOT / "corpus" / "_torch" / f"{family}.py"
    vendor = "class VendorModel" in module.read_text()
    variants = "eager,graph" + (",vendor" if vendor else "")
    rc, lines = run(
        tmp_path, None, "--module", str(module), "--args", json.dumps(SMALL[family]), "--trials", "3",
        "--variants", variants,
    )  # fmt: skip
    assert rc == 0, lines[-5:]
    v = result(lines)["variants"]
    assert len(v["eager"]["samples_ms"]) == 3, v["eager"]
    assert "samples_ms" in v["graph"] or "\n" not in v["graph"]["error"]
    if vendor:
        assert len(v["vendor"]["samples_ms"]) == 3, v["vendor"]
        assert v["vendor"]["max_abs_diff"] < 0.1, v["vendor"]


def test_the_small_shapes_name_every_argument_of_their_module() -> None:
    import ast

    assert sorted(SMALL) == sorted(p.stem for p in (ROOT / "corpus" / "_torch").glob("*.py"))
    for family, args in SMALL.items():
        tree = ast.parse((ROOT / "corpus" / "_torch" / f"{family}.py").read_text())
        f = next(n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == "get_inputs")
        names = [a.arg for a in f.args.args]
        required = set(names[: len(names) - len(f.args.defaults)])
        assert required <= set(args) <= set(names), family


def _calls_in_runs(path: Path) -> list[str]:
    """The stand-in's call log with each run of one name made one entry."""
    runs: list[str] = []
    for name in path.read_text().split():
        if not runs or runs[-1] != name:
            runs.append(name)
    return runs


@pytest.mark.parametrize("given", ["room", "no room"])
def test_a_driver_needing_more_than_its_room_takes_its_variants_one_at_a_time(
    tmp_path: Path, given: str
) -> None:
    """A GPU of 5.5 GiB and inputs of 1 GiB (2^28 float32 elements), the output as large: held together, the
    inputs, each variant's output and eager's copy for the comparison take more than the GPU (a kernelbench
    problem of 7 GiB in and out ran out of memory so on an H100, 63 GiB held). Told that its estimate exceeds
    its room, the driver builds, warms up, times and releases each variant before the next: every variant is
    timed, the trials of each in a row, the compiled ones' state reset after them, its peak about one
    variant's (the flush buffer, the inputs, eager's copy, the variant's output and its copy, the comparison's
    chunks), and its result says why."""
    site = torch_standin.write(tmp_path / "site")
    admit, go, out, calls = tmp_path / "admit", tmp_path / "go", tmp_path / "out.log", tmp_path / "calls"
    gib = 1 << 30
    env = {
        **os.environ, "PYTHONPATH": str(site), "STANDIN_GPU_BYTES": str(11 * gib // 2),
        "STANDIN_GPU_LEDGER": str(tmp_path / "gpu"), "STANDIN_CALLS": str(calls),
    }  # fmt: skip
    need = {"need_bytes": 20 * gib, "room_bytes": 5 * gib} if given == "no room" else {}
    admit.write_text(json.dumps(need) if need else "admitted\n")  # admitted at once
    with out.open("w") as fh:
        proc = subprocess.Popen(
            [sys.executable, str(DRIVER), "--module", str(problem(tmp_path)), "--args",
             json.dumps({"n": 1 << 28, "dtype": "float32"}), "--trials", "3", "--warmup", "2", "--admit-file",
             str(admit), "--go-file", str(go), "--go-timeout", "60"],
            stdout=fh, stderr=subprocess.STDOUT, env=env, cwd=tmp_path,
        )  # fmt: skip
    try:
        doc = _go_then_result(out, proc, go)
    finally:
        proc.kill()
    v = doc["variants"]
    if given == "room":  # today's way: every variant held from its warm-up to the trials
        assert "one_at_a_time" not in doc
        failed = [name for name in v if "error" in v[name]]
        assert failed and all("CUDA out of memory" in v[name]["error"] for name in failed), v
        return
    assert not [n for n in v if "error" in v[n]], v
    assert doc["one_at_a_time"] == (
        "estimated 20.0 GiB of GPU memory with its 4 variants held together, more than the 5.0 GiB it was "
        "given: each variant warmed up, timed and released before the next"
    )
    for name, ms in {"eager": 2.0, "compile": 1.0, "compile_ro": 0.8, "graph": 1.5}.items():
        assert v[name]["samples_ms"] == pytest.approx([ms] * 3), (name, v[name])
        assert v[name]["max_abs_diff"] == 0.0
    # eager, compile, compile_ro, graph (its eager warm-up and capture, then the replays), each in a row
    assert _calls_in_runs(calls) == [
        "eager", "compile", "dynamo_reset", "compile_ro", "dynamo_reset", "eager", "graph"
    ]  # fmt: skip
    one_variant = (256 << 20) + 4 * gib  # flush, inputs, eager's copy, the variant's output and its copy
    assert one_variant <= doc["peak_reserved_bytes"] <= one_variant + (1 << 29)  # + the comparison's chunks
    assert [p for p in doc["phases_s"] if p.startswith("trials_")] == [
        "trials_eager", "trials_compile", "trials_compile_ro", "trials_graph"
    ]  # fmt: skip
