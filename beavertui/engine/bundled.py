"""Where the bundled corpus and demo sessions are: beside the package in a source checkout, inside it once
installed from a wheel (the build copies them to beavertui/_bundled/)."""

from __future__ import annotations

from pathlib import Path

_PACKAGE = Path(__file__).resolve().parents[1]


_CHECKOUT = _PACKAGE.parent if (_PACKAGE.parent / "pyproject.toml").is_file() else None


def _find(in_checkout: str, installed: str) -> Path:
    if _CHECKOUT is not None and (_CHECKOUT / in_checkout).is_dir():
        return _CHECKOUT / in_checkout
    return _PACKAGE / "_bundled" / installed


def corpus() -> Path:
    """The corpus shipped with beavertui: the checkout's corpus/, else the installed copy."""
    return _find("corpus", "corpus")


def demo_sessions() -> Path:
    """The demo sessions: the checkout's sessions/demo, else the installed copy."""
    return _find("sessions/demo", "demo")


#: The demo a plain ``--demo`` runs: a wrong guess, a typo, then the repair (transpose_00, three iterations).
DEFAULT_DEMO = "repair_in_three"


def demo_names() -> list[str]:
    """Names of the bundled demo sessions that can run again (``live --demo NAME``): those whose replies
    ship beside them (``replies/<name>.toml``), so that a scripted model can send them once more."""
    folder = demo_sessions()
    return sorted(p.stem for p in folder.glob("*.jsonl") if (folder / "replies" / f"{p.stem}.toml").is_file())


def demo_replies(name: str) -> Path:
    """The reply script of the demo ``name``."""
    return demo_sessions() / "replies" / f"{name}.toml"


def demo_path(spec: str) -> Path | None:
    """A path given as ``demo:NAME`` (or ``demo:`` for the folder), or under ``sessions/demo/`` when no such
    file is here: the bundled copy, so that the README's paths work from any folder; None otherwise."""
    name: str | None = None
    if spec.startswith("demo:"):
        name = spec.removeprefix("demo:")
    else:
        parts = Path(spec).parts
        if len(parts) >= 2 and parts[:2] == ("sessions", "demo") and not Path(spec).exists():
            name = str(Path(*parts[2:])) if len(parts) > 2 else ""
    if name is None:
        return None
    folder = demo_sessions()
    if not name:
        return folder
    path = folder / name
    if not path.exists() and (folder / f"{name}.jsonl").is_file():
        return folder / f"{name}.jsonl"
    return path


def demo_of_task(task_id: str) -> str | None:
    """The demo that runs ``task_id`` (the default demo first where two do), or None."""
    names = sorted(demo_names(), key=lambda n: n != DEFAULT_DEMO)
    return next((n for n in names if _task_of(n) == task_id), None)


def demo_tasks() -> list[str]:
    """The tasks the bundled demos run, each once."""
    return sorted({t for n in demo_names() if (t := _task_of(n)) is not None})


def _task_of(name: str) -> str | None:
    import json

    try:
        with open(demo_sessions() / f"{name}.jsonl", encoding="utf-8") as fh:
            header = json.loads(fh.readline())
    except (OSError, ValueError):
        return None
    task = header.get("task") if isinstance(header, dict) else None
    return task.get("id") if isinstance(task, dict) and isinstance(task.get("id"), str) else None
