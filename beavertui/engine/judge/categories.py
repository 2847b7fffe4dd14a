"""The eight outcome categories of docs/format.md (Outcome categories) and the release's five labels.

Only names and mappings live here; deciding a category from logs is classify.py's job.
"""

from __future__ import annotations

from typing import Final, Literal, get_args

Category = Literal[
    "environment_dependency",
    "integration",
    "buildability",
    "out_of_memory",
    "illegal_memory_access",
    "timeout",
    "functional_correctness",
    "passed",
]

CATEGORIES: Final[tuple[Category, ...]] = get_args(Category)
FAILING_CATEGORIES: Final[tuple[Category, ...]] = tuple(c for c in CATEGORIES if c != "passed")

#: Labels a task's broken start may carry: a category, or ``perf_broken`` (correct but slow).
Label = Literal[
    "environment_dependency",
    "integration",
    "buildability",
    "out_of_memory",
    "illegal_memory_access",
    "timeout",
    "functional_correctness",
    "perf_broken",
]
NATIVE_LABELS: Final[tuple[str, ...]] = get_args(Label)

#: The CUDABeaver release's five labels, mapped to docs/format.md (categories) for display (the original is kept).
RELEASE_LABELS: Final[dict[str, str]] = {
    "compile_error": "buildability",
    "logic_error": "functional_correctness",
    "memory_crash": "illegal_memory_access",
    "perf_broken": "perf_broken",
    "timeout": "timeout",
}

BUILD_STAGE: Final[frozenset[Category]] = frozenset({"environment_dependency", "integration", "buildability"})


def label_category(label: str) -> str:
    """Map a native or release label to the display label (a category name or ``perf_broken``)."""
    return RELEASE_LABELS.get(label, label)


def label_agrees(label: str, observed: str) -> bool:
    """Whether an observed category agrees with a task's label.

    A ``compile_error`` in the release may be any build-stage category; ``perf_broken`` expects ``passed``.
    """
    if label == "compile_error":
        return observed in BUILD_STAGE
    mapped = label_category(label)
    if mapped == "perf_broken":
        return observed == "passed"
    return mapped == observed
