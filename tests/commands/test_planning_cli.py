"""`live` and `branch` with the planner + coder method and L3S feedback, over the recorded toolchain."""

from __future__ import annotations

from pathlib import Path

import pytest

from beavertui.cli import main
from beavertui.engine.session.events import Plan, Summary
from beavertui.engine.session.state import fold
from beavertui.engine.session.store import read_session

DATA = Path(__file__).resolve().parents[1] / "data" / "recorded"
RECORDINGS = DATA / "vec_scale.recordings.jsonl"
CODER = "scripted:vec_scale_demo.toml"


def _script(path: Path, *texts: str) -> str:
    path.write_text("".join(f"[[reply]]\ncontent = '''\n{t}\n'''\n" for t in texts))
    return f"scripted:{path}"


def live(*extra: str) -> list[str]:
    return ["live", "--task", "vec_scale", "--corpus", str(DATA), "--headless", "--model", CODER, *extra]


def test_live_plans_and_summarises(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    planner = _script(tmp_path / "planner.toml", "1. add the semicolon", "2. keep in[i]", "3. vectorise")
    summariser = _script(tmp_path / "summ.toml", "missing ';' on line 5", "correct, 0.02x: too slow")
    out = tmp_path / "s.jsonl"
    args = live(
        "--toolchain", f"recorded:{RECORDINGS}", "--out", str(out), "--in-loop-gate",
        "--planning", "plan", "--planner", planner, "--feedback", "L3S", "--summariser", summariser,
    )  # fmt: skip
    assert main(args) == 0
    lines = capsys.readouterr().out.splitlines()
    assert "plan+F" in lines[0] and "L3S" in lines[0]
    assert any(ln.startswith("#1  plan") and "1. add the semicolon" in ln for ln in lines)
    assert any(ln.startswith("#1  summary") and "missing ';' on line 5" in ln for ln in lines)
    header, events, problem = read_session(out)
    assert problem is None and header is not None
    assert header.planner is not None and header.planner.name == "scripted:planner.toml"
    assert header.summariser is not None and header.summariser.name == "scripted:summ.toml"
    assert [p.content.strip() for p in events if isinstance(p, Plan)] == [
        "1. add the semicolon",
        "2. keep in[i]",
        "3. vectorise",
    ]
    assert len([s for s in events if isinstance(s, Summary)]) == 2
    request = fold(header, events).attempt(2).request  # type: ignore[union-attr]
    assert request is not None and "summarised:\nmissing ';' on line 5" in request.messages[-1].content


def test_a_setting_of_an_absent_axis_is_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    args = live("--toolchain", f"recorded:{RECORDINGS}", "--out", str(tmp_path / "s.jsonl"))
    assert main([*args, "--no-coder-feedback"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and 'need planning = "plan"' in err[0]
    assert main([*args, "--summariser", "scripted:x.toml"]) == 2
    assert 'needs feedback = "L3S"' in capsys.readouterr().err
    assert not (tmp_path / "s.jsonl").exists()


def test_branch_switches_to_plans_without_feedback(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    parent = tmp_path / "parent.jsonl"
    assert main(live("--toolchain", f"recorded:{RECORDINGS}", "--out", str(parent), "--in-loop-gate")) == 0
    planner = _script(tmp_path / "planner.toml", "1. fix the statement", "2. speed up")
    out = tmp_path / "branch.jsonl"
    rc = main(
        [
            "branch", str(parent), "--at", "1", "--model", CODER, "--recorded", str(RECORDINGS),
            "--planning", "plan", "--planner", planner, "--no-coder-feedback", "--out", str(out),
        ]
    )  # fmt: skip
    assert rc in (0, 1)
    assert "plan+NF" in capsys.readouterr().out
    header, events, _ = read_session(out)
    assert header is not None and header.protocol.coder_feedback is False and header.branch_step == 1
    state = fold(header, events)
    second = state.attempt(2)
    assert (
        second is not None
        and second.plan is not None
        and second.plan.content.strip() == "1. fix the statement"
    )
    assert second.request is not None and len(second.request.messages) == 2
    assert "Build log" not in second.request.messages[-1].content
