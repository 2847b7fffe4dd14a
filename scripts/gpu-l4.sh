#!/usr/bin/env bash
# Feedback level L4 on an H200, from the repository root: one `beavertui live --headless` session at L4 on
# the bundled task $TASK (default transpose_00, whose broken start runs and gives wrong results). The model
# is scripted: it first resubmits the broken start (built, run, wrong, profiled with ncu beside the
# reference), then the reference, so the second request carries the profile. Copies to $OUT/l4/: the
# session file, the raw ncu CSV of every profiled attempt and of the reference, summary.json and the
# logs. Record them into the repository with: cp -r $OUT/l4 tests/data/l4
#   bash scripts/gpu-l4.sh [TOTAL_SECONDS]
set -uo pipefail
cd "$(dirname "$0")/.."
TOTAL=${1:-400}
TASK=${TASK:-transpose_00}
. scripts/gpu-common.sh
L4=$OUT/l4
mkdir -p "$L4"
command -v ncu >/dev/null || log "ncu is not on PATH: the session will be refused (that refusal is recorded too)"
ncu --version >"$L4/ncu-version.txt" 2>&1
python3 - "$TASK" "$W/script.json" <<'PY'
import json, sys
from pathlib import Path
from beavertui.engine.corpus.load import load_corpus
task = next(t for t in load_corpus(Path("corpus")).tasks if t.id == sys.argv[1])
tag = task.language if task.language != "cpp" else "cpp"
replies = [
    "Resubmitting the file to see the profile.\n\n```%s\n%s```\n" % (tag, task.broken_start()),
    "The repaired file.\n\n```%s\n%s```\n" % (tag, task.reference()),
]
json.dump(replies, open(sys.argv[2], "w"))
PY
log "script: rc $?"
export CUDA_VISIBLE_DEVICES=${CUDA_VISIBLE_DEVICES:-0}
timeout -k 5 $(($(left) - 30)) python3 -m beavertui live --headless --task "$TASK" --corpus corpus \
  --model "scripted:$W/script.json" --feedback L4 --out "$L4/session.jsonl" >"$L4/live.log" 2>&1
log "live: rc $? ($(tail -1 "$L4/live.log"))"
python3 - "$L4" <<'PY'
import json, sys
from pathlib import Path
from beavertui.engine.session.events import Profiled, Request
from beavertui.engine.session.store import read_session
out = Path(sys.argv[1])
header, events, problem = read_session(out / "session.jsonl")
summary = {"problem": problem, "profiles": [], "requests_with_profile": []}
for e in events:
    if isinstance(e, Profiled):
        (out / f"iteration{e.iteration}.ncu.csv").write_text(e.raw)
        (out / "reference.ncu.csv").write_text(e.reference_raw)
        summary["profiles"].append({"iteration": e.iteration, "rc": e.result.rc, "candidate": [k.model_dump() for k in e.candidate],
                                    "reference": [k.model_dump() for k in e.reference], "ncu_log_tail": e.result.log[-2000:]})
    if isinstance(e, Request) and "Profiler metrics (ncu)" in e.messages[-1].content:
        summary["requests_with_profile"].append({"iteration": e.iteration, "message": e.messages[-1].content})
(out / "summary.json").write_text(json.dumps(summary, indent=1))
print(len(summary["profiles"]), "profiled attempts,", len(summary["requests_with_profile"]), "requests with a profile")
PY
log "extract: $(python3 -c "import json;d=json.load(open('$L4/summary.json'));print(len(d['profiles']),'profiles')" 2>&1)"
cp "$W/steps.log" "$L4/steps.log"
log "end"
