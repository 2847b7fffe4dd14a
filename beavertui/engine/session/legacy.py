"""Reading version-1 session files: the timing facts they wrote as words into TimingResult.note, as fields.

Version 2 writes those facts as fields (events.py, FORMAT_VERSION); this module is the one place that reads
the words back, and only for a file whose header says version 1 (store.py passes the version in the
validation context). Each pattern is the sentence version 1 wrote: the batch pool's stop of a GPU's runs
(toolchain/placement.py Pause.note), toolchain/local.py's stopped builds and timing made again, the
kernelbench driver's phases (timing/samples.py phases_note) and the re-measurement rule."""

from __future__ import annotations

import re

#: The kernelbench driver's phases (TimingResult.driver_phases_s keys), in the order it runs them, each with
#: the words a timing's note gives it (kernelbench_driver.py, ``phases_s``; timing/samples.py phases_note
#: writes them, and a version-1 note is read back by them).
DRIVER_PHASES = (
    ("import", "torch import"), ("inputs_sized", "inputs sized (too large to keep while waiting)"),
    ("inputs_dropped", "inputs made and dropped (too large to keep)"),
    ("inputs", "inputs made"), ("waited_for_go", "waiting for the GPU"), ("inputs_gpu", "inputs made on the GPU"),
    ("models", "models built"), ("to_device", "inputs copied to the GPU"), ("warmup", "warm-up"),
    ("trials", "timed trials"),
)  # fmt: skip

RUNS_STOPPED = re.compile(
    r"\b(?:(\d+) runs?|(the run made again alone for its memory)) on GPU (\S+) stopped \(SIGSTOP\) for this "
    r"timing, continued after it; no kernel ran on the GPU ([0-9.]+) s after the stop"
)
BUILDS_STOPPED = re.compile(r"\b(\d+) builds? stopped \(SIGSTOP\)")
TIMED_AGAIN = re.compile(
    r"\btimed again holding GPU (\S+)'s memory: beside the runs stopped for it, its first timing ran out of "
    r"memory \((.*?)\)(?:; |$)"
)
REMEASURED = re.compile(r"\bre-measured once: CV above 3%")
HELD, ALL, AHEAD = "; with it held: ", "; host seconds: ", "; host seconds before the GPU was held: "


def _phases(text: str) -> dict[str, float]:
    """``label seconds`` pairs of a list of the driver's phases, by phase key."""
    out: dict[str, float] = {}
    for key, label in DRIVER_PHASES:
        m = re.search(rf"(?:^|, ){re.escape(label)} ([0-9.]+)(?=,|;|$)", text)
        if m is not None:
            out[key] = float(m.group(1))
    return out


def timing_facts(data: object) -> object:
    """A version-1 TimingResult (its JSON object) with the facts its note states as fields; fields the object
    already has are kept (a version-1 session continued by a later beavertui)."""
    if not isinstance(data, dict) or not isinstance(data.get("note"), str):
        return data
    note: str = data["note"]
    facts: dict[str, object] = {}
    if m := RUNS_STOPPED.search(note):
        facts.update(
            runs_stopped=int(m.group(1)) if m.group(1) else 1,
            rerun_stopped=m.group(2) is not None,
            gpu=m.group(3),
            idle_s=float(m.group(4)),
        )
    if m := BUILDS_STOPPED.search(note):
        facts["builds_stopped"] = int(m.group(1))
    if m := TIMED_AGAIN.search(note):
        facts.update(gpu=m.group(1), timed_again=m.group(2))
    if REMEASURED.search(note):
        facts["remeasured"] = True
    if HELD in note or ALL in note:
        held = note.split(HELD if HELD in note else ALL, 1)[1]
        ahead = note.split(AHEAD, 1)[1].split(HELD, 1)[0] if AHEAD in note else ""
        before = _phases(ahead)
        facts["driver_phases_s"] = {**before, **_phases(held)}
        facts["driver_before_go"] = list(before)
    return {**facts, **data}
