"""The PyTorch custom op ``attn::sdpa`` and its wrapper.

Importing this module imports torch and registers the op (once per
process). ``attn.sdpa`` does the same on its first call with a torch tensor,
so importing this module is only needed to reach ``torch.ops.attn.sdpa``
before that.

With PyTorch >= 2.4 (``torch.library.custom_op`` and ``register_fake``) the
op has a fake (meta) implementation giving out's and lse's shapes and
dtypes, so ``torch.compile`` (fullgraph=True included) traces through it
and calls the real kernel at run time. On an older PyTorch no op is
registered (``OP`` is None): ``attn.sdpa`` still runs torch tensors
eagerly, through the same code, but torch.compile cannot trace it.

Schema::

    attn::sdpa(Tensor q, Tensor k, Tensor v, Tensor? mask, bool causal,
               float? scale, float dropout_p, int seed, bool return_lse,
               bool enable_gqa, str? target) -> (Tensor out, Tensor lse)

``lse`` is ``[B, Hq, Sq]`` float32 when return_lse, else an empty float32
tensor of shape ``[0]``. ``seed`` is a signed 64-bit int here (the bits of
the unsigned seed). The op is forward-only: it has no autograd formula.
"""
import torch as _torch

from . import _core

OP = None  # torch.ops.attn.sdpa.default once registered


def _signed(seed):
    # Plain int arithmetic on the common path, which torch.compile traces.
    if type(seed) is not int or not (-(1 << 63) <= seed < (1 << 64)):
        seed = _core.check_seed(seed)  # converts, or raises the error
    if seed >= 1 << 63:
        seed -= 1 << 64
    return seed


def _eager(q, k, v, mask, causal, scale, dropout_p, seed, return_lse,
           enable_gqa, target):
    out, lse = _core.sdpa_impl(q, k, v, mask, causal, scale, dropout_p,
                               seed, return_lse, enable_gqa, target)
    if lse is None:
        lse = _torch.empty((0,), dtype=_torch.float32, device=q.device)
    return out, lse


def _fake(q, k, v, mask, causal, scale, dropout_p, seed, return_lse,
          enable_gqa, target):
    # The shapes attn.sdpa returns; the real call checks everything else.
    if q.dim() not in (3, 4) or k.dim() != q.dim() or v.dim() != q.dim():
        raise _core.InvalidArgumentError(
            "q, k, v have ranks %d, %d, %d; attn takes all rank 4 "
            "[B, H, S, D] or all rank 3 [H, S, D]" % (q.dim(), k.dim(), v.dim()))
    out_shape = tuple(q.shape[:-1]) + (v.shape[-1],)
    out = q.new_empty(out_shape)
    if return_lse:
        lse = q.new_empty(tuple(q.shape[:-1]), dtype=_torch.float32)
    else:
        lse = q.new_empty((0,), dtype=_torch.float32)
    return out, lse


def _register():
    global OP
    lib = getattr(_torch, "library", None)
    if lib is None or not hasattr(lib, "custom_op") or \
            not hasattr(lib, "register_fake"):
        return None
    existing = getattr(getattr(_torch.ops, "attn", None), "sdpa", None)
    if existing is not None:  # registered by another copy of this package
        OP = existing.default
        return OP
    from typing import Optional, Tuple
    Tensor = _torch.Tensor

    @lib.custom_op("attn::sdpa", mutates_args=())
    def sdpa_op(q: Tensor, k: Tensor, v: Tensor, mask: Optional[Tensor],
                causal: bool, scale: Optional[float], dropout_p: float,
                seed: int, return_lse: bool, enable_gqa: bool,
                target: Optional[str]) -> Tuple[Tensor, Tensor]:
        return _eager(q, k, v, mask, causal, scale, dropout_p, seed,
                      return_lse, enable_gqa, target)

    sdpa_op.register_fake(_fake)
    OP = _torch.ops.attn.sdpa.default
    return OP


try:
    _register()
except Exception as e:  # noqa: BLE001 - run eagerly rather than not at all
    import warnings
    warnings.warn("attn: could not register the torch custom op attn::sdpa "
                  "(%s: %s); attn.sdpa runs torch tensors eagerly, and "
                  "torch.compile cannot trace it" % (type(e).__name__, e))
    OP = None


def sdpa(q, k, v, *, mask=None, causal=False, scale=None, dropout_p=0.0,
         seed=0, return_lse=False, enable_gqa=False, target=None):
    """attn.sdpa for torch tensors, through the custom op when there is one
    (see attn.sdpa for the arguments)."""
    if OP is None:
        out, lse = _core.sdpa_impl(q, k, v, mask, causal, scale, dropout_p,
                                   seed, return_lse, enable_gqa, target)
        return (out, lse) if return_lse else out
    out, lse = OP(q, k, v, mask, bool(causal),
                  None if scale is None else float(scale), float(dropout_p),
                  _signed(seed), bool(return_lse), bool(enable_gqa), target)
    return (out, lse) if return_lse else out
