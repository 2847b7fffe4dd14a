"""A CPU fixture corpus copied into a test's folder, with copies of one of its tasks under other ids."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

DATA = Path(__file__).parent / "data"


def with_copies(root: Path, names: dict[str, str | None], task: str = "sleepy", fixture: str = "cpu") -> Path:
    """``tests/data/<fixture>`` copied to ``root``, with ``task`` copied again under each id of ``names``
    (the same files but the id; a name mapped to a text gets it as its ``reference.sh``); returns ``root``."""
    shutil.copytree(DATA / fixture, root)
    for name, reference in names.items():
        shutil.copytree(root / task, root / name)
        for doc_name in ("instance.json", "input.json"):
            doc = json.loads((root / name / doc_name).read_text())
            doc["id" if doc_name == "instance.json" else "task_id"] = name
            (root / name / doc_name).write_text(json.dumps(doc))
        if reference is not None:
            (root / name / "reference.sh").write_text(reference)
    return root
