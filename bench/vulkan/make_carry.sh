#!/usr/bin/env bash
# Builds what bench/vulkan/device_run.sh needs on the GPU machine (which has
# no MLIR, no network and maybe no Vulkan loader) into $1 (default
# .carry/vulkan, ignored by git), and prints its size:
#
#   attn.tar.xz   bin/attn-run and lib/libattn.so (the JIT, from
#                 $ATTN_BUILD_DIR, default build/), bin/vk-info,
#                 bin/attn-numeric-tests, bin/attn-long-keys-tests
#                 (bench/vulkan/vk_info.cpp: the device as the runtime sees
#                 it), cuda/ (bench/cuda/make_artifacts.sh's tensor-core
#                 kernels at D = 64 and 128 and the D = 128 decode kernels,
#                 built by the same compiler, with libattn_runtime.so: the
#                 CUDA side of the comparison), aot/ (bench/vulkan/
#                 make_aot.sh: the timed cells' Vulkan kernels built here
#                 for the device DEVICE describes, libattn_runtime.so and
#                 attn-vulkan-aot-test to time them without MLIR) and
#                 MANIFEST (what, from which build, sha256 of each file);
#   deps.tar.xz   the libraries those load that a machine may lack, which
#                 change only with the system's packages (so this archive
#                 is remade only when deps.sha256 differs):
#                   lib/deps      every library `ldd` lists for attn-run,
#                                 libattn.so and vulkaninfo outside glibc and
#                                 the C++ runtime (libMLIR, libLLVM, libxml2,
#                                 ...), and Debian's vulkaninfo in bin/;
#                   lib/stubs     libz3.so.4 and libicuuc.so.<N>: libLLVM
#                                 needs Z3 (for clang's static analyzer) and
#                                 libxml2 needs ICU (for encodings), neither
#                                 used by attn; the real ones with ICU's data
#                                 would add about 15 MB, over the limit. Each
#                                 stub defines every symbol its dependent
#                                 needs as a function that prints its name
#                                 and aborts. device_run.sh takes them only
#                                 where the machine lacks the real library;
#                   lib/fallback  libstdc++ and libgcc_s, for a machine
#                                 whose own are older than this one's;
#   deps.sha256   what deps.tar.xz holds;
#   attn-old.tar.xz  with ATTN_AB_BUILD (a build folder with bin/attn-run
#                 and lib/libattn.so, e.g. the previous main's): that
#                 compiler's attn-run and libattn.so and its MANIFEST, for
#                 bench/vulkan/device_ab.sh (the same libraries as ours:
#                 deps.tar.xz serves both);
#   debs/         Debian's Vulkan loader and glvnd (libvulkan1, libegl1,
#                 libglvnd0, libopengl0, libgl1, libglx0, libgles2: the
#                 device notes' set), `apt-get download`, amd64.
#
# The tree that travels to the GPU machine (the tracked files + carried
# paths) may hold 64 MiB: this fails when $1 and the tracked and
# untracked-not-ignored files come to more. Needs the build
# (scripts/build.sh), gcc, and Debian's archive (apt-get).
set -euo pipefail
cd "$(dirname "$0")/../.."
OUT=${1:-.carry/vulkan}
BUILD=${ATTN_BUILD_DIR:-build}
for f in "$BUILD/bin/attn-run" "$BUILD/lib/libattn.so" "$BUILD/lib/libattn_runtime.so"; do
  [ -f "$f" ] || { echo "make_carry.sh: no $f (build first: scripts/build.sh)" >&2; exit 2; }
done
mkdir -p "$OUT/debs"
rm -f "$OUT/attn-vulkan.tar.xz" "$OUT"/*.part  # an earlier layout's archive, leftovers
STAGE=$(mktemp -d /tmp/attn-vulkan-stage.XXXXXX)
trap 'rm -rf "$STAGE"' EXIT
A="$STAGE/attn" D="$STAGE/deps"
mkdir -p "$A/bin" "$A/lib" "$A/cuda" "$D/bin" "$D/lib/deps" "$D/lib/stubs" "$D/lib/fallback"

# The loader debs, and vulkan-tools for vulkaninfo (unpacked here into the
# archive, not there into /). Debian's lists for amd64 in /tmp/amd64, as
# the device notes do it.
o=(-oAPT::Architecture=amd64 -oAPT::Architectures=amd64 -oDir::State::Lists=/tmp/amd64)
lists() {
  if ! ls /tmp/amd64/*_Packages* >/dev/null 2>&1; then
    mkdir -p /tmp/amd64/partial
    apt-get "${o[@]}" update >/dev/null
  fi
}
LOADER="libvulkan1 libegl1 libglvnd0 libopengl0 libgl1 libglx0 libgles2"
if ! ls "$OUT"/debs/libvulkan1_*.deb >/dev/null 2>&1; then
  lists
  (cd "$OUT/debs" && apt-get "${o[@]}" download $LOADER)
fi
lists
(cd "$STAGE" && apt-get "${o[@]}" download vulkan-tools >/dev/null 2>&1)
dpkg -x "$STAGE"/vulkan-tools_*.deb "$STAGE/tools"
cp "$STAGE/tools/usr/bin/vulkaninfo" "$D/bin/"
rm -rf "$STAGE/tools" "$STAGE"/vulkan-tools_*.deb

# The JIT and vk-info.
cp "$BUILD/bin/attn-run" "$A/bin/"
# The numeric tests (gtest, linked to libattn.so): device_run.sh runs their
# Vulkan cases on the device's own variants (coopmat on the H100).
cp "$BUILD/bin/attn-numeric-tests" "$BUILD/bin/attn-long-keys-tests" "$A/bin/"
# (libattn.so and its versioned names: the tests load it by its SONAME)
cp -P "$BUILD"/lib/libattn.so "$BUILD"/lib/libattn.so.[0-9]* "$A/lib/"
# vk-info calls the runtime's C++ internals, which the shared libraries do
# not export (runtime/attn.map): it links the static runtime.
g++ -std=c++17 -O2 -I runtime/include -I "$BUILD/runtime/include" bench/vulkan/vk_info.cpp \
  "$BUILD/lib/libattn_runtime.a" -ldl -pthread -o "$A/bin/vk-info"

# stub <soname> <library needing it> <symbol regex>: lib/stubs/<soname>
# defining each symbol the library takes from it (undefined there and
# matching the regex) as a function that says which and aborts.
stub() {
  local soname=$1 needer=$2 regex=$3 c="$STAGE/stub.c"
  local syms
  syms=$(nm -D --undefined-only "$needer" | awk '{print $2}' | sed 's/@.*//' \
         | grep -E "$regex" | sort -u)
  [ -n "$syms" ] || { echo "make_carry.sh: $needer takes nothing from $soname?" >&2; exit 1; }
  {
    echo '#include <stdio.h>'
    echo '#include <stdlib.h>'
    echo 'static void stub(const char *f) {'
    echo "  fprintf(stderr, \"attn device stub: %s of $soname called; the library was \""
    echo '          "replaced by a stub (bench/vulkan/make_carry.sh)\n", f);'
    echo '  abort();'
    echo '}'
    for s in $syms; do echo "void $s(void) { stub(\"$s\"); }"; done
  } > "$c"
  gcc -shared -fPIC -O1 -Wl,-soname,"$soname" -o "$D/lib/stubs/$soname" "$c"
  echo "stub $soname: $(echo "$syms" | wc -l) symbols that $(basename "$needer") takes"
}

# Every library they load, but the C library's own (always there), the C++
# runtime (lib/fallback) and what gets a stub.
for f in "$A/bin/attn-run" "$A/lib/libattn.so" "$D/bin/vulkaninfo"; do
  LD_LIBRARY_PATH="$A/lib" ldd "$f" | awk '/=> \//{print $3}'
done | sort -u | while read -r lib; do
  base=$(basename "$lib")
  case "$base" in
    libattn.so|libc.so.*|libm.so.*|libdl.so.*|libpthread.so.*|librt.so.*|ld-linux*|libresolv.so.*) ;;
    libvulkan.so.*) ;;  # the loader: from the debs (or the machine)
    libstdc++.so.*|libgcc_s.so.*) cp -L "$lib" "$D/lib/fallback/" ;;
    libz3.so.*|libicuuc.so.*|libicudata.so.*) ;;  # stubs, below
    *) cp -L "$lib" "$D/lib/deps/" ;;
  esac
done
LLVM=$(ls "$D"/lib/deps/libLLVM.so.* | head -1)
XML=$(ls "$D"/lib/deps/libxml2.so.* | head -1)
Z3=$(readelf -d "$LLVM" | sed -n 's/.*NEEDED.*\[\(libz3\.so[^]]*\)\]/\1/p')
ICU=$(readelf -d "$XML" | sed -n 's/.*NEEDED.*\[\(libicuuc\.so[^]]*\)\]/\1/p')
if [ -n "$Z3" ]; then stub "$Z3" "$LLVM" '^Z3_'; fi
if [ -n "$ICU" ]; then stub "$ICU" "$XML" "_${ICU##*.so.}\$"; fi
m=$(LD_LIBRARY_PATH="$A/lib:$D/lib/deps:$D/lib/stubs" ldd "$A/bin/attn-run" "$A/bin/vk-info" 2>&1 \
    | grep "not found" || true)
[ -z "$m" ] || { echo "make_carry.sh: unresolved with the carried libraries: $m" >&2; exit 1; }

# The CUDA comparison's kernels, built by the same compiler.
CUDA_ALL="$STAGE/cuda-all"
ATTN_BUILD_DIR="$BUILD" ATTN_AB_BUILD='' ATTN_AB_TAG='' \
  bench/cuda/make_artifacts.sh "$CUDA_ALL" > "$STAGE/cuda.log" 2>&1 \
  || { cat "$STAGE/cuda.log" >&2; echo "make_carry.sh: make_artifacts.sh failed" >&2; exit 1; }
for dt in f16 bf16; do
  for d in 64 128; do
    for c in "" _causal; do
      cp "$CUDA_ALL/tc_${dt}_d${d}${c}".{json,ptx} "$A/cuda/"
    done
  done
  cp "$CUDA_ALL/tc_decode_${dt}_d128".{json,ptx} "$A/cuda/"
done
cp "$CUDA_ALL/libattn_runtime.so" "$CUDA_ALL/provenance.txt" "$A/cuda/"
rm -rf "$CUDA_ALL" "$STAGE/cuda.log"

# The timed cells' kernels built here for the GPU machine's device
# (make_aot.sh: DEVICE, default the H200's description), with
# libattn_runtime.so and the program that times them: no MLIR needed there.
ATTN_BUILD_DIR="$BUILD" bench/vulkan/make_aot.sh "$A/aot"

# What and from where.
{
  echo "made $(date -u +%Y-%m-%dT%H:%M:%SZ) by bench/vulkan/make_carry.sh"
  src=$(sed -n 's/^CMAKE_HOME_DIRECTORY:INTERNAL=//p' "$BUILD/CMakeCache.txt" 2>/dev/null || true)
  if [ -n "$src" ] && c=$(git -C "$src" rev-parse --short HEAD 2>/dev/null); then
    git -C "$src" diff --quiet HEAD 2>/dev/null || c="$c+changes"
    echo "build $(cd "$BUILD" && pwd) from $src at $c"
  fi
  (cd "$A" && find . -type f | sort | xargs sha256sum)
} > "$A/MANIFEST"
# xz with the x86 filter (machine code packs better) and a dictionary as
# large as the biggest library.
XZ=(xz -T1 --x86 --lzma2=preset=9e,dict=192MiB)
tar -C "$A" -cf - . | "${XZ[@]}" > "$OUT/attn.tar.xz"
rm -f "$OUT/attn-old.tar.xz"
if [ -n "${ATTN_AB_BUILD:-}" ]; then
  O="$STAGE/old"
  mkdir -p "$O/bin" "$O/lib"
  cp "$ATTN_AB_BUILD/bin/attn-run" "$O/bin/"
  cp "$ATTN_AB_BUILD/lib/libattn.so" "$O/lib/"
  { echo "old: $(cd "$ATTN_AB_BUILD" && pwd) ${ATTN_AB_NOTE:-}"
    (cd "$O" && find . -type f | sort | xargs sha256sum); } > "$O/MANIFEST"
  tar -C "$O" -cf - . | "${XZ[@]}" > "$OUT/attn-old.tar.xz"
fi
(cd "$D" && find . -type f | sort | xargs sha256sum) > "$STAGE/deps.sha256"
if [ -f "$OUT/deps.tar.xz" ] && cmp -s "$STAGE/deps.sha256" "$OUT/deps.sha256"; then
  echo "deps.tar.xz: unchanged (deps.sha256), kept"
else
  echo "deps.tar.xz: compressing $(du -sm "$D" | cut -f1) MB (several minutes)"
  rm -f "$OUT/deps.tar.xz" "$OUT/deps.sha256"
  tar -C "$D" -cf - . | "${XZ[@]}" > "$OUT/deps.tar.xz.part"
  mv "$OUT/deps.tar.xz.part" "$OUT/deps.tar.xz"
  cp "$STAGE/deps.sha256" "$OUT/deps.sha256"
fi

carry=$(du -sb "$OUT" | cut -f1)
tracked=$(git ls-files -z | xargs -0 stat -c %s 2>/dev/null | awk '{s+=$1} END {print s}')
untracked=$(git ls-files -z --others --exclude-standard | xargs -0 -r stat -c %s 2>/dev/null | awk '{s+=$1} END {print s+0}')
ls -la "$OUT" "$OUT/debs"
total=$(( carry + tracked + untracked ))
echo "make_carry.sh: $OUT is $carry bytes ($(( carry / 1048576 )) MiB);" \
  "with the tracked ($tracked) and untracked-not-ignored ($untracked) files" \
  "$total bytes ($(( total / 1048576 )) MiB) of the 64 MiB a call may carry"
if [ $total -gt $(( 64 * 1048576 )) ]; then
  echo "make_carry.sh: over 64 MiB: the call would be refused" >&2; exit 1
fi
