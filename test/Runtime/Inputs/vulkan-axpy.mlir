// A tiny SPIR-V compute kernel for the vulkan runtime's tests:
// out[i] = 2 * a[i] + b[i] for i < 64, one invocation per workgroup.
spirv.module Logical GLSL450 requires #spirv.vce<v1.0, [Shader], [SPV_KHR_storage_buffer_storage_class]> {
  spirv.GlobalVariable @a bind(0, 0) : !spirv.ptr<!spirv.struct<(!spirv.array<64 x f32, stride=4> [0])>, StorageBuffer>
  spirv.GlobalVariable @b bind(0, 1) : !spirv.ptr<!spirv.struct<(!spirv.array<64 x f32, stride=4> [0])>, StorageBuffer>
  spirv.GlobalVariable @out bind(0, 2) : !spirv.ptr<!spirv.struct<(!spirv.array<64 x f32, stride=4> [0])>, StorageBuffer>
  spirv.GlobalVariable @wg built_in("WorkgroupId") : !spirv.ptr<vector<3xi32>, Input>
  spirv.func @axpy() "None" {
    %c0 = spirv.Constant 0 : i32
    %two = spirv.Constant 2.0 : f32
    %wgp = spirv.mlir.addressof @wg : !spirv.ptr<vector<3xi32>, Input>
    %wgv = spirv.Load "Input" %wgp : vector<3xi32>
    %x = spirv.CompositeExtract %wgv[0 : i32] : vector<3xi32>
    %y = spirv.CompositeExtract %wgv[1 : i32] : vector<3xi32>
    %c8 = spirv.Constant 8 : i32
    %row = spirv.IMul %y, %c8 : i32
    %i = spirv.IAdd %row, %x : i32
    %ap = spirv.mlir.addressof @a : !spirv.ptr<!spirv.struct<(!spirv.array<64 x f32, stride=4> [0])>, StorageBuffer>
    %bp = spirv.mlir.addressof @b : !spirv.ptr<!spirv.struct<(!spirv.array<64 x f32, stride=4> [0])>, StorageBuffer>
    %op = spirv.mlir.addressof @out : !spirv.ptr<!spirv.struct<(!spirv.array<64 x f32, stride=4> [0])>, StorageBuffer>
    %ae = spirv.AccessChain %ap[%c0, %i] : !spirv.ptr<!spirv.struct<(!spirv.array<64 x f32, stride=4> [0])>, StorageBuffer>, i32, i32 -> !spirv.ptr<f32, StorageBuffer>
    %be = spirv.AccessChain %bp[%c0, %i] : !spirv.ptr<!spirv.struct<(!spirv.array<64 x f32, stride=4> [0])>, StorageBuffer>, i32, i32 -> !spirv.ptr<f32, StorageBuffer>
    %oe = spirv.AccessChain %op[%c0, %i] : !spirv.ptr<!spirv.struct<(!spirv.array<64 x f32, stride=4> [0])>, StorageBuffer>, i32, i32 -> !spirv.ptr<f32, StorageBuffer>
    %av = spirv.Load "StorageBuffer" %ae : f32
    %bv = spirv.Load "StorageBuffer" %be : f32
    %a2 = spirv.FMul %av, %two : f32
    %r = spirv.FAdd %a2, %bv : f32
    spirv.Store "StorageBuffer" %oe, %r : f32
    spirv.Return
  }
  spirv.EntryPoint "GLCompute" @axpy, @wg
  spirv.ExecutionMode @axpy "LocalSize", 1, 1, 1
}
