"""The repair loop: ``run_session`` asks a model for repairs and yields every event as it happens.

It yields the session header first, then Request, ReplyDelta*, Reply, Candidate, the toolchain's
Built/Ran/Sanitized/Timed/Verdict, Stalled*, and ends with exactly one SessionEnd. Terminal states (passed,
budget, a stagnation detector, an infrastructure error, a stop request) are exceptions inside the loop
that end in that final event. State is only ever the reducer's fold of the yielded events, so a live
view, a replay and a resumed run see the same thing. This module must not write files or print.
"""

from __future__ import annotations

import queue
import threading
import time
import uuid
from collections.abc import Callable, Generator, Iterator, Sequence
from dataclasses import replace
from pathlib import Path
from typing import get_args

from beavertui import __version__
from beavertui.engine.code.diff import unified
from beavertui.engine.code.extract import extract
from beavertui.engine.code.hashing import code_hash
from beavertui.engine.corpus.task import Task
from beavertui.engine.errors import BeaverError, NoGpuError, SessionFileError, ToolchainError
from beavertui.engine.loop import few_shot, startlog
from beavertui.engine.loop.control import LoopControl
from beavertui.engine.loop.prompts import (
    conversation,
    feedback,
    first_turn,
    plan_only,
    planner_messages,
    stage_log,
    summarised_note,
    summariser_messages,
    with_plan,
)
from beavertui.engine.loop.stagnation import detect
from beavertui.engine.models.base import Completion, EndpointError, Model, StopRequested
from beavertui.engine.session.events import (
    MAX_REPLY_CHARS,
    Candidate,
    Event,
    GpuSignature,
    InfraError,
    Message,
    ModelInfo,
    Plan,
    Reply,
    ReplyDelta,
    Request,
    SessionEnd,
    SessionHeader,
    Summary,
    TaskRef,
    Timed,
    Verdict,
)
from beavertui.engine.session.protocol import Protocol
from beavertui.engine.session.state import AttemptState, SessionState, apply, initial
from beavertui.engine.session.usage import usage_of
from beavertui.engine.timing import named_baselines
from beavertui.engine.toolchain.base import AttemptOptions, Toolchain, profiler_unavailable

__all__ = ["LoopControl", "run_session"]

_INFRA_SOURCES = get_args(InfraError.model_fields["source"].annotation)


class _End(Exception):
    """A terminal state of the session."""

    def __init__(self, stop_reason: str, detail: str | None = None) -> None:
        super().__init__(stop_reason)
        self.stop_reason = stop_reason
        self.detail = detail


def effective_budget(protocol: Protocol) -> int:
    """Iterations to run: K, or K - 1 for a self-sourced iterative task (docs/metrics.md)."""
    if protocol.method == "iterative" and protocol.self_source:
        return max(1, protocol.budget - 1)
    return protocol.budget


def wants_profile(protocol: Protocol) -> bool:
    """Feedback level L4 with its profile component: every attempt that ran is profiled."""
    return protocol.feedback == "L4" and (
        protocol.feedback_components is None or "profile" in protocol.feedback_components
    )


def check_profiler(protocol: Protocol, toolchain: Toolchain) -> None:
    """Refuse L4 where the profiler cannot run: it would silently be L3."""
    if wants_profile(protocol):
        reason = profiler_unavailable(toolchain)
        if reason is not None:
            raise BeaverError(
                f"feedback L4 needs the ncu profiler, and {reason}; use L3 or a machine with ncu"
            )


def _complete_streaming(
    model: Model, messages: Sequence[Message], iteration: int, control: LoopControl | None = None
) -> Iterator[ReplyDelta | Completion]:
    """Run the model call in a thread and yield its deltas as they arrive, then the Completion.

    A stop requested through ``control`` ends the wait at once (the abandoned call finishes in the
    background and its reply is dropped).
    """
    q: queue.Queue[tuple[str, object]] = queue.Queue()

    def work() -> None:
        try:
            result = model.complete(messages, on_delta=lambda text: q.put(("delta", text)))
        except BaseException as exc:  # handed to the loop's thread, which decides
            q.put(("error", exc))
        else:
            q.put(("done", result))

    threading.Thread(target=work, name=f"model-call-{iteration}", daemon=True).start()
    while True:
        try:
            kind, value = q.get(timeout=0.2)
        except queue.Empty:
            if control is not None and control.stopped:
                raise _End("stopped", "stopped by the user while the model was answering") from None
            continue
        if kind == "delta":
            yield ReplyDelta(iteration=iteration, text=str(value))
        elif kind == "error":
            assert isinstance(value, BaseException)
            raise value
        else:
            assert isinstance(value, Completion)
            yield value
            return


#: What the check of a broken start yields that judges an attempt (its stage events and its verdict).
_CHECK_KINDS = frozenset({"build", "run", "sanitize", "timing", "profile", "verdict"})


def _check_options(protocol: Protocol) -> AttemptOptions:
    # the check is not an attempt (its events are not recorded as such), but its stage events are built as
    # for the first one: an iteration of 0 is out of range for them
    return AttemptOptions(iteration=1, gate=protocol.gate, sanitize_on_failure=protocol.sanitize_on_failure)


def _start_check_key(
    task: Task, toolchain: Toolchain, protocol: Protocol
) -> tuple[Path, GpuSignature, str] | None:
    """Where the check of the task's broken start is kept on this machine, and its key (None: not kept)."""
    cache = getattr(toolchain, "start_log_cache", None)
    gpu = toolchain.gpu() if cache is not None else None
    if cache is None or gpu is None:
        return None
    return Path(cache), gpu, startlog.key(task, gpu, protocol.gate, protocol.sanitize_on_failure)


def _start_log(
    task: Task, toolchain: Toolchain, protocol: Protocol
) -> tuple[str | None, str, startlog.Stored | None]:
    """The broken start's real error log: the recorded one, or a fresh check through the toolchain; with
    the check (kept or just made) whose events can judge an attempt that submits the broken start itself."""
    recorded = task.error_log()
    if recorded:
        return recorded, "recorded when the task was made", None
    where = _start_check_key(task, toolchain, protocol)
    if where is not None:
        stored = startlog.load(where[0], task, where[1], where[2])
        if stored is not None:  # the same words as when it was made: the prompt is the same either way
            learn = getattr(toolchain, "learn_run_seconds", None)
            if stored.run_s is not None and learn is not None:  # a batch's schedule: how long its runs take
                learn(task.id, stored.run_s, timed_out=stored.run_s >= task.timeouts.run_s)
            return stored.log, "a fresh check on this machine", stored
    parts: list[str] = []
    options = _check_options(protocol)
    judged = False
    began = time.time()
    stages: list[dict[str, object]] = []
    kept: list[Event] = []

    def note() -> None:  # what the check has cost so far, in case its process is cut before it ends
        if where is not None:
            startlog.in_flight(where[0], task, where[1], where[2], began, stages)

    note()
    try:
        for e in toolchain.attempt(task, task.broken_start(), options):
            judged = judged or isinstance(e, Verdict)
            kept.append(e)
            if e.kind in ("build", "run", "sanitize"):
                parts.append(stage_log(e.result))
                stages.append(e.result.model_dump(include={"stage", "duration_s", "rc", "timed_out"}))
                note()
            elif isinstance(e, Timed):
                stages.append(
                    {"stage": "timing", "duration_s": e.result.wall_s, "rc": None, "timed_out": False}
                )
                note()
            elif isinstance(e, Verdict) and e.correct and e.speedup is not None:
                parts.append(f"correct, speedup {e.speedup:.2f}x against a gate of {e.gate:g}x")
    finally:
        if where is not None:
            startlog.done(where[0], task, where[1], where[2])
    log = "\n\n".join(parts) or None
    # an infrastructure error (the only other kind a toolchain yields): the machine cut the check short, and
    # it is neither kept nor used to judge an attempt
    clean = judged and all(e.kind in _CHECK_KINDS for e in kept)
    events = tuple(kept) if clean else ()
    if clean and log is not None and where is not None:
        startlog.save(where[0], task, where[1], where[2], log, began=began, stages=stages, events=events)
    check = startlog.Stored(log, None, events, time.time()) if log is not None and events else None
    return log, "a fresh check on this machine", check


def _reused(check: startlog.Stored, iteration: int) -> list[Event]:
    """The check's events as the events of attempt ``iteration``, each stage and timing marked as reused."""
    when = time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(check.made)) if check.made else "earlier"
    why = (
        f"not run again: the candidate is the broken start, and this is the check of it made before the "
        f"first turn ({when}) with the same toolchain and options"
    )
    out: list[Event] = []
    t = time.time()
    for e in check.events:
        update: dict[str, object] = {"iteration": iteration, "t": t}
        result = getattr(e, "result", None)
        if result is not None and hasattr(result, "reused"):
            update["result"] = result.model_copy(update={"reused": why})
        out.append(e.model_copy(update=update))
    return out


def _task_ref(task: Task, toolchain: Toolchain) -> TaskRef:
    """The task as the header records it, with the corrected label its validation on this GPU found."""
    ref = task.ref()
    cache = getattr(toolchain, "cache_root", None)
    gpu = toolchain.gpu() if cache is not None else None
    if gpu is None:
        return ref
    from beavertui.engine.corpus import verdicts

    record = verdicts.load(task, gpu.slug, cache)
    if record is None or record.verdict != "usable_relabelled" or not record.observed_category:
        return ref
    return ref.model_copy(update={"observed_label": record.observed_category})


def timing_steers_nothing(p: Protocol) -> bool:
    """Whether a correct attempt's speedup can change nothing the loop does, so that it may be timed after
    the loop (a batch's timing lane): the gate is applied after the run, and either the first correct attempt
    ends the trajectory (no feedback on it is sent) or the samples are independent (repeated)."""
    return p.gate_mode == "after_run" and (p.method == "repeated" or not p.continue_after_pass)


def _limited(task: Task, toolchain: Toolchain, protocol: Protocol) -> Task:
    """The task with its correctness runs limited as the protocol says (engine/corpus/run_limit.py): from
    its reference's run time on this toolchain's GPU, where one is known."""
    from beavertui.engine.corpus.run_limit import run_limit, with_run_limit

    gpu = toolchain.gpu()
    cache = getattr(toolchain, "cache_root", None)
    limit = run_limit(task, gpu.slug if gpu is not None else None, protocol.run_limit, cache)
    return with_run_limit(task, limit)


def helper_models(
    task: Task,
    model: Model,
    protocol: Protocol,
    planner: Model | None,
    summariser: Model | None,
    models_file: str | Path | None = None,
) -> tuple[Model | None, Model | None]:
    """The planner and the summariser a session under ``protocol`` calls (None: it calls none): the ones
    given, else the protocol's named ones built as ``--model`` builds a model, else the coding model."""
    from beavertui.engine.models.resolve import build_model

    def pick(wanted: bool, given: Model | None, name: str | None) -> Model | None:
        if not wanted:
            return None
        if given is not None:
            return given
        if name is None:
            return model
        return build_model(name, task, protocol, models=models_file)

    return (
        pick(protocol.planning == "plan", planner, protocol.planner),
        pick(protocol.feedback == "L3S", summariser, protocol.summariser),
    )


def _call_fields(completion: Completion, info: ModelInfo) -> dict[str, object]:
    """The fields of a helper's call event (Plan, Summary) from its completion, at that model's prices."""
    prices = info.prices
    return {
        "model": info.entry or info.name,
        "content": completion.content[:MAX_REPLY_CHARS],
        "truncated_chars": max(0, len(completion.content) - MAX_REPLY_CHARS),
        "prompt_tokens": completion.prompt_tokens,
        "completion_tokens": completion.completion_tokens,
        "reasoning_tokens": completion.reasoning_tokens,
        "latency_s": completion.latency_s,
        "finish_reason": completion.finish_reason,
        "retries": completion.retries,
        "retry_reasons": list(completion.retry_reasons),
        "cost_usd": prices.cost(completion.prompt_tokens, completion.completion_tokens) if prices else None,
        "cached": completion.cached,
    }


def run_session(
    task: Task,
    model: Model,
    toolchain: Toolchain,
    protocol: Protocol,
    *,
    run_id: str | None = None,
    sample: int = 0,
    notes: str | None = None,
    resume_from: tuple[SessionHeader, Sequence[Event]] | Sequence[Event] | None = None,
    control: LoopControl | None = None,
    session_id: str | None = None,
    usable: Callable[[Task, Verdict | None], str | None] | None = None,
    note_for: Callable[[AttemptState, str], str] | None = None,
    defer_timing: bool = False,
    planner: Model | None = None,
    summariser: Model | None = None,
    models_file: str | Path | None = None,
) -> Generator[SessionHeader | Event, None, None]:
    """Run one repair session, yielding the header, then every event, then one SessionEnd.

    ``note_for`` (attribution's randomised-feedback control) is given every newly built feedback note with
    its attempt and returns the note to send instead; the requests record what was sent.

    ``planner`` (protocol ``planning = "plan"``) and ``summariser`` (feedback L3S): the helper models; None
    builds the one the protocol names (``Protocol.planner``, ``Protocol.summariser``, through
    ``models_file``), or uses ``model`` itself where it names none.

    ``resume_from``: a valid prefix of a killed session (the header and events read back, or the events
    alone); the original header is yielded again, the prefix is not, and the loop continues at the first
    attempt without a verdict (a cut attempt restarts from its request).
    """
    check_profiler(
        resume_from[0].protocol if isinstance(resume_from, tuple) and resume_from else protocol, toolchain
    )
    prefix: Sequence[Event] = ()
    given = resume_from[0].protocol if isinstance(resume_from, tuple) and resume_from else protocol
    assert isinstance(given, Protocol)
    planner, summariser = helper_models(task, model, given, planner, summariser, models_file)
    if isinstance(resume_from, tuple) and resume_from and isinstance(resume_from[0], SessionHeader):
        header, prefix = resume_from[0], resume_from[1]
    else:
        prefix = list(resume_from or ())  # type: ignore[arg-type]
        header = SessionHeader(
            session_id=session_id or uuid.uuid4().hex[:12],
            tool_version=__version__,
            task=_task_ref(task, toolchain),
            model=model.info(),
            protocol=protocol,
            gpu=toolchain.gpu(),
            run_id=run_id,
            sample=sample,
            notes=notes,
            planner=planner.info() if planner is not None else None,
            summariser=summariser.info() if summariser is not None else None,
        )
        header = header.model_copy(update={"baselines": named_baselines.header_times(task, header.gpu)})
    task = _limited(task, toolchain, header.protocol)
    ended = next((e for e in prefix if isinstance(e, SessionEnd)), None)
    if ended is not None:
        raise SessionFileError(f"cannot resume: the session already ended ({ended.stop_reason})")
    # the few-shot examples, drawn before anything is written (a pool that is not there is one clear error);
    # a resumed session reads its first turn, examples and all, from its recorded request instead
    examples = "" if any(isinstance(e, Request) for e in prefix) else few_shot.section(header.protocol, task)
    yield header
    state = initial(header)
    for e in prefix:
        state = apply(state, e)
    done = sum(1 for a in state.attempts if a.verdict is not None)
    plans = [e for e in prefix if isinstance(e, Plan)]
    summaries = [e for e in prefix if isinstance(e, Summary)]
    # a scripted model's calls already made: its replies, and the plans and summaries it wrote itself
    calls = {id(model): done}
    for helper, made in ((planner, plans), (summariser, summaries)):
        if helper is not None and made:
            calls[id(helper)] = calls.get(id(helper), 0) + len(made)
    for m in {id(m): m for m in (model, planner, summariser) if m is not None}.values():
        at_sample = getattr(m, "at_sample", None)  # an endpoint model's seeds follow the sample
        if callable(at_sample):
            at_sample(header.sample)
        resume_at = getattr(m, "resume_at", None)
        if calls.get(id(m)) and callable(resume_at):
            resume_at(calls[id(m)])

    run = _Run(task, model, toolchain, protocol, control, state, note_for)
    run.examples = examples
    run.usable = usable
    run.defer_timing = defer_timing
    run.replies = [e for e in prefix if isinstance(e, Reply)]
    run.planner, run.summariser = planner, summariser
    run.plans, run.summaries = plans, summaries
    try:
        for e in run.attempts(done):
            yield e
        raise _End("budget")
    except _End as end:
        stop_reason, detail = end.stop_reason, end.detail
    except EndpointError as exc:
        yield run.fold(InfraError(iteration=max(run.iteration, 1), source="endpoint", detail=exc.detail))
        stop_reason, detail = "error", exc.detail
    except (ToolchainError, NoGpuError) as exc:
        source = getattr(exc, "source", "gpu")
        source = source if source in _INFRA_SOURCES else "toolchain"
        yield run.fold(InfraError(iteration=max(run.iteration, 1), source=source, detail=str(exc)))
        stop_reason, detail = "error", str(exc)
    except StopRequested as exc:
        stop_reason, detail = "stopped", str(exc) or None
    except KeyboardInterrupt:
        yield run.end("stopped", "interrupted")
        raise
    except Exception as exc:
        # A defect, not a model or infrastructure failure: recorded, the session closed, then re-raised.
        text = f"{type(exc).__name__}: {exc}"
        yield run.fold(InfraError(iteration=max(run.iteration, 1), source="other", detail=text))
        yield run.end("error", text)
        raise
    yield run.end(stop_reason, detail)


class _Run:
    """The mutable bookkeeping of one session: the folded state and the conversation so far."""

    def __init__(
        self,
        task: Task,
        model: Model,
        toolchain: Toolchain,
        protocol: Protocol,
        control: LoopControl | None,
        state: SessionState,
        note_for: Callable[[AttemptState, str], str] | None = None,
    ) -> None:
        self.task, self.model, self.toolchain, self.protocol = task, model, toolchain, protocol
        self.note_for = note_for
        self.control = control
        self.state = state
        self.iteration = state.iteration
        self.rounds: list[tuple[str, str]] = []
        self.first: list[Message] = []
        self.check: startlog.Stored | None = None
        """The check of the broken start made (or kept) before the first turn, when it has events."""
        self.check_looked = False
        self.defer_timing = False
        """Correct attempts are left ``timing_pending`` for a batch's timing lane, where the protocol lets
        the speedup steer nothing (timing_steers_nothing)."""
        self.usable: Callable[[Task, Verdict | None], str | None] | None = None
        """Asked once, before the first turn, whether the task can be scored on this GPU (None: not asked)."""
        self.replies: list[Reply] = []
        """Every reply of the session, those of redone attempts too (what its usage adds up)."""
        self.planner: Model | None = None
        self.summariser: Model | None = None
        self.plans: list[Plan] = []
        self.summaries: list[Summary] = []
        self.examples = ""
        """The few-shot examples' text appended to the first turn's system message (protocol few_shot)."""
        self.unsummarised: int | None = None
        """A resumed L3S session whose newest round has no recorded summary: its iteration."""
        for a in state.attempts:
            if a.verdict is None:
                continue
            if not self.first and a.request is not None and len(a.request.messages) >= 2:
                self.first = list(a.request.messages[:2])
            if a.reply is not None:
                # A note already sent (the last message of the next recorded request) is kept verbatim, so
                # a branch's frozen prefix reads as recorded; the newest round's note is built afresh.
                sent = state.attempt(a.iteration + 1)
                msgs = sent.request.messages if sent is not None and sent.request is not None else []
                if protocol.method == "iterative" and len(msgs) > 2 and msgs[-1].role == "user":
                    note = msgs[-1].content
                    if sent is not None and sent.plan is not None and protocol.coder_feedback:
                        note = note.rsplit("\n\nFollow this plan for the next version:\n", 1)[0]
                elif protocol.feedback == "L3S" and a.summary is not None:
                    note = summarised_note(a.summary.content, task.language)
                elif protocol.feedback == "L3S":
                    note, self.unsummarised = "", a.iteration
                else:
                    note = self.note(a)
                self.rounds.append((a.reply.content, note))

    def note(self, attempt: AttemptState) -> str:
        """The feedback note on an attempt under the protocol (or what ``note_for`` sends instead)."""
        p = self.protocol
        level = "L3" if p.feedback == "L3S" else p.feedback
        note = feedback(attempt, level, self.task.language, p.feedback_components)
        return note if self.note_for is None else self.note_for(attempt, note)

    def fold(self, event: Event) -> Event:
        self.state = apply(self.state, event)
        return event

    def end(self, stop_reason: str, detail: str | None) -> SessionEnd:
        attempts = sum(1 for a in self.state.attempts if a.verdict is not None)
        end = SessionEnd(
            stop_reason=stop_reason,
            iterations=attempts,
            success=self.state.success,
            best_speedup=self.state.best_speedup,
            detail=detail,
            usage=usage_of(self.replies),
            planner_usage=usage_of(self.plans) if self.plans else None,
            summariser_usage=usage_of(self.summaries) if self.summaries else None,
            timing_pending=sum(1 for v in self.state.verdicts if v.timing_pending),
        )
        self.fold(end)
        return end

    def _limit_from_reference(self) -> None:
        """On a GPU with no stored verdict for the task, the batch's check runs its reference first (once
        per task and GPU): the check of the broken start and every attempt are then limited from that run
        (engine/corpus/run_limit.py), so a broken start that hangs costs seconds, not the task's flat limit."""
        first = getattr(self.usable, "reference_run_s", None)
        if not callable(first) or self.protocol.run_limit == "flat":
            return
        seconds = first(self.task)
        gpu = self.toolchain.gpu()
        if seconds is not None and gpu is not None:
            from beavertui.engine.corpus.run_limit import from_reference, with_run_limit

            where = ", measured by this batch's check before the broken start's"
            self.task = with_run_limit(self.task, from_reference(self.task, gpu.slug, seconds, where))

    def _checkpoint(self) -> None:
        if self.control is not None and not self.control.wait_turn():
            raise _End("stopped", "stopped by the user")

    def attempts(self, done: int) -> Iterator[Event]:
        """Every event of the remaining attempts; raises _End for a terminal state."""
        if done:
            yield from self._after_verdict(done, resumed=True)
            if self.unsummarised is not None and self._sends_feedback(self.unsummarised):
                attempt = self.state.attempt(self.unsummarised)
                assert attempt is not None and attempt.reply is not None
                note = yield from self._summarise(attempt, self.note(attempt))
                self.rounds[-1] = (attempt.reply.content, note)
        if not self.first:
            if not done:
                self._limit_from_reference()
            start_log, source, self.check = _start_log(self.task, self.toolchain, self.protocol)
            self.first = few_shot.with_examples(first_turn(self.task, start_log, source), self.examples)
        if not done and self.usable is not None:
            checked = self.check.events if self.check is not None else ()
            why = self.usable(self.task, next((e for e in checked if isinstance(e, Verdict)), None))
            if why is not None:
                raise _End("unusable", why)
        for iteration in range(done + 1, effective_budget(self.protocol) + 1):
            self.iteration = iteration
            self._checkpoint()
            yield from self._attempt(iteration)
            yield from self._after_verdict(iteration)

    def _attempt(self, iteration: int) -> Iterator[Event]:
        p, task = self.protocol, self.task
        repeated = p.method == "repeated"
        # L0 carries nothing over: every request is the first turn again, as in the paper
        fresh = repeated or p.feedback == "L0"
        messages = self.first if fresh else conversation(self.first, self.rounds, p.history)
        if p.planning == "plan":
            plan = yield from self._plan(iteration, fresh)
            if p.coder_feedback:
                messages = with_plan(messages, plan)
            else:
                messages = plan_only(task, self._current_code(repeated), plan)
        yield self.fold(Request(iteration=iteration, messages=messages))
        completion: Completion | None = None
        for item in _complete_streaming(self.model, messages, iteration, self.control):
            if isinstance(item, ReplyDelta):
                yield self.fold(item)
            else:
                completion = item
        assert completion is not None
        prices = self.state.header.model.prices
        reply = Reply(
            iteration=iteration,
            content=completion.content[:MAX_REPLY_CHARS],
            truncated_chars=max(0, len(completion.content) - MAX_REPLY_CHARS),
            prompt_tokens=completion.prompt_tokens,
            completion_tokens=completion.completion_tokens,
            reasoning_tokens=completion.reasoning_tokens,
            latency_s=completion.latency_s,
            finish_reason=completion.finish_reason,
            retries=completion.retries,
            retry_reasons=list(completion.retry_reasons),
            cost_usd=prices.cost(completion.prompt_tokens, completion.completion_tokens) if prices else None,
            cached=completion.cached,
        )
        self.replies.append(reply)
        yield self.fold(reply)
        if self.control is not None and self.control.stopped:
            raise _End("stopped", "stopped by the user")
        code: str | None
        reason: str | None
        if completion.code is not None:
            code, reason = completion.code, None
        else:
            found = extract(completion.content, task.language)
            code, reason = found.code, found.reason
        edited = False
        if code is not None and self.control is not None:
            new = self.control.edit(iteration, code)
            if new is not None and new != code:
                code, edited = new, True
        previous = next(
            (a.candidate.code for a in reversed(self.state.attempts) if a.candidate and a.candidate.code),
            None,
        )
        before = previous if previous is not None and not repeated else task.broken_start()
        yield self.fold(
            Candidate(
                iteration=iteration,
                code=code,
                sha256=code_hash(code, task.language) if code is not None else None,
                no_code_reason=reason,
                diff=unified(before, code, task.solution_file) if code is not None else "",
                edited=edited,
            )
        )
        if code is None:
            yield self.fold(
                Verdict(
                    iteration=iteration,
                    category="buildability",
                    signature="no code",
                    correct=False,
                    gate=p.gate,
                    reason="no code",
                    decisive=[reason or "no code"],
                )
            )
            return
        options = AttemptOptions(
            iteration=iteration,
            gate=p.gate,
            sanitize_on_failure=p.sanitize_on_failure,
            sanitize_tools=p.sanitize_tools,
            profile=wants_profile(p),
        )
        verdicts = 0
        check = self._check_for(code, options)
        if check is None and self.defer_timing and timing_steers_nothing(p):
            options = replace(options, defer_timing=True)
        events = (
            _reused(check, iteration) if check is not None else self.toolchain.attempt(task, code, options)
        )
        for e in events:
            verdicts += isinstance(e, Verdict)
            yield self.fold(e)
        if verdicts != 1:
            raise ToolchainError(f"the toolchain gave {verdicts} verdicts for iteration {iteration}, not one")

    def _current_code(self, repeated: bool) -> str:
        """The code the next attempt starts from: the newest candidate's (the broken start at first, and
        always under the repeated method)."""
        if not repeated:
            for a in reversed(self.state.attempts):
                if a.verdict is not None and a.candidate is not None and a.candidate.code:
                    return a.candidate.code
        return self.task.broken_start()

    def _helper_call(self, helper: Model, messages: Sequence[Message], iteration: int) -> Completion:
        """One call of a helper model (planner, summariser); its streamed pieces are not shown."""
        for item in _complete_streaming(helper, messages, iteration, self.control):
            if isinstance(item, Completion):
                return item
        raise EndpointError(f"{helper.info().name} ended without a reply")

    def _plan(self, iteration: int, fresh: bool) -> Generator[Event, None, str]:
        """The plan of this iteration (Plan event), or the one a cut attempt already recorded; returns its
        text."""
        recorded = self.state.attempt(iteration)
        if recorded is not None and recorded.plan is not None and recorded.verdict is None:
            return recorded.plan.content
        assert self.planner is not None
        p = self.protocol
        rounds = () if fresh else self.rounds
        messages = planner_messages(self.first, rounds, p.history, self.task.solution_file)
        completion = self._helper_call(self.planner, messages, iteration)
        plan = Plan(
            iteration=iteration,
            messages=messages,
            replaces=getattr(self.planner, "replaces", None),
            **_call_fields(completion, self.planner.info()),
        )
        self.plans.append(plan)
        yield self.fold(plan)
        return plan.content

    def _summarise(self, attempt: AttemptState, note: str) -> Generator[Event, None, str]:
        """Feedback level L3S: the summariser condenses the L3 note (Summary event); returns the note sent."""
        assert self.summariser is not None
        messages = summariser_messages(note)
        completion = self._helper_call(self.summariser, messages, attempt.iteration)
        summary = Summary(
            iteration=attempt.iteration,
            messages=messages,
            source_chars=len(note),
            **_call_fields(completion, self.summariser.info()),
        )
        self.summaries.append(summary)
        yield self.fold(summary)
        return summarised_note(summary.content, self.task.language)

    def _check_for(self, code: str, options: AttemptOptions) -> startlog.Stored | None:
        """The check of the broken start that judges this attempt instead of running it again: only for the
        broken start itself (edge whitespace aside), under the options the check ran with."""
        if code.strip() != self.task.broken_start().strip():
            return None
        if replace(options, iteration=1) != _check_options(self.protocol):
            return None  # sanitizer tools or a profile the check did not run
        if self.check is None and not self.check_looked and not self.task.error_log():
            self.check_looked = True  # a resumed session made no check this time: a kept one may serve
            where = _start_check_key(self.task, self.toolchain, self.protocol)
            if where is not None:
                self.check = startlog.load(where[0], self.task, where[1], where[2])
        return self.check if self.check is not None and self.check.events else None

    def _after_verdict(self, iteration: int, resumed: bool = False) -> Iterator[Event]:
        """Stop on success or stagnation; otherwise remember the round for the next request."""
        p = self.protocol
        attempt = self.state.attempt(iteration)
        assert attempt is not None and attempt.verdict is not None
        if p.method == "iterative" and p.ends_on(attempt.verdict.correct, attempt.verdict.success):
            raise _End("passed")
        if p.method == "iterative":
            already = {s.detector for s in attempt.stalls}
            stalls = [s for s in detect(self.state, p.stagnation) if s.detector not in already]
            for s in stalls:
                yield self.fold(s)
            fired = [s.detector for s in self.state.attempt(iteration).stalls]  # type: ignore[union-attr]
            if fired and p.stagnation.stop:
                raise _End(fired[0])
        if not resumed and attempt.reply is not None:
            judged = self.state.attempt(iteration)
            assert judged is not None
            note = self.note(judged)
            if p.feedback == "L3S" and self._sends_feedback(iteration):
                note = yield from self._summarise(judged, note)
            self.rounds.append((attempt.reply.content, note))

    def _sends_feedback(self, iteration: int) -> bool:
        """Whether the note on this attempt reaches a later request (an iterative session with budget left)."""
        return self.protocol.method == "iterative" and iteration < effective_budget(self.protocol)
