#!/usr/bin/env bash
# A/B of Vulkan kernel settings on the GPU machine without MLIR there: the
# same cells built here by bench/vulkan/make_aot.sh under different
# ATTN_VULKAN_* settings, timed there by attn-vulkan-aot-test's `bench`
# mode (which also checks 64 sampled rows of each kernel's output against
# float64), the settings alternated in a rotating order within each round.
#
#   aot_ab.sh build DIR LABEL [NAME=VALUE ...]
#       here: make_aot.sh into DIR/LABEL with the environment NAME=VALUE
#       added (VARIANTS, SIZES, DECODE_SKV, HEAD_DIMS and DTYPES as
#       make_aot.sh takes them; VARIANTS defaults to coopmat). The first
#       label built is the baseline the summary divides by; a label may
#       build a subset of its cells (a geometry that does not fit some).
#   aot_ab.sh run DIR [ROUNDS]
#       there: the Vulkan loader from DIR/debs where the machine has none
#       (Debian's libvulkan1 and glvnd debs, as device_run.sh takes them),
#       then ROUNDS (default 3) rounds over every cell, each label's kernel
#       timed by `attn-vulkan-aot-test bench X.spv.json $N $WARMUP_MS 64`
#       (N default 20, WARMUP_MS default 1000); JSON lines on stdout, each
#       with "label" and "round" added, and a summary: per cell and label
#       the median over rounds of device_b2b_ms, b2b_ms and submit_ms, and
#       device_b2b_ms as a ratio to the first label's. The first round's
#       other output (ATTN_VULKAN_PIPELINE_STATS=1: the driver's register
#       and spill counts) goes to stderr. Exits non-zero when any kernel
#       failed or its check did. With SASS=DIR set, then each label's
#       kernels' machine code as NVIDIA's driver compiled them, into
#       DIR/LABEL-CELL-entryN.sass (bench/vulkan/driver_sass.py; sm_90).
set -euo pipefail
cd "$(dirname "$0")/../.."
mode=${1:-}
case "$mode" in
build)
  [ $# -ge 3 ] || { echo "usage: aot_ab.sh build DIR LABEL [NAME=VALUE ...]" >&2; exit 2; }
  dir=$2 label=$3
  shift 3
  [[ "$label" =~ ^[A-Za-z0-9_.-]+$ ]] || { echo "aot_ab.sh: label '$label' is not [A-Za-z0-9_.-]+" >&2; exit 2; }
  mkdir -p "$dir"
  env VARIANTS="${VARIANTS:-coopmat}" "$@" bash bench/vulkan/make_aot.sh "$dir/$label"
  grep -qx "$label" "$dir/labels" 2>/dev/null || echo "$label" >> "$dir/labels"
  # zstd (and the libraries Debian's links) for `run` with SASS set: the
  # driver's shader cache is zstd-compressed and the GPU machine has no
  # zstd (bench/vulkan/driver_sass.py)
  if [ ! -x "$dir/zstd/zstd" ] && command -v zstd > /dev/null; then
    mkdir -p "$dir/zstd"
    cp "$(command -v zstd)" "$dir/zstd/"
    ldd "$(command -v zstd)" | awk '/=> \//{print $3}' |
      grep -v -e '/libc\.so' -e '/libm\.so' | xargs -r -I{} cp -L {} "$dir/zstd/"
  fi
  ;;
run)
  [ $# -ge 2 ] || { echo "usage: aot_ab.sh run DIR [ROUNDS]" >&2; exit 2; }
  dir=$(cd "$2" && pwd) rounds=${3:-3}
  [ -f "$dir/labels" ] || { echo "aot_ab.sh: no $dir/labels (aot_ab.sh build first)" >&2; exit 2; }
  mapfile -t labels < "$dir/labels"
  if ! ldconfig -p 2>/dev/null | grep -F "libvulkan.so.1 (libc6,x86-64)" >/dev/null; then
    for f in "$dir"/debs/*.deb; do
      [ -f "$f" ] || { echo "aot_ab.sh: no Vulkan loader and no $dir/debs/*.deb" >&2; exit 2; }
      dpkg -x "$f" /
    done
    ldconfig
  fi
  if [ -z "${VK_DRIVER_FILES:-}" ]; then
    for j in /usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json \
             /usr/share/vulkan/icd.d/nvidia_icd.json /etc/vulkan/icd.d/nvidia_icd.json; do
      [ -f "$j" ] && { export VK_DRIVER_FILES=$j; break; }
    done
  fi
  n=${N:-20} warm=${WARMUP_MS:-1000}
  log=$(mktemp /tmp/aot_ab.XXXXXX)
  fail=0
  cells=$(for l in "${labels[@]}"; do (cd "$dir/$l" && ls *.spv.json); done | sort -u)
  for ((r = 0; r < rounds; ++r)); do
    for cell in $cells; do
      k=${#labels[@]}
      for ((i = 0; i < k; ++i)); do
        label=${labels[$(((i + r) % k))]}
        d="$dir/$label"
        [ -f "$d/$cell" ] || continue # not built for this label
        if line=$(LD_LIBRARY_PATH="$d" "$d/attn-vulkan-aot-test" bench "$d/$cell" "$n" "$warm" 64 2>&1); then :; else
          echo "aot_ab.sh: $label $cell failed: $line" >&2
          fail=1
        fi
        if [ "$r" = 0 ]; then
          printf '%s\n' "$line" | grep -v '^{' | sed "s|^|$label $cell: |" >&2 || true
        fi
        json=$(printf '%s\n' "$line" | grep '^{' | tail -1 || true)
        [ -n "$json" ] || continue
        printf '{"label": "%s", "round": %d, %s\n' "$label" "$r" "${json#\{}" | tee -a "$log"
      done
    done
  done
  python3 - "$log" "${labels[@]}" <<'EOF'
import json, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
labels = sys.argv[2:]
cells = sorted({r["artifact"].rsplit("/", 1)[-1] for r in rows})
def med(xs):
    xs = [x for x in xs if x is not None]
    return statistics.median(xs) if xs else None
print("summary: median over rounds; ratio = device_b2b_ms / %s's" % labels[0])
for c in cells:
    base = None
    for l in labels:
        rs = [r for r in rows if r["label"] == l and r["artifact"].endswith("/" + c)]
        if not rs:
            continue
        d = med([r["device_b2b_ms"] for r in rs])
        if base is None:
            base = d
        ok = all(r["ok"] for r in rs)
        worst = max((r["check_worst"] or 0.0) for r in rs)
        ratio = (d / base) if (d and base) else None
        print("%-40s %-12s block_q %3d block_kv %3d splits %3d  device_b2b %8.4f ms  b2b %8.4f  submit %7.4f  x%s  check %.3g %s" % (
            c, l, rs[0]["block_q"], rs[0]["block_kv"], rs[0]["kv_splits"], d or float("nan"),
            med([r["b2b_ms"] for r in rs]) or float("nan"), med([r.get("submit_ms") for r in rs]) or float("nan"),
            "%.3f" % ratio if ratio else "-", worst, "ok" if ok else "FAILED"))
EOF
  rm -f "$log"
  if [ -n "${SASS:-}" ]; then
    # What the driver compiled each label's kernels to: one launch per
    # kernel into an empty shader cache, its entries unpacked
    # (driver_sass.py, with DIR/zstd) and disassembled (nvdisasm) into
    # $SASS/LABEL-CELL-entryN.sass
    mkdir -p "$SASS"
    for label in "${labels[@]}"; do
      d="$dir/$label"
      for cell in $cells; do
        [ -f "$d/$cell" ] || continue
        c=${cell%.spv.json} cache=$(mktemp -d /tmp/aot_ab_glc.XXXXXX)
        __GL_SHADER_DISK_CACHE_PATH=$cache __GL_SHADER_DISK_CACHE=1 \
          __GL_SHADER_DISK_CACHE_SKIP_CLEANUP=1 LD_LIBRARY_PATH="$d" \
          "$d/attn-vulkan-aot-test" bench "$d/$cell" 1 0 8 > /dev/null 2>&1 ||
          echo "aot_ab.sh: SASS: $label $cell did not run" >&2
        if PATH="$dir/zstd:$PATH" LD_LIBRARY_PATH="$dir/zstd" \
             python3 bench/vulkan/driver_sass.py extract "$cache" "$cache/code" > /dev/null; then
          for f in "$cache"/code/*.code; do
            nvdisasm -b SM90 "$f" > "$SASS/$label-$c-$(basename "$f" .code).sass" ||
              echo "aot_ab.sh: SASS: nvdisasm failed on $label $cell" >&2
          done
        else
          echo "aot_ab.sh: SASS: no code in $label $cell's cache" >&2
        fi
        rm -rf "$cache"
      done
    done
  fi
  exit $fail
  ;;
*)
  echo "usage: aot_ab.sh build DIR LABEL [NAME=VALUE ...] | run DIR [ROUNDS]" >&2
  exit 2
  ;;
esac
