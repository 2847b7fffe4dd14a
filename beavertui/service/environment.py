"""The environment variables beavertui's engine settings come from, read once where a command starts.

The engine reads no environment variable (tests/test_engine_environment.py checks it): a command, or the
service it calls, reads these here, checks each, and hands the engine typed options (``TimingConfig``,
``LocalConfig``) whose defaults are what an unset variable means. A value that is not one of a variable's
values is a one-line error naming the variable. docs/metrics.md (timing), docs/scheduling.md and
docs/security.md (CPUs and priority) say what each one does.

| variable | field | unset |
|---|---|---|
| ``BEAVERTUI_CORPUS`` (a folder) | ``default_corpus()``: the corpus of a command without ``--corpus`` | the bundled one |
| ``BEAVERTUI_TIMING`` (``inprocess`` or ``process``) | ``TimingConfig.inprocess`` | in process |
| ``BEAVERTUI_SIDE_BUDGET_MS`` (ms >= 0; 0: off) | ``TimingConfig.side_budget_ms`` | 2000 |
| ``BEAVERTUI_PRESTART`` (``all``, ``cupti``, ``off``) | ``TimingConfig.prestart`` | ``all`` |
| ``BEAVERTUI_GO_AT_EXIT`` (``1`` or ``0``) | ``TimingConfig.go_at_exit`` | off |
| ``BEAVERTUI_BUILD_NICE`` (0 to 19) | ``LocalConfig.build_nice`` | 0 |
| ``BEAVERTUI_BUILD_CPUS`` (a ``taskset -c`` list) | ``LocalConfig.build_cpus`` | every CPU |
| ``BEAVERTUI_TIMING_CPUS`` (a ``taskset -c`` list) | ``LocalConfig.timing_cpus`` | every CPU |
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from beavertui.engine.errors import BeaverError
from beavertui.engine.stage.stages import BUILD_NICE, StageConfig, parse_cpus
from beavertui.engine.timing.config import PRESTART, PRESTART_CHOICES, SIDE_BUDGET_MS, TimingConfig

if TYPE_CHECKING:
    from beavertui.engine.toolchain.local import LocalConfig

#: How native tasks are timed: ``inprocess`` (the default) or ``process`` (one process per side and round,
#: the contract of earlier releases).
INPROCESS_ENV = "BEAVERTUI_TIMING"
#: In-process timing: the most host time one side's round takes once 5 launches were timed, ms (0: off).
SIDE_BUDGET_ENV = "BEAVERTUI_SIDE_BUDGET_MS"
#: Which process-level timings start each run ahead of its turn (TimingConfig.prestart).
PRESTART_ENV = "BEAVERTUI_PRESTART"
#: ``1``: CUPTI runs started ahead are let go at the exit mark of the run before (TimingConfig.go_at_exit).
GO_AT_EXIT_ENV = "BEAVERTUI_GO_AT_EXIT"
#: Niceness added to build stages (``nice -n``, 0 to 19; 0: none).
BUILD_NICE_ENV = "BEAVERTUI_BUILD_NICE"
#: The CPUs build stages may use, as ``taskset -c`` takes them ("2-15"); unset: every CPU.
BUILD_CPUS_ENV = "BEAVERTUI_BUILD_CPUS"
#: The CPUs timing stages ("benchmark": the timed processes) may use; unset: every CPU.
TIMING_CPUS_ENV = "BEAVERTUI_TIMING_CPUS"

#: The corpus a command reads when it is given none (``--corpus``); unset: the one shipped with beavertui.
CORPUS_ENV = "BEAVERTUI_CORPUS"

#: Every variable this module reads.
VARIABLES = (
    CORPUS_ENV,
    INPROCESS_ENV,
    SIDE_BUDGET_ENV,
    PRESTART_ENV,
    GO_AT_EXIT_ENV,
    BUILD_NICE_ENV,
    BUILD_CPUS_ENV,
    TIMING_CPUS_ENV,
)


def _value(environ: Mapping[str, str] | None, name: str) -> str:
    return (os.environ if environ is None else environ).get(name, "").strip()


def default_corpus(environ: Mapping[str, str] | None = None) -> Path:
    """``$BEAVERTUI_CORPUS``, else the corpus shipped with beavertui (the checkout's corpus/ or the installed
    copy inside the package), wherever the command runs from."""
    from beavertui.engine import bundled

    value = _value(environ, CORPUS_ENV)
    return Path(value) if value else bundled.corpus()


def inprocess_setting(environ: Mapping[str, str] | None = None) -> bool:
    """In-process timing unless ``BEAVERTUI_TIMING=process``; any other value is an error (no typo falls back
    silently to one way or the other)."""
    value = _value(environ, INPROCESS_ENV) or "inprocess"
    if value not in ("inprocess", "process"):
        raise BeaverError(f"{INPROCESS_ENV}={value!r}: expected 'inprocess' or 'process'")
    return value == "inprocess"


def side_budget_setting(environ: Mapping[str, str] | None = None) -> float:
    """``BEAVERTUI_SIDE_BUDGET_MS`` (0: off), else 2000 ms; anything but milliseconds >= 0 is an error."""
    raw = _value(environ, SIDE_BUDGET_ENV)
    if not raw:
        return SIDE_BUDGET_MS
    try:
        value = float(raw)
    except ValueError:
        value = math.nan
    if not 0 <= value < math.inf:
        raise BeaverError(f"{SIDE_BUDGET_ENV}={raw!r}: expected milliseconds >= 0 (0 turns the budget off)")
    return value


def prestart_setting(environ: Mapping[str, str] | None = None) -> str:
    """``BEAVERTUI_PRESTART``, else ``all``; any other value is an error."""
    value = _value(environ, PRESTART_ENV) or PRESTART
    if value not in PRESTART_CHOICES:
        raise BeaverError(f"{PRESTART_ENV}={value!r}: expected one of {', '.join(PRESTART_CHOICES)}")
    return value


def go_at_exit_setting(environ: Mapping[str, str] | None = None) -> bool:
    """``BEAVERTUI_GO_AT_EXIT``: ``1`` on, ``0`` or unset off; anything else is an error."""
    value = _value(environ, GO_AT_EXIT_ENV) or "0"
    if value not in ("0", "1"):
        raise BeaverError(f"{GO_AT_EXIT_ENV}={value!r}: expected 1 or 0")
    return value == "1"


def build_nice_setting(environ: Mapping[str, str] | None = None) -> int:
    """``BEAVERTUI_BUILD_NICE``, else 0; anything but a whole number from 0 to 19 is an error."""
    raw = _value(environ, BUILD_NICE_ENV) or str(BUILD_NICE)
    if not (raw.isascii() and raw.isdecimal()) or not 0 <= int(raw) <= 19:
        raise BeaverError(f"{BUILD_NICE_ENV}={raw!r}: expected a niceness from 0 to 19 (0: none)")
    return int(raw)


def cpus_setting(var: str, environ: Mapping[str, str] | None = None) -> str | None:
    """A CPU list from the variable ``var``, else None (every CPU); a list that is not one, or names a CPU
    this process may not use, or leaves none, is an error."""
    raw = _value(environ, var)
    if not raw:
        return None
    try:
        cpus = parse_cpus(raw)
    except ValueError:
        raise BeaverError(f"{var}={raw!r}: expected a CPU list such as 2-15 or 0,2-7") from None
    usable = os.sched_getaffinity(0)
    if not cpus or not cpus <= usable:
        raise BeaverError(
            f"{var}={raw!r}: names CPUs this process may not use "
            f"({', '.join(map(str, sorted(cpus - usable)))}); it may use {len(usable)}"
        )
    return raw


def timing_config(environ: Mapping[str, str] | None = None, **fields: Any) -> TimingConfig:
    """The timing settings of the environment (``environ``, default this process's), ``fields`` over them."""
    read = TimingConfig(
        inprocess=inprocess_setting(environ),
        side_budget_ms=side_budget_setting(environ),
        prestart=prestart_setting(environ),
        go_at_exit=go_at_exit_setting(environ),
    )
    return replace(read, **fields)


def stage_config(environ: Mapping[str, str] | None = None, **fields: Any) -> StageConfig:
    """A stage configuration with the environment's build and timing CPU settings, ``fields`` over them."""
    read = StageConfig(
        build_nice=build_nice_setting(environ),
        build_cpus=cpus_setting(BUILD_CPUS_ENV, environ),
        timing_cpus=cpus_setting(TIMING_CPUS_ENV, environ),
    )
    return replace(read, **fields)


def local_config(environ: Mapping[str, str] | None = None, **fields: Any) -> LocalConfig:
    """The local toolchain's settings from the environment (``environ``, default this process's): timing's
    four and the build and timing CPUs, each checked; ``fields`` over them."""
    from beavertui.engine.toolchain.local import LocalConfig

    stage = stage_config(environ)
    read = LocalConfig(
        timing=timing_config(environ),
        build_nice=stage.build_nice,
        build_cpus=stage.build_cpus,
        timing_cpus=stage.timing_cpus,
    )
    return replace(read, **fields)
