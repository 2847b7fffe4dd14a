"""The diff an attempt's event carries: from the code before it to the candidate, as ``diff -u`` names them."""

from __future__ import annotations

import difflib


def unified(before: str, after: str, name: str) -> str:
    """``before`` to ``after`` as a unified diff of the file ``name`` (``a/name``, ``b/name``)."""
    return "".join(
        difflib.unified_diff(
            before.splitlines(keepends=True), after.splitlines(keepends=True), f"a/{name}", f"b/{name}"
        )
    )
