#!/usr/bin/env bash
# The Python package's PyTorch path on the GPU machine (PyTorch, CUDA, no
# MLIR): python/attn from the tree that travels with the call, libattn.so
# (the JIT) and the libraries it loads from bench/vulkan/make_carry.sh's
# archives. Here:
#
#   bench/vulkan/make_carry.sh     # .carry/vulkan: attn.tar.xz, deps.tar.xz
#
# then, from the lead's checkout (the tree that travels must hold this
# script, bench/python/torch_checks.py, python/ and test/Python/):
#
#   run(command="bench/python/device_torch.sh", carry=[".carry/vulkan"], timeout_s=600)
#
# Steps:
#   1. attn.tar.xz and deps.tar.xz are unpacked into $ROOT (default
#      /tmp/attn-python); the carried libraries are used only where the
#      machine lacks the soname (as bench/vulkan/device_run.sh does), then
#      all of them, then the carried libstdc++, while ldd finds one missing;
#   2. bench/python/torch_checks.py --device cuda: cuda tensors f32, f16,
#      bf16 against torch's SDPA in float64, causal (both alignments), GQA,
#      masks, lse, dropout, strides, the custom op (opcheck,
#      torch.compile(fullgraph=True) with aot_eager and inductor), the
#      launch on the current (non-default) stream, errors;
#   3. the same with --device cpu (torch cpu tensors);
#   4. the NumPy tests of test/Python (cpu-numerics, cpu-dropout, errors,
#      cache) run directly with python3, against the carried library.
# Writes under $OUT (default bench-out): run.log (nvidia-smi, versions,
# the library setup), cuda.log, cpu.log, numpy.log, summary.txt.
# Environment: PYTHON (default python3), ROOT, CARRY (default
# .carry/python when it has attn.tar.xz, from bench/python/make_carry.sh,
# the library alone; else .carry/vulkan), NO_COMPILE=1 (skip the torch.compile checks),
# SKIP_CUDA_TENSORS=1 (skip step 2, for runs after the layer alone), SKIP_CPU=1,
# SKIP_NUMPY=1, MHA=1 (also bench/cuda/mha_streams.py with MHA_ARGS:
# mha.log, mha.jsonl).
# Exit status: 0 when every check passed; 1 when one FAILed; 2 when the
# set-up failed (no archive, missing libraries, no torch, no GPU).
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 2
if [ -z "${CARRY:-}" ]; then
  CARRY=.carry/vulkan
  [ -f .carry/python/attn.tar.xz ] && CARRY=.carry/python
fi
OUT=${OUT:-bench-out}
ROOT=${ROOT:-/tmp/attn-python}
PY=${PYTHON:-python3}
mkdir -p "$OUT"
: > "$OUT/run.log"
say() { echo "$*" | tee -a "$OUT/run.log"; }
die() { say "device_torch.sh: FAILED: $*"; echo "SETUP FAILED: $*" > "$OUT/summary.txt"; exit 2; }

# 1. the library
rm -rf "$ROOT" && mkdir -p "$ROOT" || die "cannot make $ROOT"
for a in attn deps; do
  [ -f "$CARRY/$a.tar.xz" ] || die "no $CARRY/$a.tar.xz (bench/vulkan/make_carry.sh makes it)"
  tar -xJf "$CARRY/$a.tar.xz" -C "$ROOT" || die "unpacking $CARRY/$a.tar.xz"
done
[ -f "$ROOT/lib/libattn.so" ] || die "no lib/libattn.so in $CARRY/attn.tar.xz"
cat "$ROOT/MANIFEST" >> "$OUT/run.log" 2>/dev/null
has_lib() { ldconfig -p 2>/dev/null | grep -F "$1 (libc6,x86-64)" >/dev/null; }
missing() { LD_LIBRARY_PATH=$1 ldd "$ROOT/lib/libattn.so" 2>&1 | grep "not found"; }
USE="$ROOT/lib/use"
mkdir -p "$USE"
for f in "$ROOT"/lib/deps/* "$ROOT"/lib/stubs/*; do
  [ -e "$f" ] || continue
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
if m=$(missing "$LDP"); then die "libraries missing for libattn.so: $m"; fi
# The cpu JIT finds LLVM's libomp and MLIR's libmlir_c_runner_utils beside
# the libMLIR it loaded (carried in lib/deps by make_carry.sh).
CPU_JIT=1
export LD_LIBRARY_PATH="$LDP${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export ATTN_LIBRARY="$ROOT/lib/libattn.so"
export PYTHONPATH="$PWD/python${PYTHONPATH:+:$PYTHONPATH}"
export PYTHONDONTWRITEBYTECODE=1
say "ATTN_LIBRARY=$ATTN_LIBRARY"
say "LD_LIBRARY_PATH=$LD_LIBRARY_PATH"
(nvidia-smi 2>&1 || true) >> "$OUT/run.log"
"$PY" -c "import sys, numpy, torch; print('python', sys.version.split()[0], 'numpy', numpy.__version__, 'torch', torch.__version__, 'cuda', torch.version.cuda, torch.cuda.is_available())" 2>&1 | tee -a "$OUT/run.log"
"$PY" -c "import torch; assert torch.cuda.is_available()" 2>/dev/null || die "torch with CUDA is not importable by $PY"

FAILED=0
run() {  # run NAME LOG CMD...: its output to LOG and here; FAILED=1 on failure
  local name=$1 log=$2; shift 2
  say "== $name: $*"
  "$@" 2>&1 | tee -a "$log"
  local rc=${PIPESTATUS[0]}
  say "== $name: exit $rc"
  [ "$rc" = 0 ] || FAILED=1
}
CHECK_ARGS=()
[ "${NO_COMPILE:-0}" = 1 ] && CHECK_ARGS+=(--no-compile)
: > "$OUT/cuda.log"; : > "$OUT/cpu.log"; : > "$OUT/numpy.log"
# 2. cuda tensors
[ "${SKIP_CUDA_TENSORS:-0}" = 1 ] ||
  run cuda "$OUT/cuda.log" "$PY" bench/python/torch_checks.py --device cuda "${CHECK_ARGS[@]}"
# attn.mha on cuda runs its projections on cuBLASLt (runtime/src/cuda/
# CublasLt.h): PyTorch's own copy, found beside torch or in its nvidia
# wheels, unless ATTN_CUBLASLT names one.
if [ -z "${ATTN_CUBLASLT:-}" ]; then
  ATTN_CUBLASLT=$("$PY" bench/python/find_cublaslt.py 2>/dev/null || true)
  [ -n "$ATTN_CUBLASLT" ] && export ATTN_CUBLASLT
  say "cuBLASLt for attn.mha: ${ATTN_CUBLASLT:-not found (the layer checks will say so)}"
fi
# 2b. attn-run on the cuda target (test/Integration/cuda/attn-run.test's
# cases: the tensor-core and generic kernels checked against float64, a
# benchmark, --save/--load), when attn-run was carried
if [ -x "$ROOT/bin/attn-run" ]; then
  : > "$OUT/attn-run.log"
  AR="$ROOT/bin/attn-run"
  run "attn-run cuda f16" "$OUT/attn-run.log" "$AR" --target=cuda --dtype=f16 --heads=8 --kv-heads=2 --seq-q=300 --seq-kv=1000 --head-dim=128 --causal --check --bench=5 --json
  run "attn-run cuda bf16 lse" "$OUT/attn-run.log" "$AR" --target=cuda --dtype=bf16 --seq-q=1 --seq-kv=4096 --heads=32 --kv-heads=8 --head-dim=128 --lse --check
  run "attn-run cuda f32 generic" "$OUT/attn-run.log" "$AR" --target=cuda --dtype=f32 --seq-q=77 --seq-kv=130 --head-dim=64 --mask=bool --check
  run "attn-run cuda save" "$OUT/attn-run.log" "$AR" --target=cuda --dtype=f16 --seq-q=64 --seq-kv=200 --head-dim=64 --check --save="$OUT/npy"
  run "attn-run cuda load" "$OUT/attn-run.log" "$AR" --target=cuda --dtype=f16 --seq-q=64 --seq-kv=200 --head-dim=64 --check --load="$OUT/npy"
  rm -rf "$OUT/npy"
  # attn.mha on cuda (the layer: cuBLASLt GEMMs around attn's kernel),
  # checked against the float64 layer reference: fused and separate
  # weights, biases, GQA, cross-attention with Dv != D, causal, every dtype,
  # the generic kernel (D = 12) and padded intermediate rows.
  run "attn-run cuda mha f16 fused" "$OUT/attn-run.log" "$AR" --mha --target=cuda --dtype=f16 --batch=2 --seq-q=512 --embed=1024 --heads=16 --fused-qkv --bias --causal --check --bench=5 --json
  run "attn-run cuda mha bf16 gqa" "$OUT/attn-run.log" "$AR" --mha --target=cuda --dtype=bf16 --batch=2 --seq-q=300 --embed=1024 --heads=16 --kv-heads=4 --check --json
  run "attn-run cuda mha f16 cross" "$OUT/attn-run.log" "$AR" --mha --target=cuda --dtype=f16 --batch=3 --seq-q=77 --seq-kv=200 --kv-embed=384 --embed=512 --heads=8 --kv-heads=2 --head-dim=64 --value-dim=32 --bias --check --json
  run "attn-run cuda mha f32" "$OUT/attn-run.log" "$AR" --mha --target=cuda --dtype=f32 --batch=2 --seq-q=100 --embed=256 --heads=4 --bias --causal --check --json
  run "attn-run cuda mha f16 generic padded" "$OUT/attn-run.log" "$AR" --mha --target=cuda --dtype=f16 --batch=2 --seq-q=33 --embed=36 --heads=3 --fused-qkv --bias --check --json
fi
# 2c. with MHA=1: seed 003's question (bench/cuda/mha_streams.py: the layer
# on one stream vs per-head streams vs nn.MultiheadAttention and F.linear +
# SDPA, each checked against torch), its JSON lines to mha.jsonl
if [ "${MHA:-0}" = 1 ]; then
  : > "$OUT/mha.log"
  run "mha streams" "$OUT/mha.log" "$PY" bench/cuda/mha_streams.py ${MHA_ARGS:-}
  grep -h '^{' "$OUT/mha.log" > "$OUT/mha.jsonl" || true
fi
# 3. cpu tensors
if [ "$CPU_JIT" != 1 ]; then
  say "SKIP cpu tensors and the NumPy tests: the cpu JIT's libraries are missing (above)"
  SKIP_CPU=1 SKIP_NUMPY=1
fi
if [ "${SKIP_CPU:-0}" != 1 ]; then
  run cpu "$OUT/cpu.log" "$PY" bench/python/torch_checks.py --device cpu "${CHECK_ARGS[@]}"
fi
# 4. the NumPy tests (lit's RUN lines, without FileCheck: each exits
# non-zero on a failure)
if [ "${SKIP_NUMPY:-0}" != 1 ]; then
  for t in cpu-numerics cpu-dropout errors cache; do
    run "numpy $t" "$OUT/numpy.log" "$PY" "test/Python/$t.py"
  done
fi

{
  echo "device_torch.sh $(date -u +%Y-%m-%dT%H:%M:%SZ)"
  grep -h -E "^(PASS|FAIL|SKIP) " "$OUT/cuda.log" | sed 's/^/cuda: /'
  grep -h -E "^(PASS|FAIL|SKIP) " "$OUT/cpu.log" | sed 's/^/cpu: /'
  grep -h -E "^(PASS|FAIL|SKIP) " "$OUT/numpy.log" | sed 's/^/numpy: /'
  [ -f "$OUT/attn-run.log" ] && grep -h -E "_err|TFLOP|GB/s|error|FAIL" "$OUT/attn-run.log" | head -40 | sed 's/^/attn-run: /'
  grep -h -E "^== .*exit" "$OUT/run.log"
  [ "$FAILED" = 0 ] && echo "RESULT: PASS" || echo "RESULT: FAIL"
} > "$OUT/summary.txt"
cat "$OUT/summary.txt"
exit "$FAILED"
