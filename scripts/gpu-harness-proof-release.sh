#!/usr/bin/env bash
# The harness proof on the release's nvcc-built harness families, on a GPU machine, from the repository root:
# the constructor cheat (prints a pass, _exit(0) before main) on one real instance of each of cuda (plain and
# under compute-sanitizer), cublas, cusparse, cusolver and cufft, and each instance's reference through its
# real harness (proof "ran", correct). On the CPU machine the library families are skipped: its CUDA toolkit
# has no cuBLAS, cuSPARSE, cuSOLVER or cuFFT. Logs in $OUT/w (pytest.log: every case, and why any skipped).
#   bash scripts/gpu-harness-proof-release.sh
set -uo pipefail
cd "$(dirname "$0")/.."
TOTAL=480
. scripts/gpu-common.sh
for lib in cublas_v2.h cusparse.h cusolverDn.h cufft.h; do
  echo "#include <$lib>" | nvcc -E -x cu - >/dev/null 2>&1 && log "nvcc finds $lib" || log "nvcc finds no $lib"
done
log "compute-sanitizer: $(command -v compute-sanitizer || echo none)"
timeout "$(left)" python3 -m pytest -q -p no:cacheprovider -n 0 -rs \
  tests/engine/judge/test_harness_proof_release.py tests/engine/judge/test_harness_proof.py >"$W/pytest.log" 2>&1
rc=$?
tail -n 25 "$W/pytest.log"
log "pytest exit $rc"
exit $rc
