"""A batch whose endpoint fails for some sessions exits 3 (those sessions have no verdict) and says so in one
line; once the endpoint is back, ``--resume RUN_DIR --retry-infra`` runs them again. Before, such a batch
exited 0 as if every session had been evaluated, and nothing could run a session again once the first run
had spent its retries (a plain resume still does not: a killed run resumed equals an uninterrupted one).
The endpoint is a real HTTP server on 127.0.0.1 that answers by model name."""

from __future__ import annotations

import json
import tomllib
from pathlib import Path
from typing import Any

import pytest

from beavertui.cli import main
from beavertui.engine import bundled
from tests.loopback_endpoint import Endpoint, completion


def _repair() -> str:
    """The demo reply whose candidate the H200 recorded as a repair of transpose_00."""
    doc = tomllib.loads(bundled.demo_replies("repair_in_three").read_text(encoding="utf-8"))
    return str(doc["reply"][2]["content"])


def test_sessions_ended_by_the_endpoint_exit_3_and_retry_infra_runs_them_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    for var in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "BEAVERTUI_MODELS"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.chdir(tmp_path)
    down = {"flaky": True}

    def answer(model: str, _body: dict[str, Any], _headers: dict[str, str]) -> tuple[str, Any]:
        if model == "flaky" and down["flaky"]:
            return "status", (503, {"error": {"message": "the server is restarting"}})
        return "json", completion(model, _repair())

    run = Path("sessions") / "r"  # as the user names it, from the current folder
    with Endpoint(answer) as server:
        args = [
            "--no-stream",
            "--retries",
            "0",
            "--toolchain",
            "demo",
            "--quiet",
            "--no-reply-cache",
            "--json",
        ]
        rc = main(["batch", "--models", "steady", "flaky", "--base-url", server.url, "--tasks", "transpose_00",
                   "--run-id", "r", *args])  # fmt: skip
        out, err = capsys.readouterr()
        assert rc == 3, err
        # the summary counts attempts with a verdict, as its line does: the cut one of the flaky model is none
        summary = {g["model"]: g["attempts"] for g in json.loads(out)["groups"]}
        assert summary == {"steady": 1, "flaky": 0}
        assert "1 attempts in" in err
        # the flaky model's session ran twice (the run's one retry), then was left without a verdict
        assert [m for m, _b, _h in server.requests].count("flaky") == 2
        assert (
            f"beavertui: 1 of 2 sessions have no verdict: 1 ended by infrastructure failures and 0 failed to run "
            f"(see {run / 'infra.jsonl'}): fix the cause, then --resume {run} --retry-infra runs them again"
        ) in err.splitlines()
        down["flaky"] = False
        # a plain resume is what a kill's resume is: the run as it would have ended uninterrupted
        assert main(["batch", "--resume", str(run), *args]) == 3
        assert [m for m, _b, _h in server.requests].count("flaky") == 2
        capsys.readouterr()
        rc = main(["batch", "--resume", str(run), "--retry-infra", *args])
        err = capsys.readouterr().err
        assert [m for m, _b, _h in server.requests].count("flaky") == 3
        assert [m for m, _b, _h in server.requests].count("steady") == 1  # its finished session is kept
    assert rc == 0, err
    assert "2/2 sessions (1 already done), 2 passed, 0 ended by infrastructure failures" in err
    assert main(["metrics", str(run), "--format", "csv", "--table", "main"]) == 0
    rows = capsys.readouterr().out.splitlines()
    assert sum(1 for r in rows if r.startswith(("steady,", "flaky,"))) == 2


def test_retry_infra_without_resume_is_refused(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["batch", "--demo", "--retry-infra"]) == 2
    (line,) = capsys.readouterr().err.splitlines()
    assert (
        line == "beavertui: --retry-infra goes with --resume RUN_DIR: a new run has no session to run again"
    )


def test_a_resume_goes_to_the_base_url_it_is_given_and_keeps_the_runs_decoding(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """`batch --resume RUN --base-url NEW` ignored the flag: the resume asked the run's old server and said
    'cannot reach OLD: ... fix --base-url', the flag just given. Where a call goes (base URL, key variable,
    timeout, retries, streaming) now follows the resume's flags, and run.json keeps it; a flag that would
    change what is asked (--top-p, --max-tokens, --reasoning-effort, --extra-body) is refused in one line."""
    for var in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "BEAVERTUI_MODELS"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.chdir(tmp_path)
    run = Path("sessions") / "moved"
    args = ["--toolchain", "demo", "--quiet", "--no-reply-cache", "--no-stream", "--retries", "0"]
    with Endpoint(lambda _m, _b, _h: ("status", (503, {"error": {"message": "going away"}}))) as old:
        rc = main(["batch", "--models", "m", "--base-url", old.url, "--tasks", "transpose_00", "--run-id",
                   "moved", *args])  # fmt: skip
        assert rc == 3
    capsys.readouterr()
    with Endpoint(lambda model, _b, _h: ("json", completion(model, _repair()))) as new:
        assert main(["batch", "--resume", str(run), "--top-p", "0.5", *args]) == 2
        (line,) = capsys.readouterr().err.splitlines()
        assert line == (
            f"beavertui: --resume {run}: --top-p would change what model m is asked (the run has None): a resume "
            "keeps the run's; drop --top-p, or start a new run"
        )
        assert main(["batch", "--resume", str(run), "--base-url", new.url, "--retry-infra", *args]) == 0
        assert len(new.requests) == 1
    assert json.loads((run / "run.json").read_text())["models"][0]["base_url"] == new.url


def _first_reply() -> str:
    """The demo's first reply of transpose_00: a candidate the H200 recorded as a wrong result."""
    doc = tomllib.loads(bundled.demo_replies("repair_in_three").read_text(encoding="utf-8"))
    return str(doc["reply"][0]["content"])


def test_a_session_the_endpoint_cut_after_a_failed_attempt_is_no_failure_of_the_model(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A local server whose context is too short for the second turn (vLLM answers 400, "maximum context
    length") ends the session after one failed attempt, with four iterations of its budget left. The batch
    said the session had no verdict and exited 3, while Table 1 and every rate counted it as a trajectory that
    never succeeded (pass@5 0 over 1 task, in the stagnation denominator too). Its attempts are now left out
    of every rate, said under every table with the command that runs it again; --include-unfinished scores
    it as it stands."""
    for var in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "BEAVERTUI_MODELS"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.chdir(tmp_path)
    too_long = {
        "object": "error",
        "message": "This model's maximum context length is 4096 tokens. However, you requested 5210 tokens "
        "(4186 in the messages, 1024 in the completion). Please reduce the length of the messages or completion.",
        "type": "BadRequestError",
        "param": None,
        "code": 400,
    }

    def answer(model: str, body: dict[str, Any], _headers: dict[str, str]) -> tuple[str, Any]:
        if any(m.get("role") == "assistant" for m in body["messages"]):
            return "status", (400, too_long)
        return "json", completion(model, _first_reply())

    run = Path("sessions") / "cut"
    with Endpoint(answer) as server:
        args = ["--no-stream", "--toolchain", "demo", "--quiet", "--no-reply-cache"]
        rc = main(["batch", "--models", "short-context", "--base-url", server.url, "--tasks", "transpose_00",
                   "--run-id", "cut", *args])  # fmt: skip
        err = capsys.readouterr().err
    assert rc == 3, err
    assert "no session was evaluated: 1 ended by infrastructure failures" in err
    assert main(["metrics", str(run), "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    (group,) = doc["groups"]
    assert (group["n_tasks"], group["n_infra_excluded"], doc["paper_tables"]["table1"]) == (0, 1, []), group
    assert (doc["cut_sessions"], doc["cut_attempts_left_out"], doc["final"]) == (1, 1, False)
    assert main(["metrics", str(run), "--paper"]) == 0
    text = " ".join(capsys.readouterr().out.split())
    assert (
        "1 session(s) an infrastructure failure ended before their loop was over (budget left): their 1 judged "
        "attempt(s) are left out of every rate, a task with no other session in no row (run them again once the "
        f"cause is fixed: beavertui batch --resume {run} --retry-infra)"
    ) in text
    # asked for, it is scored as it stands, and every table says so
    assert main(["metrics", str(run), "--json", "--include-unfinished"]) == 0
    doc = json.loads(capsys.readouterr().out)
    (row,) = doc["paper_tables"]["table1"]
    assert (row["n_tasks"], row["pass@k"], row["never_succeeded"]) == (1, 0.0, 1), row
    assert main(["metrics", str(run), "--paper", "--include-unfinished"]) == 0
    assert "INCLUDES 1 session(s) an infrastructure failure ended" in " ".join(
        capsys.readouterr().out.split()
    )
