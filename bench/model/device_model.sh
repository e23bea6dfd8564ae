#!/usr/bin/env bash
# The performance model against the H100 (or H200): bench/model_sweep.py
# --target cuda on the GPU machine, with attn-run (built with --model) from
# bench/python/make_carry.sh's archives. Here, in the checkout whose tree
# travels (it must hold this script and bench/model_sweep.py):
#
#   bench/python/make_carry.sh     # .carry/python: attn.tar.xz, deps.tar.xz
#
# then
#
#   run(command="bench/model/device_model.sh", carry=[".carry/python"], timeout_s=600)
#
# Writes $OUT/model-cuda/{summary.md,cells.csv,ranking.csv} and
# $OUT/run.log (nvidia-smi, the library set-up). Environment: CARRY
# (default .carry/python), ROOT (default /tmp/attn-model), BENCH (timed
# runs per cell, default 10), FULL=1 (every cell of the matrix; the
# default takes every third, to fit one 10-minute call), RANK_ONLY=1 (only
# the ranking groups: candidate split counts against the runtime's rule;
# GROUPS_MATCH=text: only the groups whose name holds it; ROUNDS=n),
# LIVE=1 (instead: bench/model/live_cuda.py, the whole matrix timed in one
# Python process through libattn.so, to $OUT/model-live/measured.csv, which
# `bench/model_sweep.py --measured` predicts here; then attn-run's
# automatic split count at the shapes of bench/results/model-h100-rank-*,
# with the count it ran, to $OUT/model-live/splits.jsonl).
# Exit status: 0 when the sweep ran; 2 when the set-up failed.
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 2
CARRY=${CARRY:-.carry/python}
OUT=${OUT:-bench-out}
ROOT=${ROOT:-/tmp/attn-model}
mkdir -p "$OUT"
: > "$OUT/run.log"
say() { echo "$*" | tee -a "$OUT/run.log"; }
die() { say "device_model.sh: FAILED: $*"; exit 2; }
nvidia-smi >> "$OUT/run.log" 2>&1 || true
rm -rf "$ROOT" && mkdir -p "$ROOT" || die "cannot make $ROOT"
for a in attn deps; do
  [ -f "$CARRY/$a.tar.xz" ] || die "no $CARRY/$a.tar.xz (bench/python/make_carry.sh makes it)"
  tar -xJf "$CARRY/$a.tar.xz" -C "$ROOT" || die "unpacking $CARRY/$a.tar.xz"
done
[ -x "$ROOT/bin/attn-run" ] || die "no bin/attn-run in $CARRY/attn.tar.xz"
# The carried libraries only where the machine lacks the soname (as
# bench/python/device_torch.sh does), then all of them while ldd misses one.
has_lib() { ldconfig -p 2>/dev/null | grep -F "$1 (libc6,x86-64)" >/dev/null; }
USE="$ROOT/lib/use"
mkdir -p "$USE"
for f in "$ROOT"/lib/deps/* "$ROOT"/lib/stubs/*; do
  [ -e "$f" ] || continue
  so=$(basename "$f")
  [ -e "$USE/$so" ] || has_lib "$so" || ln -s "$f" "$USE/$so"
done
LDP="$ROOT/lib:$USE"
missing() { LD_LIBRARY_PATH=$1 ldd "$ROOT/bin/attn-run" 2>&1 | grep "not found"; }
for extra in "$ROOT/lib/deps" "$ROOT/lib/fallback"; do
  missing "$LDP" > /dev/null && LDP="$ROOT/lib:$extra:${LDP#"$ROOT/lib:"}"
done
if m=$(missing "$LDP"); then die "libraries missing for attn-run: $m"; fi
export LD_LIBRARY_PATH="$LDP${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
"$ROOT/bin/attn-run" --target=cuda --probe >> "$OUT/run.log" 2>&1 || die "no cuda target"
"$ROOT/bin/attn-run" --model-only --target=cuda --dtype=f16 >/dev/null 2>&1 ||
  die "the carried attn-run has no --model (build issue21-model first)"
if [ "${LIVE:-0}" = 1 ]; then
  [ -f "$ROOT/lib/libattn.so" ] || die "no lib/libattn.so in $CARRY/attn.tar.xz"
  mkdir -p "$OUT/model-live"
  LIVE_ARGS=(--out "$OUT/model-live" --bench "${BENCH:-10}")
  [ "${FULL:-0}" = 1 ] || LIVE_ARGS+=(--quick)
  say "bench/model/live_cuda.py ${LIVE_ARGS[*]}"
  ATTN_LIBRARY="$ROOT/lib/libattn.so" PYTHONPATH="$PWD/python" PYTHONDONTWRITEBYTECODE=1 \
    python3 bench/model/live_cuda.py "${LIVE_ARGS[@]}" 2>&1 | tee -a "$OUT/run.log"
  : > "$OUT/model-live/splits.jsonl"
  for shape in "--batch=1 --heads=8 --kv-heads=8 --seq-q=256 --seq-kv=32768" \
               "--batch=4 --heads=32 --kv-heads=8 --seq-q=1 --seq-kv=16384" \
               "--batch=1 --heads=32 --kv-heads=8 --seq-q=1 --seq-kv=32768"; do
    # shellcheck disable=SC2086
    "$ROOT/bin/attn-run" --target=cuda $shape --head-dim=128 --dtype=bf16 --check \
      --bench="${BENCH:-10}" --json >> "$OUT/model-live/splits.jsonl" 2>> "$OUT/run.log"
  done
  exit 0
fi
ARGS=(--target cuda --attn-run "$ROOT/bin/attn-run" --bench "${BENCH:-10}" --out "$OUT/model-cuda")
[ "${FULL:-0}" = 1 ] && ARGS+=(--full)
[ "${RANK_ONLY:-0}" = 1 ] && ARGS+=(--rank-only)
[ -n "${GROUPS_MATCH:-}" ] && ARGS+=(--groups "$GROUPS_MATCH")
[ -n "${ROUNDS:-}" ] && ARGS+=(--rounds "$ROUNDS")
say "bench/model_sweep.py ${ARGS[*]}"
/usr/bin/env python3 bench/model_sweep.py "${ARGS[@]}" 2>> "$OUT/run.log" | tee -a "$OUT/run.log"
