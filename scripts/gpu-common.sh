# Sourced (from the repository root) by the GPU scripts, after they set TOTAL (seconds they may take):
# logs under $OUT/w, log() with seconds since start (to $STEPS, default $OUT/w/steps.log), left() seconds
# left of TOTAL, the wheels carried in .whl/ installed into /tmp/site (the GPU machine has no package
# index; made by shared/tools/gpu-wheels.sh), the GPU list in w/gpus.csv and NGPU.
OUT=${OUT:-/tmp/beaver-out}
W=$OUT/w
mkdir -p "$W"
STEPS=${STEPS:-$W/steps.log}
T0=$(date +%s)
log() { echo "[$(($(date +%s) - T0)) s] $*" | tee -a "$STEPS"; }
left() { echo $((TOTAL - ($(date +%s) - T0))); }
if [ -d .whl ]; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl \
    >"$W/pip.log" 2>&1 || log "wheel install failed (see w/pip.log)"
fi
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=index,name,compute_cap,driver_version,persistence_mode,clocks.sm,clocks.mem,utilization.gpu \
  --format=csv >"$W/gpus.csv" 2>&1
NGPU=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU ')
log "start: $NGPU GPU(s), $(nproc) cores, $(nvcc --version 2>/dev/null | tail -1)"
# watch_procs SECONDS: in the background, every SECONDS until this script ends, the process tree (elapsed
# seconds, CPU %, state, command) and the GPU's compute processes and utilization, to $W/procs.log: what a
# long stage is doing when its own record cannot say yet.
watch_procs() {
  local every=$1
  (
    while kill -0 $$ 2>/dev/null; do
      {
        echo "=== [$(($(date +%s) - T0)) s]"
        ps -eo pid,ppid,etimes,pcpu,stat,args --forest | grep -v ' ps -eo \| grep ' | cut -c1-220 | \
          grep -E 'python|nvcc|cicc|ptxas|compute-sanitizer|ncu|timeout|[.]out|beaver' | head -60
        nvidia-smi --query-gpu=index,utilization.gpu,memory.used --format=csv,noheader 2>&1
        nvidia-smi --query-compute-apps=pid,used_memory --format=csv,noheader 2>&1
      } >>"$W/procs.log"
      sleep "$every"
    done
  ) &
}
# pack_out NAME [TAR OPTION...]: all of $OUT but w/ in $OUT/NAME (a .tgz), for a machine that sends back only a
# few files of $OUT. It is packed in w/ and then moved: packed into the folder it reads, tar found that folder
# changed as it read it and exited 1 (the archive whole), so the line saying it was packed was never logged.
pack_out() {
  local name=$1
  shift
  rm -f "$OUT/$name"
  tar czf "$W/$name" -C "$OUT" --exclude=w "$@" . && mv "$W/$name" "$OUT/$name" \
    && log "packed: $name ($(du -h "$OUT/$name" | cut -f1))"
}

# The release, carried in parts as .release/a and .release/b (git-ignored), merged into $REL; a run
# without it stops here (exit 2).
merge_release() {
  local part
  for part in .release/a .release/b; do
    [ -d "$part" ] && cp -a "$part/." "$REL/" && log "release part $part merged"
  done
  [ -d "$REL/data" ] || { log "no release under .release/a or .release/b"; exit 2; }
}
