"""Loads a CUDA kernel artifact with libattn_runtime.so (ctypes) and tries to
compile its spec for the cuda target; prints each status and message."""
import ctypes
import importlib.util
import os
import sys

# The example's ctypes mirror of attn.h, so the test also checks it.
here = os.path.dirname(os.path.abspath(__file__))
example = os.path.join(here, "..", "..", "..", "..", "examples", "attn_ctypes.py")
spec_ = importlib.util.spec_from_file_location("attn_ctypes", example)
attn = importlib.util.module_from_spec(spec_)
spec_.loader.exec_module(attn)

lib = attn.load(sys.argv[1])
spec = attn.AttnSpec()
status = lib.attn_cuda_load_artifact(sys.argv[2].encode(), ctypes.byref(spec))
print("load:", status, lib.attn_last_error().decode())
if status != attn.ATTN_OK:
    sys.exit(0)
names = {1: "f16", 2: "bf16", 3: "f32"}
print("spec: %s B=%d Hq=%d Hkv=%d Sq=%d Skv=%d D=%d Dv=%d lse=%d" % (
    names[spec.dtype], spec.batch, spec.heads_q, spec.heads_kv, spec.seq_q,
    spec.seq_kv, spec.head_dim, spec.value_dim, spec.return_lse))
ctx = ctypes.c_void_p()
lib.attn_context_create(ctypes.byref(ctx))
kernel = ctypes.c_void_p()
status = lib.attn_compile(ctx, ctypes.byref(spec), attn.ATTN_TARGET_CUDA,
                          ctypes.byref(kernel))
print("compile:", status, lib.attn_last_error().decode())
lib.attn_context_destroy(ctx)
