#!/usr/bin/env bash
# The README's main command: set-up, build, then compile the example
# attn.sdpa in examples/ and run it on every target this machine has,
# checked against the float64 reference, with a short timing table.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
scripts/build.sh
BUILD_DIR=${ATTN_BUILD_DIR:-build}
RUN="$BUILD_DIR/bin/attn-run"
EXAMPLE=${1:-examples/sdpa.mlir}

echo
echo "== $EXAMPLE"
sed -n '/attn.sdpa/,/->/p' "$EXAMPLE"
echo
status=0
for target in cpu cuda vulkan; do
  if ! "$RUN" --target=$target --probe >/dev/null 2>&1; then
    printf '%-8s skipped: %s\n' "$target" "$("$RUN" --target=$target --probe 2>&1 | tail -n 1)"
    continue
  fi
  "$RUN" --target=$target --input="$EXAMPLE" --check --bench=5 || status=1
done
exit $status
