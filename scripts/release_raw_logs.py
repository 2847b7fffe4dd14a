"""Run the broken start and the reference submission of some release tasks once each and keep every stage's
output: the real outputs the CI fixtures of tests/data/release_real/recorded are made from.

    python3 scripts/release_raw_logs.py --corpus RELEASE_ROOT --out DIR ID [ID ...]

Writes DIR/<id>.<side>.<stage>.log (side: broken, reference) and DIR/<id>.<side>.verdict.json. A failure of
one task is written to DIR/<id>.error.txt and never stops the others.
"""

from __future__ import annotations

import argparse
import json
import traceback
from pathlib import Path

from beavertui.engine.corpus import families
from beavertui.engine.corpus.load import load_corpus
from beavertui.engine.session.events import Built, Ran, Sanitized, Timed, Verdict
from beavertui.engine.toolchain.base import AttemptOptions
from beavertui.engine.toolchain.local import LocalToolchain
from beavertui.service.environment import local_config


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--corpus", type=Path, required=True)
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("ids", nargs="+")
    args = ap.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    load = load_corpus(args.corpus, args.ids)
    for p in load.problems:
        print(f"malformed: {p}")
    tool = LocalToolchain(local_config())
    for task in load.tasks:
        sides = [("broken", task.broken_start())]
        ref = families.reference_submission(task)
        if ref is not None:
            sides.append(("reference", ref))
        for side, code in sides:
            try:
                opts = AttemptOptions(iteration=1, gate=0.0, time_if_correct=True, sanitize_on_failure=False)
                for ev in tool.attempt(task, code, opts):
                    if isinstance(ev, (Built, Ran, Sanitized)):
                        name = ev.result.stage if not isinstance(ev, Sanitized) else f"sanitize-{ev.tool}"
                        (args.out / f"{task.id}.{side}.{name}.log").write_text(ev.result.log)
                    elif isinstance(ev, Timed):
                        (args.out / f"{task.id}.{side}.timing.json").write_text(
                            ev.result.model_dump_json(indent=1)
                        )
                    elif isinstance(ev, Verdict):
                        (args.out / f"{task.id}.{side}.verdict.json").write_text(ev.model_dump_json(indent=1))
                        print(
                            f"{task.id} {side}: {ev.category} {ev.speedup} {ev.speedup_note or ''}",
                            flush=True,
                        )
            except Exception:  # one task's failure is recorded, the others still run
                (args.out / f"{task.id}.error.txt").write_text(traceback.format_exc())
                print(f"{task.id} {side}: error (see {task.id}.error.txt)", flush=True)
    (args.out / "done.json").write_text(json.dumps(sorted(t.id for t in load.tasks)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
