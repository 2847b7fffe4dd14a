"""``beavertui attribute``: which feedback component made repairs succeed (Shapley and Banzhaf values).

From one frozen step of one session (``SESSION --at STEP``) or from the failed steps of every session
of a batch run (``--run RUN_DIR``), runs N branches per subset of the components and prints the values
of each component and pair, with bootstrap intervals, for the outcomes compiled, correct and passed,
and beside them the controls: no feedback, randomised feedback (``--random-feedback DIR``), the dummy
plan (``--dummy-plan``, or ``plan`` among the components) and every component (docs/analysis.md).
"""

from __future__ import annotations

import argparse
import functools
import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from beavertui.commands.branch import add_common
from beavertui.commands.numbers import MAX_RESAMPLES, MIN_RESAMPLES, int_in
from beavertui.commands.paths import session_path
from beavertui.engine.limits import MAX_BUDGET, MAX_SAMPLES, MAX_SEED

if TYPE_CHECKING:
    from beavertui.engine.analysis.attribute_run import BranchOutcome
    from beavertui.engine.analysis.attribution import Attribution, Estimate


def register(sub: Any) -> None:
    p = sub.add_parser(
        "attribute",
        help="attribute repair outcomes to feedback components (Shapley, Banzhaf)",
        description="For every subset of the feedback components, run N branches from the same frozen "
        "step with only those components in the feedback, and report the Shapley and Banzhaf value of "
        "each component and the pairwise interactions, with bootstrap intervals over samples (and steps).",
    )
    p.add_argument(
        "session", nargs="?", type=session_path, metavar="SESSION", help="the session to branch from"
    )
    p.add_argument(
        "--at",
        type=int_in(1, MAX_BUDGET),
        metavar="STEP",
        help="the frozen step (with --run: only this step)",
    )
    p.add_argument(
        "--components",
        default="compiler,sanitizer,timing",
        help="comma-separated feedback components: compiler, runtime, sanitizer, timing, profile, static; "
        "and plan, under a planning protocol (coalitions without it get the dummy plan)",
    )
    p.add_argument(
        "--dummy-plan",
        action="store_true",
        help="run the dummy-plan control (planning protocols): N more branches with every feedback component "
        "and a fixed content-free plan in place of the planner's (with plan among the components, that "
        "control is the coalition without it and nothing more runs)",
    )
    p.add_argument(
        "--horizon",
        type=int_in(1, MAX_BUDGET - 1),
        default=1,
        metavar="H",
        help="attempts after the frozen step each branch runs; its outcome is their best (default 1)",
    )
    p.add_argument(
        "--no-feedback-history",
        choices=["kept", "dropped"],
        default="kept",
        help="the empty subset (no feedback): keep the conversation (the protocol's history window) or "
        "drop it (every request is the first turn again, as L0); default kept",
    )
    p.add_argument(
        "--random-feedback",
        metavar="DIR",
        help="run the randomised-feedback control: N more branches whose notes are those of another "
        "task's attempt of the same category, drawn from the sessions under DIR",
    )
    p.add_argument(
        "--donor-seed",
        type=int_in(0, MAX_SEED),
        default=0,
        metavar="S",
        help="seed of the randomised-feedback draws (default 0)",
    )
    p.add_argument(
        "--samples",
        type=int_in(1, MAX_SAMPLES),
        default=3,
        metavar="N",
        help="branches per subset (default 3)",
    )
    p.add_argument(
        "--run", metavar="RUN_DIR", help="aggregate over the failed steps of a batch run's sessions"
    )
    p.add_argument(
        "--resamples",
        type=int_in(MIN_RESAMPLES, MAX_RESAMPLES),
        default=1000,
        metavar="B",
        help="bootstrap resamples (default 1000)",
    )
    p.add_argument("--json", action="store_true", help="print one JSON object instead of tables")
    p.add_argument(
        "--show",
        metavar="FILE",
        help="show a saved attribution-*.json (the TUI on a terminal, tables otherwise); runs nothing",
    )
    p.add_argument(
        "--out", metavar="DIR", help="folder for the branch sessions (default sessions/attribution)"
    )
    add_common(p)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from beavertui.commands.branch import options_of
    from beavertui.engine.analysis.attribute_run import (
        attribute_outcomes,
        controls,
        failed_steps,
        run_attribution,
    )
    from beavertui.engine.analysis.attribution import MEASURES
    from beavertui.engine.errors import BeaverError
    from beavertui.engine.fileio import write_atomic
    from beavertui.engine.session.store import read_session, session_files
    from beavertui.service.branching import model_of, protocol_of, task_of, toolchain_of

    if args.show:
        return show(Path(args.show))
    components = [c.strip() for c in args.components.split(",") if c.strip()]
    if not components:
        raise BeaverError("--components needs at least one component")
    if (args.session is None) == (args.run is None):
        raise BeaverError("give either SESSION --at STEP or --run RUN_DIR")
    if args.session is not None and args.at is None:
        raise BeaverError("SESSION needs --at STEP")
    donors = None
    left: list[str] = []  # folders the walk did not enter (unreadable, too deep), said before any branch
    if args.random_feedback is not None:
        from beavertui.engine.analysis.attribute_run import donor_pool

        donor_dir = Path(args.random_feedback)
        if not donor_dir.is_dir():
            raise BeaverError(f"--random-feedback {donor_dir}: not a folder")
        donors = donor_pool(sorted(session_files(donor_dir, left_out=left)))
        _say_left_out(left)
        if not donors:
            raise BeaverError(f"--random-feedback {donor_dir}: no judged, failed attempt to draw from")
    jobs: list[tuple[Path, int]] = []
    if args.session is not None:
        jobs.append((Path(args.session), args.at))
    else:
        run_dir = Path(args.run)
        if not run_dir.is_dir():
            raise BeaverError(f"{run_dir}: not a folder")
        for path in sorted(session_files(run_dir, left_out=left)):
            header, _events, _problem = read_session(path)
            if header is None or header.parent is not None:
                continue  # damaged files and branches are not frozen steps of the run
            steps = failed_steps(path)
            jobs += [(path, s) for s in steps if args.at is None or s == args.at]
        _say_left_out(left)
        if not jobs:
            raise BeaverError(f"{run_dir}: no session with a failed step to branch from")
    options = options_of(args)
    toolchain = toolchain_of(options)
    out_dir = Path(args.out) if args.out else Path("sessions") / "attribution"
    outcomes: list[BranchOutcome] = []
    skipped: list[str] = []
    for path, step in jobs:
        header, _events, problem = read_session(path)
        if header is None:
            raise BeaverError(f"{path}: {problem}")
        protocol = protocol_of(header, options)
        task = task_of(header, args.corpus)
        if not args.json:
            extra = " + randomised feedback" if donors is not None else ""
            extra += " + dummy plan" if args.dummy_plan and "plan" not in components else ""
            print(
                f"{path} at step {step}: {2 ** len(components)} subsets{extra} x {args.samples} samples, "
                f"horizon {args.horizon}"
            )
        outcomes += run_attribution(
            path,
            step,
            components,
            args.samples,
            task,
            functools.partial(model_of, header, options, protocol, task),
            toolchain,
            out_dir,
            protocol_update={"temperature": protocol.temperature, "history": protocol.history},
            horizon=args.horizon,
            no_feedback=args.no_feedback_history,
            donors=donors,
            seed=args.donor_seed,
            skipped=skipped,
            dummy_plan=args.dummy_plan,
            models_file=options.models,
        )
    missing = sum(1 for o in outcomes if o.correct is None)
    usable = [o for o in outcomes if o.correct is not None]
    if not usable:
        raise BeaverError("every branch failed before a verdict (see the branch sessions' infra errors)")
    results = attribute_outcomes(usable, components, resamples=args.resamples)
    control = {m: controls(usable, components, m, resamples=args.resamples) for m in MEASURES}
    setup = {
        "horizon": args.horizon,
        "no_feedback_history": args.no_feedback_history,
        "random_feedback": None
        if donors is None
        else {"donors_from": args.random_feedback, "pool": len(donors), "seed": args.donor_seed},
        "dummy_plan": "plan" in components or args.dummy_plan,
        "skipped": skipped,
    }
    doc = to_json(results, outcomes, missing, control, setup)
    name = f"run-{Path(args.run).name}" if args.run else f"{Path(args.session).stem}-at{args.at}"
    saved = out_dir / f"attribution-{name}.json"
    saved.parent.mkdir(parents=True, exist_ok=True)
    write_atomic(saved, json.dumps(doc, indent=1) + "\n")
    if args.json:
        print(json.dumps(doc, indent=1))
    else:
        for line in skipped:
            print(line)
        print(render(results, len(jobs), len(outcomes), missing, control, setup))
        print(f"\nsaved: {saved} (branch sessions beside it)")
    return 0


def _say_left_out(left: list[str]) -> None:
    """Each folder the walk of a run did not enter, one line (as ``metrics`` says them), then forgotten."""
    for line in left:
        print(f"beavertui: left out {line}", file=sys.stderr)
    left.clear()


def show(path: Path) -> int:
    """A saved attribution: the attribution screen on a terminal, its tables as text otherwise."""
    from beavertui.tui.analysis import attribution_renderable, load_attribution

    doc = load_attribution(path)
    if not sys.stdout.isatty():
        from rich.console import Console

        Console(width=120, highlight=False).print(attribution_renderable(doc, str(path)))
        return 0
    from beavertui.tui.analysis import AttributionScreen
    from beavertui.tui.app import BeaverApp

    BeaverApp(lambda: AttributionScreen([path])).run()
    return 0


def to_json(
    results: dict[str, Attribution],
    outcomes: list[BranchOutcome],
    missing: int,
    control: dict[str, dict[str, Estimate]] | None = None,
    setup: dict[str, object] | None = None,
) -> dict[str, object]:
    from beavertui.engine.analysis.attribution import to_json as one

    return {
        "measures": {m: one(a) for m, a in results.items()},
        "controls": {
            **(setup or {}),
            "values": {
                m: {k: {"value": e.value, "low": e.low, "high": e.high} for k, e in c.items()}
                for m, c in (control or {}).items()
            },
        },
        "branches": len(outcomes),
        "without_verdict": missing,
        "outcomes": [
            {
                "parent": o.parent,
                "step": o.step,
                "subset": sorted(o.subset),
                "sample": o.sample,
                "compiled": o.compiled,
                "correct": o.correct,
                "passed": o.passed,
                "session": str(o.path) if o.path else None,
                "condition": o.condition,
                "horizon": o.horizon,
                "donors": list(o.donors),
            }
            for o in outcomes
        ],
    }


def render(
    results: dict[str, Attribution],
    steps: int,
    branches: int,
    missing: int,
    control: dict[str, dict[str, Estimate]] | None = None,
    setup: dict[str, object] | None = None,
) -> str:
    from beavertui.engine.analysis.attribution import CONTROL_LABELS, control_text
    from beavertui.engine.analysis.report import attribution_rows

    lines = [f"{steps} frozen step(s), {branches} branches ({missing} without a verdict, left out)"]
    if setup is not None:
        lines.append(
            f"horizon {setup['horizon']} attempt(s) after the frozen step (best outcome); no feedback: "
            f"history {setup['no_feedback_history']}"
        )
    for measure, a in results.items():
        pct = f"{a.confidence:.0%}"
        lines += [
            "",
            f"outcome: {measure}  (values in outcome share, 0..1; {pct} percentile bootstrap intervals"
            + ("" if a.resamples is None else f", {a.resamples} resamples, seed {a.seed}")
            + f"; {a.samples} branches over {a.steps} step(s))",
        ]
        rows = [("component", "Shapley", "Banzhaf"), *attribution_rows(a)]
        if len(a.components) > 1:
            rows += [("pair", "Shapley interaction", "Banzhaf interaction"), *attribution_rows(a, "pair")]
        width = [max(len(r[i]) for r in rows) for i in range(3)]
        lines += ["  " + "  ".join(c.ljust(w) for c, w in zip(r, width, strict=True)) for r in rows]
        means = ", ".join(
            f"{'+'.join(c for c in a.components if c in s) or 'none'} {v:.2f}"
            for s, v in a.subset_means.items()
        )
        lines.append(f"  subset means: {means}")
        got = (control or {}).get(measure, {})
        if got:
            rows = [
                ("control", "mean outcome (contrasts: difference)"),
                *[(CONTROL_LABELS[k], control_text(k, e.value, e.low, e.high)) for k, e in got.items()],
            ]
            width = [max(len(r[i]) for r in rows) for i in range(2)]
            lines += ["  " + "  ".join(c.ljust(w) for c, w in zip(r, width, strict=True)) for r in rows]
    return "\n".join(lines)
