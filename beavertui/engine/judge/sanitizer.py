"""compute-sanitizer: wrap a test command, run a tool, parse its records and its error summary.

memcheck runs after a failing or suspicious run (and on demand); racecheck, synccheck and initcheck run
on demand. Records become events.SanitizerRecord values. The parser works on text alone so recorded
logs can be re-read without a GPU. Running the command is sandbox.py's job; classifying is classify.py's.
"""

from __future__ import annotations

import re
import shlex

from beavertui.engine.session.facts import SanitizerRecord

TOOLS = ("memcheck", "racecheck", "synccheck", "initcheck")

_PREFIX = re.compile(r"^=+ ?(?P<body>.*)$")
_SKIP = re.compile(
    r"^(COMPUTE-SANITIZER|ERROR SUMMARY|LEAK SUMMARY|RACECHECK SUMMARY|Target application returned|"
    r"Error: (process didn't terminate|Target application terminated|No attachable)|"
    r"This is a warning|Program hit error \d+ on execution|Internal Sanitizer Error|$)",
    re.I,
)
_SIZE = re.compile(r"of size (\d+) bytes?", re.I)
_AT = re.compile(r"^at (?:0x[0-9a-f]+ in )?(?P<where>.+?)(?:\+0x[0-9a-f]+)?(?: in (?P<src>\S+))?$", re.I)
_THREAD = re.compile(r"by thread \(([^)]*)\) in block \(([^)]*)\)", re.I)
_ADDR = re.compile(r"(?:Address|Access to) (0x[0-9a-f]+)", re.I)
_HOST = re.compile(r"Host Frame:\s*(.+)$", re.I)
_BORING_FRAME = re.compile(
    r"libcuda\.so|libcudart|libc\.so|ld-linux|libpython|__libc_start|_start\b|\[0x[0-9a-f]+\]\s*$"
)


def _kind(header: str) -> str:
    h = re.sub(r"^(Error|Warning):\s*", "", header.strip())
    h = _SIZE.sub("", h).strip()
    h = re.sub(r"\s+at\s+.*$", "", h) if h.lower().startswith("race reported") else h
    h = re.sub(r"\s*\(error \d+\).*$", "", h)
    return h.rstrip(" .:")


def _kernel(where: str) -> str:
    """Kernel name from an ``at`` location: ``kern(float *, int)+0x70 in f.cu:5`` -> ``kern``."""
    name = where.strip()
    depth, cut = 0, len(name)
    for i, ch in enumerate(name):
        if ch == "(":
            if depth == 0 and i > 0:
                cut = i
                break
            depth += 1
    name = name[:cut].strip()
    name = re.sub(r"^void\s+", "", name)
    return name


def parse_records(log: str, tool: str | None = None) -> list[SanitizerRecord]:
    """Every record of a compute-sanitizer log (lines prefixed ``=========``)."""
    tool = tool or detect_tool(log)
    records: list[SanitizerRecord] = []
    cur: list[str] = []

    def flush() -> None:
        if cur:
            records.append(_record(tool or "memcheck", cur))
            cur.clear()

    for raw in log.splitlines():
        m = _PREFIX.match(raw.strip())
        if not m or not raw.lstrip().startswith("=="):
            continue
        body = m.group("body")
        indented = body.startswith("  ") or body.startswith("\t")
        text = body.strip()
        if not indented:
            flush()
            if _SKIP.match(text) or text.startswith("Saved host backtrace"):
                continue
            cur.append(text)
        elif cur:
            cur.append(text)
    flush()
    return records


def _record(tool: str, lines: list[str]) -> SanitizerRecord:
    header = lines[0]
    size_m = _SIZE.search(header)
    kernel = block = thread = address = detail = host = None
    at_header = re.search(r"\bat (\S.*?)(?: in \S+:\d+)?$", header) if "Race reported" in header else None
    if at_header:
        kernel = _kernel(at_header.group(1))
    for ln in lines[1:]:
        at = _AT.match(ln)
        if at and kernel is None:
            kernel = _kernel(at.group("where"))
            continue
        th = _THREAD.search(ln)
        if th:
            thread, block = f"({th.group(1)})", f"({th.group(2)})"
            continue
        ad = _ADDR.search(ln)
        if ad and address is None:
            address = ad.group(1)
            detail = ln
            continue
        hf = _HOST.search(ln)
        if hf:
            frame = hf.group(1).strip()
            if host is None or (_BORING_FRAME.search(host) and not _BORING_FRAME.search(frame)):
                host = frame
            continue
        if detail is None and not ln.lower().startswith(("saved host", "and is", "by thread")):
            detail = ln
    return SanitizerRecord(
        tool=tool,
        kind=_kind(header),
        size=int(size_m.group(1)) if size_m else None,
        kernel=kernel,
        block=block,
        thread=thread,
        address=address,
        detail=detail,
        host_frame=host,
        text="\n".join(lines),
    )


def error_count(log: str) -> int | None:
    """N of ``ERROR SUMMARY: N errors`` (summed over processes; racecheck: its summary's errors), or None.
    The line past the print limit, ``ERROR SUMMARY: M errors were not printed``, counts no error of its own
    (the M are among the N)."""
    hits = re.findall(r"ERROR SUMMARY: (\d+) errors?\b(?! were not printed)", log)
    if not hits:
        hits = re.findall(r"RACECHECK SUMMARY: \d+ hazards? displayed \((\d+) errors?", log)
    return sum(int(h) for h in hits) if hits else None


def detect_tool(log: str) -> str | None:
    """Which tool wrote a log, from its records."""
    if re.search(r"Race reported|RACECHECK SUMMARY|hazard", log, re.I):
        return "racecheck"
    if re.search(r"Barrier error|synccheck|Invalid arguments? to barrier", log, re.I):
        return "synccheck"
    if re.search(r"Uninitialized __\w+__ memory", log, re.I):
        return "initcheck"
    if "=========" in log:
        return "memcheck"
    return None


def harness_runs_sanitizer(test_command: str) -> bool:
    """The test command runs compute-sanitizer itself (it cannot be nested)."""
    return bool(re.search(r"compute-sanitizer|run_sanitizer|cuda-memcheck", test_command))


def wrap(test_command: str, tool: str, exe: str = "compute-sanitizer", extra: tuple[str, ...] = ()) -> str:
    """The test command under ``tool``: direct for one binary, through bash for anything else."""
    if tool not in TOOLS:
        raise ValueError(f"unknown compute-sanitizer tool {tool!r}")
    opts = [exe, "--tool", tool, "--print-limit", "100", *extra]
    if tool == "racecheck":
        opts += ["--racecheck-report", "analysis"]
    words = shlex.split(test_command) if _simple(test_command) else []
    if len(words) >= 1 and words[0].startswith("./") and not words[0].endswith(".py"):
        return " ".join(shlex.quote(w) for w in [*opts, *words])
    opts += ["--target-processes", "all"]
    return " ".join(shlex.quote(w) for w in [*opts, "/bin/bash", "-c", test_command])


def _simple(cmd: str) -> bool:
    return not re.search(r"[;&|<>()$`]", cmd)
