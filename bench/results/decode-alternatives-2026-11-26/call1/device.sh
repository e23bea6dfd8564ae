#!/usr/bin/env bash
# The one device call of this measurement (run from the checkout's root on
# the GPU machine, with the branch's bench scripts carried in
# .carry/decode and make_artifacts.sh's cubins, twins included, in
# .carry/cuda): the A/B of this compiler against main at 462f7b8 with
# every check shape for the new kernels, the decode-by-Sq cells, then
# memcheck and racecheck on the new alternatives (attn_kernel_sq*) of a
# causal D = 128 and a causal D = 64 artifact.
export OUT=$(realpath "${OUT:-bench-out}")
mkdir -p "$OUT"
cd "$(dirname "$0")/../.." || exit 2   # .carry/decode -> the checkout
D=.carry/decode
export ARTIFACTS=$PWD/.carry/cuda CHECKS=full ROUNDS=${ROUNDS:-3}
export BUDGET_S=${BUDGET_S:-300} SIZES=${SIZES:-1024,4096,8192,16384}
timeout 450 bash $D/bench/cuda/device_ab.sh; echo "device_ab rc=$?"
rm -f "$OUT/results.csv" # 8 files come back; results.json has the rows
SAN=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
ONLY=tc_bf16_d128_causal,tc_f16_d64_causal
PYTORCH_NO_CUDA_MEMORY_CACHING=1 timeout 60 "$SAN" --tool memcheck \
  --kernel-name kns=attn_kernel_sq --error-exitcode 3 python3 $D/bench/cuda/run_h100.py \
  --artifacts "$ARTIFACTS" --out /tmp/mc --quick --no-twins --no-torch-checks \
  --only $ONLY > "$OUT/memcheck.log" 2>&1; echo "memcheck rc=$?"
timeout 60 "$SAN" --tool racecheck --kernel-name kns=attn_kernel_sq \
  --error-exitcode 3 python3 $D/bench/cuda/run_h100.py --artifacts "$ARTIFACTS" \
  --out /tmp/rc --quick --no-twins --no-torch-checks --only $ONLY \
  > "$OUT/racecheck.log" 2>&1; echo "racecheck rc=$?"
grep -h "correctness:\|ERROR SUMMARY\|RACECHECK SUMMARY" "$OUT/memcheck.log" "$OUT/racecheck.log"
