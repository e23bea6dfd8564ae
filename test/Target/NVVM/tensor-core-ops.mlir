// The lower half of attn-to-nvvm-pipeline already handles the tensor-core
// kernel's building blocks (the kernel itself is not written yet, see
// docs/NVIDIA.md): cp.async into shared memory, ldmatrix (plain and
// transposed), mma.sync m16n8k16 f16 -> f32, a quad shuffle and exp2, in a
// gpu.launch, reach PTX that ptxas assembles for sm_80 and sm_90a.
// REQUIRES: ptxas
// RUN: rm -rf %t && mkdir -p %t
// RUN: attn-opt %s --attn-to-nvvm-pipeline="chip=sm_90a" | python3 %S/Inputs/extract_ptx.py > %t/k90.ptx
// RUN: FileCheck %s < %t/k90.ptx
// RUN: %ptxas -v -arch=sm_90a %t/k90.ptx -o %t/k90.cubin 2>&1 | FileCheck %s --check-prefix=PTXAS
// RUN: attn-opt %s --attn-to-nvvm-pipeline="chip=sm_80" | python3 %S/Inputs/extract_ptx.py > %t/k80.ptx
// RUN: %ptxas -v -arch=sm_80 %t/k80.ptx -o %t/k80.cubin 2>&1 | FileCheck %s --check-prefix=PTXAS

// CHECK: .entry tc_kernel(
// CHECK: cp.async.ca.shared.global
// CHECK: cp.async.commit_group
// CHECK: cp.async.wait_group
// CHECK: ldmatrix.sync.aligned.m8n8.x4.shared.b16
// CHECK: ldmatrix.sync.aligned.m8n8.x2.trans.shared.b16
// CHECK: mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32
// CHECK: shfl.sync.bfly.b32 {{.*}}, 1, 31, -1;
// CHECK: ex2.approx

// PTXAS: 0 bytes spill stores, 0 bytes spill loads

func.func @tc(%g: memref<64x16xf16>, %out: memref<16x8xf32>) {
  %c1 = arith.constant 1 : index
  %c32 = arith.constant 32 : index
  gpu.launch blocks(%bx, %by, %bz) in (%x = %c1, %y = %c1, %z = %c1)
             threads(%tx, %ty, %tz) in (%a = %c32, %b = %c1, %c = %c1)
             workgroup(%s : memref<64x16xf16, #gpu.address_space<workgroup>>) {
    %c0 = arith.constant 0 : index
    %c8 = arith.constant 8 : index
    %row = arith.divui %tx, %c1 : index
    %col = arith.constant 0 : index
    %t = nvgpu.device_async_copy %g[%row, %col], %s[%row, %col], 8 : memref<64x16xf16> to memref<64x16xf16, #gpu.address_space<workgroup>>
    %grp = nvgpu.device_async_create_group %t
    nvgpu.device_async_wait %grp {numGroups = 0 : i32}
    gpu.barrier
    %a0 = nvgpu.ldmatrix %s[%row, %c0] {numTiles = 4 : i32, transpose = false} : memref<64x16xf16, #gpu.address_space<workgroup>> -> vector<4x2xf16>
    %b0 = nvgpu.ldmatrix %s[%row, %c8] {numTiles = 2 : i32, transpose = true} : memref<64x16xf16, #gpu.address_space<workgroup>> -> vector<2x2xf16>
    %zero = arith.constant dense<0.0> : vector<2x2xf32>
    %d = nvgpu.mma.sync(%a0, %b0, %zero) {mmaShape = [16, 8, 16]} : (vector<4x2xf16>, vector<2x2xf16>, vector<2x2xf32>) -> vector<2x2xf32>
    %e = vector.extract %d[0, 0] : f32 from vector<2x2xf32>
    %c1i = arith.constant 1 : i32
    %w = arith.constant 32 : i32
    %sh, %ok = gpu.shuffle xor %e, %c1i, %w : f32
    %mx = arith.maximumf %e, %sh : f32
    %ex = math.exp2 %mx : f32
    memref.store %ex, %out[%row, %c0] : memref<16x8xf32>
    gpu.terminator
  }
  return
}
