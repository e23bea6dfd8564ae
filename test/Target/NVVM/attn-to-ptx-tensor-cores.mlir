// The mma.sync kernel (the default where the spec allows it; --tensor-cores
// says so explicitly), D = 128 f16: PTX for sm_90a and
// sm_80 with cp.async, ldmatrix and mma.sync, assembled by ptxas without
// spills, and metadata for its geometry (4 warps per 64 query rows, the
// K/V ring in dynamic shared memory, 16-byte aligned rows).
// REQUIRES: ptxas
// RUN: rm -rf %t && mkdir -p %t
// RUN: attn-translate --attn-to-ptx --chip=sm_90a %s -o %t/k90.ptx
// RUN: FileCheck %s --check-prefixes=CHECK,SPLIT < %t/k90.ptx
// RUN: FileCheck %s --check-prefix=META < %t/k90.ptx.json
// RUN: %ptxas -v -arch=sm_90a %t/k90.ptx -o %t/k90.cubin 2>&1 | FileCheck %s --check-prefix=PTXAS
// RUN: attn-translate --attn-to-ptx --tensor-cores --chip=sm_80 --kv-splits=1 %s -o %t/k80.ptx
// RUN: FileCheck %s --check-prefixes=CHECK,ONE < %t/k80.ptx
// RUN: %ptxas -v -arch=sm_80 %t/k80.ptx -o %t/k80.cubin 2>&1 | FileCheck %s --check-prefix=PTXAS

// CHECK: .extern .shared .align 16 .b8 __attn_tc_dynamic_smem[];
// split-KV by default: the unsplit kernel (what a launch with one chunk
// runs) and the split pair, in one module; one kernel with --kv-splits=1
// SPLIT-DAG: .visible .entry attn_kernel(
// SPLIT-DAG: .visible .entry attn_kernel_split_kv_merge(
// SPLIT-DAG: .visible .entry attn_kernel_split_kv(
// ONE: .visible .entry attn_kernel(
// ONE-NOT: .entry
// K/V tiles (and Q) reach shared memory by cp.async, 16 bytes at a time
// with a source size (0 zero-fills rows past the end), in commit groups
// CHECK-DAG: cp.async.cg.shared.global [{{.*}}], [{{.*}}], 16, %r{{[0-9]+}};
// CHECK-DAG: cp.async.commit_group
// CHECK-DAG: cp.async.wait_group 1;
// CHECK-DAG: cp.async.wait_group 0;
// CHECK-DAG: ldmatrix.sync.aligned.m8n8.x4.shared.b16
// CHECK-DAG: ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16
// CHECK-DAG: mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32
// CHECK-DAG: shfl.sync.bfly.b32 {{.*}}, 1, 31, -1;
// CHECK-DAG: shfl.sync.bfly.b32 {{.*}}, 2, 31, -1;
// CHECK-DAG: bar.sync 0

// META: "align_bytes": 16
// META: "kv_splits": {"block_q": 64, "block_kv": 64, "max": 65535}
// META: {"name": "partial_out", "shape": ["B", "Hq", "splits", "Sq", 128], "element_bytes": 4}
// META: "entry": "attn_kernel",
// META-NEXT: "when": "unsplit",
// META-NEXT: "block_kv": 64,
// META-NEXT: "grid": [{"of": "Sq", "ceildiv": 64, "times": 1}, {"of": "Hq", "ceildiv": 1, "times": 1}, {"of": "B", "ceildiv": 1, "times": 1}]
// META-NEXT: "block": [128, 1, 1]
// two stages of K and V, 64 x 128 f16 each
// META-NEXT: "shared_bytes": 65536
// the unsplit kernel writes out and lse itself
// META-DAG: {"field": "data", "tensor": "out", "type": "ptr"}
// META-DAG: {"field": "data", "tensor": "lse", "type": "ptr"}
// META: "entry": "attn_kernel_split_kv",
// META-NEXT: "when": "split",
// META-NEXT: "block_kv": 64,
// META-NEXT: "grid": [{"of": "Sq", "ceildiv": 64, "times": 1}, {"of": "Hq", "ceildiv": 1, "times": "splits"}, {"of": "B", "ceildiv": 1, "times": 1}]
// META-NEXT: "block": [128, 1, 1]
// META-NEXT: "shared_bytes": 65536
// the partial kernel writes the workspaces only
// META-NOT: "tensor": "out"
// META-NOT: "tensor": "lse"
// META: {"field": "data", "tensor": "partial_out", "type": "ptr"}
// META-NOT: "tensor": "out"
// META-NOT: "tensor": "lse"
// META: "entry": "attn_kernel_split_kv_merge",
// the merge writes out and lse: a row per workgroup
// META-NEXT: "when": "split",
// META-NEXT: "grid": [{"of": "Sq", "ceildiv": 1, "times": 1}
// META-DAG: {"field": "data", "tensor": "out", "type": "ptr"}
// META-DAG: {"field": "data", "tensor": "lse", "type": "ptr"}

// Every kernel of the module (unsplit, partial and merge):
// PTXAS-NOT: {{[1-9][0-9]*}} bytes spill
// PTXAS: 0 bytes spill stores, 0 bytes spill loads
// PTXAS-NOT: {{[1-9][0-9]*}} bytes spill

func.func @attention(%q: tensor<2x8x200x128xf16>, %k: tensor<2x2x300x128xf16>,
                     %v: tensor<2x2x300x128xf16>)
    -> (tensor<2x8x200x128xf16>, tensor<2x8x200xf32>) {
  %out, %lse = attn.sdpa %q, %k, %v causal
      : tensor<2x8x200x128xf16>, tensor<2x2x300x128xf16>, tensor<2x2x300x128xf16>
      -> tensor<2x8x200x128xf16>, tensor<2x8x200xf32>
  return %out, %lse : tensor<2x8x200x128xf16>, tensor<2x8x200xf32>
}
