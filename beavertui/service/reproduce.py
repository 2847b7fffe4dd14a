"""The paper's grid from one command: plan it, run it through the batch, write the paper's tables.

A **plan** is the set of arms (one model under one protocol over its tasks) that the paper's axes need:

- ``main``: the paper's protocol (iterative, K5, L3, H4, gate 0.7 after the run) at the model's decoding;
- ``repeated``: K independent samples of the first turn at T1.0 (the Rep column; the Iter column is the
  main arm, never run again);
- ``feedback``: L0, L1 and L2 (L3 is the main arm; a release config of L3_raw is an arm of its own);
- ``history``: H1, H2 and H3 (H4 is the main arm);
- the gate axis (p = 0 / 0.7 / 1.5) needs no run: it is read from the main arm's p sweep.

Models come as names, as a models file (a protocol file's ``[[models]]``), or as the CUDABeaver release's
own config files read as they are (``configs/iter/*.yaml`` and the other axes' folders): the model, its
endpoint's base URL and key variable, its decoding (temperature, top_p, token limit, reasoning effort, extra
body, time limit) and its task list. A config of another axis becomes that arm, with its own protocol; two
configs of one model and protocol (the release's ``*_memcrash`` files) are one arm over both task lists.
No arm is planned twice: arms are keyed by model and protocol.

Each model's arms are one batch run (``OUT/<model>``, resumed when it exists), so every arm is run once and
its trajectories are never pooled with another run's. Planning reads config files and the corpus folder
only: ``--dry-run`` needs no network, no GPU and no key. Nothing here prints; the command does.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from beavertui.engine.errors import BeaverError
from beavertui.engine.fileio import write_atomic

if TYPE_CHECKING:
    from beavertui.service.batch import Progress

#: The paper's axes, in the order they are planned.
AXES: tuple[str, ...] = ("main", "repeated", "feedback", "history")
#: The paper's repeated arm's temperature and its feedback and history levels besides the main arm's.
REP_TEMPERATURE = 1.0
FEEDBACK_LEVELS: tuple[str, ...] = ("L0", "L1", "L2")
HISTORY_DEPTHS: tuple[int, ...] = (1, 2, 3)
_PLACEHOLDER = re.compile(r"^<.*>$")


@dataclass(frozen=True)
class Arm:
    """One model under one protocol, over its tasks."""

    model: Any
    """batch.protocol_file.ModelSpec."""
    protocol: Any
    """engine.session.protocol.Protocol."""
    axis: str
    """``main``, ``repeated``, ``feedback L0``, ``history H1``, or ``config`` for an arm only a config asked for."""
    sources: tuple[str, ...]
    """The config files that describe this arm (empty: planned from the paper's axes)."""


@dataclass
class Plan:
    """Every arm of the grid, the tasks of each model, and what planning had to say."""

    corpus: Path
    arms: list[Arm]
    tasks: dict[str, list[str]]
    """Model name -> the task ids its arms run (resolved against the corpus)."""
    notes: list[str] = field(default_factory=list)

    def models(self) -> list[str]:
        return list(dict.fromkeys(a.model.name for a in self.arms))

    def arms_of(self, model: str) -> list[Arm]:
        return [a for a in self.arms if a.model.name == model]

    def estimate(self) -> dict[str, int]:
        """Upper bounds: sessions, model calls and judged attempts (each call is judged once: a build, a
        run and, when correct, a timing)."""
        sessions = calls = 0
        for a in self.arms:
            n = len(self.tasks[a.model.name])
            sessions += n
            calls += n * a.protocol.budget
        return {"sessions": sessions, "model_calls": calls, "attempts": calls}


def model_slug(name: str) -> str:
    """A folder name for a model's run: its name with anything but letters, digits, '.', '_' and '-' as '_'."""
    return re.sub(r"[^A-Za-z0-9._-]+", "_", name).strip("_") or "model"


# ------------------------------------------------------------------------------------- release configs


@dataclass(frozen=True)
class ReleaseConfig:
    """One CUDABeaver release config file, read as it is."""

    path: Path
    model: Any
    """batch.protocol_file.ModelSpec."""
    protocol: Any
    """engine.session.protocol.Protocol."""
    tasks: tuple[str, ...]
    notes: tuple[str, ...]


def read_release_config(path: Path) -> ReleaseConfig:
    """Model, endpoint variable names, decoding, extra body, protocol and task list of a release config."""
    doc = _config_doc(path)
    api, exp = doc["api"], doc["experiment"]
    notes: list[str] = []
    model = _config_model(path, api, notes)
    protocol = _config_protocol(path, api, exp, notes)
    temperature = api.get("temperature")
    if temperature is None:
        notes.append(f"{path.name}: no temperature: the harness's default 0.7")
    if model.reasoning_effort is not None:
        notes.append(
            f"{path.name}: reasoning_effort {model.reasoning_effort} is sent as the release sends it"
        )
    tasks = exp.get("tasks") or []
    if not isinstance(tasks, list) or not all(isinstance(t, str) for t in tasks):
        raise BeaverError(f"{path}: experiment.tasks is not a list of task ids")
    return ReleaseConfig(path, model, protocol, tuple(tasks), tuple(notes))


def _config_doc(path: Path) -> dict[str, Any]:
    """The config's YAML, with its api and experiment sections."""
    try:
        import yaml
    except ImportError:
        raise BeaverError(
            "reading the release's config files needs PyYAML: pip install 'beavertui[import]'"
        ) from None
    try:
        doc = yaml.safe_load(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise BeaverError(f"{path}: cannot read: {exc.strerror}") from None
    except yaml.YAMLError as exc:
        raise BeaverError(f"{path}: not valid YAML: {str(exc).splitlines()[0]}") from None
    if (
        not isinstance(doc, dict)
        or not isinstance(doc.get("api"), dict)
        or not isinstance(doc.get("experiment"), dict)
    ):
        raise BeaverError(f"{path}: not a CUDABeaver config (no api and experiment sections)")
    return doc


def _config_model(path: Path, api: Any, notes: list[str]) -> Any:
    """The config's api section as a ModelSpec (a placeholder base_url dropped, said in ``notes``)."""
    from pydantic import ValidationError

    from beavertui.batch.protocol_file import ModelSpec

    base_url = api.get("base_url")
    if isinstance(base_url, str) and _PLACEHOLDER.match(base_url.strip()):
        notes.append(
            f"{path.name}: base_url is a placeholder ({base_url}): give --base-url URL (or OPENAI_BASE_URL), "
            "or the model's base_url in a models file"
        )
        base_url = None
    extra = api.get("extra_body") or {}
    if not isinstance(extra, dict):
        raise BeaverError(f"{path}: api.extra_body is not a mapping")
    tokens = api.get("max_tokens", api.get("max_completion_tokens"))
    try:
        model = ModelSpec(
            model=str(api["model"]),
            base_url=base_url or None,
            api_key_env=str(api.get("api_key_env") or "OPENAI_API_KEY"),
            top_p=api.get("top_p"),
            max_tokens=tokens,
            reasoning_effort=api.get("reasoning_effort"),
            extra_body=extra,
            timeout_s=float(api.get("timeout") or 600.0),
        )
    except (KeyError, ValidationError, TypeError, ValueError) as exc:
        raise BeaverError(f"{path}: api: {str(exc).splitlines()[0]}") from None
    return model


def _config_protocol(path: Path, api: Any, exp: Any, notes: list[str]) -> Any:
    """The config's experiment section (and the api's temperature) as a Protocol."""
    from pydantic import ValidationError

    from beavertui.engine.session.protocol import Protocol

    method = exp.get("method", "iterative")
    level = exp.get("feedback_level", 3)
    if method not in ("iterative", "repeated"):
        raise BeaverError(f"{path}: experiment.method {method!r} is neither iterative nor repeated")
    if level not in (0, 1, 2, 3, 4):
        raise BeaverError(f"{path}: experiment.feedback_level {level!r}: beavertui has levels 0 to 4")
    mode = exp.get("feedback_mode", "aware")
    if mode not in ("aware", "raw"):
        raise BeaverError(f"{path}: experiment.feedback_mode {mode!r} is neither aware nor raw")
    if mode == "raw" and level != 3:
        notes.append(
            f"{path.name}: feedback_mode raw at level {level}: the harness honours it at level 3 only"
        )
    from beavertui.engine.importers.harness_run import few_shot_of

    shots = few_shot_of(exp, str(path))
    budget = (
        exp.get("n_attempts")
        if method == "repeated" and exp.get("n_attempts")
        else exp.get("max_iterations", 5)
    )
    temperature = api.get("temperature")
    try:
        protocol = Protocol(
            method=method,
            budget=int(budget),
            feedback="L3_raw" if mode == "raw" and level == 3 else f"L{level}",
            history=int(exp.get("max_history_rounds", 4)),
            temperature=0.7 if temperature is None else float(temperature),
            **shots,
        )
    except (ValidationError, TypeError, ValueError) as exc:
        raise BeaverError(f"{path}: experiment: {str(exc).splitlines()[0]}") from None
    return protocol


def config_files(paths: Sequence[Path]) -> list[Path]:
    """The YAML files named, and those directly inside each folder named, sorted."""
    out: list[Path] = []
    for p in paths:
        if p.is_dir():
            out += sorted(q for q in p.iterdir() if q.suffix in (".yaml", ".yml") and q.is_file())
        elif p.is_file():
            out.append(p)
        else:
            from beavertui.engine.fileio import missing

            raise missing(p, "release config file or folder")
    if not out:
        raise BeaverError("no release config files (.yaml) in " + ", ".join(str(p) for p in paths))
    return out


def resolve_tasks(names: Sequence[str], corpus_ids: Sequence[str]) -> tuple[list[str], list[str]]:
    """Task ids of the corpus named by a config: the id itself, or every instance of a short name (the
    release's ``cuda_104`` is ``cuda_104__compile_error__f8160fc8``); and the names not in the corpus."""
    ids = set(corpus_ids)
    by_prefix: dict[str, list[str]] = {}
    for t in corpus_ids:
        by_prefix.setdefault(t.split("__", 1)[0], []).append(t)
    found: list[str] = []
    unknown: list[str] = []
    for n in names:
        got = [n] if n in ids else by_prefix.get(n, [])
        if not got:
            unknown.append(n)
        found += got
    return list(dict.fromkeys(found)), unknown


# ---------------------------------------------------------------------------------------------- plan


def _paper_protocol(temperature: float) -> Any:
    from beavertui.engine.session.protocol import Protocol

    return Protocol(temperature=temperature)


def plan(
    corpus: Path,
    *,
    models: Sequence[str] = (),
    models_file: Path | None = None,
    configs: Sequence[Path] = (),
    axes: Sequence[str] = AXES,
    tasks: str | None = None,
) -> Plan:
    """The grid: every arm the axes need for every model, each once."""
    from beavertui.batch.protocol_file import ModelSpec, find_protocol_file, load_batch_file
    from beavertui.engine.corpus.load import load_corpus
    from beavertui.service.batch_prepare import select

    bad = [a for a in axes if a not in AXES]
    if bad:
        raise BeaverError(f"unknown axis {bad[0]!r} (axes: {', '.join(AXES)})")
    if not axes and not configs:  # a grid of no arm would "succeed" having run nothing
        raise BeaverError(
            f"--axes names no axis: give one or more of {', '.join(AXES)}, or leave it out for all"
        )
    loaded = load_corpus(corpus)
    corpus_ids = [t.id for t in loaded.tasks if t.runnable]
    wanted = select(corpus_ids, tasks) if tasks else corpus_ids
    if not wanted:
        raise BeaverError(f"{loaded.root}: no runnable task matches {tasks or '*'}")
    notes: list[str] = []
    specs: dict[str, Any] = {}
    for name in models:
        specs.setdefault(name, ModelSpec.named(name))
    if models_file is not None:
        for listed in load_batch_file(find_protocol_file(str(models_file))).models:
            specs.setdefault(listed.name, listed)
    arm_sources, task_names, main_temp = _config_arms(configs, specs, notes)
    if not specs:
        raise BeaverError("no models: give --models, --models-from or --release-configs")

    arms = _grid_arms(specs, axes, arm_sources, main_temp)
    task_map = _task_map(specs, task_names, corpus_ids, wanted, loaded.root, notes)
    if not any(task_map.values()):  # a grid of no session would "succeed" having run nothing
        why = next((n for n in notes if "not runnable" in n), notes[-1])
        raise BeaverError(
            f"{loaded.root}: no model has a task to run here ({why}): give the --corpus its tasks are in, or "
            "--tasks that match"
        )
    return Plan(loaded.root, arms, task_map, notes)


def _config_arms(
    configs: Sequence[Path], specs: dict[str, Any], notes: list[str]
) -> tuple[dict[tuple[str, str], tuple[Any, list[str]]], dict[str, list[str]], dict[str, float]]:
    """What the release configs ask for: each (model, protocol) arm with the configs naming it, each model's
    tasks, and the temperature of each model's main arm; their models join ``specs``."""
    arm_sources: dict[tuple[str, str], tuple[Any, list[str]]] = {}
    task_names: dict[str, list[str]] = {}
    main_temp: dict[str, float] = {}
    for path in config_files(configs) if configs else []:
        cfg = read_release_config(path)
        notes += [n for n in cfg.notes if n not in notes]
        name = cfg.model.name
        have = specs.setdefault(name, cfg.model)
        if have != cfg.model and have.model_copy(update={"base_url": cfg.model.base_url}) != cfg.model:
            notes.append(f"{path.name}: decoding differs from {name}'s first config; the first is used")
        key = (name, json.dumps(cfg.protocol.key(), sort_keys=True))
        _, srcs = arm_sources.setdefault(key, (cfg.protocol, []))
        srcs.append(str(path))
        task_names.setdefault(name, [])
        task_names[name] += [t for t in cfg.tasks if t not in task_names[name]]
        cp = cfg.protocol
        if (cp.method, cp.feedback, cp.history, cp.few_shot) == ("iterative", "L3", 4, "none"):
            main_temp.setdefault(name, cfg.protocol.temperature)
    return arm_sources, task_names, main_temp


def _grid_arms(
    specs: dict[str, Any],
    axes: Sequence[str],
    arm_sources: dict[tuple[str, str], tuple[Any, list[str]]],
    main_temp: dict[str, float],
) -> list[Arm]:
    """Every arm the axes need for every model, each once, then the configs' arms off the paper's grid."""
    arms: list[Arm] = []
    seen: set[tuple[str, str]] = set()

    def add(spec: Any, protocol: Any, axis: str, sources: Sequence[str] = ()) -> None:
        key = (spec.name, json.dumps(protocol.key(), sort_keys=True))
        if key in seen:
            return
        seen.add(key)
        arms.append(Arm(spec, protocol, axis, tuple(sources)))

    for name, spec in specs.items():
        main = _paper_protocol(main_temp.get(name, 0.7))
        grid: list[tuple[Any, str]] = []
        if "main" in axes:
            grid.append((main, "main"))
        if "repeated" in axes:
            rep_cfg = [p for (m, _), (p, _) in arm_sources.items() if m == name and p.method == "repeated"]
            rep_t = rep_cfg[0].temperature if rep_cfg else REP_TEMPERATURE
            grid.append((main.model_copy(update={"method": "repeated", "temperature": rep_t}), "repeated"))
        if "feedback" in axes:
            grid += [(main.model_copy(update={"feedback": lv}), f"feedback {lv}") for lv in FEEDBACK_LEVELS]
        if "history" in axes:
            grid += [(main.model_copy(update={"history": h}), f"history H{h}") for h in HISTORY_DEPTHS]
        by_key = {
            json.dumps(p.key(), sort_keys=True): srcs
            for (m, _), (p, srcs) in arm_sources.items()
            if m == name
        }
        for proto, axis in grid:
            add(spec, proto, axis, by_key.get(json.dumps(proto.key(), sort_keys=True), ()))
        for (m, k), (proto, srcs) in arm_sources.items():
            if m == name and (m, k) not in seen:
                # a config's arm off the paper's grid: gate 0.7 after the run like the rest, run as given
                add(spec, proto, "config", srcs)
    return arms


def _task_map(
    specs: dict[str, Any],
    task_names: dict[str, list[str]],
    corpus_ids: list[str],
    wanted: list[str],
    root: Path,
    notes: list[str],
) -> dict[str, list[str]]:
    """Each model's tasks: its configs' that are runnable here and wanted, else every wanted task."""
    task_map: dict[str, list[str]] = {}
    for name in specs:
        if task_names.get(name):
            found, unknown = resolve_tasks(task_names[name], corpus_ids)
            found = [t for t in found if t in set(wanted)]
            if unknown:
                notes.append(
                    f"{name}: {len(unknown)} of {len(task_names[name])} configured tasks are not runnable in "
                    f"{root}" + (f" (e.g. {', '.join(unknown[:3])})" if unknown else "")
                )
            task_map[name] = found
        else:
            task_map[name] = list(wanted)
        if not task_map[name]:
            notes.append(f"{name}: no task of its list is in this corpus: its arms run nothing")
    return task_map


# ----------------------------------------------------------------------------------------------- run


def protocol_toml(arms: Sequence[Arm]) -> str:
    """A protocol file holding these arms (one model) as variants, with the method pairing."""
    first = arms[0].model
    lines = [
        'name = "reproduce"',
        f"description = {json.dumps('the paper grid of ' + first.name)}",
        "samples = 1",
        "",
        "[[pairings]]",
        'name = "method"',
        'a = { method = "iterative" }',
        'b = { method = "repeated" }',
    ]
    for a in arms:
        lines += ["", "[[variants]]"]
        for k, v in a.protocol.model_dump(mode="json", exclude_defaults=True).items():
            lines.append(f"{k} = {_toml(v)}")
    lines += ["", "[[models]]"]
    for k, v in first.model_dump(mode="json", exclude_defaults=True).items():
        lines.append(f"{k} = {_toml(v)}")
    return "\n".join(lines) + "\n"


def _toml(v: Any) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int | float):
        return repr(v)
    if isinstance(v, str):
        return json.dumps(v)
    if isinstance(v, list | tuple):
        return "[" + ", ".join(_toml(x) for x in v) + "]"
    if isinstance(v, dict):
        return "{ " + ", ".join(f"{json.dumps(str(k))} = {_toml(x)}" for k, x in v.items()) + " }"
    raise BeaverError(f"cannot write {v!r} into a protocol file")


def run(
    p: Plan,
    out: Path,
    options: Any,
    *,
    display: Progress,
    say: Callable[[str], None],
) -> int:
    """Each model's arms as one batch run under ``out`` (resumed where its run.json exists), each shown by
    ``display`` while it runs; the worst exit status of the runs."""
    from dataclasses import replace

    from beavertui.service.batch import run_batch
    from beavertui.service.batch_prepare import check_before_writing, prepare, with_endpoint

    # the preflight of every model's batch, before the first folder is made (service/preflight.py)
    specs = {a.model.name: with_endpoint(a.model, options) for a in p.arms}
    check_before_writing(list(specs.values()), options.toolchain, [a.protocol for a in p.arms], options.gpus)
    out.mkdir(parents=True, exist_ok=True)
    rc = 0
    for name in p.models():
        tasks = p.tasks[name]
        if not tasks:
            continue
        slug = model_slug(name)
        run_dir = out / slug
        proto_file = out / f"{slug}.toml"
        write_atomic(proto_file, protocol_toml(p.arms_of(name)))
        resume = run_dir if (run_dir / "run.json").is_file() else None
        say(f"{name}: {'resuming' if resume else 'starting'} {run_dir}")
        opts = replace(
            options,
            protocol=str(proto_file),
            corpus=p.corpus,
            tasks=",".join(tasks),
            models=None,
            sessions_dir=out,
            run_id=None if resume else slug,
            resume=resume,
            retry_infra=options.retry_infra and resume is not None,
        )
        prepared = prepare(opts)
        rc = max(rc, run_batch(opts, prepared, display=display))
    return rc
