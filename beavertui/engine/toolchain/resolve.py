"""One place that turns a toolchain name into a Toolchain: ``local`` (this machine's GPU), ``recorded:PATH`` or
``demo`` (the outcomes recorded in the bundled demo sessions).

``live``, ``branch``, ``attribute`` and ``check`` build theirs with ``build_toolchain``; a batch parses the
same names with ``parse_toolchain`` and wraps them in its scheduler (batch/placement.py), locally or on Ray.
The local toolchain is only handed out where a GPU is visible and, when a task is given, where that task
can run; both refusals are one line that says what to do instead.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Literal

from beavertui.engine.corpus.task import Task
from beavertui.engine.errors import BeaverError, NoGpuError
from beavertui.engine.toolchain.base import Toolchain

if TYPE_CHECKING:
    from beavertui.engine.toolchain.local import LocalConfig

Kind = Literal["local", "recorded"]
Unknown = Literal["error", "fail"]


#: What ``require_gpu`` suggests on a machine without a GPU.
NO_GPU = (
    "no NVIDIA GPU visible, so nothing can be built and run here: `beavertui live --demo` and `beavertui "
    "batch --demo` run whole sessions on the bundled demos' recorded H200 outcomes (no GPU, no key); "
    "`beavertui replay SESSION` shows a recorded session"
)

#: What ``live`` and ``batch`` add to it: their flag that runs any model without a GPU.
NO_GPU_TOOLCHAIN = (
    "; --toolchain demo judges any model's candidates by those outcomes (recorded:PATH by other recordings)"
)


def parse_toolchain(spec: str) -> tuple[Kind, str | None]:
    """(``local``, None) or (``recorded``, PATH); ``demo`` is the bundled demo sessions' recorded outcomes;
    anything else is a one-line error."""
    if spec == "local":
        return "local", None
    if spec == "demo":
        from beavertui.engine import bundled

        return "recorded", str(bundled.demo_sessions())
    if spec.startswith("recorded:") and spec.split(":", 1)[1]:
        return "recorded", spec.split(":", 1)[1]
    raise BeaverError(f"toolchain {spec!r}: expected local, demo or recorded:PATH")


def require_gpu(task: Task | None = None) -> None:
    """Refuse, in one line, when this machine cannot build and run ``task`` (or anything, without a task)."""
    from beavertui.engine.corpus.load import runnable_here
    from beavertui.engine.host.gpu import probe

    machine = probe()
    if machine.gpu is None:
        raise NoGpuError(NO_GPU)
    if task is not None:
        why = runnable_here(task, machine)
        if why is not None:
            raise BeaverError(f"task {task.id} cannot run here: {why}")


def build_toolchain(
    spec: str, task: Task | None = None, *, unknown: Unknown = "error", config: LocalConfig | None = None
) -> Toolchain:
    """The toolchain named by ``spec``; ``unknown``: what a recorded toolchain does with an unrecorded candidate;
    ``config``: the local toolchain's settings (service/environment.py ``local_config`` reads the user's)."""
    kind, path = parse_toolchain(spec)
    if kind == "recorded":
        from beavertui.engine.toolchain.recorded import RecordedToolchain

        assert path is not None
        return RecordedToolchain.load(path, unknown=unknown)
    require_gpu(task)
    from beavertui.engine.toolchain.local import LocalToolchain

    return LocalToolchain(config)
