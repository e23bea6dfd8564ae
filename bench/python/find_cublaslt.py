#!/usr/bin/env python3
"""Prints the path of PyTorch's cuBLASLt (libcublasLt.so.1*), found beside
torch or in its nvidia wheels, for attn.mha on cuda (ATTN_CUBLASLT:
runtime/src/cuda/CublasLt.h); prints nothing and exits 1 when there is
none (or no torch). Used by bench/python/device_torch.sh and
bench/vulkan/device_mha.sh on the GPU machine."""
import glob
import os
import sys

try:
    import torch
except Exception:
    sys.exit(1)
roots = [os.path.dirname(torch.__file__)]
try:
    import nvidia
    roots += list(nvidia.__path__)
except Exception:
    pass
for r in roots:
    found = sorted(glob.glob(os.path.join(r, "**", "libcublasLt.so.1*"),
                             recursive=True))
    if found:
        print(found[-1])
        sys.exit(0)
sys.exit(1)
