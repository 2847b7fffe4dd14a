#!/usr/bin/env bash
# On a GPU machine, from the repository root: the minimal fixes of the release's 65 usable nvcc-family
# instances (bench/release-cupti-tasks.txt: a drop-in reference, usable on the H200), searched by
# `beavertui corpus minimize` with the judge oracle (build, run and time at the 0.7 gate) on GPU 0, within
# TOTAL seconds (default 540, so that a call ends inside 9 minutes). Smallest reference diff first.
#
# Resumable over several calls: every oracle answer is kept in the store, so a call that starts from the
# previous call's store asks nothing twice and goes on where it stopped. Carry the previous call's store as
# .release/prev (git-ignored): either its store.tgz as it came back (mkdir -p .release/prev && cp
# FILES_AT/store.tgz .release/prev/) or its store/ folder. Carried, git-ignored: .release/a (the release
# without cutlass; see scripts/gpu-release-timing.sh), .whl/ and, from the second call, .release/prev.
# A compile-only search made ahead on a machine without a GPU (corpus minimize --oracle compile --store S,
# the same nvcc) goes along as .release/prev/compile-only (S/compile-only): the judge then asks the GPU
# about none of the candidates it found not to build (docs/analysis.md, Builds answered ahead).
#
# Results in $OUT:
#   store/<gpu>/minimal_fixes.json          one entry per instance (status, verified, lines, speedup, why...)
#   store/<gpu>/<task>/minimal_fix.patch     each fix found (broken start -> fix, diff -u)
#   store/<gpu>/answers/judge/<task>.jsonl   every oracle answer (what the next call resumes from)
#   hunks.jsonl, minimize.jsonl              this call's outcome per instance after the hunk phase, and at its end
#                                            (corpus minimize --json)
#   figures.md, figures.json                 scripts/minimal_fixes_figures.py over the store
#   store.tgz                                store/ packed (for a machine that sends back few files)
#   w/hunks.log, w/minimize.log, w/steps.log progress and the steps
# Once every instance has an outcome other than "budget", copy store/<gpu>/minimal_fixes.json and the
# patches (not answers/) into beavertui/engine/corpus/known/fixes/<gpu>/: scoring then reads them everywhere.
#   bash scripts/gpu-minimal-fixes.sh [TOTAL_SECONDS]
# The search is bound by its builds (nvcc, one core each): a machine with more cores finishes in fewer calls,
# still verifying on GPU 0 alone. Settings (environment): WORKERS (instances searched at once, default three
# quarters of the cores: 12 on a 16-core H200 machine), GPU_JOBS (correctness runs on the
# GPU at once, default 6), MAX_CALLS (fresh oracle calls an instance may make per call, default 400), TASKS
# (ids, patterns or @FILE; default the 65), ORACLE (judge; "compile" rehearses the script without a GPU),
# MISSING=1 (search only the instances no store holds a verified fix for, whichever GPU verified it: on a
# second GPU, what the first did not fix; the fixes the package ships count).
set -uo pipefail
cd "$(dirname "$0")/.."
TOTAL=${1:-540}
. scripts/gpu-common.sh
[ -d .release/a/data ] || { log "no release under .release/a"; exit 2; }
mkdir -p "$OUT/store"
if [ -f .release/prev/store.tgz ]; then  # the previous call's store.tgz, as it came back
  tar xzf .release/prev/store.tgz -C "$OUT" && log "previous store.tgz unpacked: $(find "$OUT/store" -name '*.jsonl' | wc -l) answer files"
fi
for folder in .release/prev/*/; do  # or its store/ folders, and the builds answered ahead (compile-only/)
  [ -d "$folder" ] && cp -a "$folder" "$OUT/store/" && log "merged $folder: $(find "$folder" -name '*.jsonl' | wc -l) answer files"
done
# no oracle call starts in the last 100 s: the slowest instances' build, run and timing take up to a minute.
# First every instance's hunk phase (all the time it needs): each gets a fix 1-minimal over hunks, a scoring
# target wherever a whole hunk of the reference could be left out; then the line phases in the time left.
# Breadth first: on an H100 a hunk phase gave a verified fix to 18 of the 30 instances that finished it,
# while a line phase takes hundreds of candidates. A later call replays both over the kept answers at no
# oracle cost and goes on; its --hunks-only pass also goes over each line phase as far as the kept answers
# answer it (asking nothing), so an instance a previous call finished keeps its fix 1-minimal over lines.
budget=$(($(left) - 100))
WORKERS=${WORKERS:-$(($(nproc) * 3 / 4 > 1 ? $(nproc) * 3 / 4 : 1))}
ARGS=(--corpus .release/a/data --tasks "${TASKS:-@bench/release-cupti-tasks.txt}" --oracle "${ORACLE:-judge}"
  --store "$OUT/store" --workers "$WORKERS" --max-calls "${MAX_CALLS:-400}" --json)
# the GPU's options for the judge only (the compile-only oracle refuses them: it uses no GPU)
[ "${ORACLE:-judge}" = judge ] && ARGS+=(--gpu 0 --gpu-jobs "${GPU_JOBS:-6}")
[ "${MISSING:-0}" = 1 ] && ARGS+=(--missing)
log "minimize: ${budget} s of oracle calls, $WORKERS workers, ${GPU_JOBS:-6} runs on the GPU at once"
timeout -k 10 $((budget + 70)) python3 -m beavertui corpus minimize "${ARGS[@]}" --hunks-only \
  --budget-s "$budget" >"$OUT/hunks.jsonl" 2>"$W/hunks.log"
log "hunk phase: rc $? ($(wc -l <"$OUT/hunks.jsonl") instances); $(tail -1 "$W/hunks.log")"
budget=$(($(left) - 100))
if [ "$budget" -gt 30 ]; then
  timeout -k 10 $((budget + 70)) python3 -m beavertui corpus minimize "${ARGS[@]}" --budget-s "$budget" \
    >"$OUT/minimize.jsonl" 2>"$W/minimize.log"
  log "minimize: rc $? ($(wc -l <"$OUT/minimize.jsonl") instances this call)"
  tail -1 "$W/minimize.log" | tee -a "$STEPS"
else
  log "no time left for the line phases (${budget} s): the next call goes on from the kept answers"
fi
for folder in "$OUT"/store/*/; do
  [ -f "$folder/minimal_fixes.json" ] || continue
  [ "$(basename "$folder")" = compile-only ] && continue  # the builds answered ahead, not this GPU's fixes
  python3 scripts/minimal_fixes_figures.py "$folder" --tasks bench/release-cupti-tasks.txt >"$OUT/figures.md"
  python3 scripts/minimal_fixes_figures.py "$folder" --tasks bench/release-cupti-tasks.txt --json >"$OUT/figures.json"
done
head -8 "$OUT/figures.md" 2>/dev/null
tar czf "$OUT/store.tgz" -C "$OUT" store && log "packed: store.tgz ($(du -h "$OUT/store.tgz" | cut -f1))"
cp "$W/steps.log" "$OUT/steps.log"
