"""Adapt a task's shell commands and environment to this machine (docs/format.md, Tasks).

The release's commands were written for another machine: they call ``python``, name an architecture
family in ``set_gpu_arch([...])`` or ``make GPU=...``, and import a vendored ``kernelbench`` package.
Here ``python`` becomes the current interpreter, the family becomes the local GPU's, and the vendored
package goes on PYTHONPATH. Only text is rewritten; nothing runs here.
"""

from __future__ import annotations

import os
import re
import shlex
import sys
from collections.abc import Mapping
from pathlib import Path

from beavertui.engine.host.gpu import arch_family, tk_gpu

#: ``python``/``python3`` in command position: at the start or after a separator, ``(``, ``$(``, ``env`` or
#: variable assignments.
_PYTHON = re.compile(r"(?P<pre>(?:^|[;&|(]|\$\(|&&|\|\|)\s*(?:env\s+)?(?:\w+=\S*\s+)*)python3?(?=\s|$)")
_SET_ARCH = re.compile(r"set_gpu_arch\(\s*\[[^\]]*\]\s*\)")
_MAKE_GPU = re.compile(r"(\bmake\b[^;&|]*?\bGPU=)([A-Za-z0-9_]+)")


def adapt_command(command: str, sm: int | None, python: str | None = None) -> str:
    """Rewrite ``command`` for this machine (interpreter; arch family when ``sm`` is known)."""
    exe = shlex.quote(python or sys.executable)
    out = _PYTHON.sub(lambda m: f"{m.group('pre')}{exe}", command)
    if sm is not None:
        family = arch_family(sm)
        out = _SET_ARCH.sub(f"set_gpu_arch(['{family}'])", out)
        out = _MAKE_GPU.sub(lambda m: f"{m.group(1)}{tk_gpu(sm)}", out)
    return out


def adapt_env(env: Mapping[str, str], pythonpath: tuple[Path, ...], sm: int | None) -> dict[str, str]:
    """The environment for a task's commands: vendored packages on PYTHONPATH, arch list for torch."""
    out = dict(env)
    if pythonpath:
        parts = [str(p) for p in pythonpath]
        if out.get("PYTHONPATH"):
            parts.append(out["PYTHONPATH"])
        out["PYTHONPATH"] = os.pathsep.join(parts)
    if sm is not None and "TORCH_CUDA_ARCH_LIST" not in out:
        out["TORCH_CUDA_ARCH_LIST"] = f"{sm // 10}.{sm % 10}"
    out.setdefault("PYTHONDONTWRITEBYTECODE", "1")
    return out
