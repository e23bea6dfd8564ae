// PTX for sm_80 and sm_90a from the same attention: the launch metadata,
// the generic kernel's PTX, and ptxas assembling it without spills.
// REQUIRES: ptxas
// RUN: rm -rf %t && mkdir -p %t
// RUN: attn-translate --attn-to-ptx --tensor-cores=false --chip=sm_90a %s -o %t/k90.ptx
// RUN: FileCheck %s --check-prefix=PTX90 < %t/k90.ptx
// RUN: FileCheck %s --check-prefix=META < %t/k90.ptx.json
// RUN: %ptxas -v -arch=sm_90a %t/k90.ptx -o %t/k90.cubin 2>&1 | FileCheck %s --check-prefix=PTXAS
// RUN: attn-translate --attn-to-ptx --tensor-cores=false --chip=sm_80 --block-q=128 --kv-splits=1 %s -o %t/k80.ptx --metadata=%t/meta80.json
// RUN: FileCheck %s --check-prefix=PTX80 < %t/k80.ptx
// RUN: FileCheck %s --check-prefix=META80 < %t/meta80.json
// RUN: %ptxas -v -arch=sm_80 %t/k80.ptx -o %t/k80.cubin 2>&1 | FileCheck %s --check-prefix=PTXAS
// RUN: not attn-translate --attn-to-ptx %s 2>&1 | FileCheck %s --check-prefix=NOOUT

// PTX90: .version 8.0
// PTX90: .target sm_90a
// By default (kv_splits 0) the generic kernel as two alternatives chosen
// at each launch: the unsplit kernel, and the split-KV pair (the kernel
// over (query block, head x chunk, batch) and the merge kernel), in one
// module.
// PTX90-DAG: .visible .entry attn_kernel(
// PTX90-DAG: .visible .entry attn_kernel_split_kv(
// PTX90-DAG: .visible .entry attn_kernel_split_kv_merge(
// K/V tiles in shared memory, a barrier around each tile load
// PTX90-DAG: .shared .align {{[0-9]+}} .b8 {{.*}}[8192]
// PTX90-DAG: bar.sync 0
// PTX90-DAG: ld.shared
// PTX90-DAG: ex2.approx
// PTX90: ret;

// --kv-splits=1: one kernel
// PTX80: .target sm_80
// PTX80: .visible .entry attn_kernel(
// PTX80-NOT: .entry

// PTXAS: Compiling entry function 'attn_kernel
// PTXAS: 0 bytes spill stores, 0 bytes spill loads
// PTXAS-NOT: {{[1-9][0-9]*}} bytes spill

// Version 2 with split-KV: the chunk count is chosen at each launch
// (block_q/block_kv tell the runtime the tiles, at most 64 chunks); f32
// workspaces [B, Hq, splits, Sq, Dv] and [B, Hq, splits, Sq]. A launch
// with one chunk runs the unsplit kernel; more run the partial kernel,
// grid (ceildiv(Sq, 64), Hq x splits, B), and the merge kernel over
// (ceildiv(Sq, 128 / Dv), Hq, B) with 128 threads. 64 threads, static
// shared memory only; the parameters are q, k, v, out (and the
// workspaces) as memref descriptors.
// META: "format": "attn-cuda-kernel"
// META-NEXT: "version": 3,
// META-NEXT: "binary": "k90.ptx"
// META-NEXT: "binary_format": "ptx"
// META-NEXT: "chip": "sm_90a"
// META-NEXT: "align_bytes": 0,
// META-NEXT: "kv_splits": {"block_q": 64, "block_kv": 64, "max": 65535},
// META-NEXT: "workspace": [
// META-NEXT: {"name": "partial_out", "shape": ["B", "Hq", "splits", "Sq", 64], "element_bytes": 4},
// META-NEXT: {"name": "partial_stats", "shape": ["B", "Hq", "splits", 2, "Sq"], "element_bytes": 4}
// META-NEXT: ],
// META-NEXT: "kernels": [
// META-NEXT: {
// META-NEXT: "entry": "attn_kernel",
// META-NEXT: "when": "unsplit",
// META-NEXT: "block_kv": 64,
// META-NEXT: "grid": [{"of": "Sq", "ceildiv": 64, "times": 1}, {"of": "Hq", "ceildiv": 1, "times": 1}, {"of": "B", "ceildiv": 1, "times": 1}],
// META-NEXT: "block": [64, 1, 1],
// META-NEXT: "shared_bytes": 0,
// META: "entry": "attn_kernel_split_kv",
// META-NEXT: "when": "split",
// META-NEXT: "block_kv": 64,
// META-NEXT: "grid": [{"of": "Sq", "ceildiv": 64, "times": 1}, {"of": "Hq", "ceildiv": 1, "times": "splits"}, {"of": "B", "ceildiv": 1, "times": 1}],
// META-NEXT: "block": [64, 1, 1],
// META-NEXT: "shared_bytes": 0,
// META-NEXT: "params": [
// META-DAG: {"field": "data", "tensor": "partial_stats", "type": "ptr"}
// META-DAG: {"field": "size", "tensor": "partial_stats", "dim": 2, "type": "i64"}
// META-DAG: {"field": "data", "tensor": "q", "type": "ptr"}
// META-DAG: {"field": "data", "tensor": "k", "type": "ptr"}
// META-DAG: {"field": "data", "tensor": "v", "type": "ptr"}
// META-DAG: {"field": "data", "tensor": "partial_out", "type": "ptr"}
// META: "entry": "attn_kernel_split_kv_merge",
// META-NEXT: "when": "split",
// META-NEXT: "grid": [{"of": "Sq", "ceildiv": 2, "times": 1}, {"of": "Hq", "ceildiv": 1, "times": 1}, {"of": "B", "ceildiv": 1, "times": 1}],
// META-NEXT: "block": [128, 1, 1],
// META-NEXT: "shared_bytes": 0,
// META: "spec": {"dtype": "f16", "batch": 2, "heads_q": 8, "heads_kv": 2, "seq_q": 200, "seq_kv": 300, "head_dim": 64, "value_dim": 64, "causal": 1,
// META-SAME: "kv_splits": 0}

// One kernel, always launched, no workspace and no split count; grid =
// (ceildiv(Sq, 128), Hq, B) with --block-q=128; the parameters are q, k,
// v, out as memref descriptors, in that order.
// META80: "version": 3,
// META80: "binary": "k80.ptx"
// META80: "chip": "sm_80"
// META80-NOT: "kv_splits": {
// META80: "workspace": [],
// META80: "kernels": [
// META80: "entry": "attn_kernel",
// META80-NEXT: "when": "always",
// META80-NEXT: "block_kv": 64,
// META80-NEXT: "grid": [{"of": "Sq", "ceildiv": 128, "times": 1}, {"of": "Hq", "ceildiv": 1, "times": 1}, {"of": "B", "ceildiv": 1, "times": 1}],
// META80-NEXT: "block": [128, 1, 1]
// META80: {"field": "data", "tensor": "q", "type": "ptr"}
// META80: {"field": "data", "tensor": "k", "type": "ptr"}
// META80: {"field": "data", "tensor": "v", "type": "ptr"}
// META80: {"field": "data", "tensor": "out", "type": "ptr"}
// META80-NOT: "entry"
// META80: "kv_splits": 1}

// NOOUT: give -o FILE or --metadata=FILE

func.func @attention(%q: tensor<2x8x200x64xf16>, %k: tensor<2x2x300x64xf16>,
                     %v: tensor<2x2x300x64xf16>) -> tensor<2x8x200x64xf16> {
  %out = attn.sdpa %q, %k, %v causal
      : tensor<2x8x200x64xf16>, tensor<2x2x300x64xf16>, tensor<2x2x300x64xf16>
      -> tensor<2x8x200x64xf16>
  return %out : tensor<2x8x200x64xf16>
}
