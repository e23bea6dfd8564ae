// The mma.sync kernel at D = 256 (f16 and bf16, causal, a bool mask
// broadcast over B and H, lse, GQA, odd lengths): 4 warps of one m16 row
// tile (64 query rows), Q (64 x 256 x 2 = 32 KB) in its own space read from
// shared memory per key block, 16-key blocks (2 stages x 16 x (256 + 256)
// x 2 = 32 KB): 64 KB of dynamic shared memory, which the runtime opts
// into. No spills for sm_90a or sm_80, split-KV or not; without the mask
// and with dropout neither. Without causal, a mask or dropout the split-KV
// kernel takes 32-key blocks (96 KB), the unsplit one keeps 16, and so
// does the decode kernel (a static query length of 1: 2 warps).
// REQUIRES: ptxas
// RUN: rm -rf %t && mkdir -p %t
// RUN: sed s/ELT/f16/g %s > %t/f16.mlir
// RUN: sed s/ELT/bf16/g %s > %t/bf16.mlir
// RUN: attn-translate --attn-to-ptx --tensor-cores --chip=sm_90a %t/f16.mlir -o %t/f16_90.ptx
// RUN: FileCheck %s < %t/f16_90.ptx
// RUN: FileCheck %s --check-prefix=META < %t/f16_90.ptx.json
// RUN: %ptxas -v -arch=sm_90a %t/f16_90.ptx -o %t/f16_90.cubin 2>&1 | FileCheck %s --check-prefix=PTXAS
// RUN: attn-translate --attn-to-ptx --tensor-cores --chip=sm_80 --kv-splits=1 %t/f16.mlir -o %t/f16_80.ptx
// RUN: %ptxas -v -arch=sm_80 %t/f16_80.ptx -o %t/f16_80.cubin 2>&1 | FileCheck %s --check-prefix=PTXAS
// RUN: attn-translate --attn-to-ptx --tensor-cores --chip=sm_90a --kv-splits=1 %t/bf16.mlir -o %t/bf16_90.ptx
// RUN: FileCheck %s --check-prefix=BF16 < %t/bf16_90.ptx
// RUN: %ptxas -v -arch=sm_90a %t/bf16_90.ptx -o %t/bf16_90.cubin 2>&1 | FileCheck %s --check-prefix=PTXAS
// RUN: sed -e 's/, %m: tensor<1x1x200x300xi1>//' -e 's/ mask(%m : tensor<1x1x200x300xi1>) causal/ causal dropout(0.1, seed %%seed)/' -e 's/%v: tensor<2x2x300x256xf16>)/%v: tensor<2x2x300x256xf16>, %%seed: i64)/' %t/f16.mlir > %t/f16drop.mlir
// RUN: attn-translate --attn-to-ptx --tensor-cores --chip=sm_90a %t/f16drop.mlir -o %t/f16drop_90.ptx
// RUN: FileCheck %s < %t/f16drop_90.ptx
// RUN: %ptxas -v -arch=sm_90a %t/f16drop_90.ptx -o %t/f16drop_90.cubin 2>&1 | FileCheck %s --check-prefix=PTXAS

// RUN: sed -e 's/, %m: tensor<1x1x200x300xi1>//' -e 's/ mask(%m : tensor<1x1x200x300xi1>) causal//' %t/f16.mlir > %t/f16nc.mlir
// RUN: attn-translate --attn-to-ptx --tensor-cores --chip=sm_90a %t/f16nc.mlir -o %t/f16nc_90.ptx
// RUN: FileCheck %s --check-prefix=META32 < %t/f16nc_90.ptx.json
// RUN: %ptxas -v -arch=sm_90a %t/f16nc_90.ptx -o %t/f16nc_90.cubin 2>&1 | FileCheck %s --check-prefix=PTXAS
// RUN: attn-translate --attn-to-ptx --tensor-cores --chip=sm_80 %t/f16nc.mlir -o %t/f16nc_80.ptx
// RUN: %ptxas -v -arch=sm_80 %t/f16nc_80.ptx -o %t/f16nc_80.cubin 2>&1 | FileCheck %s --check-prefix=PTXAS
// RUN: attn-translate --attn-to-ptx --tensor-cores --chip=sm_90a --kv-splits=1 %t/f16nc.mlir -o %t/f16nc1_90.ptx
// RUN: FileCheck %s --check-prefix=META16 < %t/f16nc1_90.ptx.json
// RUN: %ptxas -v -arch=sm_90a %t/f16nc1_90.ptx -o %t/f16nc1_90.cubin 2>&1 | FileCheck %s --check-prefix=PTXAS
// RUN: sed -e 's/, %m: tensor<1x1x200x300xi1>//' -e 's/ mask(%m : tensor<1x1x200x300xi1>) causal//' -e 's/2x8x200x256/2x8x1x256/g' -e 's/2x8x200xf32/2x8x1xf32/g' %t/bf16.mlir > %t/bf16dec.mlir
// RUN: attn-translate --attn-to-ptx --tensor-cores --chip=sm_90a %t/bf16dec.mlir -o %t/bf16dec_90.ptx
// RUN: FileCheck %s --check-prefix=DECODE < %t/bf16dec_90.ptx.json
// RUN: %ptxas -v -arch=sm_90a %t/bf16dec_90.ptx -o %t/bf16dec_90.cubin 2>&1 | FileCheck %s --check-prefix=PTXAS
// RUN: attn-translate --attn-to-ptx --tensor-cores --chip=sm_80 %t/bf16dec.mlir -o %t/bf16dec_80.ptx
// RUN: %ptxas -v -arch=sm_80 %t/bf16dec_80.ptx -o %t/bf16dec_80.cubin 2>&1 | FileCheck %s --check-prefix=PTXAS

// CHECK: .maxntid 128, 1, 1
// CHECK: ldmatrix.sync.aligned.m8n8.x4.shared.b16
// CHECK: mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32
// BF16: mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32
// META: "kv_splits": {"block_q": 64, "block_kv": 16, "max": 65535}
// META: "grid": [{"of": "Sq", "ceildiv": 64, "times": 1}
// META: "block": [128, 1, 1]
// META: "shared_bytes": 65536
// META32: "kv_splits": {"block_q": 64, "block_kv": 32, "max": 65535}
// META32: "shared_bytes": 98304
// DECODE: "kv_splits": {"block_q": 32, "block_kv": 16, "max": 65535}
// DECODE: "block": [64, 1, 1]
// META16-NOT: "kv_splits"
// META16: "shared_bytes": 65536

// PTXAS-NOT: {{[1-9][0-9]*}} bytes spill
// PTXAS: 0 bytes spill stores, 0 bytes spill loads
// PTXAS-NOT: {{[1-9][0-9]*}} bytes spill

func.func @attention(%q: tensor<2x8x200x256xELT>, %k: tensor<2x2x300x256xELT>,
                     %v: tensor<2x2x300x256xELT>, %m: tensor<1x1x200x300xi1>)
    -> (tensor<2x8x200x256xELT>, tensor<2x8x200xf32>) {
  %out, %lse = attn.sdpa %q, %k, %v mask(%m : tensor<1x1x200x300xi1>) causal
      : tensor<2x8x200x256xELT>, tensor<2x2x300x256xELT>, tensor<2x2x300x256xELT>
      -> tensor<2x8x200x256xELT>, tensor<2x8x200xf32>
  return %out, %lse : tensor<2x8x200x256xELT>, tensor<2x8x200xf32>
}
