#!/usr/bin/env bash
# attn.mha on the GPU machine's Vulkan driver, beside the same layer on
# cuda, in one call from carried files only: bench/vulkan/make_carry.sh's
# output in $CARRY (default .carry/vulkan). Sets up the loader and the JIT
# as device_run.sh does (SETUP_ONLY), finds PyTorch's cuBLASLt for the
# cuda layer's projections (ATTN_CUBLASLT, as bench/python/device_torch.sh
# does), then runs bench/vulkan/vk_mha.py: the layer's checks against the
# float64 reference on each of $VARIANTS (default auto,portable) and the
# timings vulkan vs cuda ($TIMINGS cells dtype:E:S, $ROUNDS rounds of
# $BENCH runs). Writes mha.md, mha-checks.csv, mha-timings.csv and run.log
# under $OUT (default bench-out). Exit status: vk_mha.py's (1: a check
# failed), 2 when the set-up failed.
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 2
CARRY=${CARRY:-.carry/vulkan}
OUT=${OUT:-bench-out}
ROOT=${VK_ROOT:-/tmp/attn-vulkan}
mkdir -p "$OUT"
SETUP_ONLY=1 CARRY=$CARRY OUT=$OUT VK_ROOT=$ROOT bash bench/vulkan/device_run.sh || exit 2
# shellcheck disable=SC1091
. "$ROOT/env.sh"
if [ -z "${ATTN_CUBLASLT:-}" ]; then
  ATTN_CUBLASLT=$(python3 bench/python/find_cublaslt.py 2>/dev/null || true)
  [ -n "$ATTN_CUBLASLT" ] && export ATTN_CUBLASLT
fi
echo "cuBLASLt for the cuda layer: ${ATTN_CUBLASLT:-not found}" | tee -a "$OUT/run.log"
CUDA_FLAG=()
[ -n "${ATTN_CUBLASLT:-}" ] || CUDA_FLAG=(--no-cuda)
python3 bench/vulkan/vk_mha.py --attn-run "$ROOT/bin/attn-run" --out "$OUT" \
  --variants "${VARIANTS:-auto,portable}" \
  ${TIMINGS:+--timings "$TIMINGS"} --rounds "${ROUNDS:-2}" \
  --bench "${BENCH:-5}" --budget-s "${BUDGET_S:-420}" "${CUDA_FLAG[@]}" \
  2>&1 | tee -a "$OUT/run.log"
exit "${PIPESTATUS[0]}"
