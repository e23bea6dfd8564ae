#!/usr/bin/env bash
# Builds here the SPIR-V kernels that bench/vulkan/vk_bench.py times on the
# GPU machine, so that the machine needs no MLIR for its timings: for the
# device that DEVICE describes (a vk-info output, format attn-vulkan-device;
# default bench/vulkan/devices/nvidia-h200.json), each timed cell's kernel
# as the JIT would build it there (attn-translate --attn-to-spirv
# --vulkan-device), into $1 (default .carry/vulkan-aot):
#
#   <variant>_decode_f16_skv<Skv>_d128.spv(.json)    decode, Sq 1, Hq 32,
#                                                    Hkv 8, per DECODE_SKV
#   <variant>_prefill_<dtype>_s<S>_d<D>[_causal].spv  prefill, 16k tokens
#                                                    (B = 16384 / S,
#                                                    H = 2048 / D), per SIZES
#   device.json                                      DEVICE, which vk_bench.py
#                                                    compares with the
#                                                    machine's own
#   libattn_runtime.so.<v>, attn-vulkan-aot-test     the runtime (no MLIR)
#                                                    and the timing program
#                                                    (its `bench` mode)
#
# VARIANTS (default coopmat,portable: coopmat for every cell, portable for
# decode, as vk_bench.py times them), SIZES (default 4096,8192,16384) and
# DECODE_SKV (default 32768,131072; each empty: no such cell) as
# device_run.sh takes them; HEAD_DIMS (default 64,128) and DTYPES (default
# f16,bf16) the prefill cells' (bench/vulkan/aot_ab.sh builds subsets);
# TRANSLATE_ARGS, words added to each attn-translate command (e.g.
# --block-kv=32).
# The ATTN_VULKAN_* settings apply as they would to the JIT.
set -euo pipefail
cd "$(dirname "$0")/../.."
OUT=${1:-.carry/vulkan-aot}
BUILD=${ATTN_BUILD_DIR:-build}
DEVICE=${DEVICE:-bench/vulkan/devices/nvidia-h200.json}
VARIANTS=${VARIANTS:-coopmat,portable}
SIZES=${SIZES-4096,8192,16384}
DECODE_SKV=${DECODE_SKV-32768,131072}
HEAD_DIMS=${HEAD_DIMS:-64,128}
DTYPES=${DTYPES:-f16,bf16}
read -ra extra <<< "${TRANSLATE_ARGS:-}"
TRANSLATE="$BUILD/bin/attn-translate"
for f in "$TRANSLATE" "$BUILD/bin/attn-vulkan-aot-test" "$BUILD/lib/libattn_runtime.so" "$DEVICE"; do
  [ -f "$f" ] || { echo "make_aot.sh: no $f (build first: scripts/build.sh)" >&2; exit 2; }
done
rm -rf "$OUT" && mkdir -p "$OUT"
cp "$DEVICE" "$OUT/device.json"
cp "$BUILD/bin/attn-vulkan-aot-test" "$OUT/"
# The runtime under the name the program loads it by (its SONAME, e.g.
# libattn_runtime.so.0.1): the build's RUNPATH is not there.
SONAME=$(readelf -d "$BUILD/lib/libattn_runtime.so" | sed -n 's/.*SONAME.*\[\(.*\)\]/\1/p')
[ -n "$SONAME" ] || { echo "make_aot.sh: libattn_runtime.so has no SONAME" >&2; exit 1; }
cp -L "$BUILD/lib/libattn_runtime.so" "$OUT/$SONAME"
for need in $(readelf -d "$OUT/attn-vulkan-aot-test" | sed -n 's/.*NEEDED.*\[\(libattn[^]]*\)\]/\1/p'); do
  [ -f "$OUT/$need" ] || { echo "make_aot.sh: attn-vulkan-aot-test needs $need, not in $OUT" >&2; exit 1; }
done
SRC=$(mktemp -d /tmp/attn-aot-src.XXXXXX)
trap 'rm -rf "$SRC"' EXIT

# sdpa NAME B HQ HKV SQ SKV D DTYPE CAUSAL: an attn.sdpa on tensors.
sdpa() {
  local q="tensor<$2x$3x$5x$7x$8>" kv="tensor<$2x$4x$6x$7x$8>"
  cat > "$SRC/$1.mlir" <<EOF
func.func @attention(%q: $q, %k: $kv, %v: $kv) -> $q {
  %o = attn.sdpa %q, %k, %v $9 : $q, $kv, $kv -> $q
  return %o : $q
}
EOF
}
n=0
build() { # NAME VARIANT
  "$TRANSLATE" --attn-to-spirv --vulkan-device="$DEVICE" --variant="$2" \
    ${extra[@]+"${extra[@]}"} "$SRC/$1.mlir" -o "$OUT/$2_$1.spv"
  n=$((n + 1))
}
IFS=, read -ra variants <<< "$VARIANTS"
for skv in ${DECODE_SKV//,/ }; do
  name=decode_f16_skv${skv}_d128
  sdpa "$name" 1 32 8 1 "$skv" 128 f16 ""
  for v in "${variants[@]}"; do build "$name" "$v"; done
done
for s in ${SIZES//,/ }; do
  for dt in ${DTYPES//,/ }; do
    for d in ${HEAD_DIMS//,/ }; do
      for c in "" causal; do
        name=prefill_${dt}_s${s}_d${d}${c:+_causal}
        sdpa "$name" $((16384 / s)) $((2048 / d)) $((2048 / d)) "$s" "$s" "$d" "$dt" "$c"
        for v in "${variants[@]}"; do
          # the portable variant is timed on decode only
          [ "$v" = portable ] || build "$name" "$v"
        done
      done
    done
  done
done
echo "make_aot.sh: $n kernels for $(sed -n 's/.*"name": "\([^"]*\)".*/\1/p' "$DEVICE" | head -1) in $OUT ($(du -sh "$OUT" | cut -f1))"
