// RUN: attn-opt %s --attn-to-nvvm-pipeline | FileCheck %s
// RUN: attn-opt %s --attn-to-nvvm-pipeline="chip=sm_80 block-q=128" | FileCheck %s --check-prefix=SM80

// The JIT's entry form goes down to one launch of an outlined kernel over
// the caller's memrefs, and a gpu.binary holding its PTX (the runtime
// launches it from the artifact's metadata; the host side stays as is).
// CHECK: module attributes {gpu.container_module}
// CHECK-LABEL: func.func @attn_kernel
// CHECK-SAME: (%[[Q:[a-z0-9]+]]: memref<2x4x128x64xf16, {{.*}}>, %[[K:[a-z0-9]+]]: memref<2x4x96x64xf16, {{.*}}>, %[[V:[a-z0-9]+]]: memref<2x4x96x64xf16, {{.*}}>, %[[OUT:[a-z0-9]+]]: memref<2x4x128x64xf16, {{.*}}>)
// the grid is (ceildiv(128, 64), Hq = 4, B = 2) with 64 threads; the only
// kernel arguments are the four memrefs (constants are sunk into the kernel)
// CHECK-DAG: %[[C2:.+]] = arith.constant 2 : index
// CHECK-DAG: %[[C4:.+]] = arith.constant 4 : index
// CHECK-DAG: %[[C64:.+]] = arith.constant 64 : index
// CHECK: gpu.launch_func @[[MOD:[a-z_]+]]::@[[KERNEL:[a-z_]+]] blocks in (%[[C2]], %[[C4]], %[[C2]]) threads in (%[[C64]], %{{.+}}, %{{.+}}) args(%[[Q]] : {{.*}}, %[[K]] : {{.*}}, %[[V]] : {{.*}}, %[[OUT]] : {{.*}})
// CHECK-NEXT: return
// the binary: PTX 8.0 for sm_90a, libdevice linked for exp2/log2
// CHECK: gpu.binary @[[MOD]] [#gpu.object<#nvvm.target<O = 3, chip = "sm_90a", features = "+ptx80", link = ["{{.*}}libdevice.10.bc"]>
// CHECK-SAME: assembly = "{{.*}}.version 8.0{{.*}}.target sm_90a{{.*}}.visible .entry [[KERNEL]](
// CHECK-NOT: gpu.module

// SM80: threads in (%{{.+}}, %{{.+}}, %{{.+}})
// SM80: chip = "sm_80"
// SM80-SAME: .target sm_80

func.func @attn_kernel(%q: memref<2x4x128x64xf16, strided<[?, ?, ?, 1], offset: ?>>,
                       %k: memref<2x4x96x64xf16, strided<[?, ?, ?, 1], offset: ?>>,
                       %v: memref<2x4x96x64xf16, strided<[?, ?, ?, 1], offset: ?>>,
                       %out: memref<2x4x128x64xf16, strided<[?, ?, ?, 1], offset: ?>>) {
  %qt = bufferization.to_tensor %q restrict : memref<2x4x128x64xf16, strided<[?, ?, ?, 1], offset: ?>> to tensor<2x4x128x64xf16>
  %kt = bufferization.to_tensor %k restrict : memref<2x4x96x64xf16, strided<[?, ?, ?, 1], offset: ?>> to tensor<2x4x96x64xf16>
  %vt = bufferization.to_tensor %v restrict : memref<2x4x96x64xf16, strided<[?, ?, ?, 1], offset: ?>> to tensor<2x4x96x64xf16>
  %o = attn.sdpa %qt, %kt, %vt causal
      : tensor<2x4x128x64xf16>, tensor<2x4x96x64xf16>, tensor<2x4x96x64xf16> -> tensor<2x4x128x64xf16>
  bufferization.materialize_in_destination %o in restrict writable %out
      : (tensor<2x4x128x64xf16>, memref<2x4x128x64xf16, strided<[?, ?, ?, 1], offset: ?>>) -> ()
  return
}
