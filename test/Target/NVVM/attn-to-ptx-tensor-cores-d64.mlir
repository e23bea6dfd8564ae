// The mma.sync kernel for D = 64, causal (4 warps, 64 query rows per
// workgroup), f16 and bf16 (nvvm.mma.sync), with a bool mask broadcast over
// B and H: cp.async, ldmatrix and mma.sync in the PTX, no spills for sm_90a
// and sm_80, and the metadata for 128 threads and a 32 KB ring (2 stages x
// 64 keys x (64 + 64) x 2 bytes; Q, 64 x 64, aliases a stage).
// REQUIRES: ptxas
// RUN: rm -rf %t && mkdir -p %t
// RUN: sed s/ELT/f16/g %s > %t/f16.mlir
// RUN: sed s/ELT/bf16/g %s > %t/bf16.mlir
// RUN: attn-translate --attn-to-ptx --tensor-cores --chip=sm_90a %t/f16.mlir -o %t/f16_90.ptx
// RUN: FileCheck %s --check-prefixes=CHECK,F16 < %t/f16_90.ptx
// RUN: FileCheck %s --check-prefix=META < %t/f16_90.ptx.json
// RUN: %ptxas -v -arch=sm_90a %t/f16_90.ptx -o %t/f16_90.cubin 2>&1 | FileCheck %s --check-prefix=PTXAS
// RUN: attn-translate --attn-to-ptx --tensor-cores --chip=sm_80 %t/f16.mlir -o %t/f16_80.ptx
// RUN: %ptxas -v -arch=sm_80 %t/f16_80.ptx -o %t/f16_80.cubin 2>&1 | FileCheck %s --check-prefix=PTXAS
// RUN: attn-translate --attn-to-ptx --tensor-cores --chip=sm_90a %t/bf16.mlir -o %t/bf16_90.ptx
// RUN: FileCheck %s --check-prefixes=CHECK,BF16 < %t/bf16_90.ptx
// RUN: FileCheck %s --check-prefix=META < %t/bf16_90.ptx.json
// RUN: %ptxas -v -arch=sm_90a %t/bf16_90.ptx -o %t/bf16_90.cubin 2>&1 | FileCheck %s --check-prefix=PTXAS
// RUN: attn-translate --attn-to-ptx --tensor-cores --chip=sm_80 %t/bf16.mlir -o %t/bf16_80.ptx
// RUN: %ptxas -v -arch=sm_80 %t/bf16_80.ptx -o %t/bf16_80.cubin 2>&1 | FileCheck %s --check-prefix=PTXAS
// Not causal (by default also 4 warps at D = 64), and with --warps=8 (256
// threads), which ptxas would cap at 128 registers for two workgroups per
// SM and spill: attn-nvvm-max-registers gives both .maxnreg 255 (65536 /
// threads, at most 255; with the mask 4 warps keep that budget, its loads
// need more than 168). Without the mask the 4-warp kernel takes two m16
// row tiles per warp (128 rows, Q re-read from shared memory: 32 KB ring +
// 16 KB Q) and 255 registers; with --row-tiles=1 it asks for 168 (three
// workgroups per SM; ptxas would take 169 and fit only two). All assemble
// without spills for both chips and both types.
// RUN: sed 's/ causal$//' %t/f16.mlir > %t/f16nc.mlir
// RUN: sed 's/ causal$//' %t/bf16.mlir > %t/bf16nc.mlir
// RUN: attn-translate --attn-to-ptx --tensor-cores --chip=sm_90a %t/f16nc.mlir -o %t/f16nc_90.ptx
// RUN: FileCheck %s --check-prefix=NC4 < %t/f16nc_90.ptx
// RUN: sed -e 's/, %m: tensor<1x1x200x300xi1>//' -e 's/ mask(%m : tensor<1x1x200x300xi1>)//' %t/f16nc.mlir > %t/f16nm.mlir
// RUN: attn-translate --attn-to-ptx --tensor-cores --chip=sm_90a %t/f16nm.mlir -o %t/f16nm_90.ptx
// RUN: FileCheck %s --check-prefix=NM4 < %t/f16nm_90.ptx
// RUN: FileCheck %s --check-prefix=METANM < %t/f16nm_90.ptx.json
// RUN: attn-translate --attn-to-ptx --tensor-cores --row-tiles=1 --chip=sm_90a %t/f16nm.mlir -o %t/f16nm1_90.ptx
// RUN: FileCheck %s --check-prefix=NM1 < %t/f16nm1_90.ptx
// RUN: %ptxas -v -arch=sm_90a %t/f16nm1_90.ptx -o %t/f16nm1_90.cubin 2>&1 | FileCheck %s --check-prefix=PTXAS
// RUN: %ptxas -v -arch=sm_90a %t/f16nm_90.ptx -o %t/f16nm_90.cubin 2>&1 | FileCheck %s --check-prefix=PTXAS
// RUN: attn-translate --attn-to-ptx --tensor-cores --chip=sm_80 %t/f16nm.mlir -o %t/f16nm_80.ptx
// RUN: %ptxas -v -arch=sm_80 %t/f16nm_80.ptx -o %t/f16nm_80.cubin 2>&1 | FileCheck %s --check-prefix=PTXAS
// RUN: FileCheck %s --check-prefix=META < %t/f16nc_90.ptx.json
// RUN: %ptxas -v -arch=sm_90a %t/f16nc_90.ptx -o %t/f16nc_90.cubin 2>&1 | FileCheck %s --check-prefix=PTXAS
// RUN: attn-translate --attn-to-ptx --tensor-cores --chip=sm_80 %t/bf16nc.mlir -o %t/bf16nc_80.ptx
// RUN: %ptxas -v -arch=sm_80 %t/bf16nc_80.ptx -o %t/bf16nc_80.cubin 2>&1 | FileCheck %s --check-prefix=PTXAS
// RUN: attn-translate --attn-to-ptx --tensor-cores --warps=8 --chip=sm_90a %t/f16nc.mlir -o %t/f16w8_90.ptx
// RUN: FileCheck %s --check-prefix=NC8 < %t/f16w8_90.ptx
// RUN: FileCheck %s --check-prefix=META8 < %t/f16w8_90.ptx.json
// RUN: %ptxas -v -arch=sm_90a %t/f16w8_90.ptx -o %t/f16w8_90.cubin 2>&1 | FileCheck %s --check-prefix=PTXAS
// RUN: attn-translate --attn-to-ptx --tensor-cores --warps=8 --chip=sm_80 %t/f16nc.mlir -o %t/f16w8_80.ptx
// RUN: %ptxas -v -arch=sm_80 %t/f16w8_80.ptx -o %t/f16w8_80.cubin 2>&1 | FileCheck %s --check-prefix=PTXAS
// RUN: attn-translate --attn-to-ptx --tensor-cores --warps=8 --chip=sm_90a %t/bf16nc.mlir -o %t/bf16w8_90.ptx
// RUN: %ptxas -v -arch=sm_90a %t/bf16w8_90.ptx -o %t/bf16w8_90.cubin 2>&1 | FileCheck %s --check-prefix=PTXAS
// RUN: attn-translate --attn-to-ptx --tensor-cores --warps=8 --chip=sm_80 %t/bf16nc.mlir -o %t/bf16w8_80.ptx
// RUN: %ptxas -v -arch=sm_80 %t/bf16w8_80.ptx -o %t/bf16w8_80.cubin 2>&1 | FileCheck %s --check-prefix=PTXAS

// CHECK: .extern .shared .align 16 .b8 __attn_tc_dynamic_smem[];
// CHECK-DAG: cp.async.cg.shared.global
// CHECK-DAG: cp.async.commit_group
// CHECK-DAG: cp.async.wait_group
// CHECK-DAG: ldmatrix.sync.aligned.m8n8.x4.shared.b16
// CHECK-DAG: ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16
// F16-DAG: mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32
// BF16-DAG: mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32

// META: "align_bytes": 16
// META: "grid": [{"of": "Sq", "ceildiv": 64, "times": 1}
// META: "block": [128, 1, 1]
// META: "shared_bytes": 32768
// META: {"field": "data", "tensor": "mask", "type": "ptr"}

// Every kernel of the module (the split-KV pair: merge and partial):
// PTXAS-NOT: {{[1-9][0-9]*}} bytes spill
// PTXAS: 0 bytes spill stores, 0 bytes spill loads
// PTXAS-NOT: {{[1-9][0-9]*}} bytes spill

// NC4: .maxntid 128, 1, 1
// NC4-NEXT: .maxnreg 255
// NM4: .maxntid 128, 1, 1
// NM4-NEXT: .maxnreg 255
// METANM: "grid": [{"of": "Sq", "ceildiv": 128, "times": 1}
// METANM: "block": [128, 1, 1]
// METANM: "shared_bytes": 49152
// NM1: .maxntid 128, 1, 1
// NM1-NEXT: .maxnreg 168
// NC8: .maxntid 256, 1, 1
// NC8-NEXT: .maxnreg 255
// META8: "grid": [{"of": "Sq", "ceildiv": 128, "times": 1}
// META8: "block": [256, 1, 1]

func.func @attention(%q: tensor<2x8x200x64xELT>, %k: tensor<2x2x300x64xELT>,
                     %v: tensor<2x2x300x64xELT>, %m: tensor<1x1x200x300xi1>)
    -> tensor<2x8x200x64xELT> {
  %out = attn.sdpa %q, %k, %v mask(%m : tensor<1x1x200x300xi1>) causal
      : tensor<2x8x200x64xELT>, tensor<2x2x300x64xELT>, tensor<2x2x300x64xELT>
      -> tensor<2x8x200x64xELT>
  return %out : tensor<2x8x200x64xELT>
}
