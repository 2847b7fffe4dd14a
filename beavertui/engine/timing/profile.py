"""Feedback level L4: ncu metrics of the candidate's kernels beside the reference's.

The few numbers a kernel engineer reads first: achieved occupancy, DRAM and SM throughput, the top warp
stall reasons, and registers and shared memory per block. ``ncu --csv --print-units base`` writes one row
per (kernel launch, metric); ``parse_ncu_profile`` reads that text (so a recorded output replays without a
GPU), ``summarise`` folds launches into one line per kernel, and ``profile_lines`` writes what the model
reads. ``profiler_unavailable`` says why ncu cannot run here; L4 is then refused, never sent as L3.
This module runs ncu only through ``ncu_command``'s string; it never classifies or times.
"""

from __future__ import annotations

import csv
import io
import re
import shlex
import shutil
from dataclasses import dataclass, field

#: Metric -> short name, in the order they are shown.
METRICS: dict[str, str] = {
    "sm__warps_active.avg.pct_of_peak_sustained_active": "achieved_occupancy_pct",
    "dram__throughput.avg.pct_of_peak_sustained_elapsed": "dram_throughput_pct",
    "sm__throughput.avg.pct_of_peak_sustained_elapsed": "sm_throughput_pct",
    "launch__registers_per_thread": "registers_per_thread",
    "launch__block_size": "block_size",
    "launch__shared_mem_per_block_static": "static_shared_bytes",
    "launch__shared_mem_per_block_dynamic": "dynamic_shared_bytes",
    "gpu__time_duration.sum": "duration_ns",
}
#: Warp stall reasons (cycles a warp waits per issued instruction), metric -> reason.
STALLS: dict[str, str] = {
    f"smsp__average_warps_issue_stalled_{r}_per_issue_active.ratio": r
    for r in (
        "long_scoreboard",
        "short_scoreboard",
        "barrier",
        "membar",
        "mio_throttle",
        "lg_throttle",
        "math_pipe_throttle",
        "wait",
        "not_selected",
        "no_instruction",
        "dispatch_stall",
        "branch_resolving",
        "tex_throttle",
        "drain",
        "imc_miss",
        "sleeping",
    )
}
#: Kernels of the bundled harness itself (input generation, poisoning, checks, L2 flush): never the
#: candidate's or the reference's work, so never shown as theirs.
HARNESS_KERNEL = re.compile(r"^(?:void\s+)?(?:beaver(?:_guard)?|\w+_task|\w+_harness|fa)::")
#: Stall reasons shown per kernel.
TOP_STALLS = 3
#: Kernels shown per side (the longest first).
MAX_KERNELS = 4


@dataclass(frozen=True)
class KernelProfile:
    """One kernel's metrics, averaged over its launches (registers and shared memory: the largest)."""

    name: str
    launches: int
    metrics: dict[str, float] = field(default_factory=dict)
    """Short name (METRICS values) -> value in base units (percent, bytes, registers, ns)."""
    stalls: dict[str, float] = field(default_factory=dict)
    """Stall reason -> cycles per issued instruction."""

    def top_stalls(self, n: int = TOP_STALLS) -> list[tuple[str, float]]:
        return sorted(((k, v) for k, v in self.stalls.items() if v > 0), key=lambda kv: -kv[1])[:n]


def ncu_command(command: str, log_file: str) -> str:
    """``command`` under ncu, every launch profiled for the metrics above, the CSV written to ``log_file``."""
    metrics = ",".join([*METRICS, *STALLS])
    return (
        f"ncu --csv --print-units base --metrics {metrics} --target-processes all "
        f"--log-file {shlex.quote(log_file)} /bin/bash -c {shlex.quote(command)}"
    )


def profiler_unavailable(has_gpu: bool) -> str | None:
    """Why ncu cannot profile on this machine, or None."""
    if shutil.which("ncu") is None:
        return "ncu (Nsight Compute) is not on PATH"
    if not has_gpu:
        return "no GPU to profile on"
    return None


#: ncu's message when the driver keeps the performance counters to administrators.
NO_PERMISSION = "ERR_NVGPUCTRPERM"


def _number(text: str) -> float | None:
    t = text.strip().replace(",", "")
    if not t or t.lower() in ("n/a", "nan"):
        return None
    try:
        return float(t)
    except ValueError:
        return None


def parse_ncu_profile(text: str) -> list[tuple[int, str, dict[str, float]]]:
    """(launch id, kernel name, metric name -> value) per profiled launch of ``ncu --csv`` output, in
    launch order; lines before the CSV header (the tool's own messages) are skipped."""
    start = text.find('"ID"')
    if start < 0:
        return []
    launches: dict[int, tuple[str, dict[str, float]]] = {}
    for row in csv.DictReader(io.StringIO(text[start:])):
        try:
            launch = int(str(row.get("ID", "")).strip())
        except ValueError:
            continue
        name = str(row.get("Kernel Name") or "?")
        metric = str(row.get("Metric Name") or "")
        value = _number(str(row.get("Metric Value") or ""))
        entry = launches.setdefault(launch, (name, {}))
        if metric and value is not None:
            entry[1][metric] = value
    return [(i, name, m) for i, (name, m) in sorted(launches.items())]


def summarise(launches: list[tuple[int, str, dict[str, float]]]) -> list[KernelProfile]:
    """One KernelProfile per kernel name, the longest total duration first; the harness's own kernels
    (HARNESS_KERNEL) are left out."""
    by_name: dict[str, list[dict[str, float]]] = {}
    for _i, name, launch_metrics in launches:
        if not HARNESS_KERNEL.match(name.strip()):
            by_name.setdefault(name, []).append(launch_metrics)
    out = []
    for name, runs in by_name.items():
        metrics: dict[str, float] = {}
        for full, short in METRICS.items():
            vals = [r[full] for r in runs if full in r]
            if not vals:
                continue
            if short in ("registers_per_thread", "static_shared_bytes", "dynamic_shared_bytes", "block_size"):
                metrics[short] = max(vals)
            elif short == "duration_ns":
                metrics[short] = sum(vals)
            else:
                metrics[short] = sum(vals) / len(vals)
        stalls = {}
        for full, reason in STALLS.items():
            vals = [r[full] for r in runs if full in r]
            if vals:
                stalls[reason] = sum(vals) / len(vals)
        out.append(KernelProfile(name=name, launches=len(runs), metrics=metrics, stalls=stalls))
    out.sort(key=lambda k: -k.metrics.get("duration_ns", 0.0))
    return out


def _short_name(name: str, width: int = 60) -> str:
    base = name.split("(")[0].strip() or name
    return base if len(base) <= width else base[: width - 3] + "..."


def kernel_line(k: KernelProfile) -> str:
    """One kernel in one line, e.g. ``scale_kernel (1 launch): occupancy 87.1%, DRAM 91.0%, ...``."""
    m = k.metrics
    parts = []
    if "achieved_occupancy_pct" in m:
        parts.append(f"occupancy {m['achieved_occupancy_pct']:.1f}%")
    if "dram_throughput_pct" in m:
        parts.append(f"DRAM {m['dram_throughput_pct']:.1f}% of peak")
    if "sm_throughput_pct" in m:
        parts.append(f"SM {m['sm_throughput_pct']:.1f}% of peak")
    if "registers_per_thread" in m:
        regs = int(m["registers_per_thread"])
        block = int(m.get("block_size", 0))
        parts.append(
            f"{regs} registers/thread" + (f" ({regs * block} per block of {block})" if block else "")
        )
    shared = m.get("static_shared_bytes", 0.0) + m.get("dynamic_shared_bytes", 0.0)
    if "static_shared_bytes" in m or "dynamic_shared_bytes" in m:
        parts.append(f"{int(shared)} B shared/block")
    if "duration_ns" in m:
        parts.append(f"{m['duration_ns'] / 1e3:.1f} us total")
    stalls = k.top_stalls()
    if stalls:
        parts.append("top stalls " + ", ".join(f"{r} {v:.1f}" for r, v in stalls))
    launches = f"{k.launches} launch" + ("es" if k.launches != 1 else "")
    return f"{_short_name(k.name)} ({launches}): " + "; ".join(parts)


def profile_lines(candidate: list[KernelProfile], reference: list[KernelProfile]) -> list[str]:
    """The L4 section the model reads: its kernels, then the reference's, one line each."""
    out = ["Your kernels:"]
    out += [f"- {kernel_line(k)}" for k in candidate[:MAX_KERNELS]] or ["- (no kernel was profiled)"]
    if len(candidate) > MAX_KERNELS:
        out.append(f"- [... {len(candidate) - MAX_KERNELS} more kernels ...]")
    out.append("The reference's kernels:")
    out += [f"- {kernel_line(k)}" for k in reference[:MAX_KERNELS]] or ["- (no kernel was profiled)"]
    out.append("(stalls: cycles a warp waited per issued instruction, by reason)")
    return out
