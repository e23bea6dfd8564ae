#!/usr/bin/env bash
# The whole GPU-machine matrix in one call, from carried files only (no
# build there): bench/cuda/make_artifacts.sh's output in $ARTIFACTS (default
# .carry/cuda). Writes under $OUT (default bench-out):
#   results.{json,csv,md}, tflops.png, run.log  correctness + timings vs PyTorch
#                   (run.log starts with nvidia-smi: the GPU, driver, clocks)
#   decode.csv      decode rows: GB/s one call at a time and back to back, and
#                   host microseconds per call (attn_host_us,
#                   attn_launch_host_us, flash_host_us)
#   memcheck.log    compute-sanitizer memcheck, the quick correctness set, every
#                   kernel, PyTorch's caching allocator off (every tensor its
#                   own allocation, so an access past one is caught) and
#                   without the checks' comparison with PyTorch's flash
#                   backend (its split-KV combine kernel writes past an
#                   allocation: 2026-11-22m; the float64 reference still
#                   runs PyTorch's own kernels)
#   racecheck.log   compute-sanitizer racecheck (shared-memory hazards), the
#                   quick set's three small shapes, the tensor-core kernels
#                   of each geometry
# (8 files: what one call brings back at most; the sanitizer runs' own
# results files stay on the machine.) A/B twins (<kernel>_x_<tag>) in
# $ARTIFACTS are left out here (--no-twins): bench/cuda/device_ab.sh times
# them.
set -uo pipefail
cd "$(dirname "$0")/../.."
ART=${ARTIFACTS:-.carry/cuda}
OUT=${OUT:-bench-out}
mkdir -p "$OUT"
nvidia-smi > "$OUT/run.log" 2>&1
SAN_OUT=$(mktemp -d /tmp/sanitizer-out.XXXXXX)
SAN=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
status=0
python3 bench/cuda/run_h100.py --artifacts "$ART" --out "$OUT" --no-twins \
  --budget-s "${BUDGET_S:-300}" >> "$OUT/run.log" 2>&1 || status=1
PYTORCH_NO_CUDA_MEMORY_CACHING=1 \
"$SAN" --tool memcheck --error-exitcode 3 python3 bench/cuda/run_h100.py \
  --artifacts "$ART" --out "$SAN_OUT/memcheck" --quick --no-torch-checks --no-twins \
  > "$OUT/memcheck.log" 2>&1 || status=1
"$SAN" --tool racecheck --error-exitcode 3 python3 bench/cuda/run_h100.py \
  --artifacts "$ART" --out "$SAN_OUT/racecheck" --quick --check-shapes 3 --no-torch-checks --no-twins \
  --only tc_f16_d64_boolmask_lse,tc_bf16_d128_addmask_causal_lse,tc_f16_d256_boolmask_causal_lse,tc_f16_d128 \
  > "$OUT/racecheck.log" 2>&1 || status=1
grep -h "correctness:" "$OUT/run.log" "$OUT/memcheck.log" "$OUT/racecheck.log"
grep -h "ERROR SUMMARY\|RACECHECK SUMMARY" "$OUT/memcheck.log" "$OUT/racecheck.log"
exit $status
