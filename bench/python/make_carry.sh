#!/usr/bin/env bash
# What bench/python/device_torch.sh needs on the GPU machine, when
# bench/vulkan/make_carry.sh's .carry/vulkan (a superset: it also builds
# attn-run, the numeric tests and CUDA artifacts) is not at hand: into $1
# (default .carry/python, ignored by git), in the same layout:
#
#   attn.tar.xz   lib/libattn.so and bin/attn-run of $ATTN_BUILD_DIR
#                 (default build/) and a MANIFEST (which build, sha256);
#   deps.tar.xz   lib/deps: every library `ldd` lists for libattn.so
#                 outside glibc and the C++ runtime (libMLIR, libLLVM,
#                 libxml2, ...); lib/stubs: libz3 and libicuuc replaced by
#                 stubs that abort if called (libLLVM and libxml2 need them,
#                 attn never calls them; bench/vulkan/make_carry.sh says
#                 why); lib/fallback: libstdc++ and libgcc_s; remade only
#                 when deps.sha256 changes (xz: minutes on 2 cores);
#                 with LLVM's libomp and MLIR's libmlir_c_runner_utils
#                 beside libMLIR in lib/deps, where the cpu JIT looks for
#                 them (lib/JIT/RuntimeLibraries.h: beside the libMLIR the
#                 process loaded);
#
# Then: run(command="CARRY=.carry/python bench/python/device_torch.sh",
#           carry=[".carry/python"], timeout_s=600)
set -euo pipefail
cd "$(dirname "$0")/../.."
OUT=${1:-.carry/python}
BUILD=${ATTN_BUILD_DIR:-build}
[ -f "$BUILD/lib/libattn.so" ] || { echo "make_carry.sh: no $BUILD/lib/libattn.so (scripts/build.sh)" >&2; exit 2; }
mkdir -p "$OUT"
STAGE=$(mktemp -d /tmp/attn-python-stage.XXXXXX)
trap 'rm -rf "$STAGE"' EXIT
A="$STAGE/attn" D="$STAGE/deps"
mkdir -p "$A/lib" "$A/bin" "$D/lib/deps" "$D/lib/stubs" "$D/lib/fallback"
cp -L "$BUILD/lib/libattn.so" "$A/lib/"
cp "$BUILD/bin/attn-run" "$A/bin/"

stub() {  # stub <soname> <library needing it> <symbol regex>
  local soname=$1 needer=$2 regex=$3 c="$STAGE/stub.c" syms
  syms=$(nm -D --undefined-only "$needer" | awk '{print $2}' | sed 's/@.*//' \
         | grep -E "$regex" | sort -u)
  [ -n "$syms" ] || { echo "make_carry.sh: $needer takes nothing from $soname?" >&2; exit 1; }
  {
    echo '#include <stdio.h>'
    echo '#include <stdlib.h>'
    echo 'static void stub(const char *f) {'
    echo "  fprintf(stderr, \"attn device stub: %s of $soname called (bench/python/make_carry.sh)\\n\", f);"
    echo '  abort();'
    echo '}'
    for s in $syms; do echo "void $s(void) { stub(\"$s\"); }"; done
  } > "$c"
  gcc -shared -fPIC -O1 -Wl,-soname,"$soname" -o "$D/lib/stubs/$soname" "$c"
}

LD_LIBRARY_PATH="$A/lib" ldd "$A/lib/libattn.so" | awk '/=> \//{print $3}' | sort -u |
while read -r lib; do
  base=$(basename "$lib")
  case "$base" in
    libc.so.*|libm.so.*|libdl.so.*|libpthread.so.*|librt.so.*|ld-linux*|libresolv.so.*) ;;
    libstdc++.so.*|libgcc_s.so.*) cp -L "$lib" "$D/lib/fallback/" ;;
    libz3.so.*|libicuuc.so.*|libicudata.so.*) ;;
    *) cp -L "$lib" "$D/lib/deps/" ;;
  esac
done
LLVM=$(ls "$D"/lib/deps/libLLVM.so.* 2>/dev/null | head -1 || true)
XML=$(ls "$D"/lib/deps/libxml2.so.* 2>/dev/null | head -1 || true)
if [ -n "$LLVM" ]; then
  Z3=$(readelf -d "$LLVM" | sed -n 's/.*NEEDED.*\[\(libz3\.so[^]]*\)\]/\1/p')
  [ -z "$Z3" ] || stub "$Z3" "$LLVM" '^Z3_'
fi
if [ -n "$XML" ]; then
  ICU=$(readelf -d "$XML" | sed -n 's/.*NEEDED.*\[\(libicuuc\.so[^]]*\)\]/\1/p')
  [ -z "$ICU" ] || stub "$ICU" "$XML" "_${ICU##*.so.}\$"
fi
# The cpu JIT's run-time libraries, beside libMLIR (where the JIT looks).
MLIRLIB=$(LD_LIBRARY_PATH="$A/lib" ldd "$A/lib/libattn.so" | awk '/libMLIR\.so/{print $3}')
[ -n "$MLIRLIB" ] || { echo "make_carry.sh: libattn.so does not load libMLIR?" >&2; exit 1; }
V=$(basename "$MLIRLIB" | sed 's/^libMLIR\.so\.//')
# (and what the runner utilities need beside libMLIR and libLLVM)
for so in libomp.so.5 "libmlir_c_runner_utils.so.$V" "libmlir_float16_utils.so.$V" \
    "libmlir_apfloat_wrappers.so.$V"; do
  cp -L "$(dirname "$MLIRLIB")/$so" "$D/lib/deps/" ||
    { echo "make_carry.sh: no $so beside $MLIRLIB" >&2; exit 1; }
done
m=$(LD_LIBRARY_PATH="$A/lib:$D/lib/deps:$D/lib/stubs" ldd "$A/lib/libattn.so" "$A/bin/attn-run" "$D"/lib/deps/libmlir_c_runner_utils.so.* 2>&1 | grep "not found" || true)
[ -z "$m" ] || { echo "make_carry.sh: unresolved with the carried libraries: $m" >&2; exit 1; }

{
  echo "made $(date -u +%Y-%m-%dT%H:%M:%SZ) by bench/python/make_carry.sh"
  echo "build $(cd "$BUILD" && pwd) at $(git rev-parse --short HEAD 2>/dev/null || echo '?')"
  (cd "$A" && find . -type f | sort | xargs sha256sum)
} > "$A/MANIFEST"
XZ=(xz -T2 --x86 --lzma2=preset=9,dict=192MiB)
tar -C "$A" -cf - . | "${XZ[@]}" > "$OUT/attn.tar.xz"
(cd "$D" && find . -type f | sort | xargs sha256sum) > "$STAGE/deps.sha256"
if [ -f "$OUT/deps.tar.xz" ] && cmp -s "$STAGE/deps.sha256" "$OUT/deps.sha256"; then
  echo "deps.tar.xz: unchanged, kept"
else
  echo "deps.tar.xz: compressing $(du -sm "$D" | cut -f1) MB"
  tar -C "$D" -cf - . | "${XZ[@]}" > "$OUT/deps.tar.xz.part"
  mv "$OUT/deps.tar.xz.part" "$OUT/deps.tar.xz"
  cp "$STAGE/deps.sha256" "$OUT/deps.sha256"
fi
ls -la "$OUT"
echo "make_carry.sh: $OUT is $(du -sm "$OUT" | cut -f1) MB"
