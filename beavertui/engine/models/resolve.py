"""One place that turns a model name into a Model: ``live``, ``branch``, ``attribute`` and ``batch`` all call it.

A name is ``scripted:FILE``, ``scripted:FOLDER`` (the folder's script named after the task),
``scripted:@reference`` / ``scripted:@alternate`` (replies made from the task
itself), ``scripted:@demo`` (the replies of the task's bundled demo session), ``replay:SESSION``, ``human``, or an endpoint model. An endpoint name is first looked up in the
models file (``--models-file``, else ``$BEAVERTUI_MODELS``, else ``~/.config/beavertui/models.toml`` when it
exists); overrides given on the command line or in a batch file then replace the entry's fields. The
protocol's temperature and seed are what a session records, so they are what is sent. This module never
logs or stores a key.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from beavertui.engine.corpus.task import Task
from beavertui.engine.errors import BeaverError
from beavertui.engine.models.base import Model
from beavertui.engine.models.openai_model import OpenAIConfig, OpenAIModel, load_models_file
from beavertui.engine.session.events import has_control
from beavertui.engine.session.protocol import Protocol

DEFAULT_MODELS_FILE = Path.home() / ".config" / "beavertui" / "models.toml"

#: Names of models whose replies are made from the task's own files (demos, validation runs, benches).
TASK_SCRIPTED = ("scripted:@reference", "scripted:@alternate")

#: The model of ``--demo``: for each task, the hand-written replies of its bundled demo session.
DEMO_MODEL = "scripted:@demo"


class SettingError(BeaverError):
    """A model setting out of range (a models-file entry or an override), naming the setting."""

    def __init__(self, field: str, problem: str) -> None:
        super().__init__(f"{field}: {problem}")
        self.field = field
        self.problem = problem


def refuse_control(name: str) -> None:
    """A model name the session header would refuse (empty, or with a terminal control character) is
    refused before anything runs, in one line."""
    if not name:
        raise BeaverError("a model name is empty: name the model to ask")
    if has_control(name):
        raise BeaverError(f"model {name!r}: holds a terminal control character")


def models_file(explicit: str | Path | None = None) -> Path | None:
    """The models file in force: the one given, else ``$BEAVERTUI_MODELS``, else the user's default one."""
    if explicit:
        return Path(explicit)
    env = os.environ.get("BEAVERTUI_MODELS")
    if env:
        return Path(env)
    return DEFAULT_MODELS_FILE if DEFAULT_MODELS_FILE.is_file() else None


def endpoint_config(
    name: str, *, models: str | Path | None = None, overrides: Mapping[str, Any] | None = None
) -> OpenAIConfig:
    """The endpoint configuration of ``name``: its models-file entry (if any) with ``overrides`` applied.

    Overrides whose value is None are ignored, so unset command-line flags keep the entry's values.
    """
    refuse_control(name)
    path = models_file(models)
    entries = load_models_file(path) if path is not None else {}
    config = entries.get(name) or OpenAIConfig(model=name)
    update = {k: v for k, v in (overrides or {}).items() if v is not None}
    if not update:
        return config
    try:
        return OpenAIConfig.model_validate({**config.model_dump(), **update})
    except ValidationError as exc:
        err = exc.errors()[0]
        raise SettingError(str(err["loc"][0]) if err.get("loc") else "model", err["msg"]) from None


def _fenced(code: str, language: str) -> str:
    fence = {"cuda": "cuda", "cpp": "cpp", "python": "python"}.get(language, "cuda")
    return f"```{fence}\n{code}\n```\n"


def task_scripted(name: str, task: Task, protocol: Protocol) -> Model:
    """``scripted:@reference`` (the reference every time) or ``scripted:@alternate`` (broken, reference, ...).

    The reference is sent in the form a candidate takes (``families.reference_submission``): for kernelbench
    that is problem.py with its ``ModelNew`` alias, which the toolchain recognises and judges under the
    reference semantics; the bare problem.py has no ``ModelNew`` and is a candidate the static checker
    rejects."""
    from beavertui.engine.corpus import families
    from beavertui.engine.models.scripted import ScriptedModel

    ref = families.reference_submission(task)
    if ref is None:
        raise BeaverError(f"{task.id}: {name}: {families.why_no_reference_submission(task)}")
    n = max(protocol.budget, 1)
    if name == "scripted:@reference":
        replies = [_fenced(ref, task.language)] * n
    else:
        broken = task.broken_start()
        replies = [_fenced(broken if i % 2 == 0 else ref, task.language) for i in range(n)]
    return ScriptedModel(replies, name=name)


def check_local(name: str) -> None:
    """A model that is no endpoint, checked as far as it can be before any session starts: a script file
    (``scripted:FILE``) that is not there or holds no reply, a recorded session (``replay:SESSION``) that is
    not there or has no header, refused in one line (a batch made its run folder first and failed every
    session). A folder of scripts is checked task by task, as its sessions start."""
    if name in TASK_SCRIPTED or name == DEMO_MODEL:
        return
    if name.startswith("scripted:"):
        from beavertui.engine.models.scripted import load_script

        path = Path(name.split(":", 1)[1])
        if not path.is_dir():
            load_script(path)
    elif name.startswith("replay:"):
        from beavertui.engine.models.replay import ReplayModel

        ReplayModel(name.split(":", 1)[1])


def build_model(
    name: str,
    task: Task,
    protocol: Protocol,
    *,
    models: str | Path | None = None,
    overrides: Mapping[str, Any] | None = None,
    human_file: Path | None = None,
    editor: str | None = None,
) -> Model:
    """The Model for ``name`` in a session of ``task`` under ``protocol``.

    ``human_file``: where a ``human`` model's candidate is edited (required for ``human``).
    """
    refuse_control(name)
    if name in TASK_SCRIPTED:
        return task_scripted(name, task, protocol)
    if name == DEMO_MODEL:
        from beavertui.engine import bundled
        from beavertui.engine.models.scripted import ScriptedModel

        demo = bundled.demo_of_task(task.id)
        if demo is None:
            raise BeaverError(
                f"{name}: no bundled demo runs task {task.id} (they run {', '.join(bundled.demo_tasks())})"
            )
        return ScriptedModel.from_file(bundled.demo_replies(demo))
    if name.startswith("scripted:"):
        from beavertui.engine.models.scripted import ScriptedModel

        path = Path(name.split(":", 1)[1])
        if path.is_dir():  # a folder of scripts, one per task (a batch's planner or summariser)
            for ext in (".toml", ".json", ".md", ".txt"):
                if (path / f"{task.id}{ext}").is_file():
                    return ScriptedModel.from_file(path / f"{task.id}{ext}")
            raise BeaverError(f"{path}: no script for task {task.id}")
        return ScriptedModel.from_file(path)
    if name.startswith("replay:"):
        from beavertui.engine.models.replay import ReplayModel

        replay = ReplayModel(name.split(":", 1)[1])
        if replay.header.task.id != task.id:
            raise BeaverError(
                f"{name}: the recorded session is of task {replay.header.task.id!r}, not {task.id!r}"
            )
        return replay
    if name == "human":
        from beavertui.engine.models.human import HumanModel

        if human_file is None:
            raise BeaverError("the human model needs a file to edit the candidate in")
        return HumanModel(human_file, initial=task.broken_start(), editor=editor or os.environ.get("EDITOR"))
    config = endpoint_config(name, models=models, overrides=overrides)
    return OpenAIModel(with_protocol(config, protocol), entry=name)


def with_protocol(config: OpenAIConfig, protocol: Protocol) -> OpenAIConfig:
    """The configuration as sent: the protocol's temperature, and its seed when it has one."""
    update: dict[str, Any] = {"temperature": protocol.temperature}
    if protocol.seed is not None:
        update["seed"] = protocol.seed
    return config.model_copy(update=update)
