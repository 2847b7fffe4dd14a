"""A CUDABeaver harness run directory as read from disk: its config, manifest and summary, the protocol
and model its config describes, and the release it was made from (cudabeaver.py turns it into sessions).

Each file is read as a regular file of at most 64 MiB; anything that is not a harness run is one line.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from beavertui.engine.errors import BeaverError
from beavertui.engine.fileio import MAX_INPUT_BYTES, read_small_text
from beavertui.engine.session.events import (
    ModelInfo,
)
from beavertui.engine.session.protocol import RELEASE_FEW_SHOT_POOL, Protocol


@dataclass(frozen=True)
class HarnessRun:
    """A harness run directory as read from disk (nothing interpreted yet)."""

    root: Path
    run_id: str
    config: dict[str, Any]
    records: list[dict[str, Any]]
    """The manifest's records in file order, each with ``_line`` (its line number) added."""
    summary: dict[str, Any] | None
    """summary.json, when the run wrote one (a run killed before its end has none)."""


# ------------------------------------------------------------------------------------------------ reading


def read_run(path: Path) -> HarnessRun:
    """Read a harness run directory; a BeaverError in one line for anything that is not one."""
    if not path.exists():
        raise BeaverError(f"{path}: no such folder")
    if not path.is_dir():
        raise BeaverError(f"{path}: not a folder (give a CUDABeaver harness run directory)")
    manifest = path / "index" / "manifest.jsonl"
    if not manifest.is_file():
        inner = sorted(p.name for p in path.iterdir() if (p / "index" / "manifest.jsonl").is_file())
        if inner:
            raise BeaverError(
                f"{path}: holds harness runs, not one ({', '.join(inner[:5])}); give one of them"
            )
        raise BeaverError(f"{path}: not a CUDABeaver harness run (no index/manifest.jsonl)")
    config_path = path / "config.yaml"
    if not config_path.is_file():
        raise BeaverError(
            f"{path}: no config.yaml (the harness copies its config there; the model and temperature "
            "are recorded nowhere else)"
        )
    config = _read_yaml(config_path)
    records = _read_manifest(manifest)
    summary: dict[str, Any] | None = None
    summary_path = path / "summary.json"
    if summary_path.is_file():
        try:
            data = json.loads(read_small_text(summary_path, MAX_INPUT_BYTES, "summary.json"))
        except ValueError:
            raise BeaverError(f"{summary_path}: not valid JSON") from None
        summary = data if isinstance(data, dict) else None
    return HarnessRun(root=path, run_id=path.resolve().name, config=config, records=records, summary=summary)


def _read_yaml(path: Path) -> dict[str, Any]:
    try:
        import yaml
    except ImportError:  # pragma: no cover - PyYAML comes with beavertui[import]
        raise BeaverError("reading a harness config.yaml needs PyYAML: pip install pyyaml") from None
    try:
        data = yaml.safe_load(read_small_text(path, MAX_INPUT_BYTES, "config.yaml"))
    except yaml.YAMLError as exc:
        where = getattr(exc, "problem_mark", None)
        line = f" at line {where.line + 1}" if where is not None else ""
        raise BeaverError(f"{path}: not valid YAML{line}") from None
    if not isinstance(data, dict):
        raise BeaverError(f"{path}: expected a mapping of sections (api, experiment, ...)")
    for section in ("api", "experiment"):
        if not isinstance(data.get(section), dict):
            raise BeaverError(f"{path}: no {section}: section")
    if not data["api"].get("model"):
        raise BeaverError(f"{path}: api.model is not set")
    return data


def _read_manifest(path: Path) -> list[dict[str, Any]]:
    records: list[dict[str, Any]] = []
    text = read_small_text(path, MAX_INPUT_BYTES, "manifest")
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            data = json.loads(line)
        except ValueError:
            raise BeaverError(f"{path}: line {number} is not JSON") from None
        if not isinstance(data, dict):
            raise BeaverError(f"{path}: line {number} is not a JSON object")
        records.append({**data, "_line": number})
    if not records:
        raise BeaverError(f"{path}: no records (the harness writes it after each finished task)")
    return records


# ----------------------------------------------------------------------------------------------- settings


def protocol_of(config: Mapping[str, Any]) -> tuple[Protocol, list[str]]:
    """The protocol the harness ran under, from its config, and how each value was found."""
    exp = config["experiment"]
    api = config["api"]
    notes: list[str] = []
    method = exp.get("method", "iterative")
    if method not in ("iterative", "repeated"):
        raise BeaverError(f"config.yaml: experiment.method {method!r} is neither iterative nor repeated")
    budget = exp.get("n_attempts") if method == "repeated" and exp.get("n_attempts") else None
    budget = budget or exp.get("max_iterations")
    if not isinstance(budget, int) or not 1 <= budget <= 100:
        raise BeaverError(f"config.yaml: experiment.max_iterations {budget!r} is not a budget of 1 to 100")
    level = exp.get("feedback_level", 3)
    if level not in (0, 1, 2, 3, 4):
        raise BeaverError(f"config.yaml: experiment.feedback_level {level!r} is not 0 to 4")
    if "feedback_level" not in exp:
        notes.append("feedback L3: the harness's default (config.yaml sets no feedback_level)")
    feedback = f"L{level}"
    mode = exp.get("feedback_mode", "aware")
    if mode not in ("aware", "raw"):
        raise BeaverError(f"config.yaml: experiment.feedback_mode {mode!r} is neither aware nor raw")
    if mode == "raw" and level == 3:  # the harness honours the mode at level 3 only
        feedback = "L3_raw"
    history = exp.get("max_history_rounds", 4)
    if not isinstance(history, int) or not 1 <= history <= 4:
        raise BeaverError(
            f"config.yaml: experiment.max_history_rounds {history!r}: beavertui's protocol keeps 1 to 4 rounds"
        )
    if "max_history_rounds" not in exp:
        notes.append("history 4: the harness's default (config.yaml sets no max_history_rounds)")
    temperature = api.get("temperature")
    if temperature is None:
        temperature = 0.7
        notes.append("temperature 0.7: the harness's default (config.yaml sets none)")
    if _backend(api) == "openai" and api.get("reasoning_effort") is not None:
        notes.append(
            f"temperature: the harness sent none (reasoning_effort={api['reasoning_effort']} took its place); "
            f"the protocol records {temperature:g}"
        )
    gate_cfg = config.get("performance_gate") or exp.get("performance_gate") or {}
    gate = 0.0
    if isinstance(gate_cfg, dict) and gate_cfg and gate_cfg.get("enabled", True):  # the harness's default: on
        value = gate_cfg.get("min_speedup", gate_cfg.get("threshold"))
        if not isinstance(value, int | float) or value < 0:
            raise BeaverError(f"config.yaml: performance_gate min_speedup {value!r} is not a speedup")
        gate = float(value)
    else:
        notes.append("gate 0: the run had no performance gate, so every correct attempt is a success")
    try:
        proto = Protocol(
            method=method,
            budget=budget,
            feedback=feedback,
            history=history,
            temperature=float(temperature),
            gate=gate,
            continue_after_pass=method == "repeated",
            sanitize_on_failure=False,
            **few_shot_of(exp),
        )
    except ValueError as exc:
        raise BeaverError(f"config.yaml: settings beavertui cannot record: {exc}") from None
    notes.append(
        "stagnation: the harness's own detectors stopped the loop; the protocol's stagnation settings "
        "are beavertui's defaults, not the harness's"
    )
    return proto, notes


#: The release's few-shot strategies by its config names (harness/few_shot.py select_examples).
FEW_SHOT_STRATEGIES = {"matched-error-category": "matched", "random": "random", "curated": "curated"}


def few_shot_of(exp: Mapping[str, Any], where: str = "config.yaml") -> dict[str, Any]:
    """The protocol's few-shot fields from a release config's experiment section, read as the harness reads
    them (run_experiment.py _few_shot_section): none unless ``few_shot_k`` > 0; strategy ``random`` and the
    authors' committee runs as the pool where the config names none."""
    k = exp.get("few_shot_k", 0)
    if not isinstance(k, int) or isinstance(k, bool) or k < 0:
        raise BeaverError(f"{where}: experiment.few_shot_k {k!r} is not a number of examples")
    if k == 0:
        return {}
    strategy = exp.get("few_shot_strategy", "random")
    if strategy not in FEW_SHOT_STRATEGIES:
        raise BeaverError(
            f"{where}: experiment.few_shot_strategy {strategy!r}: expected {', '.join(FEW_SHOT_STRATEGIES)}"
        )
    pool = exp.get("few_shot_pool_committee_dirs", list(RELEASE_FEW_SHOT_POOL))
    if not isinstance(pool, list) or not all(isinstance(d, str) for d in pool):
        raise BeaverError(f"{where}: experiment.few_shot_pool_committee_dirs is not a list of folders")
    out: dict[str, Any] = {
        "few_shot": FEW_SHOT_STRATEGIES[strategy],
        "few_shot_k": k,
        "few_shot_seed": int(exp.get("few_shot_pair_pool_seed", 42)),
        "few_shot_pool": tuple(pool),
    }
    if strategy == "curated":
        out["few_shot_curated"] = exp.get("few_shot_curated_file")
    return out


def _backend(api: Mapping[str, Any]) -> str:
    explicit = api.get("backend")
    if explicit:
        return str(explicit).lower()
    url = str(api.get("base_url") or "")
    return "vllm" if any(h in url for h in ("localhost", "127.0.0.1", "0.0.0.0")) else "openai"


def model_of(config: Mapping[str, Any]) -> ModelInfo:
    """The model under test as the config names it (sampling settings kept, never a key)."""
    api = config["api"]
    keep = (
        "temperature",
        "top_p",
        "max_tokens",
        "max_completion_tokens",
        "reasoning_effort",
        "repetition_penalty",
        "stop",
        "seed",
        "stream",
        "extra_body",
    )
    params: dict[str, object] = {k: api[k] for k in keep if api.get(k) is not None}
    params["backend"] = _backend(api)
    base_url = api.get("base_url")
    return ModelInfo(
        name=str(api["model"]), kind="openai", base_url=str(base_url) if base_url else None, params=params
    )


# ------------------------------------------------------------------------------------------------- tasks


def find_corpus(run: HarnessRun) -> Path | None:
    """The release the run was made from, when the run directory still sits inside it
    (``<release>/<experiment.output_dir>/<run>``, tasks under ``<release>/<experiment.dataset_dir>``)."""
    exp = run.config["experiment"]
    out = Path(str(exp.get("output_dir") or ""))
    if not str(out) or out.is_absolute():
        return None
    root = run.root.resolve().parent
    for part in reversed(out.parts):
        if root.name != part:
            return None
        root = root.parent
    data = root / str(exp.get("dataset_dir") or "data")
    first = next((r.get("task_id") for r in run.records if isinstance(r.get("task_id"), str)), None)
    if first and (data / first / "instance.json").is_file():
        return data
    return None
