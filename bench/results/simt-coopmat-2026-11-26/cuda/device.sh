#!/usr/bin/env bash
# The CUDA device call of this measurement (run from the checkout's root on
# the GPU machine; make_artifacts.sh's cubins, twins of main at 462f7b8
# included, carried in .carry/cuda):
#   1. device_ab.sh on the generic kernels (the SIMT mapping of the tiled
#      form against the old convert-attn-to-gpu kernel): every check shape
#      for the new kernels, the quick set for the twins, then the prefill
#      and decode cells timed alternately with flash;
#   2. with TC_QUICK=1, the quick check set on every tensor-core artifact
#      (the merge of the SIMT and decode work left their PTX as compared
#      here, but they run once more on the device);
#   3. compute-sanitizer memcheck (every generic kernel, three check
#      shapes) and racecheck (three generic kernels, three small shapes).
export OUT=$(realpath "${OUT:-bench-out}")
mkdir -p "$OUT"
cd "$(dirname "$0")/../../../.." || exit 2
export ARTIFACTS=$PWD/.carry/cuda
ONLY=generic_ CHECKS=full ROUNDS=${ROUNDS:-3} SIZES=${SIZES:-1024,4096,16384} \
  SQ_DECODE= BUDGET_S=${BUDGET_S:-200} timeout 330 bash bench/cuda/device_ab.sh
echo "device_ab rc=$?"
rm -f "$OUT/results.csv"
if [ "${TC_QUICK:-0}" = 1 ]; then
  timeout 90 python3 bench/cuda/run_h100.py --artifacts "$ARTIFACTS" \
    --out /tmp/tc --quick --no-twins --only tc_ > "$OUT/tc-quick.log" 2>&1
  echo "tc quick rc=$?"
fi
SAN=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
PYTORCH_NO_CUDA_MEMORY_CACHING=1 timeout 200 "$SAN" --tool memcheck \
  --error-exitcode 3 python3 bench/cuda/run_h100.py --artifacts "$ARTIFACTS" \
  --out /tmp/mc --quick --check-shapes 3 --no-twins --no-torch-checks --only generic_ \
  > "$OUT/memcheck.log" 2>&1; echo "memcheck rc=$?"
timeout 70 "$SAN" --tool racecheck --error-exitcode 3 python3 \
  bench/cuda/run_h100.py --artifacts "$ARTIFACTS" --out /tmp/rc --quick \
  --check-shapes 3 --no-twins --no-torch-checks \
  --only generic_f16_d64_causal,generic_bf16_d128_dropout_causal_lse,generic_f16_d64_boolmask_lse_split5 \
  > "$OUT/racecheck.log" 2>&1; echo "racecheck rc=$?"
grep -h "correctness:" "$OUT/run.log" "$OUT/memcheck.log" "$OUT/racecheck.log"
[ -f "$OUT/tc-quick.log" ] && grep -h "correctness:" "$OUT/tc-quick.log"
grep -h "ERROR SUMMARY\|RACECHECK SUMMARY" "$OUT/memcheck.log" "$OUT/racecheck.log"
