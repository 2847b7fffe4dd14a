#!/usr/bin/env bash
# On a GPU machine, from anywhere: apply every bundled task's minimal_fix.patch and check the fixed file as
# `beavertui check TASK --candidate FIXED --json` would (scripts/gpu_check_fixes.py), within TOTAL seconds
# (default 520, so the whole script ends inside 9 minutes). With several GPUs the tasks are split into one
# shard per GPU. Results in $OUT:
#   fixes.tsv          task, verdict category, success, speedup, correct, reason, candidate/reference ms, flags
#   fixes/<task>.cu    the fixed sources; events/<task>.jsonl the attempt's events (check --json lines)
#   bash scripts/gpu-check-fixes.sh [TOTAL_SECONDS]
set -uo pipefail
cd "$(dirname "$0")/.."
TOTAL=${1:-520}
. scripts/gpu-common.sh
lanes=$((NGPU > 0 ? NGPU : 1))
budget=$(($(left) - 25))
log "checking minimal fixes on $lanes GPU lane(s), GPU work starts until ${budget} s from now"
for ((i = 0; i < lanes; i++)); do
  CUDA_VISIBLE_DEVICES=$i timeout -k 10 $((budget + 15)) python3 scripts/gpu_check_fixes.py \
    --out "$W/lane$i" --deadline-s "$budget" --shard "$i/$lanes" --workers "${WORKERS:-6}" ${TASKS:+--tasks "$TASKS"} \
    >"$W/lane$i.log" 2>&1 &
done
wait
for ((i = 0; i < lanes; i++)); do log "lane $i: $(tail -1 "$W/lane$i.log")"; done
mkdir -p "$OUT/fixes" "$OUT/events"
head -1 "$W/lane0/fixes.tsv" >"$OUT/fixes.tsv" 2>/dev/null
for ((i = 0; i < lanes; i++)); do
  tail -n +2 "$W/lane$i/fixes.tsv" 2>/dev/null
  cp "$W/lane$i"/fixes/*.cu "$OUT/fixes/" 2>/dev/null
  cp "$W/lane$i"/events/* "$OUT/events/" 2>/dev/null
done | sort >>"$OUT/fixes.tsv"
log "fixes.tsv: $(($(wc -l <"$OUT/fixes.tsv") - 1)) rows, $(awk -F'\t' '$3 == "true"' "$OUT/fixes.tsv" | wc -l) succeed"
column -t -s $'\t' "$OUT/fixes.tsv" | cut -c1-150
cp "$W/steps.log" "$OUT/steps.log"
