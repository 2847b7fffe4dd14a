"""Session and run paths as the commands read them: ``demo:NAME`` (or a path under ``sessions/demo/`` that is
not here) names the bundled demo sessions, so the README's commands work from any folder."""

from __future__ import annotations

import argparse
from pathlib import Path


def session_path(text: str) -> Path:
    """An argparse ``type``: the path as given, or the bundled demo it names (engine/bundled.py)."""
    from beavertui.engine.bundled import demo_path

    return demo_path(text) or Path(text)


def given_path(text: str) -> Path:
    """An argparse ``type``: a path that is not empty (``""``, an unset shell variable, would be the current
    folder, written into without a word)."""
    if not text.strip():
        raise argparse.ArgumentTypeError("must be a path, not empty")
    return Path(text)
