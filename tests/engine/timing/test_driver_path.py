"""The timing drivers run as scripts from beavertui/engine/timing, where timing/profile.py lives: its folder
must not stand first on their sys.path, or `import profile` (cProfile, which torch.compile imports) finds
beavertui's module instead of the standard library's. Seen on the H200: every torch.compile baseline failed
with "module 'profile' has no attribute 'run'"."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

TIMING = Path(__file__).resolve().parents[3] / "beavertui" / "engine" / "timing"


@pytest.mark.parametrize("driver", ["baselines_driver.py", "kernelbench_driver.py"])
def test_a_driver_run_as_a_script_imports_the_standard_library_profile(driver: str) -> None:
    assert (TIMING / "profile.py").is_file()  # the module that would shadow it
    check = (
        "import runpy, sys\n"
        f"sys.path.insert(0, {str(TIMING)!r})  # as `python {driver}` starts\n"
        f"runpy.run_path({str(TIMING / driver)!r}, run_name='driver_check')\n"
        "import cProfile, profile\n"
        "print(profile.__file__)\n"
        "assert hasattr(profile, 'run') and hasattr(cProfile, 'run')\n"
    )
    done = subprocess.run([sys.executable, "-c", check], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert not done.stdout.strip().startswith(str(TIMING)), done.stdout
