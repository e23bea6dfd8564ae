#!/usr/bin/env bash
# The second device call: decode by query length beyond the first call's
# cell, from the artifacts in .carry/cuda2 (cubins; the dynamic-Sq D = 128
# kernels and their twins, the static-Sq decode kernels, and static causal
# Sq = 4, 16 ones holding Q in registers): f16 and bf16 at B 1, Skv 32k
# and at B 8, Skv 8k (whose Sq <= 16 launches run unsplit), Sq = 1, 2, 4,
# 8, 16; causal (speculative decoding's draft rows) at B 2, Skv 100k and
# B 8, Skv 8k, next to flash without causal (the same bytes).
export OUT=$(realpath "${OUT:-bench-out}")
mkdir -p "$OUT"
cd "$(dirname "$0")/../.." || exit 2
P="python3 .carry/decode/bench/cuda/run_h100.py --artifacts $PWD/.carry/cuda2 --full-checks --rounds 3 --sizes= --no-decode"
$P --out /tmp/nc --sq-decode 1,2,4,8,16 --sq-decode-dtype bf16,f16 \
  --sq-decode-shape "1,32,8,32768;8,32,8,8192" > "$OUT/noncausal.log" 2>&1
echo "noncausal rc=$?"
$P --out /tmp/c --sq-decode-causal --sq-decode 1,4,8,16 --sq-decode-dtype bf16 \
  --sq-decode-shape "2,32,8,100000;8,32,8,8192" > "$OUT/causal.log" 2>&1
echo "causal rc=$?"
for r in nc c; do
  cp /tmp/$r/results.json "$OUT/$r-results.json"; cp /tmp/$r/results.md "$OUT/$r-results.md"
done
grep -h "^device:\|correctness:" "$OUT/noncausal.log" "$OUT/causal.log" | cut -c1-200
sed -n '/^| impl/,$p' "$OUT/nc-results.md" "$OUT/c-results.md"
