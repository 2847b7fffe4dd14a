"""`beavertui reproduce`: the paper's grid planned from the release's own configs without network, and run
end to end through the batch on the recorded toolchain, resumably, with the paper's tables written."""

from __future__ import annotations

import json
import socket
from pathlib import Path

import pytest

from beavertui.cli import main
from beavertui.engine.session.store import read_session

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "tests" / "data"
CONFIGS = DATA / "release_configs"
#: twelve unmodified instances of the release (tests/data/release_real/NOTICE)
RELEASE = DATA / "release_real"
RECORDED = DATA / "recorded"


@pytest.fixture
def no_network(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(*a: object, **k: object) -> None:
        raise AssertionError("the dry run opened a network connection")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(socket, "create_connection", refuse)


def _plan(capsys: pytest.CaptureFixture[str], *argv: str) -> dict[str, object]:
    assert main(["reproduce", "--corpus", str(RELEASE), *argv, "--dry-run", "--json"]) == 0
    return json.loads(capsys.readouterr().out)  # type: ignore[no-any-return]


def test_dry_run_lists_the_grid_of_the_releases_iter_configs(
    no_network: None, capsys: pytest.CaptureFixture[str]
) -> None:
    """configs/iter holds 15 files for 9 models (the *_memcrash files are the same arm over more tasks):
    each model gets the main arm once, the repeated arm, L0-L2 and H1-H3: 8 arms, 72 in all."""
    plan = _plan(capsys, "--release-configs", str(CONFIGS / "iter"))
    arms = plan["arms"]
    assert isinstance(arms, list)
    models = {a["model"] for a in arms}
    assert len(models) == 9 and "gpt-5.4" in models and "z-ai/glm4.7" in models
    assert len(arms) == 72
    for m in models:
        axes = [a["axis"] for a in arms if a["model"] == m]
        assert axes == ["main", "repeated", "feedback L0", "feedback L1", "feedback L2"] + [
            f"history H{h}" for h in (1, 2, 3)
        ]
    keys = [(a["model"], json.dumps(a["protocol"], sort_keys=True)) for a in arms]
    assert len(set(keys)) == len(keys)  # no arm twice
    gemma = next(a for a in arms if a["model"] == "google/gemma-4-31B-it" and a["axis"] == "main")
    assert [Path(s).name for s in gemma["sources"]] == ["gemma4.yaml", "gemma4_memcrash.yaml"]
    glm = next(a for a in arms if a["model"] == "z-ai/glm4.7" and a["axis"] == "main")
    assert glm["protocol"]["temperature"] == 1.0  # the release runs GLM-4.7 at T1.0: read as it is
    gpt = next(a for a in arms if a["model"] == "gpt-5.4" and a["axis"] == "main")
    assert gpt["protocol"]["temperature"] == 0.7 and gpt["protocol"]["gate"] == 0.7
    assert gpt["protocol"]["gate_mode"] == "after_run" and gpt["tasks"] == 7  # 7 of its 217 are here
    est = plan["estimate"]
    assert est["sessions"] == sum(a["tasks"] for a in arms) and est["model_calls"] == 5 * est["sessions"]  # type: ignore[index]
    assert any(
        "placeholder" in n and "give --base-url URL (or OPENAI_BASE_URL), or the model's base_url" in n
        for n in plan["notes"]  # type: ignore[union-attr]
    )
    # the human plan says the same, and that nothing ran
    assert (
        main(["reproduce", "--corpus", str(RELEASE), "--release-configs", str(CONFIGS / "iter"), "--dry-run"])
        == 0
    )
    out = capsys.readouterr().out
    assert "72 arms over 9 model(s)" in out and "no network" in out


def test_without_corpus_the_grid_runs_over_the_bundled_corpus(
    no_network: None, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """As for batch: no --corpus is $BEAVERTUI_CORPUS, else the bundled corpus, so the README's own-model
    road reaches the paper's tables without the release."""
    from beavertui.engine import bundled

    monkeypatch.delenv("BEAVERTUI_CORPUS", raising=False)
    assert main(["reproduce", "--models", "mine", "--tasks", "scan_*", "--dry-run", "--json"]) == 0
    plan = json.loads(capsys.readouterr().out)
    assert Path(plan["corpus"]) == bundled.corpus()
    assert len(plan["arms"]) == 8 and all(a["tasks"] == 3 for a in plan["arms"])
    # the release's own configs name release tasks: without the release that is one line, exit 2
    assert main(["reproduce", "--release-configs", str(CONFIGS / "iter"), "--dry-run"]) == 2
    (line,) = capsys.readouterr().err.splitlines()
    assert line.startswith(
        "beavertui: --release-configs names tasks of the CUDABeaver release: give --corpus"
    )
    monkeypatch.setenv("BEAVERTUI_CORPUS", str(RELEASE))
    assert main(["reproduce", "--models", "mine", "--dry-run", "--json"]) == 0
    assert Path(json.loads(capsys.readouterr().out)["corpus"]) == RELEASE / "data"  # the release root is read


def test_configs_of_other_axes_are_the_same_arms_not_new_ones(
    no_network: None, capsys: pytest.CaptureFixture[str]
) -> None:
    plan = _plan(
        capsys,
        "--release-configs",
        str(CONFIGS / "iter" / "gpt5_4.yaml"),
        str(CONFIGS / "repeated" / "gpt5_4_repeated.yaml"),
        str(CONFIGS / "feedback" / "gpt5_4_feedback_l2.yaml"),
    )
    arms = plan["arms"]
    assert isinstance(arms, list) and len(arms) == 8
    by_axis = {a["axis"]: [Path(s).name for s in a["sources"]] for a in arms}
    assert by_axis["repeated"] == ["gpt5_4_repeated.yaml"] and by_axis["feedback L2"] == [
        "gpt5_4_feedback_l2.yaml"
    ]
    # the release's L3_raw config (feedback_level 3, feedback_mode raw) is an arm at feedback L3_raw
    raw = CONFIGS / "feedback" / "gpt5_4_feedback_l3_raw.yaml"
    arms = _plan(capsys, "--release-configs", str(raw))["arms"]
    assert isinstance(arms, list)
    (raw_arm,) = [a for a in arms if a["protocol"]["feedback"] == "L3_raw"]
    assert [Path(s).name for s in raw_arm["sources"]] == ["gpt5_4_feedback_l3_raw.yaml"]
    assert raw_arm["axis"] == "config" and raw_arm["protocol"]["history"] == 4
    # the release's few-shot configs are arms of the few_shot axis, with the pool and map they name
    fewshot = sorted((CONFIGS / "fewshot").glob("*.yaml"))
    arms = _plan(capsys, "--release-configs", *map(str, fewshot))["arms"]
    assert isinstance(arms, list)
    shots = {a["protocol"]["few_shot"]: a for a in arms if a["protocol"]["few_shot"] != "none"}
    assert set(shots) == {"matched_K3", "curated_K5"}
    assert [Path(s).name for s in shots["matched_K3"]["sources"]] == ["gpt5_4_fewshot_matched_K3.yaml"]


def test_reproduce_runs_the_grid_once_resumes_and_writes_the_tables(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Two scripted models over the recorded vec_scale task: m1 repairs at once, m2 after a build error
    and a wrong result. Five replies each, so the repeated arm draws its K = 5 samples."""
    cands = RECORDED / "vec_scale" / "candidates"
    models = tmp_path / "models.toml"
    entries = []
    for label, names in (("m1", ["naive"] * 5), ("m2", ["syntax", "wrong", "naive", "wrong2", "naive"])):
        script = tmp_path / f"{label}.toml"
        replies = [
            f"[[reply]]\ncontent = '''\n```cuda\n{(cands / f'{n}.cu').read_text()}```\n'''\n" for n in names
        ]
        script.write_text("\n".join(replies))
        entries.append(f'[[models]]\nmodel = "scripted:{script}"\nlabel = "{label}"\n')
    models.write_text("\n".join(entries))
    out = tmp_path / "grid"
    argv = ["reproduce", "--corpus", str(RECORDED), "--models-from", str(models), "--out", str(out)]
    argv += ["--toolchain", f"recorded:{RECORDED / 'vec_scale.recordings.jsonl'}", "--json"]
    assert main(argv) == 0
    doc = json.loads(capsys.readouterr().out)
    files = sorted(out.rglob("*__s*.jsonl"))
    # 2 models x 8 arms x 1 task, each arm once: one protocol folder per arm
    assert len(files) == 16
    for m in ("m1", "m2"):
        folders = {p.parent.name for p in files if p.parts[len(out.parts)] == m}
        assert len(folders) == 8
    t1 = doc["paper_tables"]["table1"]
    assert [r["model"] for r in t1] == ["m1", "m2"] and all(r["n_tasks"] == 1 for r in t1)
    t2 = doc["paper_tables"]["table2"]
    assert all(
        r["rep"] is not None and r["delta_iter_rep"] == pytest.approx(r["iter"] - r["rep"]) for r in t2
    )
    for name in ("paper_tables.md", "paper_tables.tex", "paper_tables.json"):
        assert (out / name).is_file()
    # again: both runs are resumed and nothing is run twice
    before = {f: f.read_bytes() for f in files}
    assert main(argv) == 0
    capsys.readouterr()
    assert {f: f.read_bytes() for f in sorted(out.rglob("*__s*.jsonl"))} == before
    header, _, _ = read_session(files[0])
    assert header is not None


@pytest.mark.parametrize(
    ("argv", "says"),
    [
        (("--models", "m", "--tasks", "zzz_*"), "corpus: no runnable task matches zzz_*"),
        (("--release-configs", str(CONFIGS / "iter"), "--corpus", str(ROOT / "corpus")),
         "corpus: no model has a task to run here (deepseek-ai/deepseek-v4-pro: 217 of 217 configured tasks"),
    ],
    ids=["glob-matching-nothing", "configs-of-another-corpus"],
)  # fmt: skip
def test_a_grid_of_no_session_is_refused(
    no_network: None, capsys: pytest.CaptureFixture[str], argv: tuple[str, ...], says: str
) -> None:
    """Before: both planned 8 (or 72) arms of 0 sessions and exited 0, as if the grid had been run."""
    assert main(["reproduce", *argv, "--dry-run"]) == 2
    out = capsys.readouterr()
    assert out.out == "" and len(out.err.splitlines()) == 1 and says in out.err, out.err


def test_a_grid_against_a_base_url_runs_again_to_continue(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """'Run it again to continue': the same command with --base-url (and other endpoint flags) said its own
    protocol file 'describes model M otherwise than the run: drop --protocol', exit 2; the flags now apply to
    the file's models on the resume as they did when the run was made."""
    from tests.loopback_endpoint import Endpoint, completion

    for var in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "BEAVERTUI_MODELS"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))
    out = tmp_path / "grid"
    with Endpoint(lambda model, _b, _h: ("json", completion(model, "no code here"))) as server:
        argv = ["reproduce", "--models", "local", "--tasks", "transpose_00", "--axes", "main", "--out", str(out),
                "--toolchain", "demo", "--base-url", server.url, "--no-stream", "--timeout", "30"]  # fmt: skip
        assert main(argv) == 0
        asked = len(server.requests)
        capsys.readouterr()
        assert main(argv) == 0, capsys.readouterr().err
        assert len(server.requests) == asked  # resumed: every session was done
    assert "(1 already done)" in capsys.readouterr().err


def test_retry_infra_runs_again_what_an_endpoint_failure_ended(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A grid whose endpoint failed for one model exits 3; run again once the endpoint is back, it changes
    nothing (a resume equals an uninterrupted run) unless asked: --retry-infra runs those sessions again."""
    import tomllib

    from beavertui.engine import bundled
    from tests.loopback_endpoint import Endpoint, completion

    for var in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "BEAVERTUI_MODELS"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))
    doc = tomllib.loads(bundled.demo_replies("repair_in_three").read_text(encoding="utf-8"))
    repair = str(doc["reply"][2]["content"])
    down = {"flaky": True}

    def answer(model: str, _body: object, _headers: object) -> tuple[str, object]:
        if model == "flaky" and down["flaky"]:
            return "status", (503, {"error": {"message": "the server is restarting"}})
        return "json", completion(model, repair)

    out = tmp_path / "grid"
    with Endpoint(answer) as server:
        argv = ["reproduce", "--models", "flaky", "--tasks", "transpose_00", "--axes", "main", "--out", str(out),
                "--toolchain", "demo", "--base-url", server.url, "--no-stream", "--retries", "0", "--json"]  # fmt: skip
        assert main(argv) == 3
        err = capsys.readouterr().err
        # the way on is this command again, not the batch's --resume (a flag reproduce does not have)
        assert (
            f"then the beavertui reproduce command that made {out}, run again with --retry-infra, runs" in err
        )
        asked = len(server.requests)
        down["flaky"] = False
        assert main(argv) == 3 and len(server.requests) == asked
        capsys.readouterr()
        assert main([*argv, "--retry-infra"]) == 0
        assert len(server.requests) == asked + 1
    (row,) = json.loads(capsys.readouterr().out)["paper_tables"]["table1"]
    assert row["n_tasks"] == 1 and row["pass@k"] == 1.0


def test_a_cut_grid_says_to_run_reproduce_again_and_names_each_cut_arm(tmp_path: Path) -> None:
    """Ctrl-C on a grid waiting on its endpoint said 'continue with --resume OUT/MODEL', a flag reproduce does
    not have (the batch's own line), and named the cut sessions as 'transpose_00 (m, sample 0)' once per arm:
    lines that read as the same session twice. The way on is now the reproduce command run again, and each cut
    line names its arm's protocol."""
    import os
    import signal
    import subprocess
    import sys
    import time

    from tests.engine.models.test_endpoint_faults import FaultServer

    out = tmp_path / "grid"
    with FaultServer({"hung": [("hang", 120.0)]}) as server:
        proc = subprocess.Popen(
            [sys.executable, "-m", "beavertui", "reproduce", "--models", "hung", "--tasks", "transpose_00",
             "--axes", "main,repeated", "--out", str(out), "--toolchain", "demo", "--base-url", server.url],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=tmp_path,
            env={**{k: v for k, v in os.environ.items() if k != "OPENAI_BASE_URL"}, "PYTHONPATH": str(ROOT),
                 "HOME": str(tmp_path), "OPENAI_API_KEY": "k"},
            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),  # as from a terminal
        )  # fmt: skip
        try:
            deadline = time.monotonic() + 60
            while server.counts["hung"] < 2:  # both arms' sessions wait on the endpoint
                assert proc.poll() is None and time.monotonic() < deadline, proc.communicate()
                time.sleep(0.05)
            proc.send_signal(signal.SIGINT)
            _out, err = proc.communicate(timeout=20)
        finally:
            if proc.poll() is None:
                proc.kill()
    assert proc.returncode == 130, err
    assert f"continue with the beavertui reproduce command that made {out}, run again" in err
    assert "--resume" not in err
    cut = sorted(ln.split(": ", 3)[2] for ln in err.splitlines() if ln.startswith("beavertui: cut: "))
    assert cut == [
        "transpose_00 (hung, iterative K5 L3 H4 T0.7 p0.7, sample 0)",
        "transpose_00 (hung, repeated K5 L3 H4 T1 p0.7, sample 0)",
    ], err


def test_a_dry_run_says_when_this_machine_cannot_run_the_grid(
    capsys: pytest.CaptureFixture[str], no_network: None
) -> None:
    """`reproduce --dry-run` on a machine without a GPU printed the grid and 'Run it: drop --dry-run'; the run
    then stopped at once with exit 2 (no NVIDIA GPU). The one check that needs no network is said with the
    grid now (no network still); a recorded toolchain runs anywhere and says nothing."""
    from tests.conftest import gpu_present

    if gpu_present():
        pytest.skip("needs a machine without a GPU")
    argv = ["reproduce", "--corpus", str(RELEASE), "--models", "m", "--axes", "main", "--dry-run"]
    assert main(argv) == 0
    text = " ".join(capsys.readouterr().out.split())
    assert "this machine cannot run it with --toolchain local: no NVIDIA GPU visible" in text
    assert main([*argv, "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["cannot_run_here"].startswith("no NVIDIA GPU visible")
    assert main([*argv, "--toolchain", f"recorded:{RECORDED / 'vec_scale.recordings.jsonl'}"]) == 0
    assert "cannot run" not in capsys.readouterr().out


@pytest.mark.parametrize("axes", ["", ",", " , "])
def test_axes_that_name_no_axis_are_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], no_network: None, axes: str
) -> None:
    """Before: a dry run planned 0 arms, exit 0; the run made --out and stopped with 'no attempts', exit 2."""
    out = tmp_path / "grid"
    argv = ["reproduce", "--models", "scripted:@demo", "--toolchain", "demo", "--tasks", "softmax_00"]
    for extra in (["--dry-run"], ["--out", str(out)]):
        assert main([*argv, "--axes", axes, *extra]) == 2
        err = capsys.readouterr().err
        assert err.strip() == (
            "beavertui: --axes names no axis: give one or more of main, repeated, feedback, history, or leave "
            "it out for all"
        )
    assert not out.exists()


def test_a_recorded_toolchain_that_is_not_there_is_said_before_anything_is_written(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], no_network: None
) -> None:
    """Before: the run wrote the model's protocol file under --out, then stopped; the dry run said nothing."""
    out, gone = tmp_path / "grid", tmp_path / "gone.jsonl"
    argv = [
        "reproduce",
        "--models",
        "scripted:@demo",
        "--toolchain",
        f"recorded:{gone}",
        "--tasks",
        "softmax_00",
    ]
    assert main([*argv, "--axes", "main", "--out", str(out)]) == 2
    assert f"{gone}: no such recordings file or session folder" in capsys.readouterr().err
    assert not out.exists()
    assert main([*argv, "--axes", "main", "--dry-run", "--json"]) == 0
    said = json.loads(capsys.readouterr().out)["cannot_run_here"]
    assert said == f"{gone}: no such recordings file or session folder"
