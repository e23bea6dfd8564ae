// The portable variant's subgroup kernel through attn-to-spirv-pipeline
// (subgroup-size=N): a subgroup of N lanes per query row, the block max and
// the row sum as subgroup reductions, P by index shuffles; the target's
// subgroup size is N (gpu.shuffle lowers only at that width) and the module
// records it for the launch metadata. The case is Inputs/split-kv.mlir
// (causal, bool mask, lse, 64 rows, 256 keys, D = Dv = 16, f32).
// RUN: attn-opt %S/Inputs/split-kv.mlir --attn-to-spirv-pipeline=subgroup-size=8 | FileCheck %s
// RUN: attn-opt %S/Inputs/split-kv.mlir --attn-to-spirv-pipeline="subgroup-size=8 kv-splits=2" | FileCheck %s --check-prefix=SPLIT
// RUN: attn-opt %S/Inputs/split-kv.mlir --attn-to-spirv-pipeline="subgroup-size=32 block-q=2" | FileCheck %s --check-prefix=SG32
// Valid Vulkan 1.1 SPIR-V (unsplit, split, bf16), with its metadata.
// RUN: rm -rf %t && mkdir -p %t
// RUN: attn-translate --attn-to-spirv --subgroup-size=8 %S/Inputs/split-kv.mlir -o %t/sg.spv
// RUN: FileCheck %s --input-file=%t/sg.spv.json --check-prefix=META
// RUN: attn-translate --attn-to-spirv %S/Inputs/split-kv.mlir -o %t/rows.spv
// RUN: FileCheck %s --input-file=%t/rows.spv.json --check-prefix=ROWSMETA
// RUN: attn-translate --attn-to-spirv --subgroup-size=8 --kv-splits=2 %S/Inputs/split-kv.mlir -o %t/sgsplit.spv
// RUN: attn-translate --attn-to-spirv --subgroup-size=16 %S/Inputs/bf16.mlir -o %t/sgbf16.spv
// RUN: %if spirv-val %{ %spirv_val --target-env vulkan1.1 %t/sg.spv %}
// RUN: %if spirv-val %{ %spirv_val --target-env vulkan1.1 %t/sgsplit.spv %}
// RUN: %if spirv-val %{ %spirv_val --target-env vulkan1.1 %t/sgbf16.spv %}
// The per-row kernel (subgroup-size 0, the default) uses no subgroup
// operations; bad sizes and the tiled variant are refused.
// RUN: attn-opt %S/Inputs/split-kv.mlir --attn-to-spirv-pipeline | FileCheck %s --check-prefix=ROWS
// RUN: not attn-opt %S/Inputs/split-kv.mlir --attn-to-spirv-pipeline=subgroup-size=24 2>&1 | FileCheck %s --check-prefix=BADSIZE
// RUN: not attn-opt %S/Inputs/split-kv.mlir --attn-to-spirv-pipeline="variant=tiled subgroup-size=8" 2>&1 | FileCheck %s --check-prefix=TILED
// The loop budget counts the subgroup kernel's loops: per key block two
// tile loads (64 x 16 / 128 = 8 iterations each) and two loops over the
// lane's 64 / 8 = 8 keys, so far fewer than the per-row kernel's.
// RUN: not attn-opt %S/Inputs/split-kv.mlir --attn-to-spirv-pipeline="subgroup-size=8 max-loop-iterations=100" 2>&1 | FileCheck %s --check-prefix=BUDGET
// RUN: attn-opt %S/Inputs/split-kv.mlir --attn-to-spirv-pipeline="subgroup-size=8 max-loop-iterations=200" -o /dev/null
// RUN: not attn-opt %S/Inputs/split-kv.mlir --attn-to-spirv-pipeline="max-loop-iterations=200" 2>&1 | FileCheck %s --check-prefix=ROWSBUDGET

// 16 rows (the default for 8 lanes) x 8 lanes = 128 invocations; 64 rows in
// 4 workgroups per head.
// CHECK: module attributes {attn.spirv_subgroup_size = 8 : i32
// CHECK-LABEL: func.func @split_kv
// CHECK-DAG: %[[C1:.+]] = arith.constant 1 : index
// CHECK-DAG: %[[C2:.+]] = arith.constant 2 : index
// CHECK-DAG: %[[C4:.+]] = arith.constant 4 : index
// CHECK-DAG: %[[C128:.+]] = arith.constant 128 : index
// CHECK: gpu.launch_func @split_kv_kernels::@split_kv blocks in (%[[C4]], %[[C2]], %[[C1]]) threads in (%[[C128]], %[[C1]], %[[C1]])
// CHECK: spirv.module @__spv__split_kv_kernels Logical GLSL450 requires #spirv.vce<v1.3, [{{.*}}GroupNonUniformArithmetic, GroupNonUniformShuffle{{.*}}GroupNonUniform]
// CHECK-DAG: spirv.GlobalVariable @__builtin__SubgroupId__ built_in("SubgroupId")
// CHECK-DAG: spirv.GlobalVariable @__builtin__SubgroupLocalInvocationId__ built_in("SubgroupLocalInvocationId")
// Private per lane: q row (16), accumulator columns (16 / 8 = 2), the
// lane's 8 scores of a block of 64 plus one.
// CHECK-DAG: spirv.Variable : !spirv.ptr<!spirv.struct<(!spirv.array<16 x f32>)>, Function>
// CHECK-DAG: spirv.Variable : !spirv.ptr<!spirv.struct<(!spirv.array<2 x f32>)>, Function>
// CHECK-DAG: spirv.Variable : !spirv.ptr<!spirv.struct<(!spirv.array<9 x f32>)>, Function>
// CHECK: spirv.ControlBarrier <Workgroup>, <Workgroup>, <AcquireRelease|WorkgroupMemory>
// CHECK: spirv.GroupNonUniformFMax <Subgroup> <Reduce>
// CHECK-COUNT-8: spirv.GroupNonUniformShuffle <Subgroup>
// CHECK: spirv.GroupNonUniformFAdd <Subgroup> <Reduce>
// CHECK: spirv.ExecutionMode @split_kv "LocalSize", 128, 1, 1
// CHECK: gpu.module @split_kv_kernels [#spirv.target_env<{{.*}}resource_limits<subgroup_size = 8>

// Split in 2: the partial kernel is the subgroup kernel (grid y = head x
// chunk), the merge kernel (128 invocations, a multiple of any subgroup
// size up to 128) uses no subgroup operations.
// SPLIT: gpu.launch_func @split_kv_kernels::@split_kv_split_kv blocks in (%{{.+}}, %{{.+}}, %{{.+}}) threads in (%[[T:.+]], %{{.+}}, %{{.+}})
// SPLIT: gpu.launch_func @split_kv_kernels::@split_kv_split_kv_merge
// SPLIT: spirv.GroupNonUniformFMax
// SPLIT: spirv.GroupNonUniformShuffle
// SPLIT: spirv.ExecutionMode @split_kv_split_kv "LocalSize", 128, 1, 1
// SPLIT: spirv.ExecutionMode @split_kv_split_kv_merge "LocalSize", 128, 1, 1

// 32 lanes, 2 rows: 64 invocations, 32 workgroups per head; a lane's
// accumulator is one column (16 / 32 rounded up: lanes 16..31 compute a
// clamped column they never write), its scores 64 / 32 = 2 slots plus one;
// 32 shuffles per slot. (32 is the target's default subgroup size, which
// the target attribute does not print.)
// SG32-DAG: %[[C32:.+]] = arith.constant 32 : index
// SG32-DAG: %[[C64:.+]] = arith.constant 64 : index
// SG32: gpu.launch_func @split_kv_kernels::@split_kv blocks in (%[[C32]], %{{.+}}, %{{.+}}) threads in (%[[C64]],
// SG32: spirv.Variable : !spirv.ptr<!spirv.struct<(!spirv.array<3 x f32>)>, Function>
// SG32-NEXT: spirv.Variable : !spirv.ptr<!spirv.struct<(!spirv.array<1 x f32>)>, Function>
// SG32-NEXT: spirv.Variable : !spirv.ptr<!spirv.struct<(!spirv.array<16 x f32>)>, Function>
// SG32-COUNT-32: spirv.GroupNonUniformShuffle <Subgroup>
// SG32: spirv.ExecutionMode @split_kv "LocalSize", 64, 1, 1

// META: "variant": "portable",
// META: "workgroup_size": [128, 1, 1],
// META: "needs_subgroup_arithmetic": true,
// META-NEXT: "needs_subgroup_shuffle": true,
// META-NEXT: "required_subgroup_size": 8
// ROWSMETA: "workgroup_size": [64, 1, 1],
// ROWSMETA: "needs_subgroup_arithmetic": false,
// ROWSMETA-NEXT: "needs_subgroup_shuffle": false,
// ROWSMETA-NEXT: "required_subgroup_size": 0

// ROWS-NOT: attn.spirv_subgroup_size
// ROWS-NOT: GroupNonUniform
// ROWS: spirv.ExecutionMode @split_kv "LocalSize", 64, 1, 1
// BADSIZE: subgroup-size is 24; it must be 0 or a power of two up to 128
// TILED: subgroup-size=8 needs variant=portable, coopmat or coopmat-scalar
// BUDGET: attn-spirv-loop-budget: one invocation of this kernel can run up to {{[0-9]+}} loop iterations; the target ends loops after 100
// ROWSBUDGET: attn-spirv-loop-budget: one invocation of this kernel can run up to {{[0-9]+}} loop iterations; the target ends loops after 200
