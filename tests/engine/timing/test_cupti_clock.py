"""Placing a timed run's kernels among its phase marks: the injection library's clock line (``C``: the CUPTI
timestamp and the monotonic time read beside it), and what a run's phases then say of its turn.

No GPU here, so no CUPTI clock to read: the injection files are written as the library writes them on a GPU
(beaver_cupti.c), with kernel records on a CUPTI clock that runs 1,000 s behind the monotonic one. The
library's own build with the clock line is checked by building it from the shipped source.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

from beavertui.engine.timing import cupti
from beavertui.engine.timing.parked import Run

ROOT = Path(__file__).resolve().parents[3]
S = 1_000_000_000  # ns a second
BEHIND = 1_000 * S  # the CUPTI clock here: 1,000 s behind the monotonic one


def injection_file(go_s: float, kernels: list[tuple[float, float]], exit_s: float, clock: bool = True) -> str:
    """An injection file's text: marks at the given monotonic seconds, kernel records [start, end) given in
    monotonic seconds and written on the CUPTI clock, and the clock line when ``clock``."""
    lines = [f"M\tinit\t{int(1.0 * S)}", f"M\tgate\t{int(1.1 * S)}", f"M\tgo\t{int(go_s * S)}"]
    if clock:
        lines.append(f"C\t{int(1.2 * S) - BEHIND}\t{int(1.2 * S)}")
    lines += [f"K\t{int(a * S) - BEHIND}\t{int(b * S) - BEHIND}\t42\tk_step" for a, b in kernels]
    lines.append(f"M\texit\t{int(exit_s * S)}")
    return "\n".join(lines) + "\n"


def run_at(go_s: float) -> Run:
    return Run(
        who="candidate", stage=None, folder=Path("/nonexistent"), gated=True, started=0.5, let_go_at=go_s
    )  # type: ignore[arg-type]


def test_the_clock_line_gives_the_offset_and_files_without_it_give_none() -> None:
    text = injection_file(2.0, [(3.0, 3.5)], 9.0)
    assert cupti.clock_offset_ns(text) == BEHIND
    assert cupti.clock_offset_ns(injection_file(2.0, [(3.0, 3.5)], 9.0, clock=False)) is None
    assert cupti.clock_offset_ns("C\tnot\ta number\nC\t5\t7\n") == 2  # a torn line is skipped


def test_busy_time_is_the_union_of_the_kernel_intervals() -> None:
    recs = [
        cupti.KernelRecord("a", 0, 10, 1),
        cupti.KernelRecord("b", 5, 12, 1),  # overlaps a: counts from 10 to 12
        cupti.KernelRecord("c", 6, 8, 1),  # inside a
        cupti.KernelRecord("d", 20, 25, 1),
    ]
    assert cupti.busy_ns(recs) == 17
    assert cupti.busy_ns([]) == 0


def test_a_run_whose_kernels_ran_late_in_its_turn_says_how_much_of_it_the_gpu_had_work() -> None:
    """As the release's long CUPTI tasks run: seconds of host work between the go and the first kernel, a
    few kernels, more host work after the last one."""
    text = injection_file(2.0, [(4.0, 4.25), (4.25, 4.5), (7.0, 7.5)], 9.0)
    row = run_at(2.0).phases(text, ended=9.25)
    assert row["to_first_kernel_s"] == pytest.approx(2.0)
    assert row["kernels_s"] == pytest.approx(1.0)
    assert row["last_kernel_to_exit_s"] == pytest.approx(1.5)
    assert row["cuda_to_exit_s"] == pytest.approx(7.0) and row["held_s"] == pytest.approx(7.25)


def test_without_the_clock_line_or_kernels_a_run_has_only_its_marks() -> None:
    for text in (injection_file(2.0, [(4.0, 4.5)], 9.0, clock=False), injection_file(2.0, [], 9.0)):
        row = run_at(2.0).phases(text, ended=9.25)
        assert "cuda_to_exit_s" in row
        assert not {"to_first_kernel_s", "kernels_s", "last_kernel_to_exit_s"} & set(row)


def test_the_release_timing_bench_sums_the_share_of_the_hold_a_kernel_ran() -> None:
    spec = importlib.util.spec_from_file_location(
        "release_timing_bench", ROOT / "bench" / "release_timing_bench.py"
    )
    assert spec is not None and spec.loader is not None
    sys.path.insert(0, str(ROOT / "bench"))
    try:
        bench = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(bench)
    finally:
        sys.path.remove(str(ROOT / "bench"))
    timed = [
        {"phases": [{"held_s": 6.0, "kernels_s": 0.3}, {"held_s": 4.0, "kernels_s": 0.2}]},
        {"phases": [{"held_s": 5.0}]},  # a run from before the clock line: left out of the share
    ]
    assert bench.kernel_share(timed) == {"runs": 2, "held_s": 10.0, "kernels_s": 0.5, "share": 0.05}
    assert bench.kernel_share([{"phases": [{"held_s": 5.0}]}]) is None
    assert bench.median_phases(timed)["kernels_s"] == pytest.approx(0.25)


def test_the_library_builds_with_the_clock_line(tmp_path: Path) -> None:
    try:
        lib = cupti.build_library(tmp_path)
    except Exception as exc:  # no toolkit with CUPTI on this machine
        pytest.skip(f"CUPTI library not buildable here: {exc}")
    assert lib.is_file()
    assert b"C\t%llu\t%lld\n" in lib.read_bytes()
