#!/usr/bin/env bash
# Installs exactly what attn needs and is missing, from Debian's archive only.
# Non-interactive and idempotent: runs `apt-get update` once, and only when
# something is missing.
set -euo pipefail

PACKAGES=(
  # compiler toolchain and build
  g++ cmake ninja-build python3
  # LLVM / MLIR 22: libMLIR.so, headers, mlir-tblgen, the JIT's libLLVM
  llvm-22-dev libmlir-22-dev mlir-22-tools
  # FileCheck, lit, not, count for the lit suite
  llvm-22-tools
  # LLVM's OpenMP runtime: the CPU kernels run their parallel tiles on it
  libomp-22-dev
  # unit tests
  libgtest-dev
  # Vulkan: loader and headers, Mesa's lavapipe (CPU Vulkan), SPIR-V tools
  libvulkan-dev mesa-vulkan-drivers spirv-tools
  # test/Install: the Makefile + pkg-config consumer of an installed attn,
  # and readelf/nm for the installed libraries' SONAME, RUNPATH and exports
  make pkgconf binutils
  # test/Python and attn-run's .npy tests: NumPy; pip-install.test: a venv
  # with pip and setuptools (no PyPI: Debian's own)
  python3-numpy python3-venv python3-pip python3-setuptools
  # bench/cpu_vs_blas.py: NumPy's BLAS as OpenBLAS (Debian's NumPy falls
  # back to the reference BLAS, ~30x slower, without it)
  libopenblas0-pthread
)

missing=()
for p in "${PACKAGES[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

if [ ${#missing[@]} -eq 0 ]; then
  echo "setup: all ${#PACKAGES[@]} packages present"
  exit 0
fi

echo "setup: installing ${missing[*]}"
SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
