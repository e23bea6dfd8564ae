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
gen() { # name dtype D causal [mask-type] [lse] [dropout-p]
  local name=$1 dt=$2 d=$3 causal=$4 mask=${5:-} lse=${6:-} drop=${7:-}
  local t="tensor<?x?x?x${d}x${dt}>"
  local m="" margs="" res="$t" rets="%o" lt="tensor<?x?x?xf32>" s="" sargs=""
  if [ -n "$mask" ]; then m=", %m: $mask"; margs=" mask(%m : $mask)"; fi
  if [ -n "$lse" ]; then res="$t, $lt"; rets="%o, %l"; fi
  if [ -n "$drop" ]; then s=", %seed: i64"; sargs=" dropout($drop, seed %seed)"; fi
  cat > "$OUT/$name.mlir" <<MLIR
func.func @k(%q: $t, %k: $t, %v: $t$m$s) -> ($res) {
  $rets = attn.sdpa %q, %k, %v$margs $causal$sargs : $t, $t, $t -> $res
  return $rets : $res
}
MLIR
}
for dt in f16 bf16; do
  for d in 64 128; do
    for c in "" causal; do
      # The generic kernel (ATTN_CUDA_TENSOR_CORES=0) and the tensor-core one.
      n="generic_${dt}_d${d}${c:+_causal}"
      gen "$n" "$dt" "$d" "$c"
      "$TR" --attn-to-ptx --chip=sm_90a "$OUT/$n.mlir" -o "$OUT/$n.ptx"
      n2="tc_${dt}_d${d}${c:+_causal}"
      cp "$OUT/$n.mlir" "$OUT/$n2.mlir"
      "$TR" --attn-to-ptx --tensor-cores --chip=sm_90a "$OUT/$n2.mlir" -o "$OUT/$n2.ptx"
    done
  done
done
# D = 256 on the tensor-core kernel (one row tile, 16-key blocks), checked
# and timed, and with a bool mask, causal and lse (checked).
gen tc_f16_d256 f16 256 ""
"$TR" --attn-to-ptx --tensor-cores --chip=sm_90a "$OUT/tc_f16_d256.mlir" -o "$OUT/tc_f16_d256.ptx"
gen tc_bf16_d256_causal bf16 256 causal
"$TR" --attn-to-ptx --tensor-cores --chip=sm_90a "$OUT/tc_bf16_d256_causal.mlir" -o "$OUT/tc_bf16_d256_causal.ptx"
gen tc_f16_d256_boolmask_causal_lse f16 256 causal "tensor<1x1x?x?xi1>" lse
"$TR" --attn-to-ptx --tensor-cores --chip=sm_90a "$OUT/tc_f16_d256_boolmask_causal_lse.mlir" -o "$OUT/tc_f16_d256_boolmask_causal_lse.ptx"
# Masks on the tensor-core kernel, with lse (checked, not timed): a bool mask
# shared by every batch and head, an additive one per batch shared by heads.
gen tc_f16_d64_boolmask_lse f16 64 "" "tensor<1x1x?x?xi1>" lse
"$TR" --attn-to-ptx --tensor-cores --chip=sm_90a "$OUT/tc_f16_d64_boolmask_lse.mlir" -o "$OUT/tc_f16_d64_boolmask_lse.ptx"
gen tc_bf16_d128_addmask_causal_lse bf16 128 causal "tensor<?x1x?x?xbf16>" lse
"$TR" --attn-to-ptx --tensor-cores --chip=sm_90a "$OUT/tc_bf16_d128_addmask_causal_lse.mlir" -o "$OUT/tc_bf16_d128_addmask_causal_lse.ptx"
# Dropout, with the Philox keep decision the float64 reference repeats: the
# tensor-core kernel (checked, and timed at two lengths next to PyTorch's
# backends with their own dropout) and the generic one (checked).
gen tc_f16_d64_dropout f16 64 "" "" "" 0.1
"$TR" --attn-to-ptx --tensor-cores --chip=sm_90a "$OUT/tc_f16_d64_dropout.mlir" -o "$OUT/tc_f16_d64_dropout.ptx"
gen tc_f16_d128_dropout f16 128 "" "" "" 0.1
"$TR" --attn-to-ptx --tensor-cores --chip=sm_90a "$OUT/tc_f16_d128_dropout.mlir" -o "$OUT/tc_f16_d128_dropout.ptx"
gen tc_bf16_d128_dropout_causal_lse bf16 128 causal "" lse 0.3
"$TR" --attn-to-ptx --tensor-cores --chip=sm_90a "$OUT/tc_bf16_d128_dropout_causal_lse.mlir" -o "$OUT/tc_bf16_d128_dropout_causal_lse.ptx"
gen generic_f16_d64_dropout f16 64 "" "" "" 0.1
"$TR" --attn-to-ptx --chip=sm_90a "$OUT/generic_f16_d64_dropout.mlir" -o "$OUT/generic_f16_d64_dropout.ptx"
gen generic_bf16_d128_dropout_causal_lse bf16 128 causal "" lse 0.3
"$TR" --attn-to-ptx --chip=sm_90a "$OUT/generic_bf16_d128_dropout_causal_lse.mlir" -o "$OUT/generic_bf16_d128_dropout_causal_lse.ptx"
# Split-KV. Every artifact above takes its split count at launch (spec
# kv_splits 0: the runtime picks it from the shape and the SM count, so the
# decode checks and timings split); these force one: 3 chunks on the
# tensor-core kernel (causal: early query blocks get empty chunks), 5 on the
# generic one with a bool mask and lse (fully masked rows through the merge).
gen tc_f16_d64_causal_split3 f16 64 causal
"$TR" --attn-to-ptx --tensor-cores --kv-splits=3 --chip=sm_90a "$OUT/tc_f16_d64_causal_split3.mlir" -o "$OUT/tc_f16_d64_causal_split3.ptx"
gen generic_f16_d64_boolmask_lse_split5 f16 64 "" "tensor<1x1x?x?xi1>" lse
"$TR" --attn-to-ptx --kv-splits=5 --chip=sm_90a "$OUT/generic_f16_d64_boolmask_lse_split5.mlir" -o "$OUT/generic_f16_d64_boolmask_lse_split5.ptx"
# Decode kernels: a static query length of 1 (one or two warps per
# workgroup instead of four or eight), split at launch.
gen_decode() { # name dtype D
  local name=$1 dt=$2 d=$3
  local t="tensor<?x?x?x${d}x${dt}>" t1="tensor<?x?x1x${d}x${dt}>"
  cat > "$OUT/$name.mlir" <<MLIR
func.func @k(%q: $t1, %k: $t, %v: $t) -> $t1 {
  %o = attn.sdpa %q, %k, %v : $t1, $t, $t -> $t1
  return %o : $t1
}
MLIR
  "$TR" --attn-to-ptx --tensor-cores --chip=sm_90a "$OUT/$name.mlir" -o "$OUT/$name.ptx"
}
gen_decode tc_decode_f16_d128 f16 128
gen_decode tc_decode_bf16_d128 bf16 128
gen_decode tc_decode_f16_d64 f16 64
gen_decode tc_decode_bf16_d256 bf16 256
cp "$BUILD/lib/libattn_runtime.so" "$OUT/"
ls -la "$OUT"
