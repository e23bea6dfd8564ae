#!/usr/bin/env bash
# A/B of two compilers on the GPU machine, in one call, from carried files
# only: bench/cuda/make_artifacts.sh's output in $ARTIFACTS (default
# .carry/cuda), built with ATTN_AB_BUILD / ATTN_AB_TAG so that each timed
# tensor-core kernel <kernel> has its twin <kernel>_x_<tag> from the other
# compiler. Runs run_h100.py on the tc_* kernels: the quick correctness set
# on every kernel of both compilers, then the prefill cells (16k tokens, S
# = 512-16k, D = 64/128/256, f16/bf16, causal or not; dropout at 4k and
# 16k) and the decode cells, each cell timing the new kernel, the old one
# and PyTorch's flash alternately over $ROUNDS rounds (default 5, the order
# rotated each round). Writes under $OUT (default bench-out; 7 files):
#   ab.md, ab.csv   new/old per cell, and the summary against the gate
#                   (median new/old >= 1.00, no cell below 0.97; prefill
#                   and decode back to back)
#   results.{json,csv,md}, decode.csv   run_h100.py's usual files, twins as
#                   rows of their own
#   run.log         nvidia-smi, then run_h100.py's output
# Exit status: 0; 1 a check failed; 4 the A/B gate failed; 2 no twins.
# Before the prefill cells, the decode-by-Sq cells (run_h100.py
# --sq-decode: the dynamic-Sq kernels, their twins, the static-Sq decode
# kernels and flash at Sq = 1, 4, 8, 16; results.md and results.json).
# Environment: ROUNDS, BUDGET_S (run_h100.py --budget-s, default 400:
# no new prefill row after that; decode may take 60 s more), ONLY
# (default tc_), SIZES (default 512,...,16384), BACKENDS (default flash;
# flash,cudnn,efficient adds PyTorch's other two, once per shape), CHECKS
# (quick, the default: the first four check shapes for every kernel; full:
# every shape for this compiler's kernels, the quick set for the twins),
# SQ_DECODE (default 1,4,8,16; empty: none), SQ_DECODE_SHAPE (B,Hq,Hkv,Skv,
# default 2,32,8,100000), SQ_DECODE_DTYPE (default bf16).
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 2
ART=${ARTIFACTS:-.carry/cuda}
OUT=${OUT:-bench-out}
mkdir -p "$OUT"
if ! ls "$ART"/*_x_*.json > /dev/null 2>&1; then
  echo "device_ab.sh: no <kernel>_x_<tag> artifacts in $ART (make_artifacts.sh with ATTN_AB_BUILD, ATTN_AB_TAG)" >&2
  exit 2
fi
nvidia-smi > "$OUT/run.log" 2>&1
case "${CHECKS:-quick}" in
  quick) checks=--quick-checks ;;
  full) checks=--full-checks ;;
  *) echo "device_ab.sh: CHECKS='$CHECKS': quick or full" >&2; exit 2 ;;
esac
PYTHONUNBUFFERED=1 python3 bench/cuda/run_h100.py --artifacts "$ART" --out "$OUT" \
  --only "${ONLY:-tc_}" $checks --rounds "${ROUNDS:-5}" \
  --sq-decode "${SQ_DECODE-1,4,8,16}" \
  --sq-decode-shape "${SQ_DECODE_SHAPE:-2,32,8,100000}" \
  --sq-decode-dtype "${SQ_DECODE_DTYPE:-bf16}" \
  --backends "${BACKENDS:-flash}" --budget-s "${BUDGET_S:-400}" \
  --sizes "${SIZES:-512,1024,2048,4096,8192,16384}" >> "$OUT/run.log" 2>&1
status=$?
rm -f "$OUT/tflops.png"  # 8 files at most come back; the tables hold it all
grep -h "^device:\|correctness:\|^ab-gate:\|^FAILED" "$OUT/run.log"
sed -n '/^| tag |/,/^$/p' "$OUT/ab.md" 2>/dev/null
sed -n '/^Decode by query length/,/^$/p;/^| impl |/,/^$/p' "$OUT/results.md" 2>/dev/null
echo "device_ab.sh: run_h100.py exit $status"
exit $status
