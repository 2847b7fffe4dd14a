"""Build hook: the wheel carries the corpus and the demo sessions inside the package.

In a source checkout they live at the repository root (corpus/, sessions/demo/); an installed copy finds
them under beavertui/_bundled/ (beavertui.engine.bundled resolves both).
"""

from __future__ import annotations

import shutil
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

ROOT = Path(__file__).resolve().parent
BUNDLED = (("corpus", "corpus"), ("sessions/demo", "demo"))
SKIP = shutil.ignore_patterns("__pycache__", "*.pyc", "*.o", ".*")


class BuildWithData(build_py):
    def run(self) -> None:
        super().run()
        target = Path(self.build_lib) / "beavertui" / "_bundled"
        for src, dst in BUNDLED:
            if (ROOT / src).is_dir():
                shutil.rmtree(target / dst, ignore_errors=True)
                shutil.copytree(ROOT / src, target / dst, ignore=SKIP)


setup(cmdclass={"build_py": BuildWithData})
