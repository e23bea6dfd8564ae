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
# BENCH, BUDGET_S (default 420: no new cell after that).
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 2
CARRY=${CARRY:-.carry/vulkan}
OUT=${OUT:-bench-out}
ROOT=${VK_ROOT:-/tmp/attn-vulkan}
mkdir -p "$OUT"
[ -f "$CARRY/attn-old.tar.xz" ] || { echo "device_ab.sh: no $CARRY/attn-old.tar.xz (make_carry.sh with ATTN_AB_BUILD)" >&2; exit 2; }
SETUP_ONLY=1 CARRY=$CARRY OUT=$OUT VK_ROOT=$ROOT bash bench/vulkan/device_run.sh || exit 2
rm -rf "$ROOT-old" && mkdir -p "$ROOT-old" && tar -xJf "$CARRY/attn-old.tar.xz" -C "$ROOT-old" || exit 2
cat "$ROOT-old/MANIFEST" >> "$OUT/run.log"
# shellcheck disable=SC1091
. "$ROOT/env.sh"
python3 bench/vulkan/vk_ab.py --new "$ROOT/bin/attn-run" --old "$ROOT-old/bin/attn-run" \
  --old-lib "$ROOT-old/lib" --out "$OUT" \
  --variants "${VARIANTS:-coopmat,portable,portable-rows}" ${CELLS:+--cells "$CELLS"} \
  --rounds "${ROUNDS:-3}" --bench "${BENCH:-5}" --budget-s "${BUDGET_S:-420}"
