// RUN: attn-opt %s -attn-nvvm-max-registers | FileCheck %s
// RUN: attn-opt %s -attn-nvvm-max-registers=max-registers=96 | FileCheck %s --check-prefix=FIXED
// RUN: not attn-opt %s -attn-nvvm-max-registers=max-registers=300 2>&1 | FileCheck %s --check-prefix=RANGE

// attn-nvvm-max-registers requires outlined gpu.func kernels and
// max-registers in [0, 255]; it guarantees nvvm.maxnreg on every kernel that
// uses mma.sync (max-registers, else the budget the kernel recorded in
// attn.nvvm_max_registers, else 65536 / known_block_size threads, at most
// 255, a multiple of 8), removes that attribute from those kernels, and
// leaves other kernels and functions that are not kernels alone.

// Kernels with mma.sync get what one workgroup can have: 65536 / 256 = 256,
// at most 255; 65536 / 1024 = 64; 65536 / 384 = 170, a multiple of 8: 168.
// A kernel without mma.sync, and a function that is not a kernel, keep
// ptxas's choice.
// CHECK-LABEL: gpu.func @mma_256
// CHECK-SAME: nvvm.maxnreg = 255 : i32
// CHECK-LABEL: gpu.func @mma_1024
// CHECK-SAME: nvvm.maxnreg = 64 : i32
// CHECK-LABEL: gpu.func @mma_384
// CHECK-SAME: nvvm.maxnreg = 168 : i32
// A budget the kernel's conversion recorded (attn.nvvm_max_registers, 168
// for three 4-warp workgroups per SM) wins over the default and is removed;
// an explicit max-registers wins over both.
// CHECK-LABEL: gpu.func @mma_128_recorded
// CHECK-SAME: nvvm.maxnreg = 168 : i32
// CHECK-NOT: attn.nvvm_max_registers
// CHECK-LABEL: gpu.func @no_mma
// CHECK-NOT: nvvm.maxnreg
// CHECK-LABEL: gpu.func @not_a_kernel
// CHECK-NOT: nvvm.maxnreg
// CHECK: }
// FIXED-COUNT-4: nvvm.maxnreg = 96 : i32
// FIXED-NOT: nvvm.maxnreg
// RANGE: attn-nvvm-max-registers: max-registers is 300; it must be in [0, 255]
gpu.module @kernels {
  gpu.func @mma_256(%a: vector<4x2xf16>, %b: vector<2x2xf16>, %c: vector<2x2xf32>) kernel attributes {known_block_size = array<i32: 256, 1, 1>} {
    %d = nvgpu.mma.sync (%a, %b, %c) {mmaShape = [16, 8, 16]} : (vector<4x2xf16>, vector<2x2xf16>, vector<2x2xf32>) -> vector<2x2xf32>
    gpu.return
  }
  gpu.func @mma_1024(%a: vector<4x2xf16>, %b: vector<2x2xf16>, %c: vector<2x2xf32>) kernel attributes {known_block_size = array<i32: 32, 32, 1>} {
    %d = nvgpu.mma.sync (%a, %b, %c) {mmaShape = [16, 8, 16]} : (vector<4x2xf16>, vector<2x2xf16>, vector<2x2xf32>) -> vector<2x2xf32>
    gpu.return
  }
  gpu.func @mma_384(%a: vector<4x2xf16>, %b: vector<2x2xf16>, %c: vector<2x2xf32>) kernel attributes {known_block_size = array<i32: 384, 1, 1>} {
    scf.execute_region {
      %d = nvgpu.mma.sync (%a, %b, %c) {mmaShape = [16, 8, 16]} : (vector<4x2xf16>, vector<2x2xf16>, vector<2x2xf32>) -> vector<2x2xf32>
      scf.yield
    }
    gpu.return
  }
  memref.global "public" @smem : memref<0xi8, #gpu.address_space<workgroup>>
  gpu.func @mma_128_recorded(%a: vector<4x2xf16>, %b: vector<2x2xf16>, %c: vector<2x2xf32>) kernel attributes {known_block_size = array<i32: 128, 1, 1>} {
    %s = memref.get_global @smem : memref<0xi8, #gpu.address_space<workgroup>> {attn.nvvm_max_registers = 168 : i32}
    %d = nvgpu.mma.sync (%a, %b, %c) {mmaShape = [16, 8, 16]} : (vector<4x2xf16>, vector<2x2xf16>, vector<2x2xf32>) -> vector<2x2xf32>
    gpu.return
  }
  gpu.func @no_mma(%x: f32) kernel attributes {known_block_size = array<i32: 256, 1, 1>} {
    gpu.return
  }
  gpu.func @not_a_kernel(%a: vector<4x2xf16>, %b: vector<2x2xf16>, %c: vector<2x2xf32>) {
    %d = nvgpu.mma.sync (%a, %b, %c) {mmaShape = [16, 8, 16]} : (vector<4x2xf16>, vector<2x2xf16>, vector<2x2xf32>) -> vector<2x2xf32>
    gpu.return
  }
}
