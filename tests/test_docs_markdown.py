"""The reference docs render as written: every code fence of README.md and docs/ (the lab journal too) stands
on a line of its own, with at most a language word after it, and each file's fences pair up. A fence that
shares its line with prose turns the rest of a section into code."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
FENCE = re.compile(r"\s*```[\w+-]*\s*")


def test_code_fences_stand_alone_and_pair_up() -> None:
    files = [
        ROOT / "README.md",
        *sorted((ROOT / "docs").glob("*.md")),
        *sorted((ROOT / "docs" / "lab").glob("*.md")),
    ]
    assert len(files) > 10
    problems = []
    for path in files:
        fences = 0
        for n, line in enumerate(path.read_text().splitlines(), 1):
            if "```" not in line:
                continue
            if FENCE.fullmatch(line):
                fences += 1
            else:
                problems.append(f"{path.relative_to(ROOT)}:{n}: a fence shares its line: {line.strip()[:60]}")
        if fences % 2:
            problems.append(f"{path.relative_to(ROOT)}: {fences} fences, one left open")
    assert not problems, "\n".join(problems)
