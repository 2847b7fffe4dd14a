"""tests/cli_in_process.py gives what a process would: exit status, pipes, environment and folder, a timeout."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.cli_in_process import run_cli, run_script

ROOT = Path(__file__).resolve().parents[1]


def test_status_and_streams_are_the_commands() -> None:
    streams = sys.stdin, sys.stdout, sys.stderr
    version = run_cli("--version")
    assert (version.returncode, version.stderr) == (0, "") and version.stdout.startswith("beavertui ")
    refused = run_cli("metrics", ROOT / "sessions" / "demo", "--seed", "-1")
    assert refused.returncode == 2 and refused.stdout == ""
    assert refused.stderr == "beavertui: --seed must be 0 to 4,294,967,295, not -1\n"
    with pytest.raises(subprocess.CalledProcessError) as failed:
        run_cli("metrics", ROOT / "sessions" / "demo", "--seed", "-1", check=True)
    assert failed.value.returncode == 2
    assert (sys.stdin, sys.stdout, sys.stderr) == streams


def test_the_environment_and_folder_are_the_calls_and_put_back(tmp_path: Path) -> None:
    before, folder = dict(os.environ), os.getcwd()
    missing = tmp_path / "no-corpus"
    got = run_cli("corpus", "list", env={**os.environ, "BEAVERTUI_CORPUS": str(missing)}, cwd=tmp_path)
    assert got.returncode == 2 and str(missing) in got.stderr
    assert dict(os.environ) == before and os.getcwd() == folder
    script = tmp_path / "where.py"
    script.write_text("import os, sys\nprint(os.getcwd(), os.environ.get('ONLY_HERE'), sys.argv[1:])\n")
    shown = run_script(script, "a", 1, cwd=tmp_path, env={"ONLY_HERE": "yes"}).stdout
    assert shown == f"{tmp_path} yes ['a', '1']\n"
    assert dict(os.environ) == before and "ONLY_HERE" not in os.environ


@pytest.mark.parametrize(
    ("code", "status", "stderr"),
    [
        ("raise SystemExit", 0, ""),
        ("raise SystemExit(3)", 3, ""),
        ("import sys; sys.exit('stopped: why')", 1, "stopped: why\n"),
        (
            "import sys; print('partial'); sys.stdout.flush(); 1 / 0",
            1,
            "ZeroDivisionError: division by zero\n",
        ),
    ],
    ids=["none", "code", "message", "uncaught"],
)
def test_exit_as_the_interpreter_gives_it(tmp_path: Path, code: str, status: int, stderr: str) -> None:
    script = tmp_path / "exit.py"
    script.write_text(code + "\n")
    got = run_script(script)
    assert got.returncode == status and got.stderr.endswith(stderr)
    if "1 / 0" in code:
        assert got.stderr.startswith("Traceback") and got.stdout == "partial\n"


def test_a_blocked_call_is_stopped_at_its_timeout(tmp_path: Path) -> None:
    fifo = tmp_path / "never-written"
    os.mkfifo(fifo)
    script = tmp_path / "block.py"
    script.write_text(f"print(open({str(fifo)!r}).read())\n")
    streams = sys.stdin, sys.stdout, sys.stderr
    with pytest.raises(subprocess.TimeoutExpired):
        run_script(script, timeout=0.2)
    assert (sys.stdin, sys.stdout, sys.stderr) == streams


def test_text_a_real_stdout_cannot_write_fails_in_process_too(tmp_path: Path) -> None:
    """A lone surrogate outside the range surrogateescape maps back to bytes cannot go to a real pipe's
    stdout: the in-process run fails as the process does (status 1, the error on stderr), not escaped."""
    script = tmp_path / "lone.py"
    script.write_text("print('\\ud800')\n")
    real = subprocess.run([sys.executable, str(script)], capture_output=True, text=True)
    here = run_script(script)
    assert real.returncode == here.returncode == 1
    assert "UnicodeEncodeError" in real.stderr and "UnicodeEncodeError" in here.stderr
