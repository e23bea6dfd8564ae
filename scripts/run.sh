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
rows=""
for target in cpu cuda vulkan; do
  if ! reason=$("$RUN" --target=$target --probe 2>&1); then
    rows+="$target|skipped: ${reason##*: }"$'\n'
    continue
  fi
  if json=$("$RUN" --target=$target --input="$EXAMPLE" --check --bench=5 --json); then :; else status=1; fi
  rows+="$target|$json"$'\n'
done
printf '%s' "$rows" | python3 scripts/run_table.py
exit $status
