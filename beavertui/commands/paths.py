"""Session and run paths as the commands read them: ``demo:NAME`` (or a path under ``sessions/demo/`` that is
not here) names the bundled demo sessions, so the README's commands work from any folder."""

from __future__ import annotations

from pathlib import Path


def session_path(text: str) -> Path:
    """An argparse ``type``: the path as given, or the bundled demo it names (engine/bundled.py)."""
    from beavertui.engine.bundled import demo_path

    return demo_path(text) or Path(text)
