#!/usr/bin/env bash
# The README's test command: set-up, build, then every test (lit runs the
# FileCheck tests, the gtest drivers and the numeric matrices; tests that need
# a GPU, Vulkan or ptxas say they were skipped when those are absent).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
scripts/build.sh
BUILD_DIR=${ATTN_BUILD_DIR:-build}
/usr/lib/llvm-22/bin/lit -sv "$BUILD_DIR/test"
