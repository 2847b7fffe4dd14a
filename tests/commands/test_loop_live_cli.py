"""`beavertui live --headless` end to end over the recorded toolchain, and the console's lines."""

from __future__ import annotations

import io
from pathlib import Path

import pytest

from beavertui.cli import main
from beavertui.console import EventPrinter, event_line
from beavertui.engine.session.events import InfraError, SessionEnd, Stalled, Verdict
from beavertui.engine.session.store import read_session
from tests.conftest import gpu_present

DATA = Path(__file__).resolve().parents[1] / "data" / "recorded"
RECORDED = f"recorded:{DATA / 'vec_scale.recordings.jsonl'}"


def live(*extra: str) -> list[str]:
    return ["live", "--task", "vec_scale", "--corpus", str(DATA), "--headless", *extra]


def test_live_headless_writes_a_complete_session(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "s.jsonl"
    rc = main(
        live(
            "--model",
            "scripted:vec_scale_demo.toml",
            "--toolchain",
            RECORDED,
            "--out",
            str(out),
            "--in-loop-gate",
        )
    )
    assert rc == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith("session ") and "task vec_scale" in lines[0]
    assert "iterative K5 L3 H4 T0.7 p0.7 in-loop" in lines[0]
    assert any(ln.startswith("#2  verdict   BELOW GATE 0.02x < 0.7x") for ln in lines)
    assert lines[-1] == "end passed after 3 iterations, success, best 0.97x"
    header, events, problem = read_session(out)
    assert problem is None and header is not None
    assert header.model.name == "scripted:vec_scale_demo.toml"
    assert isinstance(events[-1], SessionEnd) and events[-1].iterations == 3
    assert not any(e.kind == "reply_delta" for e in events)


def test_live_runs_the_paper_protocol_by_default(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The paper's gate is applied after the run: the slow but correct repair of iteration 2 ends the
    trajectory, and it is no success at p = 0.7 (no "too slow" feedback, no third attempt)."""
    out = tmp_path / "s.jsonl"
    rc = main(live("--model", "scripted:vec_scale_demo.toml", "--toolchain", RECORDED, "--out", str(out)))
    assert rc == 1
    lines = capsys.readouterr().out.splitlines()
    assert "iterative K5 L3 H4 T0.7 p0.7 " in lines[0] + " " and "in-loop" not in lines[0]
    assert lines[-1] == "end failed gate after 2 iterations, no success, best 0.02x"
    header, _, _ = read_session(out)
    assert header is not None
    p = header.protocol
    assert (p.method, p.budget, p.feedback, p.history, p.temperature, p.gate, p.gate_mode) == (
        "iterative", 5, "L3", 4, 0.7, 0.7, "after_run",
    )  # fmt: skip
    # the paper's repeated arm comes from its method file
    rep = tmp_path / "r.jsonl"
    args = live("--model", "scripted:vec_scale_demo.toml", "--toolchain", RECORDED, "--out", str(rep))
    main([*args, "--protocol", "paper-method", "--method", "repeated"])
    header, _, _ = read_session(rep)
    assert header is not None and (header.protocol.method, header.protocol.temperature) == ("repeated", 1.0)
    capsys.readouterr()
    assert main([*args, "--protocol", "paper-method"]) == 2
    assert "2 of its protocols match the flags" in capsys.readouterr().err


def test_live_protocol_flags_reach_the_header(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "s.jsonl"
    args = live(
        "--model", "scripted:vec_scale_demo.toml", "--toolchain", RECORDED, "--out", str(out),
        "-k", "2", "--feedback", "L1", "--history", "1", "--gate", "0", "--temperature", "0.5",
    )  # fmt: skip
    assert main(args) == 0  # at gate 0 the slow repair of iteration 2 already succeeds
    header, events, _ = read_session(out)
    assert header is not None
    assert header.protocol.key() == {
        "method": "iterative", "feedback": "L1", "history": 1, "temperature": 0.5, "gate": 0.0, "budget": 2,
        "gate_mode": "after_run", "continue_after_pass": False, "stagnation": "stop",
        "feedback_components": "all", "sanitize": "on_failure", "planning": "implicit", "planner": "self",
        "summariser": "self",
        "few_shot": "none",
    }  # fmt: skip
    assert [v.success for v in events if isinstance(v, Verdict)] == [False, True]


def test_live_exit_status_without_success(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "s.jsonl"
    assert (
        main(
            live(
                "--model",
                "scripted:vec_scale_demo.toml",
                "--toolchain",
                RECORDED,
                "--out",
                str(out),
                "-k",
                "1",
            )
        )
        == 1
    )
    assert capsys.readouterr().out.splitlines()[-1] == "end budget after 1 iteration, no success"


@pytest.mark.skipif(gpu_present(), reason="this machine has a GPU")
def test_live_without_a_gpu_says_so_in_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rc = main(live("--model", "scripted:vec_scale_demo.toml", "--out", str(tmp_path / "s.jsonl")))
    assert rc == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1
    assert err[0].startswith("beavertui: no NVIDIA GPU visible") and "beavertui replay" in err[0]
    assert not (tmp_path / "s.jsonl").exists()


def test_live_bad_flags_are_one_line_errors(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(live("--model", "scripted:nope.toml", "--toolchain", RECORDED)) == 2
    assert capsys.readouterr().err.strip() == "beavertui: nope.toml: no such script file"
    assert (
        main(
            live(
                "--model", "m", "--toolchain", RECORDED, "--gate", "-1", "--base-url", "http://127.0.0.1:9/v1"
            )
        )
        == 2
    )
    assert capsys.readouterr().err.strip() == "beavertui: --gate must be 0 to 3, not -1"
    assert main(["live", "--task", "nope", "--corpus", str(DATA), "--model", "m", "--headless"]) == 2
    assert "no task 'nope'" in capsys.readouterr().err


def test_console_lines() -> None:
    line = event_line(Stalled(iteration=3, detector="no_progress", detail="3 attempts in a row"))
    assert line is not None and line.plain == "#3  stalled   no_progress: 3 attempts in a row"
    infra = event_line(InfraError(iteration=2, source="endpoint", detail="HTTP 500: boom"))
    assert infra is not None and infra.plain == "#2  infra     endpoint: HTTP 500: boom"
    # Log text is never read as markup.
    v = Verdict(iteration=1, category="buildability", signature="error: [bold]x[/bold]", correct=False)
    buf = io.StringIO()
    printer = EventPrinter(buf, color=False)
    printer.show(v)
    assert buf.getvalue() == "#1  verdict   FAIL buildability  error: [bold]x[/bold]\n"


def test_live_against_a_loopback_endpoint(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from tests.engine.models.test_models_openai import ChatServer

    naive = (DATA / "vec_scale" / "candidates" / "naive.cu").read_text()
    monkeypatch.setenv("MY_ENDPOINT_KEY", "sk-cli-secret-42")
    out = tmp_path / "s.jsonl"
    with ChatServer([("stream", ["Here:\n```cuda\n", naive, "```\n"])]) as server:
        args = live(
            "--model", "coder-7b", "--base-url", server.url, "--api-key-env", "MY_ENDPOINT_KEY",
            "--toolchain", RECORDED, "--out", str(out), "--temperature", "0.3", "--seed", "11", "--max-tokens", "900",
        )  # fmt: skip
        assert main(args) == 0
    sent = server.requests[0]
    assert (sent["model"], sent["temperature"], sent["seed"], sent["max_tokens"]) == (
        "coder-7b",
        0.3,
        11,
        900,
    )
    assert server.headers[0]["authorization"] == "Bearer sk-cli-secret-42"
    assert "sk-cli-secret-42" not in out.read_text()
    header, events, _ = read_session(out)
    assert (
        header is not None
        and header.model.base_url == server.url
        and header.model.params["temperature"] == 0.3
    )
    assert isinstance(events[-1], SessionEnd) and events[-1].stop_reason == "passed"


def cut_after_verdict(path: Path, iteration: int) -> None:
    """Keep the lines up to the verdict of ``iteration``, then half of the next line (a killed run)."""
    lines = path.read_text().splitlines(keepends=True)
    keep = next(
        i for i, ln in enumerate(lines) if '"kind":"verdict"' in ln and f'"iteration":{iteration},' in ln
    )
    path.write_text("".join(lines[: keep + 1]) + lines[keep + 1][:30])


def test_live_resume_continues_a_killed_session(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "s.jsonl"
    args = live("--model", "scripted:vec_scale_demo.toml", "--toolchain", RECORDED, "--out", str(out))
    assert main([*args, "--in-loop-gate"]) == 0
    cut_after_verdict(out, 1)
    capsys.readouterr()
    rc = main(
        [
            "live",
            "--resume",
            str(out),
            "--model",
            "scripted:vec_scale_demo.toml",
            "--toolchain",
            RECORDED,
            "--headless",
        ]
    )
    assert rc == 0
    captured = capsys.readouterr()
    assert "resuming after the valid prefix (truncated last line" in captured.err
    assert captured.out.splitlines()[-1] == "end passed after 3 iterations, success, best 0.97x"
    header, events, problem = read_session(out)
    assert problem is None and header is not None
    assert [v.iteration for v in events if isinstance(v, Verdict)] == [1, 2, 3]
    assert len(out.read_text().splitlines()) == 1 + len(events)  # one header, no duplicates
    # Resuming a finished session is refused in one line.
    assert (
        main(
            ["live", "--resume", str(out), "--model", "scripted:vec_scale_demo.toml", "--toolchain", RECORDED]
        )
        == 2
    )
    assert "the session already ended (passed)" in capsys.readouterr().err


def test_live_resume_of_an_endpoint_session_needs_no_model_flag(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from tests.engine.models.test_models_openai import ChatServer

    cands = DATA / "vec_scale" / "candidates"
    script = [
        ("ok", f"```cuda\n{(cands / 'syntax.cu').read_text()}```"),
        ("ok", f"```cuda\n{(cands / 'naive.cu').read_text()}```"),
    ]
    monkeypatch.setenv("OPENAI_API_KEY", "sk-resume")
    out = tmp_path / "s.jsonl"
    with ChatServer(script) as server:
        args = live(
            "--model",
            "coder",
            "--base-url",
            server.url,
            "--no-stream",
            "--toolchain",
            RECORDED,
            "--out",
            str(out),
        )
        assert main(args) == 0
        cut_after_verdict(out, 1)
        assert main(["live", "--resume", str(out), "--toolchain", RECORDED, "--headless"]) == 0
    assert len(server.requests) == 3  # iteration 2 was asked again after the resume
    assert server.requests[2]["model"] == "coder" and "stream" not in server.requests[2]
    _, events, problem = read_session(out)
    assert problem is None and isinstance(events[-1], SessionEnd) and events[-1].stop_reason == "passed"
