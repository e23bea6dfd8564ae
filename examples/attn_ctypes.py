#!/usr/bin/env python3
"""Runs an attn CUDA kernel on PyTorch CUDA tensors through the C API (ctypes)
and compares it with torch's scaled_dot_product_attention.

    # JIT (libattn.so compiles the spec for the current device):
    python3 examples/attn_ctypes.py --lib build/lib/libattn.so
    # AOT: an artifact from attn-translate --attn-to-ptx/--attn-to-cubin, run
    # by the MLIR-free runtime:
    python3 examples/attn_ctypes.py --lib build/lib/libattn_runtime.so \
        --artifact out.ptx.json   # attn-translate ... -o out.ptx

The JIT uses the mma.sync kernel for the specs it supports (f16, no mask);
ATTN_CUDA_TENSOR_CORES=0 selects the generic kernel. No copies are made: tensors are passed as data pointers plus strides in
elements, on torch's current stream. See docs/NVIDIA.md.

As a module: load() declares the C functions' types once; launch_args()
builds one launch's arguments with a single struct.pack, the cheap per-call
path (bench/cuda/run_h100.py times it).
"""
import argparse
import ctypes
import math
import os
import struct
import sys

# --- attn.h, mirrored ------------------------------------------------------
ATTN_OK = 0
ATTN_DTYPE_F16, ATTN_DTYPE_BF16, ATTN_DTYPE_F32, ATTN_DTYPE_BOOL = 1, 2, 3, 4
ATTN_MASK_NONE, ATTN_MASK_BOOL, ATTN_MASK_ADDITIVE = 0, 1, 2
ATTN_TARGET_CUDA = 1
ATTN_DYNAMIC = -1


class AttnSpec(ctypes.Structure):
    # Enums are C ints; ctypes inserts the same padding as the C compiler.
    _fields_ = [
        ("dtype", ctypes.c_int),
        ("batch", ctypes.c_int64),
        ("heads_q", ctypes.c_int64),
        ("heads_kv", ctypes.c_int64),
        ("seq_q", ctypes.c_int64),
        ("seq_kv", ctypes.c_int64),
        ("head_dim", ctypes.c_int64),
        ("value_dim", ctypes.c_int64),
        ("causal", ctypes.c_int),
        ("mask", ctypes.c_int),
        ("mask_dtype", ctypes.c_int),
        ("scale", ctypes.c_double),
        ("dropout_p", ctypes.c_double),
        ("return_lse", ctypes.c_int),
        ("variant", ctypes.c_int),
        ("block_q", ctypes.c_int64),
        ("block_kv", ctypes.c_int64),
        ("kv_splits", ctypes.c_int64),
    ]


class AttnTensor(ctypes.Structure):
    _fields_ = [
        ("data", ctypes.c_void_p),
        ("shape", ctypes.c_int64 * 4),
        ("strides", ctypes.c_int64 * 4),
    ]


class AttnLaunchArgs(ctypes.Structure):
    _fields_ = [
        ("q", AttnTensor),
        ("k", AttnTensor),
        ("v", AttnTensor),
        ("mask", AttnTensor),
        ("out", AttnTensor),
        ("lse", AttnTensor),
        ("seed", ctypes.c_uint64),
        ("stream", ctypes.c_void_p),
    ]


# One launch's attn_launch_args as a single struct.pack: q, k, v, mask, out,
# lse (each data pointer, shape[4], strides[4]), seed, stream; every field
# is 8 bytes, so there is no padding and the bytes are those of filling
# AttnLaunchArgs field by field, at a fraction of the cost per call.
_TENSOR = "Q4q4q"
_TENSOR_FIELDS = struct.Struct("=" + _TENSOR)
_LAUNCH_ARGS_FIELDS = struct.Struct("=" + _TENSOR * 6 + "QQ")
assert _TENSOR_FIELDS.size == ctypes.sizeof(AttnTensor)
assert _LAUNCH_ARGS_FIELDS.size == ctypes.sizeof(AttnLaunchArgs)
_NO_TENSOR = (0,) * 9  # an absent tensor: null data, zero shape and strides
_PADDING = tuple((0,) * n for n in range(5))
_U64 = (1 << 64) - 1


def _tensor_fields(t):
    """data pointer, shape[4], strides[4] (elements) of a torch tensor of
    rank <= 4, zero-padded."""
    shape, strides = t.shape, t.stride()
    pad = _PADDING[4 - len(shape)]
    return (t.data_ptr(), *shape, *pad, *strides, *pad)


def launch_args(q, k, v, out, mask=None, lse=None, seed=0, stream=0):
    """An AttnLaunchArgs for torch tensors (mask and lse optional), the
    dropout seed and a CUstream (an int: torch's Stream.cuda_stream; 0 or
    None is the legacy default stream), built with one struct.pack."""
    return AttnLaunchArgs.from_buffer_copy(_LAUNCH_ARGS_FIELDS.pack(
        *_tensor_fields(q), *_tensor_fields(k), *_tensor_fields(v),
        *(_NO_TENSOR if mask is None else _tensor_fields(mask)),
        *_tensor_fields(out),
        *(_NO_TENSOR if lse is None else _tensor_fields(lse)),
        seed & _U64, stream or 0))


def load(path):
    lib = ctypes.CDLL(path)
    lib.attn_spec_init.argtypes = [ctypes.POINTER(AttnSpec)]
    lib.attn_spec_init.restype = None
    lib.attn_context_create.argtypes = [ctypes.POINTER(ctypes.c_void_p)]
    lib.attn_context_destroy.argtypes = [ctypes.c_void_p]
    lib.attn_context_destroy.restype = None
    lib.attn_target_available.argtypes = [ctypes.c_void_p, ctypes.c_int]
    lib.attn_compile.argtypes = [ctypes.c_void_p, ctypes.POINTER(AttnSpec),
                                 ctypes.c_int, ctypes.POINTER(ctypes.c_void_p)]
    lib.attn_launch.argtypes = [ctypes.c_void_p, ctypes.POINTER(AttnLaunchArgs)]
    lib.attn_last_error.argtypes = []
    lib.attn_last_error.restype = ctypes.c_char_p
    for fn in ("attn_context_create", "attn_target_available", "attn_compile",
               "attn_launch"):
        getattr(lib, fn).restype = ctypes.c_int
    if hasattr(lib, "attn_cuda_load_artifact"):
        lib.attn_cuda_load_artifact.argtypes = [ctypes.c_char_p,
                                                ctypes.POINTER(AttnSpec)]
        lib.attn_cuda_load_artifact.restype = ctypes.c_int
    return lib


def check(lib, status, what):
    if status != ATTN_OK:
        sys.exit("%s failed (status %d): %s"
                 % (what, status, lib.attn_last_error().decode()))


def tensor(t, rank4=True):
    """A torch tensor as an attn_tensor: pointer, shape, strides (elements),
    zero-padded to 4 dimensions."""
    return AttnTensor.from_buffer_copy(_TENSOR_FIELDS.pack(*_tensor_fields(t)))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--lib", default=os.path.join("build", "lib", "libattn.so"))
    ap.add_argument("--artifact", help="metadata .json of an AOT kernel")
    ap.add_argument("--batch", type=int, default=2)
    ap.add_argument("--heads", type=int, default=8)
    ap.add_argument("--kv-heads", type=int, default=2)
    ap.add_argument("--seq-q", type=int, default=512)
    ap.add_argument("--seq-kv", type=int, default=512)
    ap.add_argument("--head-dim", type=int, default=64)
    ap.add_argument("--causal", action="store_true")
    ap.add_argument("--bshd", action="store_true",
                    help="store q/k/v/out as [B, S, H, D] (passed by strides)")
    args = ap.parse_args()

    import torch
    import torch.nn.functional as F

    lib = load(args.lib)
    ctx = ctypes.c_void_p()
    check(lib, lib.attn_context_create(ctypes.byref(ctx)), "attn_context_create")

    spec = AttnSpec()
    if args.artifact:
        # The artifact's spec decides the shapes.
        if not hasattr(lib, "attn_cuda_load_artifact"):
            sys.exit("%s has no attn_cuda_load_artifact" % args.lib)
        check(lib, lib.attn_cuda_load_artifact(args.artifact.encode(),
                                               ctypes.byref(spec)),
              "attn_cuda_load_artifact")
        dims = {}
        for name, default in (("batch", args.batch), ("heads_q", args.heads),
                              ("heads_kv", args.kv_heads),
                              ("seq_q", args.seq_q), ("seq_kv", args.seq_kv)):
            value = getattr(spec, name)
            dims[name] = value if value != ATTN_DYNAMIC else default
        B, Hq, Hkv = dims["batch"], dims["heads_q"], dims["heads_kv"]
        Sq, Skv, D = dims["seq_q"], dims["seq_kv"], spec.head_dim
        Dv = spec.value_dim
        causal = bool(spec.causal)
        dtype = {ATTN_DTYPE_F16: torch.float16, ATTN_DTYPE_BF16: torch.bfloat16,
                 ATTN_DTYPE_F32: torch.float32}[spec.dtype]
        if spec.mask != ATTN_MASK_NONE or spec.dropout_p > 0 or spec.return_lse:
            sys.exit("this example runs specs without mask, dropout and lse")
    else:
        lib.attn_spec_init(ctypes.byref(spec))
        B, Hq, Hkv = args.batch, args.heads, args.kv_heads
        Sq, Skv, D = args.seq_q, args.seq_kv, args.head_dim
        Dv, causal, dtype = D, args.causal, torch.float16
        spec.dtype = ATTN_DTYPE_F16
        spec.batch, spec.heads_q, spec.heads_kv = B, Hq, Hkv
        spec.seq_q, spec.seq_kv = Sq, Skv
        spec.head_dim = D
        spec.causal = int(causal)

    status = lib.attn_target_available(ctx, ATTN_TARGET_CUDA)
    check(lib, status, "attn_target_available(cuda)")
    kernel = ctypes.c_void_p()
    check(lib, lib.attn_compile(ctx, ctypes.byref(spec), ATTN_TARGET_CUDA,
                                ctypes.byref(kernel)), "attn_compile")

    torch.manual_seed(0)
    dev = torch.device("cuda")

    def make(h, s, d):
        if args.bshd:  # logical [B, H, S, D] view of [B, S, H, D] storage
            return torch.randn(B, s, h, d, device=dev, dtype=dtype).transpose(1, 2)
        return torch.randn(B, h, s, d, device=dev, dtype=dtype)

    q, k, v = make(Hq, Sq, D), make(Hkv, Skv, D), make(Hkv, Skv, Dv)
    out = make(Hq, Sq, Dv).zero_()

    la = launch_args(q, k, v, out,
                     stream=torch.cuda.current_stream().cuda_stream)
    check(lib, lib.attn_launch(kernel, ctypes.byref(la)), "attn_launch")
    torch.cuda.synchronize()

    # torch's causal mask is top-left aligned; attn's is bottom-right
    # (docs/Semantics.md), so build the mask explicitly.
    g = Hq // Hkv
    kr = k.repeat_interleave(g, dim=1).float()
    vr = v.repeat_interleave(g, dim=1).float()
    mask = None
    if causal:
        i = torch.arange(Sq, device=dev)[:, None]
        j = torch.arange(Skv, device=dev)[None, :]
        mask = j <= i + (Skv - Sq)
    scale = spec.scale if spec.scale != 0 else 1.0 / math.sqrt(D)
    ref = F.scaled_dot_product_attention(q.float(), kr, vr, attn_mask=mask,
                                         scale=scale)
    if mask is not None:  # rows that see no key are 0 in attn
        ref = torch.where(mask.any(-1)[None, None, :, None], ref,
                          torch.zeros_like(ref))
    err = (out.float() - ref).abs().max().item()
    tol = 2e-2 if dtype != torch.float32 else 1e-4
    print("max |attn - torch| = %.3e (tolerance %.0e): %s"
          % (err, tol, "ok" if err <= tol else "MISMATCH"))
    lib.attn_context_destroy(ctx)
    return 0 if err <= tol else 1


if __name__ == "__main__":
    sys.exit(main())
