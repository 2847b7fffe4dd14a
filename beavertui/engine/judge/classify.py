"""The eight-category classifier of docs/format.md (Outcome categories), from logs alone.

Input is what an attempt left behind (build and run exit codes and logs, whether the runner's time
limit fired, an optional compute-sanitizer log); output is one category, the normalised error
signature and the decisive lines. Priority order and the sanitizer override follow docs/format.md (categories) to
the letter. This module never runs anything and needs no GPU.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from beavertui.engine.judge.categories import BUILD_STAGE, Category
from beavertui.engine.judge.evidence import (
    BUILD_ENV,
    BUILD_ERROR,
    FUNCTIONAL,
    IMA,
    INTEGRATION,
    OOM,
    RUN_BUILD,
    RUN_ENV,
    SIGNAL_NAMES,
)
from beavertui.engine.judge.sanitizer import parse_records


@dataclass(frozen=True)
class Classification:
    """The verdict on an attempt's logs."""

    category: Category
    signature: str
    decisive: tuple[str, ...]
    stage: str
    """``build``, ``run``, ``sanitizer`` or ``none`` (passed)."""


# ----------------------------------------------------------------------------------- signatures

#: A path: absolute (``/usr/bin/ld``), or relative whose last part has an extension (``include/a.h``).
_PATH = re.compile(
    r"(?<![\w/])(?:/[\w.+~-]+)*(?:/[\w.+~-]*)?/([\w.+-]+)|(?<![\w/])(?:[\w.+~-]+/)+([\w+-]+\.[\w.+-]+)"
)
_HEX = re.compile(r"0x[0-9a-fA-F]+|\b(?=[0-9a-f]*\d)(?=[0-9a-f]*[a-f])[0-9a-f]{6,}\b")
_NUM = re.compile(r"(?<![A-Za-z_0-9])[-+]?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?")
_SAN_PREFIX = re.compile(r"^=+\s*")
#: ``/usr/bin/ld: tmpxft_..._main.cudafe1.cpp:(.text.startup+0x2ad): `` before a linker message.
_LINKER_SITE = re.compile(r"^(?:\S*ld(?:\.\w+)?: )?\S+:\(\.[\w.]+\+0x[0-9a-fA-F]+\): ")
_TMPXFT = re.compile(r"tmpxft_[0-9a-fA-F]+_[0-9a-fA-F]+-\d+")


def normalise(line: str) -> str:
    """Paths to file names, hex and numbers to placeholders, whitespace folded."""
    s = _SAN_PREFIX.sub("", line.strip())
    s = _LINKER_SITE.sub("", s)
    s = _TMPXFT.sub("tmpxft", s)
    s = _PATH.sub(lambda m: m.group(1) or m.group(2), s)
    s = _HEX.sub("<hex>", s)
    s = _NUM.sub("#", s)
    s = re.sub(r"\s+", " ", s).strip()
    return s[:240]


def _first(patterns: list[re.Pattern[str]], text: str) -> re.Match[str] | None:
    best: re.Match[str] | None = None
    for p in patterns:
        m = p.search(text)
        if m and (best is None or m.start() < best.start()):
            best = m
    return best


def _line_at(text: str, pos: int, after: int = 3) -> tuple[str, tuple[str, ...]]:
    start = text.rfind("\n", 0, pos) + 1
    end = text.find("\n", pos)
    line = text[start : end if end >= 0 else len(text)]
    following = text[end + 1 :].splitlines()[:after] if end >= 0 else []
    return line, (line, *following)


def _result(cat: Category, text: str, m: re.Match[str] | None, stage: str, fallback: str) -> Classification:
    if m is None:
        return Classification(cat, normalise(fallback), (fallback,) if fallback else (), stage)
    line, lines = _line_at(text, m.start())
    return Classification(cat, normalise(line), lines, stage)


def _build_error_line(text: str) -> re.Match[str] | None:
    m = re.search(r"(\berror\b\s*:|catastrophic error|fatal error)", text, re.I)
    return m or BUILD_ERROR.search(text)


#: The signature of a build that hit its time limit (category ``timeout``, stage ``build``).
BUILD_TIMEOUT_SIGNATURE = "timeout: build stage"


def compiled(category: str, signature: str | None) -> bool:
    """Whether an attempt's build succeeded: its category is not a build-stage one, and it is not a build
    that hit its time limit (category ``timeout`` with BUILD_TIMEOUT_SIGNATURE, which the category alone
    does not tell from a run that hit it)."""
    if category in BUILD_STAGE:
        return False
    return not (category == "timeout" and signature == BUILD_TIMEOUT_SIGNATURE)


def _classify_build(text: str, timed_out: bool) -> Classification | None:
    m = _first(BUILD_ENV, text)
    if m:
        return _result("environment_dependency", text, m, "build", "")
    m = _first(INTEGRATION, text)
    if m:
        return _result("integration", text, m, "build", "")
    if timed_out:
        return None
    m = _build_error_line(text)
    return _result("buildability", text, m, "build", _last_line(text) or "build failed")


def _last_line(text: str) -> str:
    lines = [ln for ln in text.splitlines() if ln.strip()]
    return lines[-1] if lines else ""


def _signal_of(rc: int | None) -> int | None:
    if rc is None:
        return None
    if rc < 0:
        return -rc
    if rc > 128 and rc - 128 in SIGNAL_NAMES:
        return rc - 128
    return None


def classify(
    build_rc: int | None,
    build_log: str,
    run_rc: int | None,
    run_log: str,
    timed_out: bool,
    sanitizer_log: str | None = None,
    run_signal: int | None = None,
) -> Classification:
    """Classify one attempt (docs/format.md (categories) priority order).

    ``run_signal`` is the signal that ended the test command when the runner knows it (its rc is then
    None); a shell's ``128 + N`` exit status is read as signal N as well.
    """
    build_log = _clip(build_log or "")
    run_log = _clip(run_log or "")
    sanitizer_log = _clip(sanitizer_log) if sanitizer_log else sanitizer_log
    # 1. build stage (including a build the test command performs itself)
    if build_rc is not None and build_rc != 0:
        c = _classify_build(build_log, timed_out)
        if c is not None:
            return c
        return Classification("timeout", BUILD_TIMEOUT_SIGNATURE, (_last_line(build_log),), "build")
    if build_rc is None and timed_out and not run_log:
        return Classification("timeout", BUILD_TIMEOUT_SIGNATURE, (_last_line(build_log),), "build")
    if run_rc != 0 and _first(RUN_BUILD, run_log):
        c = _classify_build(run_log, timed_out)
        if c is not None:
            return c
    # 2. timeout
    if timed_out:
        return Classification("timeout", "timeout: run stage", tuple(run_log.splitlines()[-3:]), "run")
    # 3. run stage evidence
    m = _first(RUN_ENV, run_log)
    if m:
        return _result("environment_dependency", run_log, m, "run", "")
    m = _first(OOM, run_log)
    if m:
        return _result("out_of_memory", run_log, m, "run", "")
    recs = parse_records(run_log)
    access = [r for r in recs if _is_access(r.kind)]
    if access:
        r = access[0]
        return Classification(
            "illegal_memory_access", _record_signature(r), tuple(r.text.splitlines()), "run"
        )
    m = _first(IMA, run_log)
    sig = run_signal if run_signal is not None and not timed_out else _signal_of(run_rc)
    if m:
        return _result("illegal_memory_access", run_log, m, "run", "")
    if sig in (11, 7):
        name = SIGNAL_NAMES[sig]
        return Classification("illegal_memory_access", f"killed by {name}", (f"killed by {name}",), "run")
    # 4. sanitizer override
    if sanitizer_log:
        override = _sanitizer_override(sanitizer_log)
        if override is not None:
            return override
    # 5. passed or functional_correctness
    if run_rc == 0:
        return Classification("passed", "", (), "none")
    return _functional(run_log, run_rc, sig)


_MAX_LINE = 2000
_MAX_TEXT = 512 * 1024


def _clip(text: str) -> str:
    """Bound the work of the patterns: lines cut to 2000 characters, the text to its head and tail."""
    if len(text) > _MAX_TEXT:
        text = text[: _MAX_TEXT // 2] + "\n" + text[-_MAX_TEXT // 2 :]
    if len(text) <= _MAX_LINE or max(map(len, text.split("\n"))) <= _MAX_LINE:
        return text
    return "\n".join(line[:_MAX_LINE] for line in text.split("\n"))


def _is_access(kind: str) -> bool:
    k = kind.lower()
    return ("invalid" in k and any(w in k for w in ("read", "write", "atomic", "access"))) or (
        "misaligned" in k or "out-of-range" in k or "out of bounds" in k
    )


def _record_signature(r: Any) -> str:
    where = f" in {r.kernel}" if r.kernel else ""
    return normalise(f"{r.tool}: {r.kind}{where}")


def _sanitizer_override(log: str) -> Classification | None:
    m = re.search(r"ERROR SUMMARY: (\d+) error", log)
    if not m or int(m.group(1)) == 0:
        return None
    access = [r for r in parse_records(log) if _is_access(r.kind)]
    if not access:
        return None
    r = access[0]
    return Classification(
        "illegal_memory_access", _record_signature(r), tuple(r.text.splitlines()), "sanitizer"
    )


def _functional(run_log: str, run_rc: int | None, sig: int | None) -> Classification:
    strong = re.compile(
        r"(Assertion .* failed|AssertionError|device-side assert|mismatch|\bFAIL(ED)?\b|incorrect|"
        r"not correct|does not match|correctness=False|Floating point exception)",
        re.I | re.M,
    )
    m = strong.search(run_log)
    if m:
        return _result("functional_correctness", run_log, m, "run", "")
    if sig is not None:
        name = SIGNAL_NAMES.get(sig, f"signal {sig}")
        return Classification("functional_correctness", f"killed by {name}", (f"killed by {name}",), "run")
    m = FUNCTIONAL.search(run_log)
    if m:
        return _result("functional_correctness", run_log, m, "run", "")
    last = _last_line(run_log)
    if last:
        return Classification("functional_correctness", normalise(last), (last,), "run")
    return Classification("functional_correctness", f"exit status {run_rc}", (), "run")


# ----------------------------------------------------------------------------------- JSON lines

_KEYS: dict[str, tuple[type, ...]] = {
    "build_rc": (int,),
    "build_log": (str,),
    "run_rc": (int, type(None)),
    "run_log": (str,),
    "timed_out": (bool,),
    "sanitizer_log": (str, type(None)),
    "run_signal": (int, type(None)),
}


def classify_record(obj: Any) -> dict[str, Any]:
    """Classify one parsed JSON-Lines record; raises ValueError naming the bad key."""
    if not isinstance(obj, dict):
        raise ValueError(f"expected a JSON object, got {type(obj).__name__}")
    for key, types in _KEYS.items():
        if key in ("sanitizer_log", "run_signal") and key not in obj:
            continue
        if key not in obj:
            raise ValueError(f"missing key {key!r}")
        value = obj[key]
        if isinstance(value, bool) and bool not in types:
            raise ValueError(f"key {key!r} must be {types[0].__name__}")
        if not isinstance(value, types):
            raise ValueError(f"key {key!r} must be {' or '.join(t.__name__ for t in types)}")
    c = classify(
        obj["build_rc"],
        obj["build_log"],
        obj["run_rc"],
        obj["run_log"],
        obj["timed_out"],
        obj.get("sanitizer_log"),
        obj.get("run_signal"),
    )
    return {"category": c.category, "signature": c.signature, "decisive": list(c.decisive), "stage": c.stage}
