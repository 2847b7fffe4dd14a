#!/usr/bin/env bash
# A scripted:@alternate batch (scripts/release-alternate.toml: broken start, then the reference submission;
# K = 2) over every usable CUDABeaver release instance, on a GPU machine, from the repository root. It stops
# inside the time budget and continues on a later run (on any machine) from the carried run directory.
#   bash scripts/gpu-release-batch.sh [TOTAL_SECONDS]          (default 540)
# Inputs (git-ignored, carried): .release/a and .release/b (the release, as for gpu-release-validate.sh),
# .release/prev/validation/ (the verdicts of gpu-release-validate.sh: unusable tasks are skipped), and to
# continue, .release/prev/sessions/$RUN_ID (the run directory an earlier run left in $OUT).
# Environment: TASKS (globs of task ids for a new run, comma-separated; default every usable task), RUN_ID
# (the run's name, default release-alternate; e.g. RUN_ID=release-kernelbench TASKS='kernelbench_*'),
# BATCH_FLAGS (more flags of beavertui batch, e.g. --gpu-share 8: kernelbench's JIT builds run inside its
# test command, so its runs hold a GPU slot while the GPU itself waits on the compiler), DRAIN (seconds
# before the end in which no new session starts, so that a time limit cuts none; default: none), RESERVE
# (seconds kept after the batch for metrics, the timeline and packing; default 60).
# WATCH (seconds): snapshots of the process tree and the GPU every WATCH seconds, in procs.log (see
# watch_procs in gpu-common.sh), to see which stage a long check is in.
# .release/prev/startlogs (optional): the kept start checks of an earlier run on the same kind of machine.
# Writes to $OUT: sessions/$RUN_ID (the run, resumable), batch.log, metrics.txt and metrics.json, startlogs/,
# timeline.txt and timeline.json (bench/batch_timeline.py over this run's stretch, start checks included),
# w/steps.log, and batch-out.tgz (all of it but w/, in one file).
set -uo pipefail
cd "$(dirname "$0")/.."
TOTAL=${1:-540}
. scripts/gpu-common.sh
REL=/tmp/release
mkdir -p "$REL" "$OUT/sessions"
merge_release
CACHE=${XDG_CACHE_HOME:-$HOME/.cache}/beavertui
if [ -d .release/prev/validation ]; then
  mkdir -p "$CACHE/validation" && cp -a .release/prev/validation/. "$CACHE/validation/"
  log "stored verdicts: $(find "$CACHE/validation" -name '*.json' | wc -l)"
else
  log "no stored verdicts (.release/prev/validation): every runnable task runs"
fi
# the fresh checks of broken starts made by earlier runs (a broken start that hangs costs its GPU the whole
# time limit once per machine, not once per run)
if [ -d .release/prev/startlogs ]; then
  mkdir -p "$CACHE/startlogs" && cp -a .release/prev/startlogs/. "$CACHE/startlogs/"
  log "kept start checks: $(find "$CACHE/startlogs" -name '*.json' ! -name '*.inflight.json' | wc -l) (and $(find "$CACHE/startlogs" -name '*.inflight.json' | wc -l) notes of checks an earlier run lost)"
fi
RUN_ID=${RUN_ID:-release-alternate}
RUN="$OUT/sessions/$RUN_ID"
if [ -d ".release/prev/sessions/$RUN_ID" ]; then
  cp -a ".release/prev/sessions/$RUN_ID" "$OUT/sessions/"
  log "continuing $RUN"
  set -- --resume "$RUN"
else
  set -- --protocol scripts/release-alternate.toml --corpus "$REL" --sessions-dir "$OUT/sessions" --run-id "$RUN_ID"
  [ -n "${TASKS:-}" ] && set -- "$@" --tasks "$TASKS"
fi
budget=$(( $(left) - ${RESERVE:-60} ))
[ -n "${WATCH:-}" ] && watch_procs "$WATCH" && log "watching processes every $WATCH s (procs.log)"
# DRAIN seconds before the budget ends, no new session starts (--start-until), so that the sessions in
# flight can finish before the time limit cuts them
if [ -n "${DRAIN:-}" ] && [ "$budget" -gt "$DRAIN" ]; then
  set -- "$@" --start-until $(( budget - DRAIN ))
  log "sessions start for $(( budget - DRAIN )) s of the batch's $budget s"
fi
# SIGINT first: the batch stops cleanly and keeps every finished session; SIGKILL 20 s later at worst
timeout -s INT -k 20 "$budget" python3 -m beavertui batch "$@" --corpus "$REL" --quiet ${BATCH_FLAGS:-} >"$W/batch.log" 2>&1
log "batch: rc $? (tail: $(tail -3 "$W/batch.log" | tr '\n' ' '))"
python3 -m beavertui metrics "$RUN" >"$OUT/metrics.txt" 2>"$W/metrics.log"
python3 -m beavertui metrics "$RUN" --json >"$OUT/metrics.json" 2>>"$W/metrics.log"
log "metrics: $(grep -h 'unfinished\|without a speedup\|count at p' "$W/metrics.log" | head -3 | tr '\n' ' ')"
[ -d "$CACHE/startlogs" ] && mkdir -p "$OUT/startlogs" && cp -a "$CACHE/startlogs/." "$OUT/startlogs/"
python3 bench/batch_timeline.py "$RUN" ${CACHE:+--startlogs "$CACHE/startlogs"} >"$OUT/timeline.txt" 2>&1
python3 bench/batch_timeline.py "$RUN" ${CACHE:+--startlogs "$CACHE/startlogs"} --json >"$OUT/timeline.json" 2>/dev/null
log "timeline: $(tail -1 "$OUT/timeline.txt")"
cp "$W/steps.log" "$OUT/steps.log"
[ -f "$W/procs.log" ] && cp "$W/procs.log" "$OUT/procs.log"
cp "$W/batch.log" "$OUT/batch.log"  # what the batch printed: how it ended, what it left running
# One file holds the whole result: a machine that sends back only a few files of $OUT still returns the run
# (unpack it over $OUT's layout: tar xzf batch-out.tgz).
cp "$W/steps.log" "$OUT/steps.log"
pack_out batch-out.tgz
cp "$W/steps.log" "$OUT/steps.log"
