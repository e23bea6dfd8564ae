// The experimental mma.sync kernel (--tensor-cores): PTX for sm_90a and
// sm_80 with tensor-core instructions, assembled by ptxas without spills,
// and metadata for its geometry (4 warps per 64 query rows).
// REQUIRES: ptxas
// RUN: rm -rf %t && mkdir -p %t
// RUN: attn-translate --attn-to-ptx --tensor-cores --chip=sm_90a %s -o %t/k90.ptx
// RUN: FileCheck %s < %t/k90.ptx
// RUN: FileCheck %s --check-prefix=META < %t/k90.json
// RUN: %ptxas -v -arch=sm_90a %t/k90.ptx -o %t/k90.cubin 2>&1 | FileCheck %s --check-prefix=PTXAS
// RUN: attn-translate --attn-to-ptx --tensor-cores --chip=sm_80 %s -o %t/k80.ptx
// RUN: FileCheck %s < %t/k80.ptx
// RUN: %ptxas -v -arch=sm_80 %t/k80.ptx -o %t/k80.cubin 2>&1 | FileCheck %s --check-prefix=PTXAS

// CHECK: .visible .entry attn_kernel_kernel(
// K and V tiles of 64 keys x 128, 16-byte aligned for ldmatrix
// CHECK: .shared .align 16 .b8 __attn_tc_k_tile_0[16384];
// CHECK: .shared .align 16 .b8 __attn_tc_v_tile_0[16384];
// CHECK-DAG: ldmatrix.sync.aligned.m8n8.x2.shared.b16
// CHECK-DAG: ldmatrix.sync.aligned.m8n8.x2.trans.shared.b16
// CHECK-DAG: mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32
// CHECK-DAG: shfl.sync.bfly.b32 {{.*}}, 1, 31, -1;
// CHECK-DAG: shfl.sync.bfly.b32 {{.*}}, 2, 31, -1;
// CHECK-DAG: bar.sync 0

// META: "grid": [{"of": "Sq", "ceildiv": 64, "times": 1}, {"of": "Hq", "ceildiv": 1, "times": 1}, {"of": "B", "ceildiv": 1, "times": 1}]
// META: "block": [128, 1, 1]
// META: "shared_bytes": 0
// META: {"field": "data", "tensor": "lse", "type": "ptr"}

// PTXAS: 0 bytes spill stores, 0 bytes spill loads

func.func @attention(%q: tensor<2x8x200x128xf16>, %k: tensor<2x2x300x128xf16>,
                     %v: tensor<2x2x300x128xf16>)
    -> (tensor<2x8x200x128xf16>, tensor<2x8x200xf32>) {
  %out, %lse = attn.sdpa %q, %k, %v causal
      : tensor<2x8x200x128xf16>, tensor<2x2x300x128xf16>, tensor<2x2x300x128xf16>
      -> tensor<2x8x200x128xf16>, tensor<2x8x200xf32>
  return %out, %lse : tensor<2x8x200x128xf16>, tensor<2x8x200xf32>
}
