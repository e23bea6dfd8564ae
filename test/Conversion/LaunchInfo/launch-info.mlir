// attn-launch-info: each launch description a target recorded on the host
// function moves onto the gpu.launch_func ops of its kernel; the function
// keeps none.
// RUN: attn-opt %s -split-input-file -attn-launch-info -verify-diagnostics | FileCheck %s

// CHECK-LABEL: func.func @f
// CHECK-NOT: attn.launches
// CHECK: gpu.launch_func @f_kernels::@f_split_kv {{.*}} {attn.launch = {block_kv = 64 : i64, block_q = 64 : i64, heads = "Hq", kind = "attention", rows = "Sq", splits, when = "split"}}
// CHECK: gpu.launch_func @f_kernels::@f_split_kv_merge {{.*}} {attn.launch = {block_q = 4 : i64, heads = "Hq", kind = "merge", rows = "Sq", when = "split"}}
// a kernel without a description (the generic target's) is left alone
// CHECK: gpu.launch_func @f_kernels::@other
// CHECK-NOT: attn.launch
// CHECK: return
module attributes {gpu.container_module} {
  gpu.module @f_kernels {
    gpu.func @f_split_kv() kernel { gpu.return }
    gpu.func @f_split_kv_merge() kernel { gpu.return }
    gpu.func @other() kernel { gpu.return }
  }
  func.func @f() attributes {attn.launches = {"f_kernels::f_split_kv" = {block_kv = 64 : i64, block_q = 64 : i64, heads = "Hq", kind = "attention", rows = "Sq", splits, when = "split"}, "f_kernels::f_split_kv_merge" = {block_q = 4 : i64, heads = "Hq", kind = "merge", rows = "Sq", when = "split"}}} {
    %c1 = arith.constant 1 : index
    gpu.launch_func @f_kernels::@f_split_kv blocks in (%c1, %c1, %c1) threads in (%c1, %c1, %c1)
    gpu.launch_func @f_kernels::@f_split_kv_merge blocks in (%c1, %c1, %c1) threads in (%c1, %c1, %c1)
    gpu.launch_func @f_kernels::@other blocks in (%c1, %c1, %c1) threads in (%c1, %c1, %c1)
    return
  }
}

// -----

// Before outlining there is no gpu.launch_func to carry it: an error, not
// metadata silently lost.
module attributes {gpu.container_module} {
  // expected-error @+1 {{attn-launch-info: no gpu.launch_func of kernel "g_kernels::g" (run it after gpu-kernel-outlining)}}
  func.func @g() attributes {attn.launches = {"g_kernels::g" = {block_q = 64 : i64, kind = "attention", rows = "Sq", heads = "Hq", when = "always"}}} {
    return
  }
}
