"""A CPU fixture corpus copied into a test's folder, with a task copied under another id."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

DATA = Path(__file__).parent / "data"


def with_a_twin(root: Path, task: str = "sleepy", twin: str = "sleepy_b", fixture: str = "cpu") -> Path:
    """``tests/data/<fixture>`` copied to ``root`` with ``task`` copied again as ``twin`` (the same files but
    its id); returns ``root``."""
    shutil.copytree(DATA / fixture, root)
    shutil.copytree(root / task, root / twin)
    for name in ("instance.json", "input.json"):
        doc = json.loads((root / twin / name).read_text())
        doc["id" if name == "instance.json" else "task_id"] = twin
        (root / twin / name).write_text(json.dumps(doc))
    return root
