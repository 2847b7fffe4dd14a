"""An attempts table of axis sweeps made from the recorded demo sessions (sessions/demo).

Three models (A, B, C) run the feedback levels L0..L3 (history 2) and the history windows H1..H4 (L3): in
each (model, protocol) group, three tasks, each the rows of one recorded demo session, repaired
(degenerate_repair, repair_in_three, typo_then_barrier) or not (code_cycle, no_progress, sanitizer_only), so
that a group's pass@k is the number of repaired sessions it was given over 3 (REPAIRED below). The
rows are the sessions' own, as `beavertui export` writes them; only the model, protocol and task id are
set (the task id to the slot, so each group has three distinct tasks).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from beavertui.engine.metrics import table_io
from beavertui.engine.metrics.attempts import export_rows

ROOT = Path(__file__).resolve().parents[2]
DEMO = ROOT / "sessions" / "demo"
MODELS = ("A", "B", "C")
REPAIRED_SESSIONS = ("degenerate_repair", "repair_in_three", "typo_then_barrier")
FAILED_SESSIONS = ("code_cycle", "no_progress", "sanitizer_only")
#: (axis value, model) -> repaired sessions of 3. L3 and H2 are one group (L3 H2), so they agree.
FEEDBACK = {"L0": (3, 1, 2), "L1": (2, 2, 1), "L2": (1, 3, 2), "L3": (0, 2, 3)}
HISTORY = {1: (1, 3, 0), 2: FEEDBACK["L3"], 3: (2, 2, 2), 4: (3, 1, 1)}


def demo_rows() -> dict[str, list[dict[str, Any]]]:
    """The rows of each demo session, by the session's name (its scripted model's)."""
    out: dict[str, list[dict[str, Any]]] = {}
    for r in export_rows(DEMO):
        out.setdefault(r["model"].removeprefix("scripted:").removesuffix(".toml"), []).append(r)
    return out


def axis_table(tmp_path: Path) -> Path:
    rows = demo_rows()
    base = dict(rows["code_cycle"][0]["protocol"])
    groups: dict[tuple[str, int], tuple[int, int, int]] = {(f, 2): n for f, n in FEEDBACK.items()}
    groups.update({("L3", h): n for h, n in HISTORY.items()})
    out: list[dict[str, Any]] = []
    for (feedback, history), repaired in groups.items():
        protocol = {**base, "feedback": feedback, "history": history}
        for model, n in zip(MODELS, repaired, strict=True):
            chosen = REPAIRED_SESSIONS[:n] + FAILED_SESSIONS[: 3 - n]
            for slot, name in enumerate(chosen):
                for r in rows[name]:
                    out.append({**r, "model": model, "protocol": protocol, "task_id": f"t{slot}"})
    path = tmp_path / "axes.jsonl"
    with path.open("w") as f:
        table_io.write_jsonl(out, f)
    return path


#: The few-shot axis (paper-fewshot.toml, the release's Exp 5): (axis value, model) -> repaired sessions of
#: 3, each strategy at K 1, 3, 5, and ``none`` (no examples, the other settings the same) beside them.
FEW_SHOT = {
    "none": (1, 1, 0),
    "matched_K1": (2, 0, 1),
    "matched_K3": (3, 1, 1),
    "matched_K5": (3, 2, 0),
    "random_K1": (1, 2, 3),
    "random_K3": (0, 1, 2),
    "random_K5": (1, 3, 2),
    "curated_K1": (2, 2, 2),
    "curated_K3": (3, 0, 1),
    "curated_K5": (2, 1, 3),
}


def few_shot_table(tmp_path: Path, values: tuple[str, ...] = tuple(FEW_SHOT)) -> Path:
    """Models A, B, C over the few-shot ``values`` (FEW_SHOT), otherwise the demo sessions' protocol: three
    tasks a group, as axis_table's."""
    rows = demo_rows()
    base = dict(rows["code_cycle"][0]["protocol"])
    out: list[dict[str, Any]] = []
    for value in values:
        protocol = {**base, "few_shot": value}
        for model, n in zip(MODELS, FEW_SHOT[value], strict=True):
            chosen = REPAIRED_SESSIONS[:n] + FAILED_SESSIONS[: 3 - n]
            for slot, name in enumerate(chosen):
                for r in rows[name]:
                    out.append({**r, "model": model, "protocol": protocol, "task_id": f"t{slot}"})
    path = tmp_path / "few_shot.jsonl"
    with path.open("w") as f:
        table_io.write_jsonl(out, f)
    return path
