#!/usr/bin/env bash
# Builds the AOT CUDA artifacts that bench/cuda/run_h100.py checks and times
# on a GPU machine (which has no MLIR): one PTX + metadata per kernel kind,
# dynamic B/H/S so one artifact serves every shape. Output: $1 (default
# .carry/cuda), plus libattn_runtime.so beside the artifacts.
set -euo pipefail
cd "$(dirname "$0")/../.."
OUT=${1:-.carry/cuda}
BUILD=${ATTN_BUILD_DIR:-build}
TR="$BUILD/bin/attn-translate"
mkdir -p "$OUT"
gen() { # name dtype D causal
  local name=$1 dt=$2 d=$3 causal=$4
  local t="tensor<?x?x?x${d}x${dt}>"
  cat > "$OUT/$name.mlir" <<MLIR
func.func @k(%q: $t, %k: $t, %v: $t) -> $t {
  %o = attn.sdpa %q, %k, %v $causal : $t, $t, $t -> $t
  return %o : $t
}
MLIR
}
for dt in f16 bf16; do
  for d in 64 128; do
    for c in "" causal; do
      n="generic_${dt}_d${d}${c:+_causal}"
      gen "$n" "$dt" "$d" "$c"
      "$TR" --attn-to-ptx --chip=sm_90a "$OUT/$n.mlir" -o "$OUT/$n.ptx"
      if [ "$dt" = f16 ]; then
        n2="tc_${dt}_d${d}${c:+_causal}"
        cp "$OUT/$n.mlir" "$OUT/$n2.mlir"
        "$TR" --attn-to-ptx --tensor-cores --chip=sm_90a "$OUT/$n2.mlir" -o "$OUT/$n2.ptx"
      fi
    done
  done
done
cp "$BUILD/lib/libattn_runtime.so" "$OUT/"
ls -la "$OUT"
