"""thunderkittens: a drop-in kernel file inside a ThunderKittens kernel folder, built with ``make GPU=...``
against the release's ThunderKittens; its kernels use wgmma, so Hopper only (docs/release-families.md)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from beavertui.engine.corpus.families.base import Family
from beavertui.engine.corpus.task import Task

if TYPE_CHECKING:
    from beavertui.engine.host.gpu import Machine


@dataclass(frozen=True)
class ThunderKittens(Family):
    """Drop-in, with the ThunderKittens library linked and a Hopper GPU."""

    def runnable_here(self, task: Task, machine: Machine) -> str | None:
        if machine.sm is not None and machine.sm // 10 != 9:
            return f"ThunderKittens kernels of the release use wgmma (sm_90a, Hopper only); this GPU is sm_{machine.sm}"
        return None


THUNDERKITTENS = ThunderKittens(
    "thunderkittens", summary="the testbench's own kernel file (drop-in)",
    libraries=frozenset({"ThunderKittens"}), names=frozenset({"thunderkittens"}), level=False,
)  # fmt: skip
