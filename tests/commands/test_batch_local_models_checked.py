"""A batch's models that are no endpoint (a script, a recorded session, a human) are checked before its run
folder is made. Before, ``--models scripted:MISSING`` or a protocol's ``planner = "scripted:MISSING"`` made the
run folder, failed every session in it and ended with "...jsonl: no such session file", exit 2."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.cli_in_process import run_cli


@pytest.mark.parametrize(
    ("model", "planner", "says"),
    [
        ("scripted:{tmp}/missing.json", None, "missing.json: no such script file"),
        ("scripted:{tmp}/empty.md", None, "empty.md: holds no replies"),
        ("replay:{tmp}/missing.jsonl", None, "missing.jsonl: no such session file"),
        ("human", None, "the human model answers in live only"),
        ("scripted:@demo", "scripted:{tmp}/missing.json", "missing.json: no such script file"),
        ("scripted:@demo", "human", "the human model answers in live only"),
    ],
)
def test_a_model_that_cannot_answer_is_refused_before_the_run_folder(
    tmp_path: Path, model: str, planner: str | None, says: str
) -> None:
    (tmp_path / "empty.md").write_text("")
    argv = ["batch", "--models", model.format(tmp=tmp_path), "--toolchain", "demo", "--tasks", "softmax_00"]
    if planner is not None:
        protocol = tmp_path / "p.toml"
        protocol.write_text(
            f'[protocol]\nbudget = 2\nplanning = "plan"\nplanner = "{planner.format(tmp=tmp_path)}"\n'
        )
        argv += ["--protocol", str(protocol)]
    out = run_cli(*argv, "--sessions-dir", tmp_path / "s", "--quiet")
    assert out.returncode == 2, out.stderr
    assert says in out.stderr and "Traceback" not in out.stderr
    assert not (tmp_path / "s").exists()
