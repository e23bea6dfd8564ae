"""attn.mha: the multi-head attention layer (attn_mha_compile /
attn_mha_launch) on NumPy arrays and PyTorch tensors. See docs/Python.md."""
import ctypes

from . import _core, _lib
from ._errors import InvalidArgumentError, UnsupportedError

_layers = {}  # (target, device key, spec fields) -> attn_mha_kernel* (int)
# The per-call fast path: a call whose tensors have the signature of an
# earlier checked call (types, dtypes, devices, shapes, contiguity) and the
# same options reuses that call's layer and checks, reading only the data
# pointers (and checking their alignment).
_fast = {}
_NAMES = ("x", "kv", "w_q", "w_k", "w_v", "w_qkv", "w_o", "b_q", "b_k", "b_v",
          "b_qkv", "b_o")


def _signature(t):
    if t is None:
        return None
    if _core._is_torch(t):
        return (t.dtype, t.device, tuple(t.shape), t.is_contiguous())
    a = getattr(t, "__array_interface__", None)
    if a is None or a.get("strides") is not None:
        return False  # not a plain C-contiguous array: the checked path
    return (a["typestr"], a["shape"], getattr(t, "dtype", None))


def _address(t):
    if _core._is_torch(t):
        return t.data_ptr()
    return t.__array_interface__["data"][0]


def mha(x, kv, w_q, w_k, w_v, w_qkv, w_o, b_q, b_k, b_v, b_qkv, b_o, heads,
        kv_heads, head_dim, value_dim, causal, scale, target):
    tensors = (x, kv, w_q, w_k, w_v, w_qkv, w_o, b_q, b_k, b_v, b_qkv, b_o)
    sigs = tuple(_signature(t) for t in tensors)
    key = None
    if False not in sigs:
        key = (sigs, heads, kv_heads, head_dim, value_dim, bool(causal), scale,
               target)
        hit = _fast.get(key)
        if hit is not None:
            return _launch(hit, tensors)
    plan = mha_impl(x, kv, w_q, w_k, w_v, w_qkv, w_o, b_q, b_k, b_v, b_qkv,
                    b_o, heads, kv_heads, head_dim, value_dim, causal, scale,
                    target)
    if key is not None:
        _fast[key] = plan
    return _launch(plan, tensors)


def _launch(plan, tensors):
    layer, itemsize, y_shape, like, on_cuda = plan
    a = _lib.MhaArgs()
    for name, t in zip(_NAMES, tensors):
        if t is not None:
            p = _address(t)
            if p % itemsize:
                raise InvalidArgumentError(
                    "%s's data (0x%x) is not aligned to its %d-byte elements"
                    % (name, p, itemsize))
            setattr(a, name, p)
    if _core._is_torch(like):
        import torch
        y = torch.empty(y_shape, dtype=like.dtype, device=like.device)
        a.y = y.data_ptr()
        if on_cuda:
            a.stream = torch.cuda.current_stream(like.device).cuda_stream
    else:
        y = _core._numpy_empty(y_shape, like.dtype)
        a.y = y.__array_interface__["data"][0]
    _core._check(_core.lib().attn_mha_launch(layer, ctypes.byref(a)),
                 "attn_mha_launch")
    return y


def _dense(name, x, rank):
    """An _Arg for x: dense row-major (the layer takes no strides) of `rank`."""
    a = _core._describe(name, x)
    if len(a.shape) != rank:
        raise InvalidArgumentError("%s has rank %d; expected %d"
                                   % (name, len(a.shape), rank))
    expected = 1
    for d in range(rank - 1, -1, -1):
        if a.shape[d] > 1 and a.strides[d] != expected:
            raise InvalidArgumentError(
                "%s is not dense row-major (stride %d is %d, not %d); the "
                "layer takes contiguous tensors (.contiguous() / "
                "numpy.ascontiguousarray)" % (name, d, a.strides[d], expected))
        expected *= a.shape[d]
    return a


def mha_impl(x, kv, w_q, w_k, w_v, w_qkv, w_o, b_q, b_k, b_v, b_qkv, b_o,
             heads, kv_heads, head_dim, value_dim, causal, scale, target):
    weights = {"w_q": w_q, "w_k": w_k, "w_v": w_v, "w_qkv": w_qkv, "w_o": w_o,
               "b_q": b_q, "b_k": b_k, "b_v": b_v, "b_qkv": b_qkv, "b_o": b_o}
    fused = w_qkv is not None
    if fused and any(w is not None for w in (w_q, w_k, w_v)):
        raise InvalidArgumentError("pass either w_qkv or w_q, w_k, w_v")
    if not fused and any(w is None for w in (w_q, w_k, w_v)):
        raise InvalidArgumentError("w_q, w_k and w_v (or w_qkv) are required")
    if w_o is None:
        raise InvalidArgumentError("w_o is required")
    biases = [n for n in ("b_q", "b_k", "b_v", "b_qkv", "b_o")
              if weights[n] is not None]
    want = ["b_qkv", "b_o"] if fused else ["b_q", "b_k", "b_v", "b_o"]
    if biases and sorted(biases) != sorted(want):
        raise InvalidArgumentError(
            "biases %s given; with biases the layer takes all of %s"
            % (", ".join(biases), ", ".join(want)))
    if scale is not None and not scale > 0:
        raise InvalidArgumentError("scale=%r; expected None (1/sqrt(D)) or "
                                   "a positive number" % (scale,))
    X = _dense("x", x, 3)
    args = {"x": X}
    if kv is not None:
        args["kv"] = _dense("kv", kv, 3)
    for n, w in weights.items():
        if w is not None:
            args[n] = _dense(n, w, 1 if n.startswith("b_") else 2)
    kinds = {a.kind for a in args.values()}
    devices = {a.device for a in args.values()}
    dtypes = {a.dtype for a in args.values()}
    if len(kinds) > 1 or len(devices) > 1:
        raise InvalidArgumentError(
            "the layer's tensors must all be NumPy arrays or all torch "
            "tensors on one device; got %s" % ", ".join(
                "%s %s" % (n, a.device) for n, a in args.items()))
    if len(dtypes) > 1:
        raise InvalidArgumentError("the layer's tensors must share one dtype")
    device = devices.pop()
    if target is None:
        target = "cuda" if device.startswith("cuda") else "cpu"
    code = _core._target_code(target)
    on_cuda = device.startswith("cuda")
    if on_cuda != (target == "cuda"):
        raise InvalidArgumentError(
            "target=%r with tensors on %s; cuda runs on cuda tensors, the "
            "other targets on host memory" % (target, device))
    B, S, E = X.shape
    spec = _lib.MhaSpec()
    L = _core.lib()
    if not hasattr(L, "attn_mha_compile"):
        raise UnsupportedError("the loaded libattn has no attention layers "
                               "(attn_mha_compile); update it")
    L.attn_mha_spec_init(ctypes.byref(spec))
    spec.dtype, spec.batch, spec.seq, spec.embed = X.dtype, B, S, E
    spec.heads_q = int(heads)
    spec.heads_kv = int(kv_heads or 0)
    spec.head_dim = int(head_dim or 0)
    spec.value_dim = int(value_dim or 0)
    if kv is not None:
        K = args["kv"]
        if K.shape[0] != B:
            raise InvalidArgumentError("kv has batch %d, x %d" % (K.shape[0], B))
        spec.cross, spec.seq_kv, spec.kv_embed = 1, K.shape[1], K.shape[2]
    spec.fused_qkv, spec.bias, spec.causal = int(fused), int(bool(biases)), \
        int(bool(causal))
    spec.scale = float(scale) if scale is not None else 0.0
    cuda_index = None
    if on_cuda:
        cuda_index = args["x"].obj.device.index
        if cuda_index is None:
            import torch
            cuda_index = torch.cuda.current_device()
    dev_key = ("cuda", cuda_index) if on_cuda else None
    key = (target, dev_key) + tuple(getattr(spec, f) for f, _ in spec._fields_)
    layer = _layers.get(key)
    if layer is None:
        with _core._lock:
            layer = _layers.get(key)
            if layer is None:
                out = ctypes.c_void_p()
                with _core._cuda_device_current(cuda_index):
                    _core._check(L.attn_mha_compile(
                        _core._context(dev_key), ctypes.byref(spec), code,
                        ctypes.byref(out)), "attn_mha_compile")
                layer = _layers[key] = out.value
    # The weights' shapes follow from the spec; the runtime sees only
    # pointers.
    _check_weight_shapes(spec, args, fused)
    return (layer, X.itemsize, (B, S, E), X.obj, on_cuda)


def _check_weight_shapes(spec, args, fused):
    """Each weight and bias has the shape the spec gives it (the runtime
    sees only pointers)."""
    E, Hq = spec.embed, spec.heads_q
    D = spec.head_dim or (E // Hq if E % Hq == 0 else 0)
    Dv = spec.value_dim or D
    Hkv = spec.heads_kv or Hq
    Ekv = spec.kv_embed if spec.cross else E
    qw, kw, vw = Hq * D, Hkv * D, Hkv * Dv
    want = {"w_o": (E, Hq * Dv), "b_o": (E,)}
    if fused:
        want.update(w_qkv=(qw + kw + vw, E), b_qkv=(qw + kw + vw,))
    else:
        want.update(w_q=(qw, E), w_k=(kw, Ekv), w_v=(vw, Ekv), b_q=(qw,),
                    b_k=(kw,), b_v=(vw,))
    for n, shape in want.items():
        if n in args and tuple(args[n].shape) != shape:
            raise InvalidArgumentError(
                "%s has shape %s; this layer (E %d, %d query heads of D %d, "
                "%d key/value heads, Dv %d) needs %s"
                % (n, tuple(args[n].shape), E, Hq, D, Hkv, Dv, shape))
