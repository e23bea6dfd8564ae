// A cubin (ptxas run by attn-translate) and its metadata, then the MLIR-free
// runtime (libattn_runtime.so, through ctypes) loading that artifact: the
// metadata the compiler writes is what the runtime accepts. Without a GPU,
// compiling for cuda must then report the missing driver, not fail to parse.
// REQUIRES: ptxas
// RUN: rm -rf %t && mkdir -p %t
// RUN: attn-translate --attn-to-cubin --tensor-cores=false --chip=sm_90a %s -o %t/k.cubin
// RUN: od -A n -t x1 -N 4 %t/k.cubin | FileCheck %s --check-prefix=ELF
// RUN: FileCheck %s --check-prefix=META < %t/k.cubin.json
// RUN: env ATTN_CUDA_DRIVER=/nonexistent/libcuda.so.1 python3 %S/Inputs/load_artifact.py %attn_lib/libattn_runtime.so %t/k.cubin.json | FileCheck %s --check-prefix=LOAD
// RUN: echo '{"format": "attn-cuda-kernel"}' > %t/bad.json
// RUN: python3 %S/Inputs/load_artifact.py %attn_lib/libattn_runtime.so %t/bad.json | FileCheck %s --check-prefix=BAD

// ELF: 7f 45 4c 46

// META: "version": 3,
// META: "binary": "k.cubin"
// META: "binary_format": "cubin"
// META: "chip": "sm_90a"
// the unsplit kernel and the split-KV pair (the default), every entry in
// the cubin (the runtime checks each when it loads the artifact)
// META: "kv_splits": {"block_q": 64, "block_kv": 64, "max": 65535},
// META: "entry": "attn_kernel",
// META: "when": "unsplit",
// META: {"field": "data", "tensor": "lse", "type": "ptr"}
// META: "entry": "attn_kernel_split_kv",
// META: "when": "split",
// META: "grid": [{"of": "Sq", "ceildiv": 64, "times": 1}, {"of": "Hq", "ceildiv": 1, "times": "splits"}, {"of": "B", "ceildiv": 1, "times": 1}],
// META: "block": [64, 1, 1],
// META: "shared_bytes": 0,
// META: {"field": "data", "tensor": "partial_stats", "type": "ptr"}
// META: "entry": "attn_kernel_split_kv_merge",
// META: "when": "split",
// META: {"field": "data", "tensor": "lse", "type": "ptr"}
// META: "spec": {"dtype": "bf16", "batch": 1, "heads_q": 4, "heads_kv": 4, "seq_q": 77, "seq_kv": 77, "head_dim": 128, "value_dim": 128, "causal": 0, "mask": "none", "mask_dtype": "bool", "scale": 0, "dropout_p": 0, "return_lse": 1,

// LOAD: load: 0
// LOAD-NEXT: spec: bf16 B=1 Hq=4 Hkv=4 Sq=77 Skv=77 D=128 Dv=128 lse=1
// LOAD-NEXT: compile: 5 attn_compile: cuda: cannot load the CUDA driver (/nonexistent/libcuda.so.1)

// BAD: load: 1 attn_cuda_load_artifact: {{.*}}bad.json: metadata: missing key 'version'

func.func @attention(%q: tensor<1x4x77x128xbf16>, %k: tensor<1x4x77x128xbf16>,
                     %v: tensor<1x4x77x128xbf16>)
    -> (tensor<1x4x77x128xbf16>, tensor<1x4x77xf32>) {
  %out, %lse = attn.sdpa %q, %k, %v
      : tensor<1x4x77x128xbf16>, tensor<1x4x77x128xbf16>, tensor<1x4x77x128xbf16>
      -> tensor<1x4x77x128xbf16>, tensor<1x4x77xf32>
  return %out, %lse : tensor<1x4x77x128xbf16>, tensor<1x4x77xf32>
}
