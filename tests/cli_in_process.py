"""``python3 -m beavertui ARGS`` (or ``python3 SCRIPT ARGS``) run inside the test process: the same exit
status, stdout and stderr.

A test that is about what a command does, not about the process it runs in, calls ``run_cli`` instead of
starting an interpreter (0.3 to 1.2 s of CPU each). What the process boundary would give is kept:

- the exit status is ``main``'s return value, or the code of a ``SystemExit`` (None: 0; a message: printed
  on stderr, 1), and an uncaught exception is its traceback on stderr and status 1, as the interpreter does;
- a log record of WARNING or above is one line on stderr, as Python's last-resort handler writes it in a
  process where nothing configured logging (as in beavertui's);
- stdout and stderr are captured as a pipe is: not a terminal, so no colour and the width is ``COLUMNS`` or
  80; stdin is empty unless ``input`` is given;
- what a command keeps for the rest of its process (values read from the environment) starts
  empty each call, as in a new process (``_fresh_process_state``);
- ``env`` replaces the whole environment for the call, as ``subprocess.run(env=...)`` does (the commands read
  it where they start: beavertui/service/environment.py), and ``cwd`` is the working folder for the call;
  both are put back afterwards, whatever the command did.

Tests that are about the process itself (signals, kill and resume, inherited descriptors, what a child's
argv or environment shows, a real terminal, ``python -m`` start-up) keep starting one.
"""

from __future__ import annotations

import contextlib
import io
import logging
import os
import signal
import subprocess
import sys
import traceback
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path


class _Pipe(io.TextIOWrapper):
    """A text stream over bytes, like a pipe's: ``.buffer`` exists and ``isatty()`` is False. ``errors`` is
    what the interpreter chose for the stream this one stands for (``sys.__stdout__``, ``sys.__stderr__``:
    the same locale rules a child process follows), so text a real process could not write (a lone
    surrogate on a strict stdout) fails here too instead of being escaped."""

    def __init__(self, like: object, default: str) -> None:
        errors = getattr(like, "errors", None) or default
        super().__init__(io.BytesIO(), encoding="utf-8", errors=errors, write_through=True)

    def text(self) -> str:
        self.flush()
        raw = self.buffer
        assert isinstance(raw, io.BytesIO)
        return raw.getvalue().decode("utf-8", errors="replace")


@contextlib.contextmanager
def _environment(env: Mapping[str, str] | None) -> Iterator[None]:
    saved = dict(os.environ)
    try:
        if env is not None:
            os.environ.clear()
            os.environ.update(env)
        yield
    finally:
        os.environ.clear()
        os.environ.update(saved)


@contextlib.contextmanager
def _folder(cwd: str | Path | None) -> Iterator[None]:
    before = os.getcwd()
    try:
        if cwd is not None:
            os.chdir(cwd)
        yield
    finally:
        os.chdir(before)


def _fresh_process_state() -> None:
    """Empty what a new process starts without and a command keeps for the rest of its process: the GPUs
    read from ``CUDA_VISIBLE_DEVICES``. A module not imported yet holds nothing."""
    gpu = sys.modules.get("beavertui.engine.host.gpu")
    if gpu is not None:
        gpu.visible_gpus.cache_clear()


class _PastDeadline(BaseException):
    """Raised in the call by the timer of ``_deadline`` (a BaseException: no ``except Exception`` of the
    command takes it for its own error)."""


@contextlib.contextmanager
def _deadline(shown: list[str], timeout: float | None) -> Iterator[None]:
    """``subprocess.TimeoutExpired`` once ``timeout`` seconds have passed: a SIGALRM timer interrupts even
    a blocking open or read (PEP 475: the handler's exception ends the system call)."""
    if timeout is None:
        yield
        return

    def expire(_signum: int, _frame: object) -> None:
        raise _PastDeadline

    before = signal.signal(signal.SIGALRM, expire)
    signal.setitimer(signal.ITIMER_REAL, timeout)
    try:
        yield
    except _PastDeadline:
        raise subprocess.TimeoutExpired(shown, timeout) from None
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, before)


def _status(code: object, err: io.TextIOBase) -> int:
    """The exit status the interpreter gives ``SystemExit(code)``."""
    if code is None:
        return 0
    if isinstance(code, int):
        return code
    print(code, file=err)
    return 1


def run_cli(
    *argv: str | Path,
    cwd: str | Path | None = None,
    env: Mapping[str, str] | None = None,
    input: str | None = None,
    check: bool = False,
    timeout: float | None = None,
) -> subprocess.CompletedProcess[str]:
    """``beavertui ARGV`` in this process, as ``subprocess.run([python, -m, beavertui, *argv],
    capture_output=True, text=True, cwd=cwd, env=env, input=input, check=check, timeout=timeout)`` would
    run it: past ``timeout`` seconds the command is interrupted and ``subprocess.TimeoutExpired`` raised."""
    from beavertui.cli import main

    args = [str(a) for a in argv]
    shown = [sys.executable, "-m", "beavertui", *args]
    return _run(shown, lambda: main(args), cwd, env, input, check, timeout)


def run_script(
    script: Path,
    *argv: str | Path,
    cwd: str | Path | None = None,
    env: Mapping[str, str] | None = None,
    input: str | None = None,
    check: bool = False,
    timeout: float | None = None,
) -> subprocess.CompletedProcess[str]:
    """``python3 SCRIPT ARGV`` in this process (the script run as ``__main__`` with ``sys.argv`` set), as
    ``subprocess.run`` with ``capture_output=True, text=True`` would run it; ``sys.path`` is put back after."""
    import runpy

    args = [str(script), *map(str, argv)]

    def call() -> int:
        saved_argv, saved_path = sys.argv, list(sys.path)
        sys.argv = args
        try:
            runpy.run_path(str(script), run_name="__main__")
        finally:
            sys.argv = saved_argv
            sys.path[:] = saved_path
        return 0

    return _run([sys.executable, *args], call, cwd, env, input, check, timeout)


def _run(
    shown: list[str],
    call: Callable[[], int],
    cwd: str | Path | None,
    env: Mapping[str, str] | None,
    input: str | None,
    check: bool,
    timeout: float | None,
) -> subprocess.CompletedProcess[str]:
    out, err = _Pipe(sys.__stdout__, "strict"), _Pipe(sys.__stderr__, "backslashreplace")
    stdin = io.StringIO(input or "")
    saved = sys.stdin, sys.stdout, sys.stderr
    last_resort = logging.StreamHandler(err)
    last_resort.setLevel(logging.WARNING)
    root = logging.getLogger()
    with _environment(env), _folder(cwd), _deadline(shown, timeout):
        _fresh_process_state()
        sys.stdin, sys.stdout, sys.stderr = stdin, out, err
        root.addHandler(last_resort)
        try:
            code = call()
        except SystemExit as exc:
            code = _status(exc.code, err)
        except Exception:  # the interpreter prints what was not caught and exits 1
            traceback.print_exc(file=err)
            code = 1
        finally:
            root.removeHandler(last_resort)
            sys.stdin, sys.stdout, sys.stderr = saved
    result = subprocess.CompletedProcess(shown, code, out.text(), err.text())
    if check:
        result.check_returncode()
    return result
