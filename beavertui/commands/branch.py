"""``beavertui branch SESSION --at STEP``: a new session from the frozen prefix of a recorded one.

The flags become ``BranchOptions`` (``attribute`` shares them); the branch itself is built and run by
``service/branching.py``, as it is for the TUI's branch form.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from beavertui.commands.numbers import float_in, int_in
from beavertui.commands.paths import session_path
from beavertui.engine.limits import MAX_BUDGET, MAX_HISTORY, MAX_TEMPERATURE

if TYPE_CHECKING:
    from beavertui.service.branching import BranchOptions


def add_common(p: argparse.ArgumentParser) -> None:
    """Options shared by branch and attribute: where the task, the model and the toolchain come from."""
    p.add_argument(
        "--model",
        metavar="M",
        help="model to ask: NAME (OpenAI-compatible), or scripted:FILE; "
        "default: the parent's model when it was an endpoint",
    )
    p.add_argument(
        "--temperature",
        type=float_in(0, MAX_TEMPERATURE),
        metavar="T",
        help="sampling temperature (default: the parent's)",
    )
    p.add_argument(
        "--corpus", metavar="DIR", help="corpus holding the task (default: the one the parent used)"
    )
    p.add_argument(
        "--recorded",
        metavar="SPEC",
        help="judge candidates with recorded outcomes (a recordings "
        "file, a session file or a folder of sessions; demo: the bundled demos) instead of this machine's GPU",
    )
    from beavertui.commands.endpoint import add_endpoint_options

    add_endpoint_options(p, deprecated_models=True)


def register(sub: Any) -> None:
    p = sub.add_parser(
        "branch",
        help="start a new session from the frozen prefix of a recorded one",
        description="Copy a recorded session's events up to STEP, then continue the repair from there under "
        "a changed protocol (feedback level, history window, model, temperature). The new session "
        "records its parent and branch step.",
    )
    p.add_argument("session", type=session_path, metavar="SESSION", help="the parent session file")
    p.add_argument(
        "--at",
        type=int_in(1, MAX_BUDGET),
        required=True,
        metavar="STEP",
        help="iteration after which to branch",
    )
    p.add_argument(
        "--feedback",
        choices=["L0", "L1", "L2", "L3", "L3S", "L3_raw", "L4"],
        help="feedback level from STEP on",
    )
    p.add_argument(
        "--planning",
        choices=["implicit", "plan"],
        help="planner + coder from STEP on, or one call (implicit)",
    )
    p.add_argument("--planner", metavar="MODEL", help="the model that plans from STEP on (plan transfer)")
    p.add_argument(
        "--no-coder-feedback", action="store_true", help="the coding call gets the plan without the feedback"
    )
    p.add_argument("--summariser", metavar="MODEL", help="the model that condenses L3S feedback")
    p.add_argument("--history", type=int_in(1, MAX_HISTORY), metavar="H", help="rounds of history kept")
    p.add_argument(
        "--budget",
        type=int_in(1, MAX_BUDGET),
        metavar="K",
        help="iteration budget of the branch (default: the parent's)",
    )
    add_common(p)
    p.add_argument("--out", metavar="FILE", help="session file to write (default: sessions/branches/...)")
    p.set_defaults(func=run)


def options_of(args: argparse.Namespace) -> BranchOptions:
    """The branch options given by the flags (attribute's flags are a subset)."""
    from beavertui.commands.endpoint import endpoint_overrides, models_file_of
    from beavertui.service.branching import BranchOptions

    models_file = models_file_of(args)
    return BranchOptions(
        feedback=getattr(args, "feedback", None),
        planning=getattr(args, "planning", None),
        planner=getattr(args, "planner", None),
        coder_feedback=False if getattr(args, "no_coder_feedback", False) else None,
        summariser=getattr(args, "summariser", None),
        history=getattr(args, "history", None),
        temperature=args.temperature,
        budget=getattr(args, "budget", None),
        model=args.model,
        models=str(models_file) if models_file is not None else None,
        base_url=args.base_url,
        corpus=args.corpus,
        recorded=str(session_path(args.recorded)) if args.recorded else None,
        endpoint=endpoint_overrides(args),
    )


def run(args: argparse.Namespace) -> int:
    from beavertui.engine.errors import session_exit_status
    from beavertui.engine.session.describe import ended_text
    from beavertui.engine.session.events import SessionEnd, Verdict
    from beavertui.service.branching import start_branch

    branch = start_branch(Path(args.session), args.at, options_of(args), Path(args.out) if args.out else None)
    print(f"branch of {args.session} at step {args.at}: {branch.protocol.short()} -> {branch.path}")
    end: SessionEnd | None = None
    for e in branch.events:
        if isinstance(e, Verdict) and e.iteration > args.at:
            speed = f", {e.speedup:.2f}x" if e.speedup is not None else ""
            print(f"  iteration {e.iteration}: {e.category}{speed}{' (success)' if e.success else ''}")
        elif isinstance(e, SessionEnd):
            end = e
            print(f"ended: {ended_text(e, branch.protocol.gate)}")
    sys.stdout.flush()
    return session_exit_status(end.success, end.stop_reason) if end is not None else 3
