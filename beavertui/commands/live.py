"""`beavertui live`: run one repair session now, save it, and show it (full screen, or a line per event).

Parses flags into a Task, a Model, a Toolchain and a Protocol, then hands them to the TUI's live screen or,
with --headless (or without the TUI), to the console printer while the session file is written. Nothing
else happens here.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import uuid
from pathlib import Path
from typing import Any

DEFAULT_MODELS_FILE = Path.home() / ".config" / "beavertui" / "models.toml"


def register(sub: Any) -> None:
    p = sub.add_parser(
        "live",
        help="run one repair session and watch it",
        description=(
            "Run one repair session of a task and write it to sessions/live/<task>-<id>.jsonl. "
            "MODEL is an endpoint model name (or a models-file entry), scripted:FILE, replay:SESSION or "
            "human. Exit status: 0 when the session succeeded, 1 when it ended without success."
        ),
    )
    p.add_argument("--task", metavar="ID", help="task id (required unless --resume)")
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
        help="continue a killed session file after its valid prefix, under its recorded task and protocol",
    )

    m = p.add_argument_group("endpoint")
    m.add_argument("--base-url", default=None, help="OpenAI-compatible base URL (default: $OPENAI_BASE_URL)")
    m.add_argument("--api-key-env", default=None, metavar="VAR", help="environment variable holding the key")
    m.add_argument("--models-file", type=Path, default=None, help="TOML models file ([models.NAME] tables)")
    m.add_argument("--top-p", type=float, default=None)
    m.add_argument("--max-tokens", type=int, default=None)
    m.add_argument("--reasoning-effort", default=None, choices=("low", "medium", "high"))
    m.add_argument("--extra-body", default=None, metavar="JSON", help="extra request fields as a JSON object")
    m.add_argument("--timeout", type=float, default=None, metavar="S", help="per-call time limit, seconds")
    m.add_argument("--retries", type=int, default=None, help="failed tries allowed per call")
    m.add_argument("--no-stream", action="store_true", help="do not stream tokens")
    m.add_argument(
        "--editor", default=None, help="human model: editor command (default $EDITOR; none: save to submit)"
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
        "--budget", "-k", type=int, default=None, help="iterations (iterative) or samples (repeated)"
    )
    q.add_argument("--feedback", choices=("L0", "L1", "L2", "L3", "L4"), default=None)
    q.add_argument(
        "--history", type=int, choices=(1, 2, 3, 4), default=None, help="rounds of prior turns kept"
    )
    q.add_argument("--temperature", type=float, default=None)
    q.add_argument("--seed", type=int, default=None)
    q.add_argument("--gate", type=float, default=None, help="speedup gate p")
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
        metavar="local|recorded:FILE",
        help="build and run on this GPU, or replay recorded outcomes (no GPU needed)",
    )
    o.add_argument(
        "--unknown-candidates",
        choices=("error", "fail"),
        default="error",
        help="recorded toolchain: an unrecorded candidate ends the session (error) or fails to build (fail)",
    )
    p.set_defaults(func=_live)


def _protocol(args: argparse.Namespace) -> Any:
    from pydantic import ValidationError

    from beavertui.batch.protocol_file import expand, find_protocol_file, load_batch_file
    from beavertui.engine.errors import BeaverError
    from beavertui.engine.session.protocol import Protocol, StagnationSettings

    name = getattr(args, "protocol", None) or "paper"
    pfile = find_protocol_file(name)
    flags = {
        k: getattr(args, k, None)
        for k in ("method", "budget", "feedback", "history", "temperature", "gate", "seed")
        if getattr(args, k, None) is not None
    }
    if getattr(args, "in_loop_gate", False):
        flags["gate_mode"] = "in_loop"
    # the file's protocols that agree with every flag on a swept field; the other flags override
    candidates = [
        p.protocol
        for p in expand(load_batch_file(pfile), str(pfile))
        if all(getattr(p.protocol, k) == v for k, v in flags.items() if k in _swept(pfile))
    ]
    if len(candidates) != 1:
        raise BeaverError(
            f"{pfile}: {len(candidates) or 'none'} of its protocols match the flags; "
            f"pick one with --{' / --'.join(sorted(_swept(pfile)) or ['method'])}"
        )
    base = candidates[0]
    fields = {**base.model_dump(), **flags}
    if args.continue_after_pass:
        fields["continue_after_pass"] = True
    if args.self_source:
        fields["self_source"] = True
    if args.no_stagnation_stop:
        fields["stagnation"] = StagnationSettings(**{**base.stagnation.model_dump(), "stop": False})
    if args.sanitize:
        fields["sanitize_tools"] = tuple(dict.fromkeys(args.sanitize))
    try:
        return Protocol.model_validate(fields)
    except ValidationError as exc:
        err = exc.errors()[0]
        raise BeaverError(f"--{str(err['loc'][0]).replace('_', '-')}: {err['msg']}") from None


def _swept(pfile: Any) -> set[str]:
    """Fields a protocol file varies (its sweep axes and its variants' fields)."""
    from beavertui.batch.protocol_file import load_batch_file

    spec = load_batch_file(pfile)
    return set(spec.sweep) | {k for v in spec.variants for k in v}


def _model(args: argparse.Namespace, task: Any, protocol: Any) -> Any:
    from beavertui.engine.errors import BeaverError

    spec: str = args.model
    if spec.startswith("scripted:"):
        from beavertui.engine.models.scripted import ScriptedModel

        return ScriptedModel.from_file(spec.split(":", 1)[1])
    if spec.startswith("replay:"):
        from beavertui.engine.models.replay import ReplayModel

        replay = ReplayModel(spec.split(":", 1)[1])
        if replay.header.task.id != task.id:
            raise BeaverError(
                f"{spec}: the recorded session is of task {replay.header.task.id!r}, not {task.id!r}"
            )
        return replay
    if spec == "human":
        from beavertui.engine.models.human import HumanModel

        path = args.sessions_dir / "live" / f"{task.id}.human" / Path(task.solution_file).name
        return HumanModel(path, initial=task.broken_start(), editor=args.editor or os.environ.get("EDITOR"))
    from beavertui.engine.models.openai_model import OpenAIConfig, OpenAIModel, load_models_file

    models_file = args.models_file or (
        Path(os.environ["BEAVERTUI_MODELS"]) if "BEAVERTUI_MODELS" in os.environ else None
    )
    if models_file is None and DEFAULT_MODELS_FILE.is_file():
        models_file = DEFAULT_MODELS_FILE
    entries = load_models_file(models_file) if models_file is not None else {}
    config = entries.get(spec) or OpenAIConfig(model=spec)
    updates: dict[str, Any] = {}
    for flag, field in (
        ("base_url", "base_url"),
        ("api_key_env", "api_key_env"),
        ("top_p", "top_p"),
        ("max_tokens", "max_tokens"),
        ("reasoning_effort", "reasoning_effort"),
        ("timeout", "timeout_s"),
        ("retries", "retries"),
    ):
        value = getattr(args, flag)
        if value is not None:
            updates[field] = value
    if args.extra_body:
        try:
            extra = json.loads(args.extra_body)
        except json.JSONDecodeError as exc:
            raise BeaverError(f"--extra-body: not JSON: {exc.msg}") from None
        if not isinstance(extra, dict):
            raise BeaverError("--extra-body: expected a JSON object")
        updates["extra_body"] = extra
    if args.no_stream:
        updates["stream"] = False
    # The protocol's temperature and seed are what the session records, so they are what is sent.
    updates["temperature"] = protocol.temperature
    if protocol.seed is not None:
        updates["seed"] = protocol.seed
    return OpenAIModel(config.model_copy(update=updates))


def _toolchain(args: argparse.Namespace, task: Any) -> Any:
    from beavertui.engine.errors import BeaverError, NoGpuError

    if args.toolchain.startswith("recorded:"):
        from beavertui.engine.toolchain.recorded import RecordedToolchain

        return RecordedToolchain.load(args.toolchain.split(":", 1)[1], unknown=args.unknown_candidates)
    if args.toolchain != "local":
        raise BeaverError(f"--toolchain: expected local or recorded:FILE, not {args.toolchain!r}")
    from beavertui.engine.corpus.load import runnable_here
    from beavertui.engine.host.gpu import probe

    machine = probe()
    if machine.gpu is None:
        raise NoGpuError(
            "no NVIDIA GPU visible, so nothing can be built and run here; "
            "watch a recorded session instead: beavertui replay SESSION (or use --toolchain recorded:FILE)"
        )
    why = runnable_here(task, machine)
    if why is not None:
        raise BeaverError(f"task {task.id} cannot run here: {why}")
    try:
        from beavertui.engine.toolchain.local import LocalToolchain  # type: ignore[import-not-found,unused-ignore]
    except ImportError:
        raise BeaverError(
            "this build of beavertui has no local GPU toolchain (engine/toolchain/local.py)"
        ) from None
    return LocalToolchain()


def _live(args: argparse.Namespace) -> int:
    from beavertui.engine.corpus.load import default_corpus, load_corpus
    from beavertui.engine.errors import BeaverError

    if args.resume is not None:
        return _resume(args)
    if not args.task or not args.model:
        raise BeaverError("live needs --task ID and --model MODEL (or --resume SESSION)")
    task = load_corpus(args.corpus or default_corpus(), [args.task]).get(args.task)
    protocol = _protocol(args)
    toolchain = _toolchain(args, task)
    model = _model(args, task, protocol)
    session_id = uuid.uuid4().hex[:12]
    out: Path = args.out or args.sessions_dir / "live" / f"{task.id}-{session_id}.jsonl"
    if not args.headless and sys.stdout.isatty():
        try:
            from beavertui.tui.live import run_live
        except ImportError:
            pass
        else:
            return int(
                run_live(
                    task, model, toolchain, protocol, out, paused=args.paused, session_id=session_id,
                    notes=args.notes,
                )
            )  # fmt: skip
    return run_headless(task, model, toolchain, protocol, out, session_id=session_id, notes=args.notes)


def _resume(args: argparse.Namespace) -> int:
    """Continue a killed session: its task, protocol and (for endpoints) model come from its header."""
    from beavertui.engine.corpus.load import load_corpus
    from beavertui.engine.errors import BeaverError
    from beavertui.engine.models.openai_model import OpenAIConfig, OpenAIModel
    from beavertui.engine.session.store import SessionWriter, read_session

    header, _events, problem = read_session(args.resume)
    if header is None:
        raise BeaverError(f"{args.resume}: cannot resume: {problem}")
    task_id = header.task.id
    if args.task and args.task != task_id:
        raise BeaverError(f"{args.resume} is a session of task {task_id!r}, not {args.task!r}")
    task = load_corpus(args.corpus or Path(header.task.corpus), [task_id]).get(task_id)
    protocol = header.protocol
    if args.model:
        model = _model(args, task, protocol)
    elif header.model.kind == "openai":
        known = set(OpenAIConfig.model_fields) - {"model", "base_url", "api_key_env"}
        params = {k: v for k, v in header.model.params.items() if k in known}
        config = OpenAIConfig(
            model=header.model.name, base_url=args.base_url or header.model.base_url, **params
        )
        if args.api_key_env:
            config = config.model_copy(update={"api_key_env": args.api_key_env})
        model = OpenAIModel(config)
    else:
        raise BeaverError(f"resuming a {header.model.kind} session needs --model (e.g. {header.model.name})")
    toolchain = _toolchain(args, task)
    writer, prefix = SessionWriter.reopen(args.resume, redact=model.secrets())
    if problem:
        print(f"beavertui: resuming after the valid prefix ({problem})", file=sys.stderr)
    return run_headless(
        task, model, toolchain, protocol, args.resume, writer=writer, resume_from=(header, prefix)
    )


def run_headless(
    task: Any, model: Any, toolchain: Any, protocol: Any, out: Path, writer: Any = None, **run_kw: Any
) -> int:
    """Run the session, append each event to ``out`` and print a line per event; 0 when it succeeded.

    ``writer``: an already open SessionWriter (resuming); the re-yielded header is then not written.
    """
    from beavertui.console import EventPrinter
    from beavertui.engine.loop.run import run_session
    from beavertui.engine.session.events import SessionEnd, SessionHeader
    from beavertui.engine.session.store import SessionWriter

    printer = EventPrinter()
    stream = run_session(task, model, toolchain, protocol, **run_kw)
    success = False
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
                if isinstance(item, SessionHeader):
                    if writer is None:
                        writer = SessionWriter(out, item, redact=model.secrets())
                elif writer is not None:
                    writer.append(item)
                printer.show(item)
                if isinstance(item, SessionEnd):
                    success = item.success
            except KeyboardInterrupt:
                interrupted = True  # let the loop close the session as stopped, then stop
    finally:
        printer.close()
        if writer is not None:
            writer.close()
            print(f"session written to {out}", file=sys.stderr)
    return 0 if success else 1
