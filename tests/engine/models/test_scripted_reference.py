"""scripted:@reference and scripted:@alternate send the reference in the form a candidate takes.

On the real release instances of tests/data/release_real: a drop-in family's reply is the reference file
itself; kernelbench's is problem.py with its ``ModelNew`` alias, which the toolchain judges under the
reference semantics (the static checker is skipped for it, and only for it). The bare problem.py has no
``ModelNew`` and is a candidate the release's static checker rejects: an H200 batch that sent it recorded
"Missing __global__ kernel definition" at every attempt 2.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from beavertui.engine.code.extract import extract
from beavertui.engine.corpus import families
from beavertui.engine.corpus.load import load_corpus
from beavertui.engine.corpus.task import Task
from beavertui.engine.errors import BeaverError
from beavertui.engine.models.resolve import task_scripted
from beavertui.engine.session.events import Message
from beavertui.engine.session.protocol import Protocol

RELEASE = Path(__file__).resolve().parents[2] / "data" / "release_real"


def _task(prefix: str) -> Task:
    return next(t for t in load_corpus(RELEASE).tasks if t.id.startswith(prefix))


def _replies(name: str, task: Task, budget: int) -> list[str]:
    model = task_scripted(name, task, Protocol(budget=budget))
    out = []
    for _ in range(budget):
        code = extract(model.complete([Message(role="user", content="fix it")]).content, task.language).code
        assert code is not None
        out.append(code)
    return out


def test_alternate_sends_the_kernelbench_reference_submission_which_skips_the_checker() -> None:
    kb = _task("kernelbench_level1_92")
    broken, ref, again = _replies("scripted:@alternate", kb, 3)
    assert broken.strip() == kb.broken_start().strip()
    assert again.strip() == broken.strip()
    assert "ModelNew = Model" in ref
    assert families.is_reference_submission(kb, ref)
    judged = families.for_code(kb, ref)
    assert "static checker skipped" in judged.build_command
    assert "validate_kernel_static" not in judged.build_command
    # the bare problem.py is not the reference submission: it keeps the release's checker
    bare = kb.reference()
    assert bare is not None and "ModelNew" not in bare
    assert not families.is_reference_submission(kb, bare)
    assert "validate_kernel_static" in families.for_code(kb, bare).build_command


def test_reference_sends_the_drop_in_reference_file_unchanged() -> None:
    cuda = _task("cuda_59")
    ref = cuda.reference()
    assert ref is not None
    assert [r.strip() for r in _replies("scripted:@reference", cuda, 2)] == [ref.strip()] * 2


def test_a_family_without_a_reference_submission_is_refused_with_its_reason() -> None:
    cutlass = _task("cutlass_05")
    with pytest.raises(BeaverError, match="CUTLASS kernel inside the testbench"):
        task_scripted("scripted:@alternate", cutlass, Protocol(budget=2))
