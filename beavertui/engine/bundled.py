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
