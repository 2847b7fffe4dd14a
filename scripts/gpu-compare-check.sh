#!/usr/bin/env bash
# One candidate checked under two revisions of beavertui on a GPU machine, from the repository root: this
# tree, and another revision's beavertui/ copied into ALT (git-ignored, carried; e.g. made with
#   mkdir -p .gpu-carry/alt && git -C /path/to/other/checkout archive HEAD beavertui | tar x -C .gpu-carry/alt).
#   ALT=.gpu-carry/alt bash scripts/gpu-compare-check.sh TASK [TASK ...]
# For each task, `beavertui check TASK --no-timing --json` (the broken start) runs alone under each
# revision, one after the other, and one line per revision gives each stage's duration and the verdict.
# The other revision runs from inside ALT: `python3 -m` puts the working folder first on the import path, so
# from the repository root it would import this tree's beavertui whatever PYTHONPATH says. SIDES picks the
# revisions (default "this alt").
# The release comes as for gpu-release-validate.sh (.release/a, .release/b); CORPUS overrides the corpus.
# Writes to $OUT: compare/<revision>-<task>.jsonl (the events), compare.txt (the summary), w/steps.log.
set -uo pipefail
cd "$(dirname "$0")/.."
TOTAL=${TOTAL:-540}
. scripts/gpu-common.sh
[ -n "${ALT:-}" ] && [ -d "$ALT/beavertui" ] || { log "ALT must name a folder holding another beavertui/"; exit 2; }
REL=${CORPUS:-/tmp/release}
if [ -z "${CORPUS:-}" ]; then
  mkdir -p "$REL"
  for part in .release/a .release/b; do [ -d "$part" ] && cp -a "$part/." "$REL/"; done
fi
mkdir -p "$OUT/compare"
for t in "$@"; do
  for side in ${SIDES:-this alt}; do
    dir=$PWD
    [ "$side" = alt ] && dir=$ALT
    s=$(date +%s)
    (cd "$dir" && python3 -c 'import beavertui, sys; print(beavertui.__file__, file=sys.stderr)' \
      && python3 -m beavertui check "$t" --corpus "$REL" --no-timing --json) \
      >"$OUT/compare/$side-$t.jsonl" 2>"$OUT/compare/$side-$t.log"
    log "$side $t: rc $? in $(($(date +%s) - s)) s (beavertui from $(head -1 "$OUT/compare/$side-$t.log"))"
  done
done
python3 - "$OUT/compare" >"$OUT/compare.txt" <<'PY'
import json, sys
from pathlib import Path
for f in sorted(Path(sys.argv[1]).glob("*.jsonl")):
    stages, verdict = [], "-"
    for line in f.read_text().splitlines():
        try:
            e = json.loads(line)
        except ValueError:
            continue
        r = e.get("result") if isinstance(e, dict) else None
        if isinstance(r, dict) and r.get("stage"):
            stages.append(f"{r['stage']} {r.get('duration_s') or 0:.1f} s (rc {r.get('rc')})")
        if isinstance(e, dict) and e.get("kind") == "verdict":
            verdict = e.get("category", "-")
    print(f"{f.stem}: {', '.join(stages) or 'no stage'}; verdict {verdict}")
PY
cat "$OUT/compare.txt" | tee -a "$STEPS"
