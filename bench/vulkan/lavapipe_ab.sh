#!/usr/bin/env bash
# A/B of two compilers' portable Vulkan kernels on the Vulkan device here
# (lavapipe in CI machines): the same shapes through `attn-run --target=vulkan`
# of this checkout's build and of another build (ATTN_AB_BUILD: a folder
# with bin/attn-run and lib/), timed alternately, ROUNDS rounds, the order
# swapped each round; each timing is attn-run's median of BENCH runs after
# 2 warm-ups, each run checked against the float64 reference. A cell's
# new/old is the median over the rounds of old_ms / new_ms (above 1: the
# new compiler is faster). Kernels: the subgroup kernel (what the JIT picks
# on lavapipe) and the invocation-per-row kernel (portable-rows). Shapes:
# prefill (B = 1, H = 8, Sq = Skv = S, D = 64, f32 and f16, causal and not)
# and decode (Sq = 1, long Skv). Output: CSV on stdout, a summary line per
# kernel on stderr (median and lowest new/old).
#
#   ATTN_AB_BUILD=/work/base bench/vulkan/lavapipe_ab.sh > ab.csv
set -euo pipefail
cd "$(dirname "$0")/../.."
NEW=${ATTN_RUN:-build/bin/attn-run}
OLD_DIR=${ATTN_AB_BUILD:?set ATTN_AB_BUILD to a build with bin/attn-run and lib/}
ROUNDS=${ROUNDS:-3}
BENCH=${BENCH:-5}
SIZES=${SIZES:-"256 512 1024"}
PY=/usr/bin/python3

time_one() { # which kernel dtype Sq Skv Hkv causal -> "median_ms ok"
  local which=$1 kernel=$2 dtype=$3 sq=$4 skv=$5 hkv=$6 causal=$7
  local flag=""; [ "$causal" = 1 ] && flag="--causal"
  local run=("$NEW") env=(ATTN_VULKAN_VARIANT=$kernel)
  if [ "$which" = old ]; then
    run=("$OLD_DIR/bin/attn-run")
    env+=(LD_LIBRARY_PATH="$OLD_DIR/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}")
  fi
  env "${env[@]}" "${run[@]}" --target=vulkan --static-shapes --dtype="$dtype" \
    --batch=1 --heads=8 --kv-heads="$hkv" --seq-q="$sq" --seq-kv="$skv" \
    --head-dim=64 $flag --check --bench="$BENCH" --json 2>/dev/null |
    $PY -c 'import json,sys; j=json.loads(sys.stdin.read()); print(j["median_ms"], "ok" if j["ok"] else "FAILED")' ||
    echo "nan FAILED"
}

echo "kernel,dtype,Sq,Skv,Hkv,causal,old_ms,new_ms,new_over_old,check"
cell() { # kernel dtype Sq Skv Hkv causal
  local olds=() news=() check=ok
  for ((r = 0; r < ROUNDS; r++)); do
    local first=new second=old
    if ((r % 2)); then first=old; second=new; fi
    for which in $first $second; do
      read -r ms ok < <(time_one "$which" "$@")
      [ "$ok" = ok ] || check=FAILED
      if [ "$which" = new ]; then news+=("$ms"); else olds+=("$ms"); fi
    done
  done
  $PY - "$@" "$check" "${olds[*]}" "${news[*]}" <<'EOF'
import statistics, sys
k, dt, sq, skv, hkv, causal, check, olds, news = sys.argv[1:]
olds = [float(x) for x in olds.split()]; news = [float(x) for x in news.split()]
ratio = statistics.median(o / n for o, n in zip(olds, news))
print(f"{k},{dt},{sq},{skv},{hkv},{causal},{statistics.median(olds):.2f},"
      f"{statistics.median(news):.2f},{ratio:.3f},{check}")
EOF
}
for kernel in portable-subgroup portable-rows; do
  for dt in f32 f16; do
    for S in $SIZES; do for causal in 0 1; do cell $kernel $dt "$S" "$S" 8 $causal; done; done
    cell $kernel $dt 1 4096 8 0
    cell $kernel $dt 1 16384 1 0
  done
done | tee /dev/stderr | $PY -c '
import sys, statistics
rows = [l.strip().split(",") for l in sys.stdin if l.strip()]
for k in sorted({r[0] for r in rows}):
    rs = [float(r[8]) for r in rows if r[0] == k]
    bad = [r for r in rows if r[0] == k and r[9] != "ok"]
    print(f"{k}: {len(rs)} cells, new/old median {statistics.median(rs):.3f}, "
          f"lowest {min(rs):.3f}, checks failed {len(bad)}", file=sys.stderr)
' > /dev/null
