"""`beavertui live`: run one repair session now, save it, and show it (full screen, or a line per event).

Parses flags into a Task, a Model, a Toolchain and a Protocol, then hands them to the TUI's live screen or,
with --headless (or without the TUI), to the console printer while the session file is written. Nothing
else happens here.
"""

from __future__ import annotations

import argparse
import sys
import uuid
from pathlib import Path
from typing import Any

from beavertui.commands.numbers import float_in, int_in
from beavertui.engine.limits import MAX_BUDGET, MAX_FEW_SHOT, MAX_GATE, MAX_HISTORY, MAX_SEED, MAX_TEMPERATURE


def register(sub: Any) -> None:
    p = sub.add_parser(
        "live",
        help="run one repair session and watch it",
        description=(
            "Run one repair session of a task and write it to sessions/live/<task>-<id>.jsonl. "
            "MODEL is an endpoint model name (or a models-file entry), scripted:FILE, replay:SESSION or "
            "human. Before anything is written it checks the key, the endpoint and the model, the GPU, "
            "nvcc and compute-sanitizer (one line naming the fix, exit 2)."
        ),
    )
    p.add_argument("--task", metavar="ID", help="task id (required unless --resume)")
    p.add_argument(
        "--allow-unusable", action="store_true",
        help="run the task even when its validation on this GPU found it unusable",
    )  # fmt: skip
    p.add_argument(
        "--corpus", type=Path, default=None, help="corpus folder (native corpus/ or release data/)"
    )
    p.add_argument(
        "--model",
        metavar="MODEL",
        help="model name, scripted:FILE, replay:SESSION or human (required unless resuming an endpoint session)",
    )
    p.add_argument(
        "--resume",
        type=Path,
        default=None,
        metavar="SESSION",
        help="continue a session file after its valid prefix, in that file, under its recorded task and "
        "protocol (no protocol flag, no --out): one a kill cut, or one an infrastructure failure (endpoint, "
        "GPU, toolchain) ended or the user stopped, whose cut attempt is redone",
    )

    from beavertui.commands.endpoint import add_endpoint_options

    add_endpoint_options(p)
    p.add_argument(
        "--editor", default=None, help="human model: editor command (default $EDITOR; none: save to submit)"
    )
    p.add_argument(
        "--demo",
        nargs="?",
        const="repair_in_three",
        default=None,
        metavar="NAME",
        help="run a bundled demo session (sessions/demo) again on its recorded H200 outcomes, with no GPU "
        "and no key: its task, its protocol (no protocol flag), its hand-written replies (default: "
        "repair_in_three)",
    )
    q = p.add_argument_group("protocol (the flags below override the protocol file's fields)")
    q.add_argument(
        "--protocol",
        default="paper",
        metavar="NAME|FILE",
        help="protocol file, or a bundled one by name (default: paper, the paper's default protocol); "
        "a file with several protocols needs flags that pick one",
    )
    q.add_argument(
        "--method",
        choices=("iterative", "repeated"),
        default=None,
        help="the paper's repeated arm (T 1.0) is --protocol paper-method --method repeated",
    )
    q.add_argument(
        "--budget",
        "-k",
        type=int_in(1, MAX_BUDGET),
        default=None,
        help="iterations (iterative) or samples (repeated)",
    )
    q.add_argument(
        "--feedback",
        choices=("L0", "L1", "L2", "L3", "L3S", "L3_raw", "L4"),
        default=None,
        help=(
            "L3S: L3 condensed by --summariser (default: the model itself) before the model reads it; "
            "L3_raw: the release's raw build and test output, no hints"
        ),
    )
    q.add_argument(
        "--planning",
        choices=("implicit", "plan"),
        default=None,
        help="plan: each iteration a planning call writes a plan, then a coding call writes the candidate",
    )
    q.add_argument("--planner", metavar="MODEL", default=None, help="the model that plans (default: --model)")
    q.add_argument(
        "--no-coder-feedback",
        action="store_true",
        help="with --planning plan: the coding call gets the plan without the feedback (P+NF)",
    )
    q.add_argument(
        "--summariser", metavar="MODEL", default=None, help="the model that condenses L3S feedback"
    )
    q.add_argument(
        "--few-shot",
        choices=("none", "matched", "random", "curated"),
        default=None,
        help="the release's few-shot examples in the system message (e.g. --protocol paper-fewshot)",
    )
    q.add_argument(
        "--few-shot-k", type=int_in(0, MAX_FEW_SHOT), default=None, help="how many few-shot examples"
    )
    q.add_argument(
        "--few-shot-pool",
        nargs="+",
        metavar="DIR",
        default=None,
        help="harness run folders the examples are drawn from, in place of the protocol file's",
    )
    q.add_argument(
        "--few-shot-curated",
        metavar="FILE",
        default=None,
        help="with --few-shot curated: the map of examples",
    )
    q.add_argument("--history", type=int_in(1, MAX_HISTORY), default=None, help="rounds of prior turns kept")
    q.add_argument(
        "--temperature", type=float_in(0, MAX_TEMPERATURE), default=None, help="sampling temperature"
    )
    q.add_argument(
        "--seed", type=int_in(0, MAX_SEED), default=None, help="sampling seed sent to the endpoint"
    )
    q.add_argument("--gate", type=float_in(0, MAX_GATE), default=None, help="speedup gate p")
    q.add_argument(
        "--in-loop-gate",
        action="store_true",
        help="apply the gate inside the loop (a correct attempt below p is told it is too slow and the "
        "loop goes on) instead of after the run (the paper)",
    )
    q.add_argument("--continue-after-pass", action="store_true", help="spend the whole budget")
    q.add_argument("--self-source", action="store_true", help="the model produced this broken start")
    q.add_argument(
        "--no-stagnation-stop", action="store_true", help="report stagnation detectors, never stop"
    )
    q.add_argument(
        "--sanitize", action="append", default=None, metavar="TOOL",
        choices=("memcheck", "racecheck", "synccheck", "initcheck"),
        help="run this compute-sanitizer tool on every attempt that runs (repeatable); memcheck also runs on failures",
    )  # fmt: skip
    p.set_defaults(_protocol_flags=[(a.dest, a.option_strings[0], a.default) for a in q._group_actions])
    o = p.add_argument_group("output")
    o.add_argument(
        "--out", type=Path, default=None, help="session file (default sessions/live/<task>-<id>.jsonl)"
    )
    o.add_argument("--sessions-dir", type=Path, default=Path("sessions"))
    o.add_argument(
        "--notes",
        default=None,
        metavar="TEXT",
        help="free text kept in the session header (e.g. 'replies written by hand')",
    )
    o.add_argument(
        "--headless", action="store_true", help="print one line per event instead of the full screen"
    )
    o.add_argument(
        "--paused", action="store_true", help="full screen: start paused (single-step with the keys)"
    )
    o.add_argument(
        "--toolchain",
        default="local",
        metavar="local|demo|recorded:FILE",
        help="build and run on this GPU, or replay recorded outcomes (no GPU needed; demo: the bundled "
        "demo sessions' outcomes)",
    )
    o.add_argument(
        "--unknown-candidates",
        choices=("error", "fail"),
        default="error",
        help="recorded toolchain: an unrecorded candidate ends the session (error) or fails to build (fail)",
    )
    p.set_defaults(func=_live)


def _protocol(args: argparse.Namespace) -> Any:
    """The protocol the flags pick from ``--protocol`` (service/live.py ``live_protocol``)."""
    from beavertui.service.live import live_protocol

    settings = {
        k: getattr(args, k, None)
        for k in (
            "method", "budget", "feedback", "history", "temperature", "gate", "seed", "planning", "planner",
            "summariser", "few_shot", "few_shot_k",
        )
        if getattr(args, k, None) is not None
    }  # fmt: skip
    # data locations given here are read from where the command was typed
    if getattr(args, "few_shot_pool", None):
        settings["few_shot_pool"] = tuple(str(Path(d).expanduser().absolute()) for d in args.few_shot_pool)
    if getattr(args, "few_shot_curated", None):
        settings["few_shot_curated"] = str(Path(args.few_shot_curated).expanduser().absolute())
    if getattr(args, "no_coder_feedback", False):
        settings["coder_feedback"] = False
    if getattr(args, "in_loop_gate", False):
        settings["gate_mode"] = "in_loop"
    return live_protocol(
        getattr(args, "protocol", None) or "paper", settings, continue_after_pass=args.continue_after_pass,
        self_source=args.self_source, stagnation_stop=not args.no_stagnation_stop, sanitize=args.sanitize or (),
    )  # fmt: skip


def _model(args: argparse.Namespace, task: Any, protocol: Any) -> Any:
    from beavertui.commands.endpoint import endpoint_overrides, models_file_of
    from beavertui.engine.errors import BeaverError
    from beavertui.engine.models.resolve import SettingError, build_model
    from beavertui.service.live import flag_of

    human_file = args.sessions_dir / "live" / f"{task.id}.human" / Path(task.solution_file).name
    try:
        return build_model(
            args.model, task, protocol, models=models_file_of(args), overrides=endpoint_overrides(args),
            human_file=human_file, editor=args.editor,
        )  # fmt: skip
    except SettingError as exc:
        raise BeaverError(f"{flag_of(exc.field)}: {exc.problem}") from None


def _preflight(args: argparse.Namespace, model_name: str, protocol: Any) -> None:
    """Key, endpoint and model, then the toolchain: before anything is written (exit 2 when one fails)."""
    from beavertui.commands.endpoint import endpoint_overrides, models_file_of
    from beavertui.engine.errors import BeaverError
    from beavertui.engine.models.resolve import SettingError, endpoint_config
    from beavertui.service.live import flag_of
    from beavertui.service.preflight import Endpoint, is_endpoint, preflight

    endpoints = []
    if is_endpoint(model_name):
        try:
            config = endpoint_config(
                model_name, models=models_file_of(args), overrides=endpoint_overrides(args)
            )
        except SettingError as exc:
            raise BeaverError(f"{flag_of(exc.field)}: {exc.problem}") from None
        endpoints.append(Endpoint(label=model_name, config=config))
    for helper in (protocol.planner, protocol.summariser):  # each helper through its own entry
        if helper is not None and is_endpoint(helper) and helper != model_name:
            config = endpoint_config(helper, models=models_file_of(args))
            endpoints.append(Endpoint(label=helper, config=config))
    preflight(endpoints, args.toolchain, [protocol])


def _toolchain(args: argparse.Namespace, task: Any) -> Any:
    from beavertui.engine.toolchain.resolve import build_toolchain
    from beavertui.service.environment import local_config

    config = local_config() if args.toolchain == "local" else None
    toolchain = build_toolchain(args.toolchain, task, unknown=args.unknown_candidates, config=config)
    if args.toolchain == "local":
        _check_verdict(args, task)
    return toolchain


def _check_verdict(args: argparse.Namespace, task: Any) -> None:
    """Refuse a task validated unusable on this GPU (unless asked); say when its label was corrected."""
    from beavertui.engine.corpus import verdicts
    from beavertui.engine.errors import BeaverError
    from beavertui.engine.host.gpu import probe

    gpu = probe().gpu
    rec = verdicts.load(task, gpu.slug) if gpu is not None else None
    if rec is not None and rec.verdict == "unusable" and not getattr(args, "allow_unusable", False):
        raise BeaverError(
            f"task {task.id} was validated unusable on {gpu.slug}: {rec.reason} "  # type: ignore[union-attr]
            "(--allow-unusable runs it anyway)"
        )
    if rec is not None and rec.verdict == "usable_relabelled":
        print(
            f"beavertui: {task.id} is labelled {rec.label} but its broken start fails here as "
            f"{rec.observed_category}",
            file=sys.stderr,
        )


def _live(args: argparse.Namespace) -> int:
    from beavertui.commands.endpoint import models_file_of
    from beavertui.engine.corpus.load import load_corpus
    from beavertui.engine.errors import BeaverError
    from beavertui.service.environment import default_corpus

    if args.paused and (args.headless or not sys.stdout.isatty()):  # only the full screen can pause
        raise BeaverError(
            "--paused starts the full screen paused, and this session runs headless"
            + (" (--headless)" if args.headless else " (standard output is not a terminal)")
            + ": drop --paused"
        )
    if args.resume is not None:
        return _resume(args)
    if args.demo is not None:
        protocol = _demo(args)
    missing = [flag for flag, value in (("--task ID", args.task), ("--model MODEL", args.model)) if not value]
    if missing:
        raise BeaverError(
            f"live needs {' and '.join(missing)}"
            + (" (the model to ask: an endpoint model name, scripted:FILE, replay:SESSION or human)"
               if not args.model else "")
            + "; or --demo to run a bundled session on recorded outcomes, or --resume SESSION"
        )  # fmt: skip
    task = load_corpus(args.corpus or default_corpus(), [args.task]).get(args.task)
    if args.demo is None:
        protocol = _protocol(args)
    _preflight(args, args.model, protocol)
    toolchain = _toolchain(args, task)
    model = _model(args, task, protocol)
    session_id = uuid.uuid4().hex[:12]
    out: Path = args.out or args.sessions_dir / "live" / f"{task.id}-{session_id}.jsonl"
    if not args.headless and sys.stdout.isatty():
        from beavertui.tui.live import run_live

        code = int(
            run_live(
                task, model, toolchain, protocol, out, paused=args.paused, session_id=session_id,
                notes=args.notes, models_file=models_file_of(args),
            )
        )  # fmt: skip
        if out.is_file():  # the screen is gone: say on the terminal how to go on, as a headless run does
            from beavertui.engine.session.events import SessionEnd
            from beavertui.engine.session.store import read_session

            events = read_session(out)[1]
            end = events[-1] if events and isinstance(events[-1], SessionEnd) else None
            _say_resume(out, end, _again_flags(args))
        return code
    return run_headless(
        task, model, toolchain, protocol, out, session_id=session_id, notes=args.notes,
        models_file=models_file_of(args), again=_again_flags(args),
    )  # fmt: skip


def _protocol_flags_given(args: argparse.Namespace) -> list[str]:
    """The protocol flags given on the command line (those whose value is not their default)."""
    return [flag for dest, flag, default in args._protocol_flags if getattr(args, dest) != default]


def _demo(args: argparse.Namespace) -> Any:
    """``--demo NAME``: the demo's task, protocol and replies, judged by the outcomes recorded with it."""
    from beavertui.engine.errors import BeaverError
    from beavertui.service.demo import TOOLCHAIN, demo

    d = demo(args.demo)
    given = _protocol_flags_given(args)
    if given:  # the demo's replies were written for its own protocol: a flag here would change nothing
        raise BeaverError(
            f"--demo {d.name} runs under its own recorded protocol: {', '.join(given)} would be ignored; "
            f"drop {'it' if len(given) == 1 else 'them'}"
        )
    if args.task and args.task != d.task_id:
        raise BeaverError(f"--demo {d.name} runs task {d.task_id}, not {args.task}")
    args.task = d.task_id
    args.model = args.model or d.model
    if args.toolchain == "local":
        args.toolchain = TOOLCHAIN
        args.unknown_candidates = "fail"  # a candidate edited by hand (e) fails to build, labelled so
    if args.notes is None:
        args.notes = d.notes
    return d.protocol


def _resume(args: argparse.Namespace) -> int:
    """Continue a killed session: its task, protocol and (for endpoints) model come from its header."""
    from beavertui.commands.endpoint import models_file_of
    from beavertui.engine.corpus.load import load_corpus
    from beavertui.engine.errors import BeaverError
    from beavertui.engine.session.events import SessionEnd
    from beavertui.engine.session.store import SessionWriter, read_session

    header, events, problem = read_session(args.resume)
    if header is None:
        raise BeaverError(f"{args.resume}: cannot resume: {problem}")
    ignored = _protocol_flags_given(args) + (["--out"] if args.out is not None else [])
    if ignored:
        raise BeaverError(
            f"--resume continues {args.resume}, in that file and under its recorded protocol: "
            f"{', '.join(ignored)} would be ignored; drop {'it' if len(ignored) == 1 else 'them'}"
        )
    task_id = header.task.id
    if args.task and args.task != task_id:
        raise BeaverError(f"{args.resume} is a session of task {task_id!r}, not {args.task!r}")
    task = load_corpus(args.corpus or Path(header.task.corpus), [task_id]).get(task_id)
    protocol = header.protocol
    if args.model:
        _preflight(args, args.model, protocol)
        model = _model(args, task, protocol)
    elif header.model.kind == "openai":
        from beavertui.commands.endpoint import endpoint_overrides
        from beavertui.service.live import resumed_model

        model = resumed_model(
            header.model, args.resume, models_file=models_file_of(args), overrides=endpoint_overrides(args),
            toolchain=args.toolchain, protocol=protocol,
        )  # fmt: skip
    else:
        raise BeaverError(f"resuming a {header.model.kind} session needs --model (e.g. {header.model.name})")
    from beavertui.engine.session.events import model_identity

    given, recorded = model_identity(model.info()), model_identity(header.model)
    if given != recorded:  # its replies would be credited to the header's model
        raise BeaverError(
            f"{args.resume} is a session of model {recorded}, not {given}: resume it with that model, "
            "or start a new session"
        )
    toolchain = _toolchain(args, task)
    writer, prefix = SessionWriter.reopen(args.resume, redact=model.secrets(), continue_ended=True)
    if problem:
        print(f"beavertui: resuming after the valid prefix ({problem})", file=sys.stderr)
    if events and isinstance(end := events[-1], SessionEnd):
        why = end.stop_reason + (f": {end.detail}" if end.detail else "")
        print(f"beavertui: the session had ended ({why}); its cut attempt is redone", file=sys.stderr)
    return run_headless(
        task, model, toolchain, protocol, args.resume, writer=writer, resume_from=(header, prefix),
        models_file=models_file_of(args), again=_again_flags(args),
    )  # fmt: skip


def run_headless(
    task: Any,
    model: Any,
    toolchain: Any,
    protocol: Any,
    out: Path,
    writer: Any = None,
    again: str = "",
    **run_kw: Any,
) -> int:
    """Run the session, append each event to ``out`` and print a line per event; the exit status of how it
    ended (engine/errors.py: 0 repaired, 1 not, 3 an endpoint or toolchain failure ended it).

    ``writer``: an already open SessionWriter (resuming); the re-yielded header is then not written.
    ``again``: the flags the way on needs besides ``--resume`` (``_again_flags``).
    """
    from beavertui.console import EventPrinter
    from beavertui.engine.errors import session_exit_status
    from beavertui.engine.loop.run import run_session
    from beavertui.engine.session.events import SessionEnd
    from beavertui.engine.session.store import SessionRecorder

    printer = EventPrinter()
    stream = run_session(task, model, toolchain, protocol, **run_kw)
    recorder = SessionRecorder(out, redact=model.secrets(), writer=writer)
    end: SessionEnd | None = None
    interrupted = False
    try:
        while True:
            try:
                if interrupted:
                    interrupted = False
                    item = stream.throw(KeyboardInterrupt)
                else:
                    item = next(stream)
            except StopIteration:
                break
            try:
                recorder.take(item)
                printer.show(item)
                if isinstance(item, SessionEnd):
                    end = item
            except KeyboardInterrupt:
                interrupted = True  # let the loop close the session as stopped, then stop
    finally:
        printer.close()
        if recorder.writer is not None:
            recorder.close()
            print(f"session written to {out}", file=sys.stderr)
            _say_resume(out, end, again)
    return session_exit_status(end.success, end.stop_reason) if end is not None else 3


def _again_flags(args: argparse.Namespace) -> str:
    """The flags a resume of this session needs again, as the session file does not keep them: the toolchain
    when it is not this machine's (a replay), and how it treats an unrecorded candidate."""
    flags = f" --toolchain {args.toolchain}" if args.toolchain != "local" else ""
    if args.toolchain != "local" and args.unknown_candidates != "error":
        flags += f" --unknown-candidates {args.unknown_candidates}"
    return flags


def _say_resume(out: Path, end: Any, again: str = "") -> None:
    """Where an infrastructure failure ended the session or the user stopped it: how to go on from there."""
    from beavertui.engine.session.store import CONTINUABLE_ENDS

    if end is not None and end.stop_reason in CONTINUABLE_ENDS:
        print(f"beavertui: to go on from here: beavertui live --resume {out}{again}", file=sys.stderr)
