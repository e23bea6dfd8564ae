// PTX for sm_80 and sm_90a from the same attention: the launch metadata,
// the generic kernel's PTX, and ptxas assembling it without spills.
// REQUIRES: ptxas
// RUN: rm -rf %t && mkdir -p %t
// RUN: attn-translate --attn-to-ptx --chip=sm_90a %s -o %t/k90.ptx
// RUN: FileCheck %s --check-prefix=PTX90 < %t/k90.ptx
// RUN: FileCheck %s --check-prefix=META < %t/k90.json
// RUN: %ptxas -v -arch=sm_90a %t/k90.ptx -o %t/k90.cubin 2>&1 | FileCheck %s --check-prefix=PTXAS
// RUN: attn-translate --attn-to-ptx --chip=sm_80 --block-q=128 %s -o %t/k80.ptx --attn-metadata=%t/meta80.json
// RUN: FileCheck %s --check-prefix=PTX80 < %t/k80.ptx
// RUN: FileCheck %s --check-prefix=META80 < %t/meta80.json
// RUN: %ptxas -v -arch=sm_80 %t/k80.ptx -o %t/k80.cubin 2>&1 | FileCheck %s --check-prefix=PTXAS
// RUN: not attn-translate --attn-to-ptx %s 2>&1 | FileCheck %s --check-prefix=NOOUT

// PTX90: .version 8.0
// PTX90: .target sm_90a
// PTX90: .visible .entry attn_kernel_kernel(
// K/V tiles in shared memory, a barrier around each tile load
// PTX90-DAG: .shared .align {{[0-9]+}} .b8 {{.*}}[8192]
// PTX90-DAG: bar.sync 0
// PTX90-DAG: ld.shared
// PTX90-DAG: ex2.approx
// PTX90: ret;

// PTX80: .target sm_80
// PTX80: .visible .entry attn_kernel_kernel(

// PTXAS: Compiling entry function 'attn_kernel_kernel'
// PTXAS: 0 bytes spill stores, 0 bytes spill loads

// grid = (ceildiv(Sq, 64), Hq, B), 64 threads, static shared memory only;
// the parameters are q, k, v, out as memref descriptors, in that order.
// META: "format": "attn-cuda-kernel"
// META: "entry": "attn_kernel_kernel"
// META: "binary": "k90.ptx"
// META: "binary_format": "ptx"
// META: "chip": "sm_90a"
// META: "grid": [{"of": "Sq", "ceildiv": 64, "times": 1}, {"of": "Hq", "ceildiv": 1, "times": 1}, {"of": "B", "ceildiv": 1, "times": 1}]
// META: "block": [64, 1, 1]
// META: "shared_bytes": 0
// META: {"field": "data", "tensor": "q", "type": "ptr"}
// META: {"field": "stride", "tensor": "q", "dim": 3, "type": "i64"}
// META: {"field": "data", "tensor": "k", "type": "ptr"}
// META: {"field": "data", "tensor": "v", "type": "ptr"}
// META: {"field": "data", "tensor": "out", "type": "ptr"}
// META: {"field": "stride", "tensor": "out", "dim": 3, "type": "i64"}
// META-NEXT: ],
// META: "spec": {"dtype": "f16", "batch": 2, "heads_q": 8, "heads_kv": 2, "seq_q": 200, "seq_kv": 300, "head_dim": 64, "value_dim": 64, "causal": 1,

// META80: "binary": "k80.ptx"
// META80: "chip": "sm_80"
// META80: "grid": [{"of": "Sq", "ceildiv": 128, "times": 1}
// META80: "block": [128, 1, 1]

// NOOUT: give -o FILE or --attn-metadata=FILE

func.func @attention(%q: tensor<2x8x200x64xf16>, %k: tensor<2x2x300x64xf16>,
                     %v: tensor<2x2x300x64xf16>) -> tensor<2x8x200x64xf16> {
  %out = attn.sdpa %q, %k, %v causal
      : tensor<2x8x200x64xf16>, tensor<2x2x300x64xf16>, tensor<2x2x300x64xf16>
      -> tensor<2x8x200x64xf16>
  return %out : tensor<2x8x200x64xf16>
}
