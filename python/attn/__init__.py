"""attn: scaled dot-product attention kernels compiled by attn's JIT
(libattn), for NumPy arrays and PyTorch tensors, without copies.

    import numpy as np, attn
    q = np.random.rand(2, 8, 128, 64).astype(np.float32)
    out = attn.sdpa(q, q, q, causal=True)

The library is loaded on first use: $ATTN_LIBRARY, else the source tree's
build/lib/libattn.so (when this package is imported from a checkout), else
libattn.so.0 / libattn.so through the dynamic loader. See docs/Python.md.
"""
import sys as _sys

from . import _core, _lib
from ._errors import (Error, InvalidArgumentError, UnsupportedError,
                      CompileError, BackendError, UnavailableError,
                      OutOfMemoryError, LibraryNotFoundError)

__version__ = "0.1.0"

__all__ = ["sdpa", "mha", "Error", "InvalidArgumentError", "UnsupportedError",
           "CompileError", "BackendError", "UnavailableError",
           "OutOfMemoryError", "LibraryNotFoundError", "available",
           "cache_info", "library_path", "library_version",
           "set_shape_policy", "__version__"]

available = _core.available
cache_info = _core.cache_info
set_shape_policy = _core.set_shape_policy

# torch.Tensor once torch has been seen (imported before attn, or at the
# first call with a tensor); a module global, so torch.compile traces the
# isinstance below without reaching into sys.modules.
_TorchTensor = None
_torch_sdpa = None


def _find_torch():
    global _TorchTensor, _torch_sdpa
    torch = _sys.modules.get("torch")
    if torch is None:
        return None
    from . import torch as attn_torch  # registers the custom op
    _torch_sdpa = attn_torch.sdpa
    _TorchTensor = torch.Tensor
    return _TorchTensor

if "torch" in _sys.modules:
    _find_torch()


def library_path():
    """Where libattn was loaded from (loading it if it was not yet)."""
    _core.lib()
    return _lib.path()


def library_version():
    """The loaded library's attn_version() ("MAJOR.MINOR.PATCH"), or None
    for a library older than that entry point."""
    L = _core.lib()
    if not hasattr(L, "attn_version"):
        return None
    return L.attn_version().decode()


def sdpa(q, k, v, *, mask=None, causal=False, scale=None, dropout_p=0.0,
         seed=0, return_lse=False, enable_gqa=False, target=None):
    """Scaled dot-product attention, softmax(q k^T * scale + mask) v.

    q: [B, Hq, Sq, D], k: [B, Hkv, Skv, D], v: [B, Hkv, Skv, Dv], all of
    one dtype: NumPy float16 / float32 (bfloat16 with ml_dtypes), torch
    float16 / bfloat16 / float32 on cpu or cuda. Rank-3 inputs [H, S, D]
    are taken as one batch (a view) and give rank-3 results. Any strides
    (BSHD storage as a transposed view, say) are passed as they are, without
    a copy, but the last dimension must be contiguous (stride 1) and the
    others positive. Returns out [B, Hq, Sq, Dv] (contiguous, q's dtype),
    or (out, lse) with lse [B, Hq, Sq] float32 when return_lse.

    mask: bool keep-mask (True attends, PyTorch's boolean attn_mask) or an
    additive float mask (float16 / bfloat16 / float32, any of them whatever
    q's dtype), broadcastable to [B, Hq, Sq, Skv] (rank at most 4). Size-1 (or
    stride-0) B and H dimensions are broadcast without a copy; a mask
    broadcast along Sq or Skv (e.g. a padding mask [B, 1, 1, Skv]) is
    expanded into a contiguous copy, which the runtime needs.

    causal: **bottom-right aligned**: query i sees key j iff
    j <= i + (Skv - Sq), as FlashAttention 2.1+ and decoding with a KV cache
    want. PyTorch's is_causal=True is top-left aligned (j <= i). They agree
    when Sq == Skv; for Sq != Skv they differ (pass an explicit mask to get
    PyTorch's). With Sq > Skv the first Sq - Skv rows see no key: their
    out is 0 and lse -inf (where PyTorch may give NaN).
    causal may be combined with a mask (PyTorch refuses that).

    scale: None is 1/sqrt(D); 0.0 is refused (the C API reads 0 as the
    default). dropout_p in [0, 1): dropout of the normalized probabilities,
    deterministic: element (b, h, i, j) is kept or dropped by Philox
    keyed with `seed` (docs/Semantics.md), whatever the target or tiling;
    the same seed gives the same result. seed: 0 <= seed < 2**64 (a
    negative int down to -2**63 is read as its two's complement).

    enable_gqa: Hq != Hkv is refused unless True (as in PyTorch); then Hq
    must be a multiple of Hkv and query heads [t*g, (t+1)*g), g = Hq/Hkv,
    share kv head t.

    target: None picks 'cuda' for CUDA tensors and 'cpu' otherwise;
    'vulkan' runs host memory (NumPy arrays, CPU tensors) on the Vulkan
    device, which stages it in and out. CUDA launches run on
    torch.cuda.current_stream(q.device).

    Kernels are compiled on first use and cached per spec (dtype, head
    dims, mask kind and dtype, causal, scale, dropout_p, return_lse, target,
    device): a spec's first shape gets a kernel for exactly that shape,
    other shapes one shared kernel with B, H and S dynamic (see
    set_shape_policy).

    Errors raise attn.Error subclasses with the runtime's message:
    InvalidArgumentError (also a ValueError) for bad input,
    UnsupportedError (NotImplementedError), UnavailableError,
    CompileError, BackendError (RuntimeError), OutOfMemoryError
    (MemoryError), LibraryNotFoundError (OSError); TypeError for an
    argument of the wrong Python type.
    """
    tt = _TorchTensor
    if tt is None and "torch" in _sys.modules:
        tt = _find_torch()
    if tt is not None and any(isinstance(a, tt) for a in (q, k, v, mask)):
        named = (("q", q), ("k", k), ("v", v)) + \
            ((("mask", mask),) if mask is not None else ())
        if not all(isinstance(a, tt) for _, a in named):
            # Said here: the custom op's schema would refuse the others
            # with a message about its argument types.
            raise _core.mixed_inputs_error(
                (n, "torch.Tensor" if isinstance(a, tt)
                 else type(a).__module__ + "." + type(a).__name__)
                for n, a in named)
        return _torch_sdpa(q, k, v, mask=mask, causal=causal, scale=scale,
                           dropout_p=dropout_p, seed=seed,
                           return_lse=return_lse, enable_gqa=enable_gqa,
                           target=target)
    out, lse = _core.sdpa_impl(q, k, v, mask, causal, scale, dropout_p, seed,
                               return_lse, enable_gqa, target)
    return (out, lse) if return_lse else out


def mha(x, *, w_o, w_q=None, w_k=None, w_v=None, w_qkv=None, b_q=None,
        b_k=None, b_v=None, b_qkv=None, b_o=None, kv=None, heads,
        kv_heads=None, head_dim=None, value_dim=None, causal=False,
        scale=None, target=None):
    """The multi-head attention layer (attn.mha, docs/Semantics.md):
    y = concat_h(sdpa(x Wq_h^T + bq_h, c Wk^T + bk, c Wv^T + bv)) Wo^T + bo
    with c = kv (cross-attention) or x. Weights are [out, in] as
    torch.nn.functional.linear takes them: w_q [heads*D, E], w_k
    [kv_heads*D, Ekv], w_v [kv_heads*Dv, Ekv], or one fused w_qkv (torch's
    in_proj_weight, self-attention); w_o [E, heads*Dv]; biases (all or
    none) [out]. x [B, S, E], kv [B, Skv, Ekv]; returns y [B, S, E] in x's
    dtype. Every tensor dense row-major, one dtype (NumPy float16 /
    float32, bfloat16 with ml_dtypes; torch float16 / bfloat16 / float32),
    all on the cpu or all on one CUDA device (the cuda target: its
    projections on cuBLASLt, launched on torch's current stream). kv_heads
    (GQA) defaults to heads, head_dim to E / heads, value_dim to head_dim;
    causal is bottom-right aligned as attn.sdpa's; scale None is
    1/sqrt(head_dim). One compiled layer per shape and options, cached."""
    from . import _mha
    return _mha.mha(x, kv, w_q, w_k, w_v, w_qkv, w_o, b_q, b_k, b_v, b_qkv,
                    b_o, heads, kv_heads, head_dim, value_dim, causal, scale,
                    target)
