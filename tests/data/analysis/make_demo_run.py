"""Rebuild tests/data/analysis/demo_run: a small batch run made by the real CLI, for the analysis docs.

Run from the repository root: ``python tests/data/analysis/make_demo_run.py``. It runs

    beavertui batch --corpus tests/data/recorded --models scripted:vec_scale_demo.toml
        --toolchain recorded:tests/data/recorded/vec_scale.recordings.jsonl
        --sessions-dir tests/data/analysis --run-id demo_run --samples 2 --quiet

so the sessions record the corpus by a path relative to the repository root, and `beavertui attribute
--run` and `beavertui metrics` (docs/analysis.md) work on any checkout, without a GPU. The model is the
package's scripted three-reply demo (a build error, a correct single-block repair, a full-speed repair);
the outcomes are the recorded vec_scale outcomes (tests/data/recorded/README.md says what is measured).
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
RUN = Path("tests/data/analysis/demo_run")


def main() -> int:
    target = ROOT / RUN
    if target.exists():
        shutil.rmtree(target)
    command = [
        sys.executable,
        "-m",
        "beavertui",
        "batch",
        "--corpus",
        "tests/data/recorded",
        "--models",
        "scripted:vec_scale_demo.toml",
        "--toolchain",
        "recorded:tests/data/recorded/vec_scale.recordings.jsonl",
        "--sessions-dir",
        str(RUN.parent),
        "--run-id",
        RUN.name,
        "--samples",
        "2",
        "--quiet",
    ]
    return subprocess.run(command, cwd=ROOT, check=False).returncode


if __name__ == "__main__":
    raise SystemExit(main())
