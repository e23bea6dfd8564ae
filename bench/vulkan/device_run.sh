#!/usr/bin/env bash
# The Vulkan variants on the GPU machine, from carried files only (no MLIR
# there): bench/vulkan/make_carry.sh's output in $CARRY (default
# .carry/vulkan). Run from the repo root:
#
#   1. the Vulkan loader: where `ldconfig -p` lists no libvulkan.so.1, the
#      loader debs ($CARRY/debs/lib*.deb, Debian's libvulkan1 and glvnd)
#      are unpacked into / (as the device notes say), then ldconfig (where
#      the loader is there but the probe below finds no driver, glvnd
#      alone is unpacked and the probe retried);
#   2. the JIT (attn.tar.xz: attn-run, libattn.so, vk-info, the CUDA
#      tensor-core artifacts; deps.tar.xz: the libraries they need that
#      the machine may lack, vulkaninfo) is unpacked into $VK_ROOT (default
#      /tmp/attn-vulkan); `ldd` must find every library: the carried ones
#      (and the stubs of Z3 and ICU: make_carry.sh says why) are used only
#      where the machine lacks the soname, all of them and then the
#      carried libstdc++ only if that leaves one unresolved;
#   3. `attn-run --target=vulkan --probe`, retried with VK_DRIVER_FILES set
#      to NVIDIA's ICD file where the loader finds no driver by itself;
#   4. the device as the runtime sees it (vk-info: features, subgroups,
#      cooperative-matrix shapes) into device.json, vulkaninfo --summary
#      and nvidia-smi into run.log;
#   5. attn-numeric-tests' Vulkan cases ($NUMERIC, a gtest filter; empty:
#      none) into numeric.log, then with LONG_KEYS_MAX=<n> the long key
#      sequences up to n keys (attn-long-keys-tests); NUMERIC_ONLY=1 stops
#      after them;
#   6. bench/vulkan/vk_bench.py: the check matrix on each variant
#      (ATTN_VULKAN_VARIANT=coopmat, portable, portable-rows) through the
#      JIT, the CUDA tensor-core kernels through bench/cuda/run_h100.py,
#      the decode and coopmat prefill timings, within $BUDGET_S seconds
#      (default 540) of this script's start. The timings take the kernels
#      built ahead of time (attn.tar.xz's aot/, make_aot.sh) through
#      libattn_runtime.so alone where the device's description (vk-info)
#      is the one they were built for, else the JIT's (AOT=0: always the
#      JIT's); summary.md and timings.csv say which (aot, jit).
#
# Writes under $OUT (default bench-out): summary.md, checks.csv,
# timings.csv, device.json, cuda-results.json, run.log, numeric.log (7
# files).
# Environment: REQUIRE_VARIANTS (default coopmat,portable,portable-rows:
# variants that must run every case they can; a refusal there fails),
# VARIANTS (default the same three), CUDA=0 (no CUDA comparison, e.g. on
# a machine without an NVIDIA GPU), CASES (vk_bench.py --cases), SIZES,
# DECODE_SKV, BENCH (timed runs per config), NO_TIMINGS=1, SETUP_ONLY=1
# (steps 1-3 only; the environment they found is written to $ROOT/env.sh
# in any case).
# Exit status: 0 when everything ran and every check passed; 1 when a
# check failed (vk_bench.py's list); 2 when the set-up failed (no loader,
# missing libraries, no device).
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 2
T0=$(date +%s)
CARRY=${CARRY:-.carry/vulkan}
OUT=${OUT:-bench-out}
ROOT=${VK_ROOT:-/tmp/attn-vulkan}
BUDGET_S=${BUDGET_S:-540}
mkdir -p "$OUT"
: > "$OUT/run.log"

die() { echo "device_run.sh: FAILED: $*" | tee -a "$OUT/run.log"; exit 2; }
say() { echo "$*" | tee -a "$OUT/run.log"; }

# 1. the loader
# unpack_debs PATTERN: Debian's debs matching it into / (root only).
UNPACKED=""
# has_lib NAME: ldconfig's cache lists NAME for x86-64. grep reads all of
# ldconfig's output (no -q): with pipefail, grep -q leaving early would
# fail the pipeline by SIGPIPE whenever ldconfig is still writing.
has_lib() { ldconfig -p 2>/dev/null | grep -F "$1 (libc6,x86-64)" >/dev/null; }
unpack_debs() {
  [ "$(id -u)" = 0 ] || die "cannot unpack $CARRY/debs into / without root"
  ls "$CARRY"/debs/$1 >/dev/null 2>&1 || die "no $1 in $CARRY/debs"
  for f in "$CARRY"/debs/$1; do
    dpkg -x "$f" / || die "dpkg -x $f /"
    UNPACKED="$UNPACKED $(basename "$f")"
  done
  ldconfig
}
if has_lib libvulkan.so.1; then
  say "vulkan loader: $(ldconfig -p | grep -m1 'libvulkan\.so\.1 ')"
else
  unpack_debs 'lib*.deb'
  has_lib libvulkan.so.1 || die "still no libvulkan.so.1 after unpacking the debs"
  say "vulkan loader: unpacked$UNPACKED"
fi

# 2. the JIT
rm -rf "$ROOT" && mkdir -p "$ROOT" || die "cannot make $ROOT"
for a in attn deps; do
  [ -f "$CARRY/$a.tar.xz" ] || die "no $CARRY/$a.tar.xz (bench/vulkan/make_carry.sh makes it)"
  tar -xJf "$CARRY/$a.tar.xz" -C "$ROOT" || die "unpacking $CARRY/$a.tar.xz"
done
say "unpacked $CARRY/{attn,deps}.tar.xz into $ROOT in $(( $(date +%s) - T0 )) s"
cat "$ROOT/MANIFEST" >> "$OUT/run.log" 2>/dev/null
# The machine's own libraries where it has them (ours are Debian 12's; a
# library the NVIDIA driver loads into the same process must not be
# shadowed by an older one): lib/use links only the carried libraries,
# and stubs (make_carry.sh says why), whose sonames the machine lacks.
# Only if that leaves something unresolved are all carried ones put
# first, and then the carried libstdc++ / libgcc_s.
BINS=("$ROOT/bin/attn-run" "$ROOT/lib/libattn.so" "$ROOT/bin/vk-info")
missing() { LD_LIBRARY_PATH=$1 ldd "${BINS[@]}" 2>&1 | grep "not found"; }
USE="$ROOT/lib/use"
mkdir -p "$USE"
for f in "$ROOT"/lib/deps/* "$ROOT"/lib/stubs/*; do
  so=$(basename "$f")
  [ -e "$USE/$so" ] && continue
  has_lib "$so" || ln -s "$f" "$USE/$so"
done
say "carried libraries used (the machine lacks them): $(ls "$USE" | tr '\n' ' ')"
LDP="$ROOT/lib:$USE"
for extra in "$ROOT/lib/deps" "$ROOT/lib/fallback"; do
  if missing "$LDP" > /dev/null; then
    say "missing with $LDP: $(missing "$LDP" | sed 's/^[[:space:]]*//' | sort -u | tr '\n' ' ')"
    say "putting $extra first"
    LDP="$ROOT/lib:$extra:${LDP#"$ROOT/lib:"}"
  fi
done
if m=$(missing "$LDP"); then die "libraries missing for attn-run: $m"; fi

# 3. the driver: as found; else with glvnd from the debs (NVIDIA's ICD
# library needs libGLdispatch) where they were not unpacked yet; else with
# VK_DRIVER_FILES at NVIDIA's ICD file.
probe() { LD_LIBRARY_PATH=$LDP "$ROOT/bin/attn-run" --target=vulkan --probe; }
if ! out=$(probe 2>&1); then
  say "probe: $out"
  if [ -z "$UNPACKED" ]; then
    unpack_debs 'lib[!v]*.deb'
    say "unpacked$UNPACKED (glvnd), retrying"
  fi
fi
if ! out=$(probe 2>&1); then
  say "probe: $out"
  icd=""
  for j in /usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json \
           /usr/share/vulkan/icd.d/nvidia_icd.json /etc/vulkan/icd.d/nvidia_icd.json; do
    [ -f "$j" ] && { icd=$j; break; }
  done
  [ -n "$icd" ] || icd=$(find / -xdev -name 'nvidia_icd*.json' 2>/dev/null | head -1)
  [ -n "$icd" ] || die "attn-run --target=vulkan --probe: $out (and no nvidia_icd.json found)"
  export VK_DRIVER_FILES=$icd
  say "retrying with VK_DRIVER_FILES=$icd"
  out=$(probe 2>&1) || die "attn-run --target=vulkan --probe with VK_DRIVER_FILES=$icd: $out"
fi
say "attn-run --target=vulkan --probe: ok${VK_DRIVER_FILES:+ (VK_DRIVER_FILES=$VK_DRIVER_FILES)}"
# What a run needs in the environment goes to $ROOT/env.sh
# (bench/vulkan/device_ab.sh reads it); SETUP_ONLY=1: the set-up alone.
{ echo "export LD_LIBRARY_PATH='$LDP'"
  [ -n "${VK_DRIVER_FILES:-}" ] && echo "export VK_DRIVER_FILES='$VK_DRIVER_FILES'"
} > "$ROOT/env.sh"
if [ "${SETUP_ONLY:-0}" = 1 ]; then
  exit 0
fi

# 4. the device
LD_LIBRARY_PATH=$LDP "$ROOT/bin/vk-info" > "$OUT/device.json" 2>> "$OUT/run.log" \
  || die "vk-info: $(cat "$OUT/device.json")"
cat "$OUT/device.json" | tee -a "$OUT/run.log"
{
  echo "== vulkaninfo --summary (informational)"
  LD_LIBRARY_PATH=$LDP timeout 30 "$ROOT/bin/vulkaninfo" --summary 2>&1 | head -120 \
    || echo "(vulkaninfo failed)"
  echo "== nvidia-smi"
  timeout 30 nvidia-smi 2>&1 | head -40 || echo "(no nvidia-smi)"
} >> "$OUT/run.log"

# 5. the numeric tests' Vulkan cases (NUMERIC, a gtest filter; default
# the extreme-score and non-finite-input matrices) on the device's default
# variant and the portable ones, against the float64 reference
numeric=0
if [ -x "$ROOT/bin/attn-numeric-tests" ] && [ "${NUMERIC-x}" != "" ]; then
  LD_LIBRARY_PATH=$LDP timeout 300 "$ROOT/bin/attn-numeric-tests" \
    --gtest_filter="${NUMERIC:-Vulkan.ExtremeScores:Vulkan.NonFiniteInputs}" \
    > "$OUT/numeric.log" 2>&1 || numeric=1
  say "device_run.sh: attn-numeric-tests exit $numeric: $(grep -c '^\[       OK \]' "$OUT/numeric.log") ok, $(grep -c '^\[  FAILED  \] [A-Za-z]*\.[A-Za-z]* (' "$OUT/numeric.log") failed"
fi
# ... and, with LONG_KEYS_MAX=<n>, the long-key-sequence cases up to n keys
# (attn-long-keys-tests' LongKeys.Vulkan: up to 2^31 - 1, 2 x 4 GiB of bf16
# on the device), appended to numeric.log
if [ -n "${LONG_KEYS_MAX:-}" ] && [ -x "$ROOT/bin/attn-long-keys-tests" ]; then
  long=0
  ATTN_LONG_KEYS_MAX=$LONG_KEYS_MAX LD_LIBRARY_PATH=$LDP timeout 400 \
    "$ROOT/bin/attn-long-keys-tests" --gtest_filter=LongKeys.Vulkan \
    >> "$OUT/numeric.log" 2>&1 || long=1
  say "device_run.sh: attn-long-keys-tests (up to $LONG_KEYS_MAX keys) exit $long"
  [ $long = 0 ] || numeric=1
fi
if [ -n "${NUMERIC_ONLY:-}" ]; then
  exit $numeric
fi

# 6. checks and timings
cuda_args=()
if [ "${CUDA:-1}" != 0 ]; then
  cuda_args=(--cuda-artifacts "$ROOT/cuda" --require-cuda)
fi
aot_args=()
if [ -d "$ROOT/aot" ] && [ "${AOT:-1}" != 0 ]; then
  aot_args=(--aot "$ROOT/aot")
fi
python3 bench/vulkan/vk_bench.py --root "$ROOT" --ld-path "$LDP" --out "$OUT" \
  --t0 "$T0" --budget-s "$BUDGET_S" \
  --variants "${VARIANTS:-coopmat,portable,portable-rows}" \
  --require "${REQUIRE_VARIANTS-coopmat,portable,portable-rows}" \
  --cases "${CASES:-}" --sizes "${SIZES:-4096,8192,16384}" \
  --decode-skv "${DECODE_SKV:-32768,131072}" --bench "${BENCH:-10}" \
  ${NO_TIMINGS:+--no-timings} "${cuda_args[@]}" "${aot_args[@]}"
status=$?
say "device_run.sh: vk_bench.py exit $status after $(( $(date +%s) - T0 )) s"
[ $status = 0 ] && [ $numeric = 0 ] || exit 1
