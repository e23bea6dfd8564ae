// RUN: attn-opt %s --split-input-file --verify-diagnostics --attn-spirv-entry-point-abi | FileCheck %s

// attn-spirv-entry-point-abi requires known_block_size on every outlined
// kernel (refused otherwise); it guarantees spirv.entry_point_abi with that
// workgroup size on each.

// The workgroup size of the launch the kernel was outlined from.
// CHECK-LABEL: gpu.func @kernel
// CHECK-SAME: spirv.entry_point_abi = #spirv.entry_point_abi<workgroup_size = [4, 2, 1]>
module attributes {gpu.container_module} {
  gpu.module @m {
    gpu.func @kernel() kernel attributes {known_block_size = array<i32: 4, 2, 1>} {
      gpu.return
    }
  }
}

// -----

module attributes {gpu.container_module} {
  gpu.module @m {
    // expected-error@+1 {{the kernel has no known_block_size}}
    gpu.func @unknown() kernel {
      gpu.return
    }
  }
}
