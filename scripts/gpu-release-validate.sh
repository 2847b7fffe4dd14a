#!/usr/bin/env bash
# Validate the CUDABeaver release on a GPU machine, from the repository root, in chunks that each end
# inside the time budget; a later run continues where this one stopped.
#   bash scripts/gpu-release-validate.sh [TOTAL_SECONDS] [CHUNK]          (defaults 540 and 12)
# The release comes as git-ignored folders under .release/ (merged in this order into /tmp/release):
#   .release/a  (everything but cutlass)   .release/b  (CUTLASS headers and the cutlass instances)
# Earlier results: .release/prev/validate.jsonl (tasks already there are not validated again) and
# .release/prev/validation/ (stored verdicts, put back into the cache), .release/prev/baselines/ (stored
# reference times, put back too: --reuse-checks takes them for the tasks that share a reference). Environment: WORKERS (default: cores;
# KB_WORKERS for the kernelbench chunks, default at most 8),
# VALIDATE_FLAGS (extra flags of corpus validate, e.g. --no-timing), TIMING_ONLY=1 (with timing: only the tasks
# whose stored check waits for its reference time, usable ones first and unusable ones last; with --reuse-checks
# nothing but that timing runs), KB_CHUNK
# (kernelbench tasks per chunk), KB_GPU_JOBS (kernelbench checks' GPU stages at once: corpus validate --gpu-jobs), ONLY (a grep -E pattern of task ids), RAW_IDS (tasks whose raw stage outputs are kept, for the fixtures).
# Earlier results whose stored verdicts are missing get them back (scripts/release_store_verdicts.py).
# Writes to $OUT: validate.jsonl (every result so far, earlier ones included), chunks/*.{jsonl,log},
# raw/ (stage outputs), validation/ (stored verdicts), baselines/ (stored reference times), w/steps.log (chunk logs carry seconds since start), validate-out.tgz (all of it but raw/ and w/, in one file); one instance's failure never stops the rest.
set -uo pipefail
cd "$(dirname "$0")/.."
TOTAL=${1:-540}
CHUNK=${2:-12}
. scripts/gpu-common.sh
REL=/tmp/release
mkdir -p "$REL" "$OUT/chunks" "$OUT/raw"
merge_release
CACHE=${XDG_CACHE_HOME:-$HOME/.cache}/beavertui
if [ -d .release/prev/validation ]; then mkdir -p "$CACHE/validation" && cp -a .release/prev/validation/. "$CACHE/validation/"; fi
if [ -d .release/prev/baselines ]; then mkdir -p "$CACHE/baselines" && cp -a .release/prev/baselines/. "$CACHE/baselines/"; fi
: >"$OUT/validate.jsonl"
[ -f .release/prev/validate.jsonl ] && grep -h '"task_id"' .release/prev/validate.jsonl >>"$OUT/validate.jsonl"
if [ -s "$OUT/validate.jsonl" ]; then
  log "$(python3 scripts/release_store_verdicts.py "$REL" "$OUT/validate.jsonl" "$(python3 -c 'from beavertui.engine.host.gpu import gpu_signature as g; s = g(); print(s.slug if s else "none")')" 2>&1 | tail -1)"
fi
WORKERS=${WORKERS:-$(nproc)}
GPUS=$(seq -s, 0 $((NGPU > 0 ? NGPU - 1 : 0)))
python3 -m beavertui corpus list --corpus "$REL" --json >"$W/list.jsonl" 2>"$W/list.log"
python3 - "$REL" >"$W/deps.txt" 2>&1 <<'PY'
import sys
from pathlib import Path
from beavertui.engine.corpus.families import dependency_lines
from beavertui.engine.corpus.load import load_corpus
lines = dependency_lines(list(load_corpus(Path(sys.argv[1])).tasks))
print("\n".join(lines) or "every family's Python modules are importable")
PY
log "python modules: $(head -c 600 "$W/deps.txt")"
ls "$REL/data" | grep -v '^_' | grep -E "${ONLY:-.}" >"$W/all.txt"
python3 - "$OUT/validate.jsonl" "$W/all.txt" "${VALIDATE_FLAGS:-}" "$REL" >"$W/todo.txt" <<'PY'
import hashlib, json, os, sys
timing = "--no-timing" not in sys.argv[3]
done = set()
untimed_ids = set()
verdict = {}
for line in open(sys.argv[1]):
    try:
        r = json.loads(line)
    except ValueError:
        continue
    if not isinstance(r, dict) or "task_id" not in r:
        continue
    verdict[r["task_id"]] = r.get("verdict")
    # a task checked without timing whose reference passed is timed now (--reuse-checks keeps its checks)
    untimed = r.get("reference_ms") is None and r.get("reference_category") == "passed" and r.get(
        "reference_kind") in ("drop_in", "eager_model")
    # a check that ran out of GPU memory beside other checks, stored before such checks were made again
    # alone, says nothing about the task: it is checked again
    oom = "out_of_memory" in (r.get("reference_category"), r.get("broken_category")) and not any(
        "checked again alone" in n for n in r.get("notes") or [])
    if oom:
        done.discard(r["task_id"])
        continue
    if not (timing and untimed):
        done.add(r["task_id"])
    elif untimed:
        untimed_ids.add(r["task_id"])
todo = [t for t in open(sys.argv[2]).read().split() if t not in done]
timing_only = timing and bool(os.environ.get("TIMING_ONLY"))
if timing_only:
    # only the tasks whose stored check waits for its reference time (with --reuse-checks nothing else runs)
    todo = [t for t in todo if t in untimed_ids]
def rank(t):
    # with TIMING_ONLY usable ones first and unusable ones last: a run cut by its budget leaves the least
    # useful timings for the next
    if not timing_only:
        return 0
    return {"usable": 0, "usable_relabelled": 1, "unusable": 3}.get(verdict.get(t) or "", 2)
# kernelbench last (among tasks of one rank): its checks (JIT builds of the broken starts) are the longest,
# and a run cut by its budget should leave the fewest families unvalidated
def reference(t):
    # instances with one reference next to each other, so that one chunk holds them and times it once
    d = os.path.join(sys.argv[4], "data", t)
    h = hashlib.sha256()
    for name in ("reference.py", "reference.cu", "testbench/problem.py"):
        try:
            h.update(open(os.path.join(d, name), "rb").read())
        except OSError:
            pass
    return h.hexdigest() if timing_only else ""
for t in sorted(todo, key=lambda t: (rank(t), t.startswith("kernelbench"), reference(t), t)):
    print(t)
PY
log "$(wc -l <"$W/todo.txt") of $(wc -l <"$W/all.txt") tasks to validate; $WORKERS workers, GPUs $GPUS"
if [ -n "${RAW_IDS:-}" ] && [ "$(left)" -gt 200 ]; then
  timeout -k 10 $(( $(left) / 3 )) python3 scripts/release_raw_logs.py --corpus "$REL" --out "$OUT/raw" $RAW_IDS \
    >"$W/raw.log" 2>&1
  log "raw outputs: rc $? ($(ls "$OUT/raw" | wc -l) files)"
fi
n=0
KB_WORKERS=${KB_WORKERS:-$(( WORKERS < 8 ? WORKERS : 8 ))}
# kernelbench in chunks of its own, after the rest (corpus validate takes a chunk's tasks in corpus order, so
# a mixed chunk would start with kernelbench), and with fewer workers: each of its checks holds tens of GiB
# of GPU memory, and 16 at once ran out of memory in 11 of 25 checks on an H200
grep -v '^kernelbench' "$W/todo.txt" | split -l "$CHUNK" -d -a 3 - "$W/chunk.a" 2>/dev/null
# kernelbench chunks of KB_CHUNK (default KB_WORKERS): a task that ran out of memory beside others is
# checked again alone at the end of its chunk, so a cut run loses at most the chunk it was in
grep '^kernelbench' "$W/todo.txt" | split -l "${KB_CHUNK:-$KB_WORKERS}" -d -a 3 - "$W/chunk.k" 2>/dev/null
for f in "$W"/chunk.a* "$W"/chunk.k*; do
  [ -f "$f" ] || continue
  budget=$(( $(left) - 25 ))
  if [ "$budget" -lt 120 ]; then log "time budget spent: $(wc -l <"$f") tasks of chunk $f and the later chunks wait for the next run"; break; fi
  n=$((n + 1))
  args=()
  for t in $(cat "$f"); do args+=(--task "$t"); done
  name=$(basename "$f")
  timeout -k 10 "$budget" python3 -m beavertui corpus validate --corpus "$REL" "${args[@]}" --json \
    --workers "$(case "$(basename "$f")" in chunk.k*) echo "$KB_WORKERS" ;; *) echo "$WORKERS" ;; esac)" --gpus "$GPUS" \
    $(case "$(basename "$f")" in chunk.k*) [ -n "${KB_GPU_JOBS:-}" ] && echo "--gpu-jobs $KB_GPU_JOBS" ;; esac) ${VALIDATE_FLAGS:-} >"$OUT/chunks/$name.jsonl" \
    2> >(while IFS= read -r l; do printf '[%s s] %s\n' "$(($(date +%s) - T0))" "$l"; done >"$OUT/chunks/$name.log")
  rc=$?
  grep -h '"task_id"' "$OUT/chunks/$name.jsonl" >>"$OUT/validate.jsonl"
  log "chunk $name: rc $rc, $(grep -c '"task_id"' "$OUT/chunks/$name.jsonl") of $(wc -l <"$f") results"
done
mkdir -p "$OUT/validation" && cp -a "$CACHE/validation/." "$OUT/validation/" 2>/dev/null
[ -d "$CACHE/baselines" ] && mkdir -p "$OUT/baselines" && cp -a "$CACHE/baselines/." "$OUT/baselines/" 2>/dev/null
python3 scripts/release_validation_doc.py "$OUT/validate.jsonl" --all "$W/all.txt" >"$OUT/release-validation.md" 2>"$W/doc.log"
log "end: $(grep -c '"task_id"' "$OUT/validate.jsonl") results of $(wc -l <"$W/all.txt") tasks; table in release-validation.md"
cp "$W/steps.log" "$OUT/steps.log"
# One file holds the whole result (see gpu-release-batch.sh): tar xzf validate-out.tgz restores $OUT's layout.
cp "$W/steps.log" "$OUT/steps.log"
pack_out validate-out.tgz --exclude=raw
cp "$W/steps.log" "$OUT/steps.log"
