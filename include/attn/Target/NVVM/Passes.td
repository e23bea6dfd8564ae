//===- Passes.td - attn passes of the NVVM target ----------*- tablegen -*-===//
#ifndef ATTN_TARGET_NVVM_PASSES_TD
#define ATTN_TARGET_NVVM_PASSES_TD

include "mlir/Pass/PassBase.td"

def NVVMMaxRegistersPass : Pass<"attn-nvvm-max-registers", "::mlir::ModuleOp"> {
  let summary = "Set nvvm.maxnreg on outlined kernels that use mma.sync";
  let description = [{
    ptxas sizes a kernel's registers for an occupancy target it derives from
    `.maxntid`: for the 256-thread D = 64 mma.sync kernels it aims at two
    workgroups per SM, caps them at 128 registers and spills, and
    `--maxrregcount` does not override that; a `.maxnreg` directive does.
    This step of `attn-to-nvvm-pipeline` runs after `gpu-kernel-outlining`
    (which does not carry `gpu.launch` attributes over) and gives every
    kernel that uses mma.sync the register budget it was designed for.

    Requires: outlined `gpu.func` kernels; `max-registers` in [0, 255] (any
    other value is an error on the module).
    Guarantees: every kernel containing `nvgpu.mma.sync` or `nvvm.mma.sync`
    carries `nvvm.maxnreg` (i32): `max-registers` when non-zero, else the
    budget in (0, 255] an op of the kernel records in
    `attn.nvvm_max_registers` (set by `convert-attn-tiles-to-nvgpu`, e.g. 168 for
    three 4-warp workgroups per SM; rounded down to a multiple of 8), else
    the most one workgroup of `known_block_size` threads can have: 65536 /
    threads (1024 threads when unknown), at most 255, rounded down to a
    multiple of 8. The `attn.nvvm_max_registers` attributes of such a
    kernel are removed. Other kernels and functions that are not kernels
    are left unchanged.

    ```mlir
    // before: 384 threads
    gpu.func @k(%a: vector<4x2xf16>, %b: vector<2x2xf16>, %c: vector<2x2xf32>)
        kernel attributes {known_block_size = array<i32: 384, 1, 1>} {
      %d = nvgpu.mma.sync (%a, %b, %c) {mmaShape = [16, 8, 16]} : ...
    // after: 65536 / 384 = 170, as a multiple of 8
    gpu.func @k(...) kernel attributes {known_block_size = array<i32: 384, 1, 1>,
                                        nvvm.maxnreg = 168 : i32} {
    ```
  }];
  let options = [
    Option<"maxRegisters", "max-registers", "int64_t", /*default=*/"0",
           "Registers per thread (0 = what one workgroup of the kernel's "
           "size can have)">
  ];
  let dependentDialects = ["::mlir::NVVM::NVVMDialect"];
}

#endif // ATTN_TARGET_NVVM_PASSES_TD
