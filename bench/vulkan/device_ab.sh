#!/usr/bin/env bash
# A/B of two compilers' Vulkan kernels on the GPU machine, in one call,
# from carried files only: bench/vulkan/make_carry.sh's output in $CARRY
# (default .carry/vulkan) made with ATTN_AB_BUILD, so that it holds
# attn-old.tar.xz (the other compiler's attn-run and libattn.so) beside
# ours. Sets up the loader and our JIT as device_run.sh does (SETUP_ONLY),
# unpacks the old one into $ROOT-old, then bench/vulkan/vk_ab.py times
# each cell (variant x shape) with the new and the old attn-run
# alternately over $ROUNDS rounds (default 3, the order swapped each
# round), each timing attn-run's GPU-timestamp median of $BENCH runs
# (default 5). Writes ab.csv and ab.md (new/old per cell: the median over
# the rounds of old_ms / new_ms, above 1 the new compiler is faster) and
# run.log under $OUT (default bench-out). Environment: VARIANTS (default
# coopmat,portable,portable-rows), CELLS (vk_ab.py --cells), ROUNDS,
# BENCH, BUDGET_S (default 420: no new cell after that), OLD_ENV
# (space-separated KEY=VALUE: the "old" side is our own attn-run with that
# environment, no attn-old.tar.xz needed; e.g. ATTN_VULKAN_PACK_HEADS=0),
# OLD_FLAGS (attn-run flags for the old side, likewise; e.g.
# --warmup-ms=0), FLAGS (attn-run flags for both).
# PRE_RUN=1 runs device_run.sh (the checks and timings, with its
# environment as given, its budget RUN_BUDGET_S, default 540) in the same
# call first, into $OUT/run.
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 2
CARRY=${CARRY:-.carry/vulkan}
OUT=${OUT:-bench-out}
ROOT=${VK_ROOT:-/tmp/attn-vulkan}
mkdir -p "$OUT"
old_args=()
if [ -n "${OLD_ENV:-}${OLD_FLAGS:-}" ]; then
  for kv in ${OLD_ENV:-}; do old_args+=(--old-env "$kv"); done
  [ -n "${OLD_FLAGS:-}" ] && old_args+=("--old-flags=$OLD_FLAGS")
else
  [ -f "$CARRY/attn-old.tar.xz" ] || { echo "device_ab.sh: no $CARRY/attn-old.tar.xz (make_carry.sh with ATTN_AB_BUILD)" >&2; exit 2; }
fi
if [ -n "${PRE_RUN:-}" ]; then
  BUDGET_S=${RUN_BUDGET_S:-540} CARRY=$CARRY OUT=$OUT/run VK_ROOT=$ROOT \
    bash bench/vulkan/device_run.sh
  pre=$?
  echo "device_ab.sh: device_run.sh exit $pre" | tee -a "$OUT/run.log"
  [ $pre = 2 ] && exit 2
else
  SETUP_ONLY=1 CARRY=$CARRY OUT=$OUT VK_ROOT=$ROOT bash bench/vulkan/device_run.sh || exit 2
fi
if [ -z "${OLD_ENV:-}${OLD_FLAGS:-}" ]; then
  rm -rf "$ROOT-old" && mkdir -p "$ROOT-old" && tar -xJf "$CARRY/attn-old.tar.xz" -C "$ROOT-old" || exit 2
  cat "$ROOT-old/MANIFEST" >> "$OUT/run.log"
  old_args=(--old "$ROOT-old/bin/attn-run" --old-lib "$ROOT-old/lib")
fi
# shellcheck disable=SC1091
. "$ROOT/env.sh"
python3 bench/vulkan/vk_ab.py --new "$ROOT/bin/attn-run" "${old_args[@]}" --out "$OUT" \
  ${FLAGS:+"--flags=$FLAGS"} \
  --variants "${VARIANTS:-coopmat,portable,portable-rows}" ${CELLS:+--cells "$CELLS"} \
  --rounds "${ROUNDS:-3}" --bench "${BENCH:-5}" --budget-s "${BUDGET_S:-420}"
ab=$?
# A failed check of the PRE_RUN fails the call as well.
[ "${pre:-0}" = 0 ] || exit 1
exit $ab
