"""Bounded number types: every numeric option of every command is read by one of these.

A number from outside is checked once, here, as the parser reads it: it must be a finite number (NaN and
the infinities are refused) of the option's kind within the range the product can use, else the parser
refuses it in one line naming the flag (``beavertui: --samples must be 1 to 1,000, not 0``, exit status 2;
cli.py's parser prints it). Protocol and endpoint ranges come from engine/limits.py, which the models
reading protocol and models files use too. tests/commands/test_numeric_options.py walks every command's
options and fails on a numeric one read without a bounded type or choices.
"""

from __future__ import annotations

import argparse
import math

#: Most sessions (batch, reproduce) in flight at once.
MAX_JOBS = 100_000
#: Most correctness runs sharing one GPU at once.
MAX_GPU_SHARE = 1024
#: Most workers, GPU jobs or drivers a corpus command runs side by side.
MAX_WORKERS = 1024
#: Highest GPU index a GPU list may name.
MAX_GPU_INDEX = 1023
#: Most timed or untimed calls per variant of a timing.
MAX_TRIALS = 10_000
#: Most fresh oracle calls a task may make in one minimal-fix search.
MAX_CALLS = 100_000
#: Longest wall-clock budget a command takes, in seconds: 30 days.
MAX_WALL_S = 30 * 86_400.0
#: Fewest and most bootstrap resamples (docs/metrics.md); the resampling's memory and time grow with them
#: (unbounded, 15 GB in 40 s).
MIN_RESAMPLES = 1000
MAX_RESAMPLES = 100_000
#: Longest text of a refused value echoed back (longer ones are cut, control characters escaped).
SHOWN_CHARS = 40


def _number(value: float) -> str:
    """``value`` with thousands separators: 1,000; 86,400; 0.7."""
    if isinstance(value, int) or value.is_integer():
        return f"{int(value):,}"
    return f"{value:,g}"


def _shown(text: str) -> str:
    """The refused text as given, unless it holds control characters or is long: then escaped and cut."""
    if text.isprintable() and len(text) <= SHOWN_CHARS:
        return text
    cut = text[:SHOWN_CHARS]
    return ascii(cut) + ("..." if len(text) > SHOWN_CHARS else "")


class Bounded:
    """The argparse type of a number of ``kind`` from ``lo`` to ``hi`` (``lo`` itself excluded when ``above``).

    ``unit`` (e.g. ``seconds``) follows the range in the refusal and in ``text()``.
    """

    def __init__(
        self, kind: type[int] | type[float], lo: float, hi: float, *, above: bool = False, unit: str = ""
    ) -> None:
        if not lo <= hi:
            raise ValueError(f"empty range {lo} to {hi}")
        self.kind, self.lo, self.hi, self.above, self.unit = kind, lo, hi, above, unit
        self.__name__ = kind.__name__  # argparse names the type by it

    def text(self) -> str:
        """The range in words: ``1 to 1,000``, ``above 0 and at most 1``, ``0 to 86,400 seconds``."""
        lo, hi = _number(self.lo), _number(self.hi)
        words = f"above {lo} and at most {hi}" if self.above else f"{lo} to {hi}"
        return f"{words} {self.unit}" if self.unit else words

    def holds(self, value: float) -> bool:
        """Whether ``value`` is finite and within the range."""
        if (isinstance(value, float) and not math.isfinite(value)) or value > self.hi:
            return False
        return value > self.lo if self.above else value >= self.lo

    def __call__(self, text: str) -> int | float:
        try:
            value: int | float = self.kind(text)
        except (ValueError, OverflowError):
            value = math.nan
        if not self.holds(value):
            raise argparse.ArgumentTypeError(f"must be {self.text()}, not {_shown(text)}")
        return value

    def __repr__(self) -> str:
        return f"{self.kind.__name__} {self.text()}"


def int_in(lo: int, hi: int, *, unit: str = "") -> Bounded:
    """A whole number from ``lo`` to ``hi``."""
    return Bounded(int, lo, hi, unit=unit)


def float_in(lo: float, hi: float, *, above: bool = False, unit: str = "") -> Bounded:
    """A finite number from ``lo`` (excluded when ``above``) to ``hi``."""
    return Bounded(float, lo, hi, above=above, unit=unit)


class GpuList:
    """The argparse type of GPUs named as ``CUDA_VISIBLE_DEVICES`` takes them: indices from 0 to
    ``MAX_GPU_INDEX`` or ``GPU-``/``MIG-`` UUIDs, comma-separated (only one when ``single``); returns the
    list as given, spaces and empty items left out."""

    def __init__(self, *, single: bool = False) -> None:
        self.single = single
        self.__name__ = "GPU"

    def text(self) -> str:
        what = "a GPU index" if self.single else "GPU indices"
        uuid = "its UUID" if self.single else "UUIDs, comma-separated"
        return f"{what} 0 to {MAX_GPU_INDEX:,} or {uuid}"

    def __call__(self, text: str) -> str:
        items = [g.strip() for g in text.split(",") if g.strip()]
        ok = bool(items) and (len(items) == 1 or not self.single)
        for g in items:
            if g.isdecimal() and g.isascii():
                ok = ok and int(g) <= MAX_GPU_INDEX
            else:
                ok = ok and g.startswith(("GPU-", "MIG-")) and g.isprintable() and len(g) <= 100
        if not ok:
            raise argparse.ArgumentTypeError(f"must be {self.text()}, not {_shown(text)}")
        return ",".join(items)


_SLUG_CHARS = frozenset("abcdefghijklmnopqrstuvwxyz0123456789_")


class GpuSlug:
    """The argparse type of a GPU signature as the stores name their folders and files
    (``nvidia_h200_sm_90_cuda_13_0``: lower-case letters, digits and ``_``, engine/host/gpu.py): anything
    else names no store, and ``../`` or a control character would reach a path or the terminal."""

    __name__ = "GPU signature"

    def text(self) -> str:
        return "a GPU signature such as nvidia_h200_sm_90_cuda_13_0 (lower-case letters, digits and _)"

    def __call__(self, text: str) -> str:
        if not (0 < len(text) <= 120 and all(c in _SLUG_CHARS for c in text)):
            raise argparse.ArgumentTypeError(f"must be {self.text()}, not {_shown(text) or 'empty'}")
        return text
