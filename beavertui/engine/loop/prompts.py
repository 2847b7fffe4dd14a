"""The words the model reads: the first turn, the feedback after each attempt (L0-L4, L3_raw) and the history window.

Feedback quotes what the engine observed, never a summary written by a model: the decisive lines and raw
log excerpts come from the recorded events (Verdict.decisive, the build/run logs, sanitizer records,
timing). Everything is a pure function of the task and the folded state, so a session's messages can be
rebuilt and checked later. This module must not run anything or decide categories.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Sequence

from beavertui.engine.code.extract import strip_think
from beavertui.engine.code.features import extract
from beavertui.engine.corpus.task import Task
from beavertui.engine.judge.classify import compiled
from beavertui.engine.session.describe import command_text, duration_text, stage_status
from beavertui.engine.session.events import KernelMetrics, Message, Sanitized, StageResult, Verdict
from beavertui.engine.session.protocol import Feedback
from beavertui.engine.session.state import AttemptState

FENCE_TAG = {"cuda": "cuda", "cpp": "cpp", "python": "python"}

LOG_HEAD_LINES = 40
LOG_TAIL_LINES = 40
LOG_MAX_CHARS = 6000
MAX_SANITIZER_RECORDS = 5
#: L2 quotes at most this many compiler error lines (the release's _feedback_l2_gb).
COMPILER_ERROR_LINES = 5
MAX_WARNING_LINES = 10
#: L3_raw (the release's harness/feedback.py _feedback_generic): a build and test output longer than
#: RAW_LOG_LIMIT characters keeps its first and last half of it; the previous code is cut to RAW_CODE_LIMIT.
RAW_LOG_LIMIT = 3000
RAW_CODE_LIMIT = 2000
_ERROR = re.compile(r"\berror\b", re.IGNORECASE)
_WARNING = re.compile(r"\bwarning\b", re.IGNORECASE)


def fence(language: str) -> str:
    return FENCE_TAG.get(language, language)


def system_message(task: Task) -> Message:
    tag = fence(task.language)
    return Message(
        role="system",
        content=(
            "You are an expert GPU programmer. You repair broken CUDA programs so that they build, run "
            "correctly against the task's own test harness, and stay fast. Reply with the complete, "
            f"corrected contents of `{task.solution_file}` in a single ```{tag} code block; the last "
            f"```{tag} block of your reply is built as that file."
        ),
    )


def excerpt(
    log: str, head: int = LOG_HEAD_LINES, tail: int = LOG_TAIL_LINES, limit: int = LOG_MAX_CHARS
) -> str:
    """The head and tail of a log, verbatim, with the number of lines left out in between."""
    lines = log.rstrip("\n").splitlines()
    if len(lines) > head + tail:
        lines = [*lines[:head], f"[... {len(lines) - head - tail} lines omitted ...]", *lines[-tail:]]
    text = "\n".join(lines)
    if len(text) > limit:
        half = limit // 2
        text = f"{text[:half]}\n[... {len(text) - 2 * half} characters omitted ...]\n{text[-half:]}"
    return text


def stage_log(result: StageResult) -> str:
    """A stage as the model sees it: the command, its exit status and its output excerpt."""
    if result.timed_out:
        status = f"stopped by the time limit after {duration_text(result, 1)}"
    elif result.signal:
        status = f"killed by signal {result.signal}"
    elif result.rc is None and "rc" in result.unrecorded:
        status = stage_status(result)
    else:
        status = f"exit status {result.rc}"
    body = excerpt(result.log) if result.log.strip() else "(no output)"
    return f"$ {command_text(result)}\n{body}\n[{status}]"


def first_turn(task: Task, start_log: str | None, log_source: str) -> list[Message]:
    """System message plus the task prompt, the broken start and its real error log.

    ``log_source`` says where the log comes from ('recorded with the task' or 'a fresh check').
    """
    tag = fence(task.language)
    parts = [
        task.prompt().strip(),
        "",
        f"The current `{task.solution_file}` is broken:",
        f"```{tag}\n{task.broken_start().rstrip()}\n```",
    ]
    if start_log and start_log.strip():
        parts += ["", f"Its error log ({log_source}):", f"```text\n{excerpt(start_log)}\n```"]
    parts += [
        "",
        f"Repair it. Reply with the complete corrected `{task.solution_file}` in one ```{tag} block.",
    ]
    return [system_message(task), Message(role="user", content="\n".join(parts))]


def _speed_line(v: Verdict) -> str:
    if v.speedup is None:
        return "Its speed was not measured."
    return f"It runs at {v.speedup:.2f}x the reference speed (the gate is {v.gate:g}x)."


def _profile_text(attempt: AttemptState) -> list[str]:
    """L4: ncu metrics of the candidate's kernels beside the reference's, or why there are none."""
    p = attempt.profile
    if p is None:
        ran = attempt.run is not None and not attempt.run.result.timed_out
        why = "no profile was recorded for this attempt" if ran else "it did not run, so it was not profiled"
        return [f"Profiler (ncu): {why}."]
    from beavertui.engine.timing.profile import KernelProfile, profile_lines

    def kp(items: Sequence[KernelMetrics]) -> list[KernelProfile]:
        return [KernelProfile(k.name, k.launches, dict(k.metrics), dict(k.stalls)) for k in items]

    lines = ["Profiler metrics (ncu), your kernels beside the reference's:", "```text"]
    lines += profile_lines(kp(p.candidate), kp(p.reference))
    return [*lines, "```"]


def _sanitizer_text(runs: Sequence[Sanitized]) -> list[str]:
    out: list[str] = []
    for s in runs:
        count = "no summary" if s.error_count is None else f"{s.error_count} errors"
        out.append(f"compute-sanitizer --tool {s.tool}: {count}")
        for r in s.records[:MAX_SANITIZER_RECORDS]:
            out.append(r.text.rstrip() if r.text.strip() else f"{r.kind} in {r.kernel or '?'}")
        if len(s.records) > MAX_SANITIZER_RECORDS:
            out.append(f"[... {len(s.records) - MAX_SANITIZER_RECORDS} more records ...]")
    return out


def static_text(attempt: AttemptState) -> list[str]:
    """The ``static`` component: the build's warning lines and a lint of the candidate's source from its
    static features (engine/code/features.py). Nothing here needs the kernel to run."""

    logs = [s.result.log for s in (attempt.build, attempt.run) if s is not None]
    warnings = list(
        dict.fromkeys(ln.strip() for log in logs for ln in log.splitlines() if _WARNING.search(ln))
    )
    lines = ["Static analysis:", "```text"]
    if warnings:
        lines.append(f"Compiler warnings ({len(warnings)}):")
        lines += warnings[:MAX_WARNING_LINES]
        if len(warnings) > MAX_WARNING_LINES:
            lines.append(f"[... {len(warnings) - MAX_WARNING_LINES} more warnings ...]")
    else:
        lines.append("Compiler warnings: none.")
    code = attempt.candidate.code if attempt.candidate is not None else None
    findings = lint(code) if code is not None else ["no code to lint"]
    lines += [f"Lint: {f}" for f in findings] or ["Lint: no findings."]
    return [*lines, "```"]


def lint(source: str) -> list[str]:
    """Findings of a simple lint of CUDA source, from its static features."""

    f = extract(source)
    out: list[str] = []
    if not f.has("kernel"):
        out.append("no __global__ kernel is defined")
    elif f.launches and not f.has("parallel_launch"):
        out.append("every kernel launch runs one thread (<<<1, 1>>>)")
    if f.has("shared_memory") and not f.has("barriers"):
        out.append("__shared__ memory is used without a barrier (__syncthreads or similar)")
    if f.library_calls:
        out.append("the computation is handed to a library: " + ", ".join(f.library_calls))
    return out


def compiler_errors(attempt: AttemptState) -> list[str]:
    """L2's compiler errors, as the release picks them: the first COMPILER_ERROR_LINES lines of the build
    output that say ``error`` and not ``warning``, else its first 1,000 characters. The build output is the
    build stage's log, or the test command's where it builds the code itself."""
    stage = attempt.build if attempt.build is not None and attempt.build.result.rc != 0 else attempt.run
    if stage is None:
        stage = attempt.build
    log = stage.result.log if stage is not None else ""
    picked = [ln.strip() for ln in log.splitlines() if _ERROR.search(ln) and not _WARNING.search(ln)]
    if picked:
        return picked[:COMPILER_ERROR_LINES]
    head = log[:1000].rstrip()
    return head.splitlines() if head else ["(no output)"]


def release_truncate(text: str, max_len: int, marker: str = "\n... [truncated] ...\n") -> str:
    """The release's ``_truncate``: the first and last half of ``max_len`` characters around a marker (the
    release cuts the build and test output the same way, with another marker)."""
    if len(text) <= max_len:
        return text
    half = max_len // 2
    return text[:half] + marker + text[-half:]


def _raw_output(stage: StageResult, marker: str) -> str:
    """A stage's output as the release's harness records it: stdout and stderr, stripped; a stage stopped by
    its time limit reads as the harness's marker alone."""
    return marker if stage.timed_out else stage.log.strip()


def raw_feedback(attempt: AttemptState, components: Collection[str] | None = None) -> str:
    """Feedback level L3_raw: the release's raw mode of L3 (``feedback_mode: raw``, harness/feedback.py
    ``_feedback_generic``), word for word: the build output, then the test output where the attempt ran, cut
    to the first and last 1,500 characters beyond 3,000, and the previous code cut to 2,000 characters. No
    category, no decisive lines, no sanitizer records, no timing, no hints. ``components`` keeps the build
    output (``compiler``) or the test output (``runtime``)."""
    build, run = attempt.build, attempt.run
    build_output = (
        _raw_output(build.result, "[BUILD TIMEOUT]")
        if build is not None and (components is None or "compiler" in components)
        else ""
    )
    test_output = (
        _raw_output(run.result, "[TEST TIMEOUT] Execution timed out")
        if run is not None and (components is None or "runtime" in components)
        else None
    )
    error_log = build_output
    if test_output:
        error_log += "\n" + test_output
    error_log = release_truncate(error_log, RAW_LOG_LIMIT, "\n...[truncated]...\n")
    code = attempt.candidate.code if attempt.candidate is not None and attempt.candidate.code else ""
    return "\n".join(
        [
            "Your previous solution did not pass. Here is the feedback:",
            "",
            "## Build / Test Output",
            "```",
            error_log,
            "```",
            "",
            "## Your Previous Code",
            "```cuda",
            release_truncate(code, RAW_CODE_LIMIT),
            "```",
            "",
            "Please fix the code. Output ONLY the corrected content of `solution.cu`.",
        ]
    )


def feedback(
    attempt: AttemptState,
    level: Feedback,
    language: str,
    components: Collection[str] | None = None,
) -> str:
    """The user message that follows an attempt, at feedback level L0..L4.

    Against the CUDABeaver release (harness/feedback.py): L0 is its L0 (the first turn again). L1 says the
    attempt failed and keeps the code in the assistant turn (the release quotes the code: the same
    information, other words). L2 is the release's: compiler error lines only (``compiler_errors``), and
    for an attempt that built and then failed, "Your code compiled but the test failed" with no test output.
    L3 is beavertui's: the outcome, decisive lines, the raw build or run log, sanitizer records and timing,
    where the release sends category templates with fixed hints (a listed departure). L3_raw is the release's
    raw mode of L3, word for word (``raw_feedback``). A build that hit its
    time limit did not compile (classify.compiled): its lines belong to the ``compiler`` component.

    ``components`` (Protocol.feedback_components) keeps only those parts of the level's message:
    ``compiler`` (build-stage outcome, decisive lines and build log), ``runtime`` (the same for later
    stages, and the run log), ``sanitizer``, ``timing`` (speed lines), ``profile`` (ncu) and ``static``
    (compiler warnings and a lint of the candidate, only when named: no level sends it by itself); None
    keeps all of the level's parts. An empty collection is the no-feedback condition: the L0 note, which
    says nothing about the attempt (not even that it failed).
    """

    def on(name: str) -> bool:
        return components is None or name in components

    tag = fence(language)
    ask = f"Reply with the complete corrected file in one ```{tag} block."
    if level == "L0" or (components is not None and not components):
        return f"Please give another attempt. {ask}"
    v = attempt.verdict
    candidate = attempt.candidate
    if v is None:
        return f"Your attempt could not be evaluated. Try again. {ask}"
    if candidate is not None and candidate.code is None:
        return f"Your reply contained no usable code: {candidate.no_code_reason or 'no code'}. {ask}"
    if level == "L3_raw":
        return raw_feedback(attempt, components)
    if v.correct and not v.success:
        head = "Your solution is correct but too slow."
    elif v.success:
        head = "Your solution passed."
    else:
        head = "Your solution failed."
    if level == "L1":
        return f"{head} Try again. {ask}"
    lines = [head]
    built = compiled(v.category, v.signature)
    outcome_part = "runtime" if built else "compiler"
    if v.correct:
        if on("timing"):
            lines.append(_speed_line(v))
    elif level == "L2":
        # the release's L2 (harness/feedback.py _feedback_l2_gb): compiler errors only; a run-time failure is
        # one line, without its category, logs or decisive lines
        if not built and on("compiler"):
            lines += [
                "Your code failed to compile.",
                "Compiler errors:",
                "```text",
                *compiler_errors(attempt),
                "```",
            ]
        elif built and on("runtime"):
            lines.append("Your code compiled but the test failed. Try a different approach.")
    elif on(outcome_part):
        lines.append(f"Outcome: {v.category}.")
        if v.decisive:
            lines += ["Decisive lines:", "```text", *v.decisive, "```"]
    if level in ("L3", "L4"):
        build_failed = attempt.build is not None and attempt.build.result.rc != 0
        if build_failed and attempt.build is not None:
            if on("compiler"):
                lines += ["Build log:", "```text", stage_log(attempt.build.result), "```"]
        elif attempt.run is not None and not v.correct and on("runtime"):
            lines += ["Run log:", "```text", stage_log(attempt.run.result), "```"]
        if attempt.sanitize and on("sanitizer"):
            lines += ["Sanitizer:", "```text", *_sanitizer_text(attempt.sanitize), "```"]
        if attempt.timing is not None and on("timing"):
            t = attempt.timing.result
            lines.append(
                f"Timing ({t.method}, median of {len(t.candidate_samples) or '?'} interleaved runs): "
                f"reference {t.reference_ms:.4g} ms, yours {t.candidate_ms:.4g} ms, "
                f"speedup {t.speedup:.2f}x against a gate of {v.gate:g}x."
            )
    if level == "L4" and on("profile"):
        lines += _profile_text(attempt)
    if level in ("L3", "L4") and components is not None and "static" in components:
        lines += static_text(attempt)
    lines.append(("Make it faster while keeping it correct. " if v.correct else "Fix it. ") + ask)
    return "\n".join(lines)


def conversation(first: Sequence[Message], rounds: Sequence[tuple[str, str]], history: int) -> list[Message]:
    """The messages for the next request: the first turn, then the last ``history`` rounds.

    A round is (the model's reply, the feedback on it). Reasoning sections are dropped from old replies.
    """
    messages = list(first)
    for reply, note in list(rounds)[-history:] if history > 0 else []:
        messages.append(Message(role="assistant", content=strip_think(reply).strip() or reply))
        messages.append(Message(role="user", content=note))
    return messages


#: What a planning call is asked, after the conversation so far.
PLAN_ASK = (
    "Do not write code now. Write a short numbered plan (at most ten steps) for the next version of "
    "`{file}`: what is wrong, what to change and how to check it. Another call will write the code from "
    "your plan."
)


def planner_messages(
    first: Sequence[Message], rounds: Sequence[tuple[str, str]], history: int, solution_file: str
) -> list[Message]:
    """A planning call: the task, the broken start and its log (the first turn), the code written so far and
    the feedback on it (the last ``history`` rounds), then the request for a plan instead of code."""
    messages = conversation(first, rounds, history)
    system = Message(
        role="system",
        content=(
            "You are an expert GPU programmer planning the repair of a broken CUDA program. You write plans, "
            "not code: another model writes the code from your plan."
        ),
    )
    last = messages[-1]
    ask = PLAN_ASK.format(file=solution_file)
    return [system, *messages[1:-1], Message(role=last.role, content=f"{last.content}\n\n{ask}")]


def with_plan(messages: Sequence[Message], plan: str) -> list[Message]:
    """The coding call of a planned iteration with feedback (P+F): the conversation, the plan appended to
    its last user message."""
    out = list(messages)
    last = out[-1]
    out[-1] = Message(
        role=last.role,
        content=f"{last.content}\n\nFollow this plan for the next version:\n{strip_think(plan).strip()}",
    )
    return out


def plan_only(task: Task, code: str, plan: str) -> list[Message]:
    """The coding call of a planned iteration without feedback (P+NF): the task, the current code and the
    plan, nothing the toolchain said about any attempt."""
    tag = fence(task.language)
    parts = [
        task.prompt().strip(),
        "",
        f"The current `{task.solution_file}`:",
        f"```{tag}\n{code.rstrip()}\n```",
        "",
        "Follow this plan for the next version:",
        strip_think(plan).strip(),
        "",
        f"Reply with the complete `{task.solution_file}` in one ```{tag} block.",
    ]
    return [system_message(task), Message(role="user", content="\n".join(parts))]


def summariser_messages(note: str) -> list[Message]:
    """A summarising call (feedback level L3S): the L3 note on one attempt, to be condensed."""
    return [
        Message(
            role="system",
            content=(
                "You condense compiler, run, sanitizer and timing feedback on a CUDA program for the "
                "programmer who wrote it. Keep every fact that says what failed and where (error lines, "
                "kernel names, indices, numbers); drop repetition and boilerplate. Write plain text, at most "
                "ten lines, no code."
            ),
        ),
        Message(role="user", content=note),
    ]


def summarised_note(summary: str, language: str) -> str:
    """The note the coder reads at L3S: the summary, then the request for the next file."""
    tag = fence(language)
    return (
        f"Feedback on your attempt, summarised:\n{strip_think(summary).strip()}\n\n"
        f"Reply with the complete corrected file in one ```{tag} block."
    )
