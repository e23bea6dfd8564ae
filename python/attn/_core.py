"""attn.sdpa on NumPy arrays and PyTorch tensors: validation, the kernel
cache, the launch. See docs/Python.md."""
import ctypes
import math
import operator
import os
import sys
import threading

from . import _lib
from ._errors import (InvalidArgumentError, LibraryNotFoundError,
                      from_status)

_U64 = 1 << 64

# --- the library, contexts and the kernel cache ------------------------------


def lib():
    try:
        return _lib.load()
    except _lib.LibraryNotFound as e:
        raise LibraryNotFoundError(str(e)) from None


def _check(status, what):
    if status != _lib.OK:
        msg = lib().attn_last_error().decode("utf-8", "replace")
        raise from_status(status, msg or "%s failed (status %d)" % (what, status))


_lock = threading.Lock()
_contexts = {}  # device key -> attn_context* (c_void_p)
_kernels = {}   # (target, device key, spec key) -> attn_kernel* (int)
_POLICIES = ("auto", "dynamic", "static")
_policy = os.environ.get("ATTN_PY_SHAPES", "auto")
if _policy not in _POLICIES:
    _policy = "auto"
_static_shape = {}  # (target, device, spec key w/o dims) -> dims of its static kernel


def set_shape_policy(policy):
    """How B, Hq, Hkv, Sq, Skv enter a new kernel's spec:

    - 'auto' (the default): a spec's first shape gets a kernel compiled for
      exactly that shape (static: quick to compile, fastest to run); any
      other shape of the same spec gets one kernel with those dimensions
      dynamic, shared by every later shape. A fixed-shape workload compiles
      once; a varying one (decoding, bucketed lengths) twice.
    - 'dynamic': one kernel per spec for every shape.
    - 'static': one kernel per shape.

    Kernels already compiled stay cached. ATTN_PY_SHAPES=auto|dynamic|static
    in the environment sets it at import. Returns the previous policy."""
    global _policy
    if policy not in _POLICIES:
        raise InvalidArgumentError("shape policy %r; expected one of %s"
                                   % (policy, ", ".join(_POLICIES)))
    old, _policy = _policy, policy
    return old


def _dims_for(target, dev_key, base, shape):
    """The spec's (batch, heads_q, heads_kv, seq_q, seq_kv) for a call of
    `shape` under the current policy."""
    if _policy == "static":
        return shape
    if _policy == "dynamic":
        return (_lib.DYNAMIC,) * 5
    first = _static_shape.setdefault((target, dev_key, base), shape)
    return shape if first == shape else (_lib.DYNAMIC,) * 5


def _context(device):
    """One attn_context per device key: None for host memory (the cpu and
    vulkan targets), ('cuda', index) for each CUDA device, so that a
    kernel, which the cuda runtime loads into the device current when it
    is compiled, is only ever used on that device. Contexts live until the
    process ends (kernels are handed out by pointer)."""
    ctx = _contexts.get(device)
    if ctx is None:
        L = lib()
        ctx = ctypes.c_void_p()
        _check(L.attn_context_create(ctypes.byref(ctx)), "attn_context_create")
        _contexts[device] = ctx
    return ctx


def cache_info():
    """{'kernels': kernels this package holds (one per spec, target and
    device), 'compiles': the runtime's attn_context_cache_size summed over
    this package's contexts (compiles that were not cache hits)}."""
    with _lock:
        L = lib() if _contexts else None
        compiles = sum(L.attn_context_cache_size(c) for c in _contexts.values())
        return {"kernels": len(_kernels), "compiles": int(compiles)}


def available(target="cpu"):
    """(True, "") when `target` ('cpu', 'cuda', 'vulkan') can run here, else
    (False, the runtime's reason)."""
    t = _target_code(target)
    with _lock:
        ctx = _context(("cuda", 0) if target == "cuda" else None)
    L = lib()
    st = L.attn_target_available(ctx, t)
    if st == _lib.OK:
        return True, ""
    return False, L.attn_last_error().decode("utf-8", "replace")


def _target_code(target):
    if target not in _lib.TARGETS:
        raise InvalidArgumentError(
            "target=%r; expected None (from the tensors), 'cpu', 'cuda' or "
            "'vulkan'" % (target,))
    return _lib.TARGETS[target]


def _kernel(target, device, key, fill, cuda_index=None):
    """The attn_kernel* for (target, device, key), compiled on first use;
    fill(spec) sets the spec's fields."""
    full = (target, device, key)
    k = _kernels.get(full)
    if k is not None:
        return k
    with _lock:
        k = _kernels.get(full)
        if k is not None:
            return k
        L = lib()
        ctx = _context(device)
        spec = _lib.Spec()
        L.attn_spec_init(ctypes.byref(spec))
        fill(spec)
        out = ctypes.c_void_p()
        with _cuda_device_current(cuda_index):
            _check(L.attn_compile(ctx, ctypes.byref(spec),
                                  _lib.TARGETS[target], ctypes.byref(out)),
                   "attn_compile")
        _kernels[full] = out.value
        return out.value


class _cuda_device_current:
    """Makes CUDA device `index`'s primary context current on this thread
    while a kernel is compiled: the cuda runtime loads the module into the
    primary context of the device current at attn_compile (device 0 when
    none is), which need not be the tensors' device on this thread."""

    def __init__(self, index):
        self.index = index
        self.pushed = None

    def __enter__(self):
        if self.index is None:
            return self
        cu = _libcuda()
        if cu is None:  # fall back on torch's notion of the current device
            import torch
            self.torch_ctx = torch.cuda.device(self.index)
            self.torch_ctx.__enter__()
            return self
        dev = ctypes.c_int()
        ctx = ctypes.c_void_p()
        if cu.cuDeviceGet(ctypes.byref(dev), self.index) != 0 or \
           cu.cuDevicePrimaryCtxRetain(ctypes.byref(ctx), dev) != 0:
            raise InvalidArgumentError(
                "cannot make CUDA device %d current" % self.index)
        if cu.cuCtxPushCurrent_v2(ctx) != 0:
            cu.cuDevicePrimaryCtxRelease_v2(dev)
            raise InvalidArgumentError(
                "cannot make CUDA device %d current" % self.index)
        self.pushed = (cu, dev)
        return self

    def __exit__(self, *exc):
        if self.pushed is not None:
            cu, dev = self.pushed
            ignored = ctypes.c_void_p()
            cu.cuCtxPopCurrent_v2(ctypes.byref(ignored))
            cu.cuDevicePrimaryCtxRelease_v2(dev)
        elif getattr(self, "torch_ctx", None) is not None:
            self.torch_ctx.__exit__(*exc)
        return False


_cu = None


def _libcuda():
    global _cu
    if _cu is None:
        try:
            cu = ctypes.CDLL("libcuda.so.1")
            for f in ("cuDeviceGet", "cuDevicePrimaryCtxRetain",
                      "cuCtxPushCurrent_v2", "cuCtxPopCurrent_v2",
                      "cuDevicePrimaryCtxRelease_v2"):
                getattr(cu, f).restype = ctypes.c_int
            cu.cuDeviceGet.argtypes = [ctypes.POINTER(ctypes.c_int), ctypes.c_int]
            cu.cuDevicePrimaryCtxRetain.argtypes = [
                ctypes.POINTER(ctypes.c_void_p), ctypes.c_int]
            cu.cuCtxPushCurrent_v2.argtypes = [ctypes.c_void_p]
            cu.cuCtxPopCurrent_v2.argtypes = [ctypes.POINTER(ctypes.c_void_p)]
            cu.cuDevicePrimaryCtxRelease_v2.argtypes = [ctypes.c_int]
            _cu = cu
        except (OSError, AttributeError):
            _cu = False
    return _cu or None


# --- describing the inputs -----------------------------------------------------
_NAMES = {_lib.DTYPE_F16: "float16", _lib.DTYPE_BF16: "bfloat16",
          _lib.DTYPE_F32: "float32", _lib.DTYPE_BOOL: "bool"}


class _Arg:
    """One input as the runtime sees it: data pointer, shape and element
    strides (rank 4 after adding a unit batch to a rank-3 input), the attn
    dtype, where it lives, and the object that keeps the memory alive."""
    __slots__ = ("name", "obj", "kind", "device", "dtype", "shape",
                 "strides", "data", "itemsize")

    def fields(self):
        return (self.data, *self.shape, *self.strides)


def _numpy_dtype(a):
    import numpy as np
    dt = a.dtype
    if dt == np.float16:
        return _lib.DTYPE_F16
    if dt == np.float32:
        return _lib.DTYPE_F32
    if dt == np.bool_:
        return _lib.DTYPE_BOOL
    if dt.name == "bfloat16":  # ml_dtypes.bfloat16
        return _lib.DTYPE_BF16
    return None


def _torch_dtype(t):
    import torch
    return {torch.float16: _lib.DTYPE_F16, torch.bfloat16: _lib.DTYPE_BF16,
            torch.float32: _lib.DTYPE_F32, torch.bool: _lib.DTYPE_BOOL}.get(t.dtype)


def _is_torch(x):
    torch = sys.modules.get("torch")
    return torch is not None and isinstance(x, torch.Tensor)


def _as_array(name, x):
    """x as an np.ndarray without a copy, or a TypeError."""
    import numpy as np
    if isinstance(x, np.ndarray):
        return x
    if hasattr(x, "__array_interface__") or isinstance(x, memoryview):
        a = np.asarray(x)
        if isinstance(x, memoryview) or a.__array_interface__["data"][0] == \
                x.__array_interface__["data"][0]:
            return a
    if hasattr(x, "__dlpack__") and hasattr(np, "from_dlpack"):
        try:
            return np.from_dlpack(x)
        except Exception as e:  # not host memory, or a dtype NumPy lacks
            raise TypeError("%s: cannot view %s through DLPack on the host "
                            "(%s)" % (name, type(x).__name__, e)) from None
    raise TypeError(
        "%s must be a numpy.ndarray or a torch.Tensor (or expose the buffer "
        "protocol, __array_interface__ or host DLPack), got %s"
        % (name, type(x).__name__))


def _describe(name, x, is_mask=False):
    """An _Arg for x (numpy or torch), with its own checks: dtype, positive
    integral strides, contiguous last dimension."""
    a = _Arg()
    a.name = name
    if _is_torch(x):
        a.kind = "torch"
        a.obj = x
        dt = _torch_dtype(x)
        a.device = str(x.device)
        if x.device.type not in ("cpu", "cuda"):
            raise InvalidArgumentError(
                "%s is on device %s; attn takes cpu and cuda tensors"
                % (name, x.device))
        shape = tuple(int(s) for s in x.shape)
        strides = tuple(int(s) for s in x.stride())
        a.itemsize = x.element_size()
        a.data = x.data_ptr()
        tname = str(x.dtype).replace("torch.", "")
    else:
        x = _as_array(name, x)
        a.kind = "numpy"
        a.obj = x
        a.device = "cpu"
        dt = _numpy_dtype(x)
        shape = tuple(int(s) for s in x.shape)
        a.itemsize = x.itemsize
        a.data = x.__array_interface__["data"][0]
        tname = x.dtype.name
        strides = []
        for d, s in enumerate(x.strides):
            if s % x.itemsize and shape[d] != 1:
                raise InvalidArgumentError(
                    "%s.strides[%d] is %d bytes, not a multiple of its %d-byte "
                    "elements; attn takes strides in whole elements (copy it "
                    "with numpy.ascontiguousarray)" % (name, d, s, x.itemsize))
            strides.append(s // x.itemsize)
        strides = tuple(strides)
    allowed = ("float16, float32, bfloat16" + (", bool" if is_mask else "")
               if a.kind == "torch" else
               "float16, float32 (bfloat16 with ml_dtypes)" +
               (", bool" if is_mask else ""))
    if dt is None or (dt == _lib.DTYPE_BOOL and not is_mask):
        raise InvalidArgumentError(
            "%s.dtype is %s; attn takes %s" % (name, tname, allowed))
    a.dtype = dt
    if a.data % a.itemsize:
        raise InvalidArgumentError(
            "%s's data (0x%x) is not aligned to its %d-byte elements"
            % (name, a.data, a.itemsize))
    a.shape, a.strides = shape, strides
    return a


def _fix_strides(a, is_mask=False):
    """Checks and canonicalizes a rank-4 _Arg's strides: an extent-1
    dimension's stride is irrelevant (set to 1); other strides must be
    positive; the last dimension contiguous."""
    shape, strides = list(a.shape), list(a.strides)
    for d in range(4):
        if shape[d] == 1:
            strides[d] = 1
    if strides[3] != 1:
        raise InvalidArgumentError(
            "%s's last dimension is not contiguous (stride %d elements, "
            "shape %s, strides %s); attn needs stride 1 there: pass a "
            "contiguous copy (numpy.ascontiguousarray / .contiguous())"
            % (a.name, strides[3], _fmt(a.shape), _fmt(a.strides)))
    for d in range(3):
        if strides[d] <= 0 and not is_mask:
            raise InvalidArgumentError(
                "%s.strides[%d] is %d (shape %s); attn takes positive strides "
                "(no broadcast or reversed views of q, k, v): pass a "
                "contiguous copy" % (a.name, d, strides[d], _fmt(a.shape)))
    a.shape, a.strides = tuple(shape), tuple(strides)


def _fmt(t):
    return "[" + ", ".join(str(x) for x in t) + "]"


def _unsqueeze(a, rank):
    """Leading unit dimensions up to `rank` (a view: no copy)."""
    n = rank - len(a.shape)
    if n > 0:
        a.shape = (1,) * n + a.shape
        a.strides = (1,) * n + a.strides


def _prepare_mask(m, B, Hq, Sq, Skv):
    """The mask as [1|B, 1|Hq, Sq, Skv] the runtime takes. Dimensions
    broadcast by stride 0 become extent 1 (no copy). A mask broadcast along
    Sq or Skv (extent 1 or stride 0 there, e.g. a key-padding mask
    [B, 1, 1, Skv]) cannot be described to the runtime, which broadcasts
    only B and H: it is expanded once, a copy of [1|B, 1|Hq, Sq, Skv]."""
    if len(m.shape) > 4:
        raise InvalidArgumentError(
            "mask has rank %d (shape %s); attn takes masks of rank at most 4 "
            "broadcastable to [B, Hq, Sq, Skv]" % (len(m.shape), _fmt(m.shape)))
    _unsqueeze(m, 4)
    shape, strides = list(m.shape), list(m.strides)
    want = (B, Hq, Sq, Skv)
    names = ("B", "Hq", "Sq", "Skv")
    for d in range(4):
        if shape[d] not in (1, want[d]):
            raise InvalidArgumentError(
                "mask.shape %s does not broadcast to [B, Hq, Sq, Skv] = %s: "
                "dimension %d (%s) is %d, expected 1 or %d"
                % (_fmt(m.shape), _fmt(want), d, names[d], shape[d], want[d]))
        if strides[d] == 0 or shape[d] == 1:
            shape[d], strides[d] = 1, 1
    if any(s < 0 for s in strides):
        raise InvalidArgumentError(
            "mask has a negative stride (strides %s); pass a contiguous copy"
            % _fmt(m.strides))
    if shape[2] != Sq or shape[3] != Skv:
        # Broadcast along Sq or Skv: materialize [shape[0], shape[1], Sq, Skv].
        full = (shape[0], shape[1], Sq, Skv)
        obj = m.obj
        if m.kind == "torch":
            while obj.dim() < 4:
                obj = obj.unsqueeze(0)
            obj = obj[:shape[0], :shape[1]].expand(full).contiguous()
        else:
            import numpy as np
            while obj.ndim < 4:
                obj = obj[None]
            obj = np.ascontiguousarray(
                np.broadcast_to(obj[:shape[0], :shape[1]], full))
        return _prepare_mask(_describe("mask", obj, is_mask=True),
                             B, Hq, Sq, Skv)
    m.shape, m.strides = tuple(shape), tuple(strides)
    _fix_strides(m, is_mask=True)
    return m


def mixed_inputs_error(named_kinds):
    """The error for torch tensors mixed with other arrays: (name, what
    it is) for each input."""
    return InvalidArgumentError(
        "mixed inputs: " + ", ".join("%s is a %s" % nk for nk in named_kinds)
        + "; pass all NumPy arrays or all torch tensors")


def _normalize(q, k, v, mask, causal, scale, dropout_p, seed, return_lse,
               enable_gqa, target):
    """Validates everything that can be checked without the runtime and
    returns a plan: the _Args, the target, the device key, and the spec."""
    Q, K, V = (_describe("q", q), _describe("k", k), _describe("v", v))
    M = _describe("mask", mask, is_mask=True) if mask is not None else None
    args = [Q, K, V] + ([M] if M is not None else [])

    # One kind of object, one device.
    kinds = {a.kind for a in args}
    if len(kinds) > 1:
        raise mixed_inputs_error(
            (a.name, "torch.Tensor" if a.kind == "torch" else "numpy array")
            for a in args)
    devices = {a.device for a in args}
    if len(devices) > 1:
        raise InvalidArgumentError(
            "inputs on different devices: " + ", ".join(
                "%s on %s" % (a.name, a.device) for a in args) +
            "; attn needs q, k, v and the mask on one device")
    device = Q.device
    on_cuda = device.startswith("cuda")
    if target is None:
        target = "cuda" if on_cuda else "cpu"
    _target_code(target)
    if target == "cuda" and not on_cuda:
        raise InvalidArgumentError(
            "target='cuda' needs torch CUDA tensors; q is %s on %s"
            % ("a NumPy array" if Q.kind == "numpy" else "a torch tensor",
               device))
    if target in ("cpu", "vulkan") and on_cuda:
        raise InvalidArgumentError(
            "target=%r runs on host memory; q is on %s (use target='cuda' or "
            "None)" % (target, device))

    # Ranks: all 3 ([H, S, D]) or all 4 ([B, H, S, D]).
    ranks = [len(a.shape) for a in (Q, K, V)]
    if ranks[0] not in (3, 4) or len(set(ranks)) != 1:
        raise InvalidArgumentError(
            "q, k, v have ranks %d, %d, %d (shapes %s, %s, %s); attn takes "
            "all rank 4 [B, H, S, D] or all rank 3 [H, S, D]"
            % (tuple(ranks) + (_fmt(Q.shape), _fmt(K.shape), _fmt(V.shape))))
    rank = ranks[0]
    for a in (Q, K, V):
        _unsqueeze(a, 4)
        _fix_strides(a)

    # dtypes.
    if not (Q.dtype == K.dtype == V.dtype):
        raise InvalidArgumentError(
            "q, k, v dtypes differ: %s, %s, %s; attn needs one dtype"
            % (_NAMES[Q.dtype], _NAMES[K.dtype], _NAMES[V.dtype]))

    B, Hq, Sq, D = Q.shape
    Bk, Hkv, Skv, Dk = K.shape
    Bv, Hv, Sv, Dv = V.shape
    if Bk != B or Bv != B:
        raise InvalidArgumentError(
            "batch sizes differ: q %d, k %d, v %d" % (B, Bk, Bv))
    if Dk != D:
        raise InvalidArgumentError(
            "head dims differ: q.shape[-1] is %d but k.shape[-1] is %d"
            % (D, Dk))
    if Hv != Hkv or Sv != Skv:
        raise InvalidArgumentError(
            "k is %s but v is %s: they need the same heads and length"
            % (_fmt(K.shape[4 - rank:]), _fmt(V.shape[4 - rank:])))
    if Hq != Hkv:
        if not enable_gqa:
            raise InvalidArgumentError(
                "q has %d heads but k and v have %d; pass enable_gqa=True "
                "for grouped-query attention (as in PyTorch)" % (Hq, Hkv))
        if Hq % Hkv:
            raise InvalidArgumentError(
                "enable_gqa=True needs q's heads (%d) to be a multiple of "
                "k's and v's (%d)" % (Hq, Hkv))
    for a in (Q, K, V):
        if 0 in a.shape:
            raise InvalidArgumentError(
                "%s has an empty dimension (shape %s); attn takes extents > 0"
                % (a.name, _fmt(a.shape[4 - rank:])))

    if M is not None:
        M = _prepare_mask(M, B, Hq, Sq, Skv)
        mask_kind = _lib.MASK_BOOL if M.dtype == _lib.DTYPE_BOOL \
            else _lib.MASK_ADDITIVE
    else:
        mask_kind = _lib.MASK_NONE

    # Scalars.
    causal = bool(causal)
    if scale is None:
        scale = 0.0
    else:
        try:
            scale = float(scale)
        except (TypeError, ValueError):
            raise TypeError("scale must be a float or None, got %s"
                            % type(scale).__name__) from None
        if scale == 0.0:
            raise InvalidArgumentError(
                "scale=0.0 is not supported: attn's C API reads a scale of 0 "
                "as the default 1/sqrt(D); pass None for the default")
    try:
        dropout_p = float(dropout_p)
    except (TypeError, ValueError):
        raise TypeError("dropout_p must be a float, got %s"
                        % type(dropout_p).__name__) from None
    if not (0.0 <= dropout_p < 1.0):
        raise InvalidArgumentError(
            "dropout_p is %r; it must be in [0, 1)" % dropout_p)
    seed = check_seed(seed)

    cuda_index = None
    if on_cuda:
        cuda_index = Q.obj.device.index
        if cuda_index is None:
            import torch
            cuda_index = torch.cuda.current_device()
        dev_key = ("cuda", cuda_index)
    else:
        dev_key = None

    base = (Q.dtype, D, Dv, bool(causal), mask_kind,
            M.dtype if M is not None else _lib.DTYPE_BOOL, scale, dropout_p,
            bool(return_lse))
    with _lock:
        dims = _dims_for(target, dev_key, base, (B, Hq, Hkv, Sq, Skv))
    key = (dims,) + base
    return dict(Q=Q, K=K, V=V, M=M, rank=rank, target=target,
                dev_key=dev_key, cuda_index=cuda_index, key=key, seed=seed,
                out_shape=(B, Hq, Sq, Dv), lse_shape=(B, Hq, Sq))


def check_seed(seed):
    """The seed as an unsigned 64-bit int: 0 <= seed < 2**64, or a
    negative one down to -2**63, read as its two's complement."""
    try:
        seed = operator.index(seed)
    except TypeError:
        raise TypeError("seed must be an int, got %s"
                        % type(seed).__name__) from None
    if not (-(1 << 63) <= seed < _U64):
        raise InvalidArgumentError(
            "seed is %d; it must fit 64 bits (0 <= seed < 2**64; a negative "
            "one down to -2**63 is read as its two's complement)" % seed)
    return seed % _U64


def _fill(key):
    dims, dtype, D, Dv, causal, mask_kind, mask_dtype, scale, dropout_p, \
        return_lse = key

    def fill(spec):
        spec.dtype = dtype
        (spec.batch, spec.heads_q, spec.heads_kv, spec.seq_q,
         spec.seq_kv) = dims
        spec.head_dim, spec.value_dim = D, Dv
        spec.causal = int(causal)
        spec.mask, spec.mask_dtype = mask_kind, mask_dtype
        spec.scale, spec.dropout_p = scale, dropout_p
        spec.return_lse = int(return_lse)
    return fill


def _out_fields(x, shape):
    """(data, shape, strides) fields of a freshly allocated contiguous
    output of `shape` (rank 4 for out, rank 3 for lse)."""
    strides = []
    acc = 1
    for s in reversed(shape):
        strides.append(acc)
        acc *= s
    strides = tuple(reversed(strides))
    if _is_torch(x):
        data = x.data_ptr()
    else:
        data = x.__array_interface__["data"][0]
    if len(shape) == 3:
        return (data, *shape, 0, *strides, 0)
    return (data, *shape, *strides)


def run(plan, out, lse, stream=None):
    """Compiles (or fetches) the plan's kernel and launches it into the
    given out [B, Hq, Sq, Dv] and lse [B, Hq, Sq] (contiguous; lse may be
    None when not requested)."""
    kernel = _kernel(plan["target"], plan["dev_key"], plan["key"],
                     _fill(plan["key"]), plan["cuda_index"])
    M = plan["M"]
    args = _lib.pack_launch_args(
        plan["Q"].fields(), plan["K"].fields(), plan["V"].fields(),
        M.fields() if M is not None else _lib.NO_TENSOR,
        _out_fields(out, plan["out_shape"]),
        _out_fields(lse, plan["lse_shape"]) if lse is not None
        else _lib.NO_TENSOR,
        plan["seed"], stream)
    _check(lib().attn_launch(kernel, ctypes.byref(args)), "attn_launch")


def _numpy_empty(shape, dtype):
    """The NumPy outputs' allocation (the tests replace it with one that
    fills them with NaN, so that an element the kernel did not write
    cannot pass)."""
    import numpy as np
    return np.empty(shape, dtype=dtype)


def sdpa_impl(q, k, v, mask, causal, scale, dropout_p, seed, return_lse,
              enable_gqa, target):
    """Validates, allocates out (and lse when asked) with q's rank (3 or 4),
    contiguous, and runs. Returns (out, lse or None)."""
    plan = _normalize(q, k, v, mask, causal, scale, dropout_p, seed,
                      return_lse, enable_gqa, target)
    Q = plan["Q"]
    drop = 4 - plan["rank"]
    out_shape, lse_shape = plan["out_shape"][drop:], plan["lse_shape"][drop:]
    stream = None
    if Q.kind == "torch":
        import torch
        out = torch.empty(out_shape, dtype=Q.obj.dtype, device=Q.obj.device)
        lse = torch.empty(lse_shape, dtype=torch.float32,
                          device=Q.obj.device) if return_lse else None
        if plan["target"] == "cuda":
            stream = torch.cuda.current_stream(Q.obj.device).cuda_stream
    else:
        import numpy as np
        out = _numpy_empty(out_shape, Q.obj.dtype)
        lse = _numpy_empty(lse_shape, np.float32) if return_lse else None
    run(plan, out, lse, stream)
    return out, lse


def scale_default(d):
    return 1.0 / math.sqrt(d)
