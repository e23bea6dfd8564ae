// The mma.sync kernel at D = 128 without causal, a mask or dropout (f16
// and bf16, with lse, GQA): each of 4 warps takes two m16 row tiles (128
// query rows per workgroup) over 32-key blocks, for sm_90a and any key
// length: 3 stages x 32 x (128 + 128) x 2 bytes = 48 KB (2 with causal),
// plus Q (128 x 128 x 2 = 32 KB) in its own space, read from shared
// memory per block; every block but the last is copied without row checks. sm_80
// (where ptxas spilled 4 bytes with two tiles) keeps 8 warps of one row
// tile over 64-key blocks, as sm_90a does with a mask or dropout (checked
// here by explicit options). None spills, split-KV or not.
// REQUIRES: ptxas
// RUN: rm -rf %t && mkdir -p %t
// RUN: sed -e s/ELT/f16/g -e 's/x200x/x?x/g' -e 's/x300x/x?x/g' -e 's/2x8x200xf32/2x8x?xf32/g' %s > %t/f16.mlir
// RUN: sed -e s/ELT/bf16/g -e 's/x300x/x320x/g' %s > %t/bf16.mlir
// RUN: sed -e s/ELT/f16/g %s > %t/f16s.mlir
// RUN: attn-translate --attn-to-ptx --tensor-cores --chip=sm_90a %t/f16.mlir -o %t/f16_90.ptx
// RUN: FileCheck %s --check-prefix=W4 < %t/f16_90.ptx
// RUN: FileCheck %s --check-prefix=ALT < %t/f16_90.ptx
// RUN: FileCheck %s --check-prefix=META90 < %t/f16_90.ptx.json
// RUN: FileCheck %s --check-prefix=ALTMETA < %t/f16_90.ptx.json
// RUN: %ptxas -v -arch=sm_90a %t/f16_90.ptx -o %t/f16_90.cubin 2>&1 | FileCheck %s --check-prefix=PTXAS
// RUN: attn-translate --attn-to-ptx --tensor-cores --chip=sm_90a --kv-splits=1 %t/f16.mlir -o %t/f16_90one.ptx
// RUN: %ptxas -v -arch=sm_90a %t/f16_90one.ptx -o %t/f16_90one.cubin 2>&1 | FileCheck %s --check-prefix=PTXAS
// RUN: attn-translate --attn-to-ptx --tensor-cores --chip=sm_90a --kv-splits=1 %t/bf16.mlir -o %t/bf16_90.ptx
// RUN: FileCheck %s --check-prefix=W4 < %t/bf16_90.ptx
// RUN: %ptxas -v -arch=sm_90a %t/bf16_90.ptx -o %t/bf16_90.cubin 2>&1 | FileCheck %s --check-prefix=PTXAS
// RUN: attn-translate --attn-to-ptx --tensor-cores --chip=sm_90a --kv-splits=1 %t/f16s.mlir -o %t/f16s_90.ptx
// RUN: FileCheck %s --check-prefix=W4 < %t/f16s_90.ptx
// RUN: %ptxas -v -arch=sm_90a %t/f16s_90.ptx -o %t/f16s_90.cubin 2>&1 | FileCheck %s --check-prefix=PTXAS
// RUN: attn-translate --attn-to-ptx --tensor-cores --chip=sm_80 %t/f16.mlir -o %t/f16_80.ptx
// RUN: FileCheck %s --check-prefix=W8 < %t/f16_80.ptx
// RUN: FileCheck %s --check-prefix=META80 < %t/f16_80.ptx.json
// RUN: %ptxas -v -arch=sm_80 %t/f16_80.ptx -o %t/f16_80.cubin 2>&1 | FileCheck %s --check-prefix=PTXAS
// RUN: attn-translate --attn-to-ptx --tensor-cores --chip=sm_80 --kv-splits=1 %t/bf16.mlir -o %t/bf16_80.ptx
// RUN: %ptxas -v -arch=sm_80 %t/bf16_80.ptx -o %t/bf16_80.cubin 2>&1 | FileCheck %s --check-prefix=PTXAS
// Causal with a dynamic key length takes the two-tile geometry too.
// RUN: sed -e s/ELT/bf16/g -e 's/x200x/x?x/g' -e 's/x300x/x?x/g' -e 's/2x8x200xf32/2x8x?xf32/g' -e 's/%%v$/%%v causal/' %s > %t/bf16c.mlir
// RUN: FileCheck %s --check-prefix=CAUSAL < %t/bf16c.mlir
// RUN: attn-translate --attn-to-ptx --tensor-cores --chip=sm_90a %t/bf16c.mlir -o %t/bf16c_90.ptx
// RUN: FileCheck %s --check-prefix=W4 < %t/bf16c_90.ptx
// RUN: %ptxas -v -arch=sm_90a %t/bf16c_90.ptx -o %t/bf16c_90.cubin 2>&1 | FileCheck %s --check-prefix=PTXAS
// RUN: attn-translate --attn-to-ptx --tensor-cores --chip=sm_90a --kv-splits=1 --warps=8 --row-tiles=1 --block-kv=64 %t/f16s.mlir -o %t/f16s_90w8.ptx
// RUN: FileCheck %s --check-prefix=W8 < %t/f16s_90w8.ptx
// RUN: %ptxas -v -arch=sm_90a %t/f16s_90w8.ptx -o %t/f16s_90w8.cubin 2>&1 | FileCheck %s --check-prefix=PTXAS

// W4: .visible .entry attn_kernel(
// W4: .maxntid 128, 1, 1
// W4-NEXT: .maxnreg 255
// W4: vote.sync.any.pred
// A dynamic query length: alternatives chosen at launch from Sq, each an
// unsplit kernel and a split pair in the one module (the Sq = 1 decode
// kernel packing a GQA group's heads into 2 warps, the per-head 2-warp
// kernel for Sq <= 16, the 128-row kernel above), none of them spilling
// (PTXAS below covers every kernel of the module).
// ALT-DAG: .visible .entry attn_kernel_sq1(
// ALT-DAG: .visible .entry attn_kernel_sq1_split_kv(
// ALT-DAG: .visible .entry attn_kernel_sq1_split_kv_merge(
// ALT-DAG: .visible .entry attn_kernel_sq2to16(
// ALT-DAG: .visible .entry attn_kernel_sq2to16_split_kv(
// ALT-DAG: .visible .entry attn_kernel_sq2to16_split_kv_merge(
// ALT-DAG: .visible .entry attn_kernel_split_kv(
// ALT-DAG: .visible .entry attn_kernel_split_kv_merge(
// ALTMETA: "entry": "attn_kernel_sq1",
// ALTMETA-NEXT: "when": "sq == 1 && unsplit",
// ALTMETA-NEXT: "block_kv": 64,
// ALTMETA-NEXT: "grid": [{"of": "Group", "ceildiv": 32, "times": 1}, {"of": "Hkv", "ceildiv": 1, "times": 1}, {"of": "B", "ceildiv": 1, "times": 1}],
// ALTMETA-NEXT: "block": [64, 1, 1],
// ALTMETA: "entry": "attn_kernel_sq1_split_kv",
// ALTMETA-NEXT: "when": "sq == 1 && split",
// ALTMETA: {"field": "data", "tensor": "partial_out_packed", "type": "ptr"}
// ALTMETA: "entry": "attn_kernel_sq1_split_kv_merge",
// ALTMETA-NEXT: "when": "sq == 1 && split",
// ALTMETA: "entry": "attn_kernel_sq2to16",
// ALTMETA-NEXT: "when": "sq >= 2 && sq <= 16 && unsplit",
// ALTMETA-NEXT: "block_kv": 64,
// ALTMETA-NEXT: "grid": [{"of": "Sq", "ceildiv": 32, "times": 1}, {"of": "Hq", "ceildiv": 1, "times": 1}, {"of": "B", "ceildiv": 1, "times": 1}],
// ALTMETA-NEXT: "block": [64, 1, 1],
// ALTMETA: "entry": "attn_kernel_sq2to16_split_kv",
// ALTMETA-NEXT: "when": "sq >= 2 && sq <= 16 && split",
// ALTMETA: "entry": "attn_kernel_sq2to16_split_kv_merge",
// ALTMETA-NEXT: "when": "sq >= 2 && sq <= 16 && split",
// ALTMETA: "entry": "attn_kernel",
// ALTMETA-NEXT: "when": "sq >= 17 && unsplit",
// ALTMETA-NEXT: "block_kv": 32,
// ALTMETA: "entry": "attn_kernel_split_kv",
// ALTMETA-NEXT: "when": "sq >= 17 && split",
// ALTMETA: "entry": "attn_kernel_split_kv_merge",
// ALTMETA-NEXT: "when": "sq >= 17 && split",
// W8: .maxntid 256, 1, 1
// CAUSAL: {{^ +}}%out, %lse = attn.sdpa %q, %k, %v causal
// META90: "kv_splits": {"block_q": 128, "block_kv": 32, "max": 65535}
// META90: "grid": [{"of": "Sq", "ceildiv": 128, "times": 1}
// META90: "block": [128, 1, 1]
// META90: "shared_bytes": 81920
// META80: "kv_splits": {"block_q": 128, "block_kv": 64, "max": 65535}
// META80: "block": [256, 1, 1]
// META80: "shared_bytes": 65536

// PTXAS-NOT: {{[1-9][0-9]*}} bytes spill
// PTXAS: 0 bytes spill stores, 0 bytes spill loads
// PTXAS-NOT: {{[1-9][0-9]*}} bytes spill

func.func @attention(%q: tensor<2x8x200x128xELT>, %k: tensor<2x2x300x128xELT>,
                     %v: tensor<2x2x300x128xELT>)
    -> (tensor<2x8x200x128xELT>, tensor<2x8x200xf32>) {
  %out, %lse = attn.sdpa %q, %k, %v
      : tensor<2x8x200x128xELT>, tensor<2x2x300x128xELT>, tensor<2x2x300x128xELT>
      -> tensor<2x8x200x128xELT>, tensor<2x8x200xf32>
  return %out, %lse : tensor<2x8x200x128xELT>, tensor<2x8x200xf32>
}
