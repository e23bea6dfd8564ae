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
  err=$(mktemp)
  if json=$("$RUN" --target=$target --input="$EXAMPLE" --check --bench=5 --json 2>"$err"); then
    rows+="$target|$json"$'\n'
  elif [ -z "$json" ] && grep -q 'attn_compile failed: unsupported: ' "$err"; then
    # The backend refuses this op with a reason (docs/<backend>.md lists
    # what each supports): shown, not a failure. Wrong results and every
    # other error are failures.
    rows+="$target|refused: $(sed -n 's/.*unsupported: //p' "$err" | head -1)"$'\n'
  else
    cat "$err" >&2
    status=1
    rows+="$target|${json:-FAILED: $(tail -1 "$err")}"$'\n'
  fi
  rm -f "$err"
done
printf '%s' "$rows" | python3 scripts/run_table.py
exit $status
