// attn-translate --attn-to-spirv on attn.sdpa over a function's tensors
// (the README's examples/sdpa.mlir form, not the destination-passing form
// the pipeline takes): the kernel the runtime builds for the op's spec
// (static shapes, dense memrefs) is lowered instead. Causal GQA 8:2, f16,
// with lse: 5 buffers, grid (512 / 64, 8, 2). With --subgroup-size=8 the
// subgroup kernel, its required size in the metadata. Both are valid
// Vulkan 1.1 SPIR-V where spirv-val exists (spirv-val.mlir). With a
// dynamic batch the portable kernel reads the sizes at launch: a size
// buffer the host fills (binding 5, one slot per dynamic size of the
// kernel's arguments), the grid's z from the batch; so does the coopmat
// kernel (the same tiled form), its grid (512 / 16, 8, batch).
// RUN: rm -rf %t && mkdir -p %t
// RUN: attn-translate --attn-to-spirv --variant=portable %s -o %t/k.spv
// RUN: FileCheck %s --input-file=%t/k.spv.json
// RUN: od -A n -t x4 -N 4 %t/k.spv | FileCheck %s --check-prefix=MAGIC
// RUN: attn-translate --attn-to-spirv --variant=portable --subgroup-size=8 %s -o %t/s.spv
// RUN: FileCheck %s --input-file=%t/s.spv.json --check-prefix=SUBGROUP
// RUN: sed -e 's/2x8x512x64/?x8x512x64/g' -e 's/2x2x512x64/?x2x512x64/g' -e 's/2x8x512xf32/?x8x512xf32/g' %s > %t/dyn.mlir
// RUN: attn-translate --attn-to-spirv %t/dyn.mlir -o %t/dyn.spv
// RUN: FileCheck %s --input-file=%t/dyn.spv.json --check-prefix=DYN
// RUN: attn-translate --attn-to-spirv --variant=coopmat %t/dyn.mlir -o %t/dync.spv
// RUN: FileCheck %s --input-file=%t/dync.spv.json --check-prefix=DYNCOOP
// A failure is the diagnostics alone, not the module after the passes
// that ran (hundreds of lines): the tiled variant takes static sizes only.
// RUN: not attn-translate --attn-to-spirv --variant=tiled %t/dyn.mlir -o %t/t.spv 2> %t/tiled.err
// RUN: FileCheck %s --input-file=%t/tiled.err --check-prefix=SHORT
// RUN: test $(wc -l < %t/tiled.err) -le 3
// SHORT: error: attn-spirv-dynamic-shapes:
// SHORT: error: attn-to-spirv-pipeline failed
// SHORT-NOT: see current operation

// CHECK: "variant": "portable"
// CHECK: "workgroups": [8, 8, 2]
// CHECK: "workgroup_size": [64, 1, 1]
// CHECK: "host_args": 5
// CHECK: "needs_float16": true
// CHECK: "required_subgroup_size": 0
// MAGIC: 07230203
// SUBGROUP: "needs_subgroup_arithmetic": true
// SUBGROUP: "needs_subgroup_shuffle": true
// SUBGROUP: "required_subgroup_size": 8
// DYN: "max_dynamic_extent": 0,
// DYN: "exprs": [
// DYN-SAME: ["dim", 0, 0]
// DYN: "workspaces": [{"shape": [5], "element": "i32", "bytes": 20, "host_writes": [{"expr": {{[0-9]+}}}, {"expr": {{[0-9]+}}}, {"expr": {{[0-9]+}}}, {"expr": {{[0-9]+}}}, {"expr": {{[0-9]+}}}]}]
// DYN: "workgroups": [8, 8, {"expr": {{[0-9]+}}}]
// DYN: {"set": 0, "binding": 5, "workspace": 0}
// DYNCOOP: "variant": "coopmat",
// DYNCOOP: "workspaces": [{"shape": [5], "element": "i32", "bytes": 20, "host_writes": [{"expr": {{[0-9]+}}}, {"expr": {{[0-9]+}}}, {"expr": {{[0-9]+}}}, {"expr": {{[0-9]+}}}, {"expr": {{[0-9]+}}}]}]
// DYNCOOP: "workgroups": [32, 8, {"expr": {{[0-9]+}}}], "workgroup_size": [32, 1, 1]
// DYNCOOP: {"set": 0, "binding": 5, "workspace": 0}
// DYNCOOP: "needs_cooperative_matrix": true

func.func @attention(%q: tensor<2x8x512x64xf16>, %k: tensor<2x2x512x64xf16>,
                     %v: tensor<2x2x512x64xf16>)
    -> (tensor<2x8x512x64xf16>, tensor<2x8x512xf32>) {
  %out, %lse = attn.sdpa %q, %k, %v causal
      : tensor<2x8x512x64xf16>, tensor<2x2x512x64xf16>, tensor<2x2x512x64xf16>
      -> tensor<2x8x512x64xf16>, tensor<2x8x512xf32>
  return %out, %lse : tensor<2x8x512x64xf16>, tensor<2x8x512xf32>
}
