// RUN: attn-opt %s -attn-spirv-dont-unroll | FileCheck %s

// The last step of attn-to-spirv-pipeline's portable variant: every
// structured loop (nested ones too, whatever control they had) becomes
// DontUnroll, so a driver does not unroll the constant-trip-count key and
// element loops completely (lavapipe took minutes, or longer, to compile
// such kernels); nothing else changes.

// CHECK-LABEL: spirv.module Logical GLSL450
// CHECK: spirv.func @loops
// CHECK: spirv.mlir.loop control(DontUnroll) {
// CHECK: spirv.mlir.loop control(DontUnroll) {
// CHECK: spirv.IAdd
// CHECK-NOT: control(Unroll)
spirv.module Logical GLSL450 requires #spirv.vce<v1.3, [Shader], []> {
  spirv.func @loops(%n: i32) -> () "None" {
    %zero = spirv.Constant 0 : i32
    %one = spirv.Constant 1 : i32
    %i = spirv.Variable : !spirv.ptr<i32, Function>
    spirv.mlir.loop control(Unroll) {
      spirv.Branch ^header
    ^header:
      %iv = spirv.Load "Function" %i : i32
      %cmp = spirv.SLessThan %iv, %n : i32
      spirv.BranchConditional %cmp, ^body, ^merge
    ^body:
      spirv.mlir.loop {
        spirv.Branch ^h2
      ^h2:
        spirv.BranchConditional %cmp, ^b2, ^m2
      ^b2:
        spirv.Branch ^h2
      ^m2:
        spirv.mlir.merge
      }
      %next = spirv.IAdd %iv, %one : i32
      spirv.Store "Function" %i, %next : i32
      spirv.Branch ^header
    ^merge:
      spirv.mlir.merge
    }
    spirv.Return
  }
}
