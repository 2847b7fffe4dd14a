"""The CUDAnalyst protocol files, run as a batch against a loopback endpoint, scored by `metrics` unchanged.

scripts/planning_stub_server.py serves three coders over real HTTP, each reacting to what its requests
hold: plan-reader repairs only from a plan that says what to do, feedback-reader only once it has seen
the feedback on an earlier attempt, plan-averse only without a plan. Each plans for itself (the protocol
names no planner). On the vec_scale fixture with its recorded outcomes, pass@k per arm is

                  implicit  plan+F  plan+NF
  plan-reader        0        1       1
  feedback-reader    1        1       0
  plan-averse        1        0       0

so each model's swing over the planning axis is 1, and Kendall's tau-b between the arms over the three
models is -1/2 (implicit, plan+F), -1 (implicit, plan+NF) and +1/2 (plan+F, plan+NF): ties counted as
tau-b counts them, e.g. implicit against plan+NF has 2 discordant pairs and one pair tied on both sides,
(0 - 2) / sqrt(2 x 2) = -1.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from beavertui.batch.protocol_file import expand, find_protocol_file, load_batch_file
from beavertui.cli import main

ROOT = Path(__file__).resolve().parents[3]
RECORDED = ROOT / "tests" / "data" / "recorded"
TOOLCHAIN = f"recorded:{RECORDED / 'vec_scale.recordings.jsonl'}"
CODERS = ("plan-reader", "feedback-reader", "plan-averse")


@pytest.fixture
def stub(tmp_path: Path) -> Iterator[str]:
    proc = subprocess.Popen(
        [sys.executable, str(ROOT / "scripts" / "planning_stub_server.py"), "--corpus", str(RECORDED),
         "--port", "0", "--log", str(tmp_path / "stub.log")],
        stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        assert proc.stderr is not None
        first = json.loads(proc.stderr.readline())
        assert first["event"] == "listening" and first["tasks"] == 1
        yield f"http://127.0.0.1:{first['port']}/v1"
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def test_the_paired_files_expand_to_arms_that_differ_in_one_key() -> None:
    keys = {}
    for name in ("analyst-planning", "analyst-transfer", "analyst-summary"):
        spec = load_batch_file(find_protocol_file(name))
        assert spec.departures and any("paper has no" in d for d in spec.departures)
        keys[name] = [n.protocol.key() for n in expand(spec)]
    assert [k["planning"] for k in keys["analyst-planning"]] == ["implicit", "plan+F", "plan+NF"]
    assert [k["planner"] for k in keys["analyst-transfer"]] == ["self", "strong-planner"]
    assert [k["feedback"] for k in keys["analyst-summary"]] == ["L3", "L3S"]
    for arms in keys.values():  # each pair of arms differs in exactly one key of the attempts table
        for a in arms:
            for b in arms:
                assert a == b or sum(a[f] != b[f] for f in a) == 1
    # the implicit arm is the paper's main run: the same run folder, read once
    paper = expand(load_batch_file(find_protocol_file("paper")))[0]
    assert expand(load_batch_file(find_protocol_file("analyst-planning")))[0].slug == paper.slug


def test_metrics_gives_swing_and_tau_across_planning_arms(
    stub: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run = tmp_path / "sessions" / "arms"
    rc = main(
        ["batch", "--protocol", "analyst-planning", "--models", *CODERS, "--base-url", stub,
         "--corpus", str(RECORDED), "--tasks", "vec_scale", "--toolchain", TOOLCHAIN,
         "--sessions-dir", str(tmp_path / "sessions"), "--run-id", "arms", "--quiet", "--no-cache"]
    )  # fmt: skip
    assert rc == 0, capsys.readouterr().err
    capsys.readouterr()
    assert main(["metrics", str(run), "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    pass_k = {(g["model"], g["protocol"]["planning"]): g["pass@k"] for g in data["groups"]}
    assert pass_k == {
        ("plan-reader", "implicit"): 0.0, ("plan-reader", "plan+F"): 1.0, ("plan-reader", "plan+NF"): 1.0,
        ("feedback-reader", "implicit"): 1.0, ("feedback-reader", "plan+F"): 1.0,
        ("feedback-reader", "plan+NF"): 0.0,
        ("plan-averse", "implicit"): 1.0, ("plan-averse", "plan+F"): 0.0, ("plan-averse", "plan+NF"): 0.0,
    }  # fmt: skip
    # the paper's tables read the implicit arm, the paper's own protocol
    assert data["paper_tables"]["main_protocol"]["planning"] == "implicit"
    swing = {s["model"]: s for s in data["swing"] if s["axis"] == "planning" and s["from"] == "runs"}
    assert set(swing) == set(CODERS)
    assert all(s["swing"] == 1.0 for s in swing.values())
    assert list(swing["plan-reader"]["values"]) == ["implicit", "plan+F", "plan+NF"]
    assert {m: s["delta"] for m, s in swing.items()} == {
        "plan-reader": 1.0,
        "feedback-reader": -1.0,
        "plan-averse": -1.0,
    }
    pairing = [s for s in data["swing"] if s["axis"] == "implicit-vs-plan-without-feedback"]
    assert {s["model"]: s["delta"] for s in pairing} == {
        "plan-reader": 1.0,
        "feedback-reader": -1.0,
        "plan-averse": -1.0,
    }
    tau = {
        (k["protocol_a"]["planning"], k["protocol_b"]["planning"]): k["tau"]
        for k in data["kendall_tau"]
        if k["axis"] == "planning"
    }
    assert tau == pytest.approx({("implicit", "plan+F"): -0.5, ("implicit", "plan+NF"): -1.0,
                                 ("plan+F", "plan+NF"): 0.5})  # fmt: skip
    # the plans are in the sessions, and their calls are counted in the run's usage
    log = [json.loads(ln) for ln in (tmp_path / "stub.log").read_text().splitlines()]
    assert any(e.get("answered") == "later_plan" for e in log)
    sessions = sorted(run.rglob("*.jsonl"))
    assert len(sessions) == 9
    for path in sessions:
        kinds = [json.loads(ln)["kind"] for ln in path.read_text().splitlines()]
        assert ("plan" in kinds) == ("-plan" in path.parent.name), path
    usage = {(u["model"], u["protocol"]["planning"]): u for u in data["usage"]}
    # two plans and two replies: the first plan says to build the file as it is, the second to replace the kernel
    assert usage[("plan-reader", "plan+F")]["replies"] == 4


def test_plan_transfer_runs_through_the_models_file_and_is_checked_first(
    stub: str, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    monkeypatch.delenv("BEAVERTUI_MODELS", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))
    batch = ["batch", "--protocol", "analyst-transfer", "--models", "plan-reader", "--base-url", stub,
             "--corpus", str(RECORDED), "--tasks", "vec_scale", "--toolchain", TOOLCHAIN,
             "--sessions-dir", str(tmp_path / "sessions"), "--quiet", "--no-cache"]  # fmt: skip
    # the planner is an endpoint model like the coder: without a key or a base URL, nothing is written
    assert main([*batch, "--run-id", "nokey"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "strong-planner" in err[0]
    assert not (tmp_path / "sessions" / "nokey").exists()
    models = tmp_path / "models.toml"
    models.write_text(
        f"[models.strong-planner]\nmodel = 'stub-coder'\nbase_url = '{stub}'\n"
        "input_usd_per_mtok = 2.0\noutput_usd_per_mtok = 8.0\n"
    )
    assert main([*batch, "--run-id", "transfer", "--models-file", str(models)]) == 0
    capsys.readouterr()
    run = tmp_path / "sessions" / "transfer"
    (transferred,) = [p for p in run.rglob("*.jsonl") if "strong-planner" in p.read_text()]
    lines = [json.loads(ln) for ln in transferred.read_text().splitlines()]
    header, end = lines[0], lines[-1]
    assert header["planner"]["entry"] == "strong-planner" and header["planner"]["name"] == "stub-coder"
    plans = [e for e in lines if e["kind"] == "plan"]
    assert plans and all(e["model"] == "strong-planner" and e["cost_usd"] > 0 for e in plans)
    assert end["planner_usage"]["cost_usd"] == pytest.approx(sum(e["cost_usd"] for e in plans))
    assert main(["metrics", str(run), "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    swing = [s for s in data["swing"] if s["axis"] == "planner"]
    assert len(swing) == 1 and set(swing[0]["values"]) == {"self", "strong-planner"}
