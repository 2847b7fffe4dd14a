"""``beavertui branch SESSION --at STEP``: a new session from the frozen prefix of a recorded one.

Also holds the small resolvers the analysis commands share (the task of a session, the model to ask,
the toolchain to judge with), so that ``attribute`` builds its branches exactly as ``branch`` does.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from beavertui.engine.corpus.task import Task
    from beavertui.engine.models.base import Model
    from beavertui.engine.session.events import SessionHeader
    from beavertui.engine.session.protocol import Protocol
    from beavertui.engine.toolchain.base import Toolchain


def add_common(p: argparse.ArgumentParser) -> None:
    """Options shared by branch and attribute: where the task, the model and the toolchain come from."""
    p.add_argument(
        "--model",
        metavar="M",
        help="model to ask: NAME (OpenAI-compatible), or scripted:FILE; "
        "default: the parent's model when it was an endpoint",
    )
    p.add_argument(
        "--models",
        metavar="FILE",
        help="TOML models file defining NAME ([models.NAME]); default $BEAVERTUI_MODELS",
    )
    p.add_argument("--base-url", metavar="URL", help="endpoint base URL for --model NAME")
    p.add_argument(
        "--temperature", type=float, metavar="T", help="sampling temperature (default: the parent's)"
    )
    p.add_argument(
        "--corpus", metavar="DIR", help="corpus holding the task (default: the one the parent used)"
    )
    p.add_argument(
        "--recorded",
        metavar="SPEC",
        help="judge candidates with recorded outcomes (a recordings "
        "file, a session file or a folder of sessions) instead of this machine's GPU",
    )


def register(sub: Any) -> None:
    p = sub.add_parser(
        "branch",
        help="start a new session from the frozen prefix of a recorded one",
        description="Copy a recorded session's events up to STEP, then continue the repair from there under "
        "a changed protocol (feedback level, history window, model, temperature). The new session "
        "records its parent and branch step.",
    )
    p.add_argument("session", metavar="SESSION", help="the parent session file")
    p.add_argument("--at", type=int, required=True, metavar="STEP", help="iteration after which to branch")
    p.add_argument("--feedback", choices=["L0", "L1", "L2", "L3", "L4"], help="feedback level from STEP on")
    p.add_argument("--history", type=int, metavar="H", help="rounds of history kept (1-4)")
    p.add_argument(
        "--budget", type=int, metavar="K", help="iteration budget of the branch (default: the parent's)"
    )
    add_common(p)
    p.add_argument("--out", metavar="FILE", help="session file to write (default: sessions/branches/...)")
    p.set_defaults(func=run)


def protocol_of(header: SessionHeader, args: argparse.Namespace) -> Protocol:
    from pydantic import ValidationError

    from beavertui.engine.errors import BeaverError

    update: dict[str, object] = {"method": "iterative"}
    for key in ("feedback", "history", "temperature", "budget"):
        value = getattr(args, key, None)
        if value is not None:
            update[key] = value
    try:
        return header.protocol.model_validate({**header.protocol.model_dump(), **update})
    except ValidationError as exc:
        err = exc.errors()[0]
        raise BeaverError(f"--{err['loc'][0]}: {err['msg']}") from None


def task_of(header: SessionHeader, corpus: str | None) -> Task:
    from beavertui.engine.corpus.load import load_corpus
    from beavertui.engine.errors import BeaverError

    root = Path(corpus or header.task.corpus)
    if not root.is_dir():
        raise BeaverError(f"corpus {root} (recorded in the session) is not here; give --corpus DIR")
    task = load_corpus(root, only=[header.task.id]).get(header.task.id)
    if task.ref().broken_start_hash != header.task.broken_start_hash and header.task.broken_start_hash:
        raise BeaverError(f"task {task.id} in {root} has another broken start than the parent session used")
    return task


def model_of(header: SessionHeader, args: argparse.Namespace, protocol: Protocol) -> Model:
    from beavertui.engine.errors import BeaverError
    from beavertui.engine.models.openai_model import OpenAIConfig, OpenAIModel, load_models_file
    from beavertui.engine.models.scripted import ScriptedModel

    spec = args.model
    if spec is None:
        if header.model.kind != "openai":
            raise BeaverError(
                f"the parent's model was {header.model.kind} ({header.model.name}); give --model"
            )
        config = OpenAIConfig(model=header.model.name, base_url=args.base_url or header.model.base_url)
    elif spec.startswith("scripted:"):
        return ScriptedModel.from_file(spec.removeprefix("scripted:"))
    elif args.models or os.environ.get("BEAVERTUI_MODELS"):
        models_file = args.models or os.environ["BEAVERTUI_MODELS"]
        configs = load_models_file(models_file)
        if spec not in configs:
            raise BeaverError(f"{models_file}: no model {spec!r} (it defines {', '.join(configs) or 'none'})")
        config = configs[spec]
    else:
        config = OpenAIConfig(model=spec, base_url=args.base_url)
    return OpenAIModel(config.with_protocol(protocol.temperature, protocol.seed))


def toolchain_of(args: argparse.Namespace) -> Toolchain:
    from beavertui.engine.errors import BeaverError

    if args.recorded:
        from beavertui.engine.toolchain.recorded import RecordedToolchain

        return RecordedToolchain.load(args.recorded)
    from beavertui.engine.errors import NoGpuError
    from beavertui.engine.host.gpu import probe

    if probe().gpu is None:
        raise NoGpuError(
            "no NVIDIA GPU visible, so nothing can be built and run here; judge with --recorded SPEC"
        )
    try:
        from beavertui.engine.toolchain.local import LocalToolchain  # type: ignore[import-not-found,unused-ignore]
    except ImportError:
        raise BeaverError(
            "this build of beavertui has no local GPU toolchain; judge with --recorded SPEC"
        ) from None
    return LocalToolchain()  # type: ignore[no-any-return,unused-ignore]


def run(args: argparse.Namespace) -> int:
    from beavertui.engine.analysis.branch import branch_session
    from beavertui.engine.session.events import SessionEnd, SessionHeader, Verdict
    from beavertui.engine.session.store import SessionWriter, load_session

    header, events = load_session(args.session)
    protocol = protocol_of(header, args)
    task = task_of(header, args.corpus)
    model = model_of(header, args, protocol)
    toolchain = toolchain_of(args)
    stream = branch_session(args.session, args.at, task, model, toolchain, protocol, parent=(header, events))
    first = next(stream)
    assert isinstance(first, SessionHeader)
    out = (
        Path(args.out) if args.out else Path("sessions") / "branches" / f"{task.id}-{first.session_id}.jsonl"
    )
    print(f"branch of {args.session} at step {args.at}: {protocol.short()} -> {out}")
    with SessionWriter(out, first, redact=model.secrets()) as writer:
        for e in stream:
            assert not isinstance(e, SessionHeader)
            writer.append(e)
            if isinstance(e, Verdict) and e.iteration > args.at:
                speed = f", {e.speedup:.2f}x" if e.speedup is not None else ""
                print(f"  iteration {e.iteration}: {e.category}{speed}{' (success)' if e.success else ''}")
            elif isinstance(e, SessionEnd):
                print(f"ended: {e.stop_reason} after {e.iterations} iterations")
    sys.stdout.flush()
    return 0
