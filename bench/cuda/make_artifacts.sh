#!/usr/bin/env bash
# Builds the AOT CUDA artifacts that bench/cuda/run_h100.py checks and times
# on a GPU machine (which has no MLIR): one PTX + metadata per kernel kind,
# dynamic B/H/S so one artifact serves every shape. Output: $1 (default
# .carry/cuda), plus libattn_runtime.so beside the artifacts.
#
# The compiler is $ATTN_BUILD_DIR (default build/). A/B of two compilers:
# with ATTN_AB_BUILD (a directory with bin/attn-translate and lib/, e.g.
# the build of the previous main) and ATTN_AB_TAG (letters and digits),
# every kernel that run_h100.py times (the tc_* prefill kernels without
# mask or lse, the dropout ones, the D = 128 decode ones, and the generic
# prefill kernels at D = 64 and 128) is also built by
# that compiler, from the same .mlir with the same flags, as
# <kernel>_x_<tag>.ptx/.json; run_h100.py times the two alternately and
# writes ab.csv / ab.md. E.g.
#   ATTN_AB_BUILD=/work/base ATTN_AB_TAG=base bench/cuda/make_artifacts.sh
# ATTN_ARTIFACT_FORMAT=cubin writes cubins (attn-translate --attn-to-cubin:
# ptxas of this machine's CUDA toolkit, for sm_90a) instead of PTX, so the
# GPU machine loads them without its driver compiling every entry first
# (a dynamic-Sq tensor-core artifact holds 9 kernels). Twins left in $OUT
# by an earlier run are removed first, and
# provenance.txt records both compilers (path, git commit where known,
# sha256 of attn-translate, and ATTN_AB_NOTE, free text, for the old one:
# e.g. ATTN_AB_NOTE='main a41760e' for a build without its source tree).
set -euo pipefail
cd "$(dirname "$0")/../.."
OUT=${1:-.carry/cuda}
BUILD=${ATTN_BUILD_DIR:-build}
TR="$BUILD/bin/attn-translate"
AB_BUILD=${ATTN_AB_BUILD:-}
AB_TAG=${ATTN_AB_TAG:-}
if [ -n "$AB_BUILD$AB_TAG" ]; then
  if [ -z "$AB_BUILD" ] || [ -z "$AB_TAG" ]; then
    echo "make_artifacts.sh: ATTN_AB_BUILD and ATTN_AB_TAG go together" >&2; exit 2
  fi
  if ! [[ "$AB_TAG" =~ ^[A-Za-z0-9]+$ ]]; then
    echo "make_artifacts.sh: ATTN_AB_TAG='$AB_TAG': letters and digits only" >&2; exit 2
  fi
  if [ ! -x "$AB_BUILD/bin/attn-translate" ]; then
    echo "make_artifacts.sh: no $AB_BUILD/bin/attn-translate" >&2; exit 2
  fi
fi
for t in "$TR" ${AB_BUILD:+"$AB_BUILD/bin/attn-translate"}; do
  [ -x "$t" ] || { echo "make_artifacts.sh: no $t (build first)" >&2; exit 2; }
done
mkdir -p "$OUT"
rm -f "$OUT"/*_x_* "$OUT"/long/*_x_*
# Which compiler built what: a commit for a build inside a git checkout
# (with '+changes' when its tree differs from it), and the binary's hash.
describe() { # build-dir
  local src commit
  src=$(sed -n 's/^CMAKE_HOME_DIRECTORY:INTERNAL=//p' "$1/CMakeCache.txt" 2>/dev/null || true)
  if [ -n "$src" ] && commit=$(git -C "$src" rev-parse --short HEAD 2>/dev/null); then
    git -C "$src" diff --quiet HEAD 2>/dev/null || commit="$commit+changes"
  else
    commit="unknown (no CMakeCache.txt with a git source tree)"
  fi
  echo "$(cd "$1" && pwd) commit $commit attn-translate sha256 $(sha256sum "$1/bin/attn-translate" | cut -c1-16)${2:+ ($2)}"
}
{
  echo "new: $(describe "$BUILD")"
  [ -z "$AB_BUILD" ] || echo "old (_x_$AB_TAG): $(describe "$AB_BUILD" "${ATTN_AB_NOTE:-}")"
} > "$OUT/provenance.txt"
cat "$OUT/provenance.txt"
FMT=${ATTN_ARTIFACT_FORMAT:-ptx}
case "$FMT" in ptx|cubin) ;; *)
  echo "make_artifacts.sh: ATTN_ARTIFACT_FORMAT='$FMT': ptx or cubin" >&2; exit 2 ;;
esac
rm -f "$OUT"/*.ptx "$OUT"/*.cubin
# ptx <name> [attn-translate flags]: $OUT/<name>.mlir -> <name>.ptx (or
# .cubin) + .json.
ptx() {
  local name=$1; shift
  "$TR" --attn-to-$FMT "$@" --chip=sm_90a "$OUT/$name.mlir" -o "$OUT/$name.$FMT" \
    --metadata="$OUT/$name.json"
}
# ptx_ab: the same, and the A/B twin <name>_x_<tag> when one is asked for.
ptx_ab() {
  ptx "$@"
  [ -n "$AB_BUILD" ] || return 0
  local name=$1; shift
  cp "$OUT/$name.mlir" "$OUT/${name}_x_$AB_TAG.mlir"
  # (--attn-metadata: the flag's name before --metadata, which older
  # builds know and newer ones still take.)
  if ! "$AB_BUILD/bin/attn-translate" --attn-to-$FMT "$@" --chip=sm_90a \
      "$OUT/${name}_x_$AB_TAG.mlir" -o "$OUT/${name}_x_$AB_TAG.$FMT" \
      --attn-metadata="$OUT/${name}_x_$AB_TAG.json"; then
    echo "make_artifacts.sh: $AB_BUILD/bin/attn-translate failed on $name" >&2
    exit 1
  fi
}
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
      # The generic kernel (ATTN_CUDA_TENSOR_CORES=0) and the tensor-core
      # one, each with its A/B twin when one is asked for (device_ab.sh
      # times the generic ones with ONLY=generic_).
      n="generic_${dt}_d${d}${c:+_causal}"
      gen "$n" "$dt" "$d" "$c"
      ptx_ab "$n" --tensor-cores=false
      n2="tc_${dt}_d${d}${c:+_causal}"
      cp "$OUT/$n.mlir" "$OUT/$n2.mlir"
      ptx_ab "$n2" --tensor-cores
    done
  done
done
# D = 256 on the tensor-core kernel (one row tile, 16-key blocks), checked
# and timed, and with a bool mask, causal and lse (checked).
gen tc_f16_d256 f16 256 ""
ptx_ab tc_f16_d256 --tensor-cores
gen tc_bf16_d256_causal bf16 256 causal
ptx_ab tc_bf16_d256_causal --tensor-cores
gen tc_f16_d256_boolmask_causal_lse f16 256 causal "tensor<1x1x?x?xi8>" lse
ptx tc_f16_d256_boolmask_causal_lse --tensor-cores
# Masks on the tensor-core kernel, with lse (checked, not timed): a bool mask
# shared by every batch and head, an additive one per batch shared by heads.
gen tc_f16_d64_boolmask_lse f16 64 "" "tensor<1x1x?x?xi8>" lse
ptx tc_f16_d64_boolmask_lse --tensor-cores
gen tc_bf16_d128_addmask_causal_lse bf16 128 causal "tensor<?x1x?x?xbf16>" lse
ptx tc_bf16_d128_addmask_causal_lse --tensor-cores
# Dropout, with the Philox keep decision the float64 reference repeats: the
# tensor-core kernels (checked, and timed at two lengths next to PyTorch's
# backends with their own dropout; causal with Q read from shared memory) and the generic one (checked).
gen tc_f16_d64_dropout f16 64 "" "" "" 0.1
ptx_ab tc_f16_d64_dropout --tensor-cores
gen tc_f16_d128_dropout f16 128 "" "" "" 0.1
ptx_ab tc_f16_d128_dropout --tensor-cores
gen tc_bf16_d128_dropout_causal bf16 128 causal "" "" 0.1
ptx_ab tc_bf16_d128_dropout_causal --tensor-cores
gen tc_bf16_d128_dropout_causal_lse bf16 128 causal "" lse 0.3
ptx tc_bf16_d128_dropout_causal_lse --tensor-cores
gen generic_f16_d64_dropout f16 64 "" "" "" 0.1
ptx generic_f16_d64_dropout --tensor-cores=false
gen generic_bf16_d128_dropout_causal_lse bf16 128 causal "" lse 0.3
ptx generic_bf16_d128_dropout_causal_lse --tensor-cores=false
# Split-KV. Every artifact above takes its split count at launch (spec
# kv_splits 0: the runtime picks it from the shape and the SM count, so the
# decode checks and timings split); these force one: 3 chunks on the
# tensor-core kernel (causal: early query blocks get empty chunks), 5 on the
# generic one with a bool mask and lse (fully masked rows through the merge).
gen tc_f16_d64_causal_split3 f16 64 causal
ptx tc_f16_d64_causal_split3 --tensor-cores --kv-splits=3
gen generic_f16_d64_boolmask_lse_split5 f16 64 "" "tensor<1x1x?x?xi8>" lse
ptx generic_f16_d64_boolmask_lse_split5 --tensor-cores=false --kv-splits=5
# Long key sequences (bench/cuda/long_keys.py, up to 2^31 - 1 keys): the
# generic kernel at D = 1 (2 x 4 GiB of bf16 K/V at the longest), with lse,
# split at launch and with kv_splits 1 asked for (split all the same past
# 2^16 keys); in long/, which run_h100.py's artifact list does not read.
mkdir -p "$OUT/long"
rm -f "$OUT"/long/*
gen long/generic_bf16_d1 bf16 1 "" "" lse
ptx_ab long/generic_bf16_d1
cp "$OUT/long/generic_bf16_d1.mlir" "$OUT/long/generic_bf16_d1_split1.mlir"
ptx long/generic_bf16_d1_split1 --kv-splits=1
# Decode kernels: a static query length of 1 (one or two warps per
# workgroup instead of four or eight), split at launch.
gen_decode() { # name dtype D [ab: also the A/B twin] [Sq, default 1]
  local name=$1 dt=$2 d=$3 ab=${4:-} sq=${5:-1}
  local t="tensor<?x?x?x${d}x${dt}>" t1="tensor<?x?x${sq}x${d}x${dt}>"
  cat > "$OUT/$name.mlir" <<MLIR
func.func @k(%q: $t1, %k: $t, %v: $t) -> $t1 {
  %o = attn.sdpa %q, %k, %v : $t1, $t, $t -> $t1
  return %o : $t1
}
MLIR
  if [ -n "$ab" ]; then ptx_ab "$name" --tensor-cores; else ptx "$name" --tensor-cores; fi
}
gen_decode tc_decode_f16_d128 f16 128 ab
gen_decode tc_decode_bf16_d128 bf16 128 ab
gen_decode tc_decode_f16_d64 f16 64
gen_decode tc_decode_bf16_d256 bf16 256
# A static query length of 4, 8 and 16 (speculative decoding): what the
# dynamic-Sq artifacts' alternative for 2 <= Sq <= 16 is timed against
# (run_h100.py's decode by Sq), and checked at those lengths.
for sq in 4 8 16; do
  gen_decode "tc_decode_sq${sq}_bf16_d128" bf16 128 "" "$sq"
done
cp "$BUILD/lib/libattn_runtime.so" "$OUT/"
ls -la "$OUT"
echo "make_artifacts.sh: $(ls "$OUT"/*.json | wc -l) kernels" \
  "($(ls "$OUT" | grep -c '_x_.*\.json$' || true) A/B twins)," \
  "$(du -sb "$OUT" | cut -f1) bytes in $OUT"
