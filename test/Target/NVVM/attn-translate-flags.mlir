// attn-translate's command line for the NVVM artifacts:
//  - --attn-to-ptx uses the tensor-core kernel where the spec allows it
//    (f16 D = 64 here), as the JIT does; --tensor-cores=false forces the
//    generic kernel;
//  - a chip attn does not target is a diagnostic and exit status 1, not an
//    LLVM ERROR;
//  - the metadata goes to <output>.json, so the .ptx, .cubin and .spv of
//    one name in one folder each keep their own; --metadata names it for
//    every target (--attn-metadata and --spirv-metadata, the old names,
//    still work);
//  - a failure is a short diagnostic, not a dump of the module.
// REQUIRES: ptxas
// RUN: rm -rf %t && mkdir -p %t
// RUN: attn-translate --attn-to-ptx --chip=sm_90a %s -o %t/tc.ptx
// RUN: FileCheck %s --check-prefix=TC < %t/tc.ptx
// RUN: FileCheck %s --check-prefix=TCMETA < %t/tc.ptx.json
// RUN: attn-translate --attn-to-ptx --tensor-cores=false --chip=sm_90a %s -o %t/gen.ptx
// RUN: FileCheck %s --check-prefix=GEN < %t/gen.ptx
// RUN: FileCheck %s --check-prefix=GENMETA < %t/gen.ptx.json
// TC: mma.sync.aligned
// TCMETA: "align_bytes": 16
// GEN-NOT: mma.sync
// GENMETA: "align_bytes": 0

// Unsupported chips: a diagnostic naming the flag, short, no LLVM ERROR.
// RUN: not attn-translate --attn-to-ptx --chip=sm_12345 %s -o %t/bad.ptx 2> %t/chip.err
// RUN: FileCheck %s --check-prefix=CHIP < %t/chip.err
// RUN: test $(wc -l < %t/chip.err) -le 3
// RUN: not attn-translate --attn-to-cubin --chip=compute_90 %s -o %t/bad.cubin 2>&1 | FileCheck %s --check-prefix=CHIP2
// CHIP: error: --chip=sm_12345 is not a GPU attn-translate targets (expected one of sm_80, sm_86, sm_87, sm_89, sm_90, sm_90a; newer GPUs run sm_90 PTX)
// CHIP-NOT: LLVM ERROR
// CHIP2: error: --chip=compute_90 is not a GPU attn-translate targets

// One name, three artifacts in one folder: three metadata files, each
// naming its own binary.
// RUN: attn-translate --attn-to-ptx --chip=sm_80 %s -o %t/sdpa.ptx
// RUN: attn-translate --attn-to-cubin --chip=sm_80 %s -o %t/sdpa.cubin
// RUN: attn-translate --attn-to-spirv %s -o %t/sdpa.spv
// RUN: FileCheck %s --check-prefix=PTXMETA < %t/sdpa.ptx.json
// RUN: FileCheck %s --check-prefix=CUBINMETA < %t/sdpa.cubin.json
// RUN: FileCheck %s --check-prefix=SPVMETA < %t/sdpa.spv.json
// RUN: not test -e %t/sdpa.json
// PTXMETA: "binary": "sdpa.ptx"
// CUBINMETA: "binary": "sdpa.cubin"
// SPVMETA: "variant": "portable"

// --metadata for every target; the old names are aliases of it.
// RUN: attn-translate --attn-to-ptx --chip=sm_80 %s -o %t/m.ptx --metadata=%t/m-ptx.json
// RUN: attn-translate --attn-to-spirv %s -o %t/m.spv --metadata=%t/m-spv.json
// RUN: attn-translate --attn-to-ptx --chip=sm_80 %s -o %t/old.ptx --attn-metadata=%t/old-ptx.json
// RUN: attn-translate --attn-to-spirv %s -o %t/old.spv --spirv-metadata=%t/old-spv.json
// RUN: FileCheck %s --check-prefix=PTXNAMED < %t/m-ptx.json
// RUN: FileCheck %s --check-prefix=PTXOLD < %t/old-ptx.json
// RUN: FileCheck %s --check-prefix=SPVMETA < %t/m-spv.json
// RUN: FileCheck %s --check-prefix=SPVMETA < %t/old-spv.json
// RUN: not test -e %t/m.ptx.json
// PTXNAMED: "binary": "m.ptx"
// PTXOLD: "binary": "old.ptx"

func.func @attention(%q: tensor<1x4x128x64xf16>, %k: tensor<1x4x128x64xf16>,
                     %v: tensor<1x4x128x64xf16>) -> tensor<1x4x128x64xf16> {
  %out = attn.sdpa %q, %k, %v
      : tensor<1x4x128x64xf16>, tensor<1x4x128x64xf16>, tensor<1x4x128x64xf16>
      -> tensor<1x4x128x64xf16>
  return %out : tensor<1x4x128x64xf16>
}
