#!/usr/bin/env bash
# Every task's named baselines on one GPU (an H200), from the repository root: PyTorch eager, torch.compile
# (default and reduce-overhead), CUDA Graph replay and the vendor library where declared, timed by
# `beavertui corpus baselines` (docs/metrics.md, Baselines), and the GPU's ceilings for the roofline.
#   1. the bundled corpus (41 tasks, about 30 distinct PyTorch equivalents): each set stored in the task
#      folder (corpus/<task>/baselines/named/<slug>.json), to commit;
#   2. the release's usable kernelbench instances (the H200 verdicts of engine/corpus/known/, 62 instances,
#      54 distinct problem.py): stored in the user cache, and written to $OUT/bl/release-kernelbench.jsonl to
#      commit into tests/data.
# Then the table of the bundled corpus's baselines beside each reference ($OUT/bl/native-table.md, what
# docs/analysis.md shows; its title counts the tasks with eager, both torch.compile modes and graph times),
# the same for the kernelbench instances ($OUT/bl/kernelbench-table.md), and everything in $OUT/baselines.tgz.
# Elsewhere, `beavertui corpus baselines --corpus RELEASE --load release-kernelbench.jsonl` stores the release's
# sets again (the bundled corpus's are committed in its task folders). Ends inside TOTAL seconds (default 540);
# what was not reached says so in its log line.
#   [PART=all|native|kernelbench] [MISSING=1] bash scripts/gpu-baselines.sh [TOTAL_SECONDS]
# PART (default all): native records only part 1, kernelbench only part 2, which then has the whole call (for a
# GPU whose bundled corpus's sets are committed, as the H100's are). MISSING=1 times only the tasks without a
# set stored on this machine: the bundled corpus's committed sets count, the release's (in the user cache) only
# on the machine that stored them; the --out files hold the sets this call stored.
# JOBS (default 12): drivers started at once. Each sizes its inputs, output and weights on torch's meta device
# first; those whose estimated GPU memory fits together in 90% of the GPU's (nvidia-smi) are admitted and warm
# up (torch.compile, TORCHINDUCTOR_COMPILE_THREADS=1 worker each) side by side, then each is timed alone, then
# the next round is admitted; one too large to share (a kernelbench problem's inputs reach 17 GB) runs alone
# and, its estimate above the room, takes its variants one at a time, each released before the next
# (docs/metrics.md, Admission by memory). WARM_S (default 150): a driver not sized, or once admitted not
# compiled and warmed up, by then is stopped (one taking its variants one at a time: WARM_S per variant after
# its go). A driver that still ran out of GPU memory beside others is timed again by itself next, before any
# new driver (corpus baselines does it), time allowing.
# NATIVE_S (default 150): seconds the bundled corpus may start drivers for, before the release's turn. The
# kernelbench part starts drivers until WARM_S before its time is up (the last round's warm-up; its timing is
# short); with under WARM_S + 30 s left for it (40 s are kept for the tables) it is skipped and says so. Every set is written to its --out file as it is
# stored, so a part cut short keeps the sets stored before.
# A call after one cut short: carry that call's bl/release-kernelbench.jsonl as .release/prev/release-kernelbench.jsonl
# and set MISSING=1 (the bundled corpus's sets it stored are committed into corpus/*/baselines/named first).
# Carried, git-ignored: .release/a (the release without cutlass, as for scripts/gpu-release-timing.sh) and
# .whl/ (torch and the rest, as for every GPU script).
set -uo pipefail
cd "$(dirname "$0")/.."
TOTAL=${1:-540}
PART=${PART:-all}
case "$PART" in
  all | native | kernelbench) ;;
  *) echo "PART=$PART: expected all, native or kernelbench" >&2; exit 2 ;;
esac
WARM=${WARM_S:-150}
. scripts/gpu-common.sh
REL=${REL:-/tmp/beaver-release}
mkdir -p "$OUT/bl" "$REL"
JOBS=${JOBS:-12}
# torch.compile's worker processes per driver: JOBS drivers compile side by side on the machine's 16 cores
export TORCHINDUCTOR_COMPILE_THREADS=${TORCHINDUCTOR_COMPILE_THREADS:-1}
MORE=()
[ "${MISSING:-0}" = 1 ] && MORE+=(--missing)
watch_procs 20
python3 -c 'import torch; print("torch", torch.__version__, torch.cuda.get_device_name(0))' >"$W/torch.log" 2>&1
log "torch: $(tail -1 "$W/torch.log")"

# 1. the bundled corpus
if [ "$PART" = kernelbench ]; then
  log "native: skipped (PART=kernelbench; the sets committed in corpus/*/baselines/named stand)"
else
  b=$(($(left) - 60))
  log "native: start (${b} s left, drivers started for ${NATIVE_S:-150} s)"
  timeout -k 10 "$b" python3 -m beavertui corpus baselines --jobs "$JOBS" --trials 20 --warmup 3 \
    --warm-s "$WARM" --budget-s "${NATIVE_S:-150}" --out "$OUT/bl/native.jsonl" --format md "${MORE[@]}" \
    >"$OUT/bl/native-run.md" 2>"$W/native.log"
  log "native: rc $? ($(grep -c . "$OUT/bl/native.jsonl" 2>/dev/null || echo 0) sets)"
fi

# 2. the release's usable kernelbench instances
if [ "$PART" = native ]; then
  log "kernelbench: skipped (PART=native)"
elif [ -d .release/a/data ] || [ -d .release/b/data ]; then
  merge_release
  python3 - "$REL/kernelbench-usable.txt" <<'EOF'
import json, sys
from pathlib import Path
from beavertui.engine import corpus
doc = json.loads((Path(corpus.__file__).parent / "known" / "nvidia_h200_sm_90_cuda_13_0.json").read_text())
ids = sorted(x["task_id"] for x in doc if x["family"] == "kernelbench" and x["verdict"] in ("usable", "usable_relabelled"))
Path(sys.argv[1]).write_text("\n".join(ids) + "\n")
print(len(ids), "usable kernelbench instances")
EOF
  # a previous call's kernelbench sets, carried as .release/prev/release-kernelbench.jsonl (git-ignored): stored
  # here first, so that with MISSING=1 this call times only the instances that call did not reach
  if [ -f .release/prev/release-kernelbench.jsonl ]; then
    python3 -m beavertui corpus baselines --corpus "$REL/data" --load .release/prev/release-kernelbench.jsonl \
      >"$W/load.log" 2>&1
    log "previous kernelbench sets loaded: rc $? ($(grep -c . .release/prev/release-kernelbench.jsonl) lines; $(tail -1 "$W/load.log"))"
  fi
  b=$(($(left) - 40)) # 40 s for the tables and the archive
  if [ $((b - WARM)) -lt 30 ]; then
    log "kernelbench: skipped: ${b} s left, under WARM_S (${WARM} s) + 30 s, too little for one round of drivers to warm up and be timed ($([ "$PART" = all ] && echo "run it alone: PART=kernelbench" || echo "give it a larger TOTAL"))"
  else
    log "kernelbench: start (${b} s left, drivers started for $((b - WARM)) s)"
    timeout -k 10 "$b" python3 -m beavertui corpus baselines --corpus "$REL/data" --tasks-file "$REL/kernelbench-usable.txt" \
      --jobs "$JOBS" --trials 20 --warmup 3 --warm-s "$WARM" --budget-s $((b - WARM)) --out "$OUT/bl/release-kernelbench.jsonl" \
      --format md "${MORE[@]}" >"$OUT/bl/kernelbench-run.md" 2>"$W/kernelbench.log"
    log "kernelbench: rc $? ($(grep -c . "$OUT/bl/release-kernelbench.jsonl" 2>/dev/null || echo 0) sets)"
  fi
else
  log "kernelbench: no release carried (.release/a): skipped"
fi

# 3. the table, the ceilings, the stored files
python3 -m beavertui corpus baselines --table --format md >"$OUT/bl/native-table.md" 2>"$W/table.log"
log "table: rc $? ($(head -1 "$OUT/bl/native-table.md"))"
if [ -f "$REL/kernelbench-usable.txt" ]; then
  python3 -m beavertui corpus baselines --corpus "$REL/data" --tasks-file "$REL/kernelbench-usable.txt" --table \
    --format md >"$OUT/bl/kernelbench-table.md" 2>>"$W/table.log"
  log "kernelbench table: rc $? ($(head -1 "$OUT/bl/kernelbench-table.md"))"
fi
cp ~/.cache/beavertui/ceilings/*.json "$OUT/bl/" 2>/dev/null
cp "$W"/*.log "$W/gpus.csv" "$OUT/bl/" 2>/dev/null
tar czf "$OUT/baselines.tgz" -C "$OUT" bl -C "$PWD" $(ls -d corpus/*/baselines/named 2>/dev/null)
log "end: $(du -h "$OUT/baselines.tgz" | cut -f1)"
cp "$W/steps.log" "$OUT/steps.log"
