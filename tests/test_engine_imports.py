"""The engine must not import textual or rich (design.md: one engine, several front ends)."""

from __future__ import annotations

import pkgutil
import subprocess
import sys

import beavertui.engine


def test_engine_imports_no_ui_library() -> None:
    modules = [m.name for m in pkgutil.walk_packages(beavertui.engine.__path__, "beavertui.engine.")]
    assert "beavertui.engine.session.events" in modules
    code = (
        "import importlib, sys\n"
        f"for m in {modules!r}: importlib.import_module(m)\n"
        "bad = sorted(n for n in sys.modules if n.split('.')[0] in ('textual', 'rich'))\n"
        "print(','.join(bad))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == ""
