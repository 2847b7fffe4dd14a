"""The CUDABeaver release's own prompt functions as a test oracle, by their recorded answers.

Tests that compare beavertui's text with the release's (the L3_raw note, the few-shot pool, draw and text)
call ``release("feedback")`` or ``release("few_shot")`` as they would the release's module:
``release("few_shot").select_examples(pool, task, label, "random", 3, seed=42)``. Each call's answer is
read from ``tests/data/release_harness/answers.json``, keyed by the function and a digest of its arguments
(a path on disk by its contents, so a temporary folder keys the same in every run). A call not recorded
fails, naming the command that records it.

To record (after adding a call, or to check the answers against a release checkout), with the release's
repository at RELEASE (github.com/HaoyangChen23/CUDABeaver):

    BEAVERTUI_RECORD_RELEASE=RELEASE python -m pytest -n 0 -q \\
        tests/engine/loop/test_feedback_raw.py tests/engine/loop/test_few_shot.py

In that mode each call imports ``RELEASE/harness/<module>.py``, returns its answer and writes it to the
file; the release's code itself is not kept here. Its draw adds Python's ``hash()`` of the task id to the
seed, which changes with every process; the recording gives the module a stable hash in its place (the one
departure in the draw, docs/protocols.md).
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import os
from collections.abc import Callable
from functools import cache
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

ANSWERS = Path(__file__).resolve().parent / "data" / "release_harness" / "answers.json"
RECORD = "BEAVERTUI_RECORD_RELEASE"


def stable_hash(text: str) -> int:
    """The hash the recorded draws use in place of Python's per-process ``hash()``."""
    return int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "big")


def _tree_digest(path: Path) -> str:
    h = hashlib.sha256()
    files = sorted(p for p in path.rglob("*") if p.is_file()) if path.is_dir() else [path]
    for f in files:
        h.update(f.relative_to(path).as_posix().encode() if path.is_dir() else b"")
        h.update(b"\0" + f.read_bytes() + b"\0")
    return h.hexdigest()


def _canon(value: Any) -> Any:
    """Arguments as JSON: a path that exists (as a Path, or an absolute path string) by its contents."""
    if isinstance(value, Path | str) and os.path.isabs(value) and os.path.exists(value):
        return {"contents": _tree_digest(Path(value))}
    if isinstance(value, list | tuple):
        return [_canon(v) for v in value]
    if isinstance(value, dict):
        return {str(k): _canon(v) for k, v in value.items()}
    return value


def _key(module: str, fn: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> str:
    text = json.dumps([module, fn, _canon(list(args)), _canon(kwargs)], sort_keys=True)
    return f"{module}.{fn}:{hashlib.sha256(text.encode()).hexdigest()[:24]}"


@cache
def _recorded() -> dict[str, Any]:
    answers: dict[str, Any] = json.loads(ANSWERS.read_text()) if ANSWERS.exists() else {}
    return answers


@cache
def _release_module(root: str, module: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(
        f"release_{module}", Path(root) / "harness" / f"{module}.py"
    )
    assert spec is not None and spec.loader is not None, f"{root}/harness/{module}.py"
    loaded = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(loaded)
    loaded.hash = stable_hash  # type: ignore[attr-defined]
    return loaded


class _Release:
    def __init__(self, module: str) -> None:
        self.module = module

    def __getattr__(self, fn: str) -> Callable[..., Any]:
        def call(*args: Any, **kwargs: Any) -> Any:
            key = _key(self.module, fn, args, kwargs)
            root = os.environ.get(RECORD)
            if root:
                answer = json.loads(
                    json.dumps(getattr(_release_module(root, self.module), fn)(*args, **kwargs))
                )
                answers = _recorded()
                answers[key] = answer
                ANSWERS.write_text(json.dumps(answers, indent=1, sort_keys=True) + "\n")
                return answer  # as JSON, as a recorded answer reads
            if key not in _recorded():
                pytest.fail(
                    f"the release's {self.module}.{fn} was not recorded for these arguments: record it with "
                    f"{RECORD}=RELEASE (tests/release_oracle.py)"
                )
            return _recorded()[key]

        return call


def release(module: str) -> Any:
    """The release's ``harness/<module>.py``, answering from its recorded answers."""
    return _Release(module)
