#!/usr/bin/env bash
# Nsight Compute on the GPU machine, from carried files only: one launch of
# each tensor-core kernel named in $KERNELS (default tc_f16_d128,tc_f16_d64)
# and of PyTorch's flash and cuDNN backends on the same inputs, at the
# prefill shape of sequence length $S (default 8192; 16k tokens, hidden
# 2048). Writes under $OUT: <kernel>.txt (ncu's details page: speed of light,
# compute and memory workload, shared-memory tables, warp stalls, occupancy,
# launch and instruction statistics) and <kernel>.csv (raw metrics), with
# the attn kernel and the two PyTorch ones in the same report. With
# DECODE_SKV (e.g. 4096,32768): decode_<kernel>_skv<N>.csv, the duration of
# every kernel one decode call launches, attn's and flash's.
set -uo pipefail
cd "$(dirname "$0")/../.."
ART=${ARTIFACTS:-.carry/cuda}
OUT=${OUT:-bench-out}
S=${S:-8192}
NCU=$(command -v ncu || echo /usr/local/cuda/bin/ncu)
mkdir -p "$OUT"
status=0
for kern in $(echo "${KERNELS:-tc_f16_d128,tc_f16_d64}" | tr , ' '); do
  "$NCU" --profile-from-start off --clock-control none --set detailed \
    --section WarpStateStats --section SchedulerStats --section InstructionStats \
    --import-source no -f -o "$OUT/$kern" \
    python3 bench/cuda/run_h100.py --artifacts "$ART" --out "$OUT/run" \
      --only "$kern" --profile "$S" > "$OUT/$kern.log" 2>&1 || status=1
  "$NCU" --import "$OUT/$kern.ncu-rep" --page details > "$OUT/$kern.txt" 2>&1 || status=1
  "$NCU" --import "$OUT/$kern.ncu-rep" --page raw --csv > "$OUT/$kern.csv" 2>&1 || status=1
  rm -f "$OUT/$kern.ncu-rep"
done
# Decode: kernel durations only (every kernel of one call: attn's partial
# and merge kernels, flash's), for the tensor-core decode kernels named in
# $DECODE_KERNELS at each key length in $DECODE_SKV.
for skv in $(echo "${DECODE_SKV:-}" | tr , ' '); do
  for kern in $(echo "${DECODE_KERNELS:-tc_decode_f16_d128}" | tr , ' '); do
    "$NCU" --profile-from-start off --clock-control none \
      --metrics gpu__time_duration.sum --csv \
      python3 bench/cuda/run_h100.py --artifacts "$ART" --out "$OUT/run" \
        --only "$kern" --profile-decode "$skv" \
      > "$OUT/decode_${kern}_skv${skv}.csv" 2>&1 || status=1
  done
done
exit $status
