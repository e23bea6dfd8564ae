# The layer (attn_mha_compile / attn_mha_launch) against nn.MultiheadAttention's
# own formulation written in NumPy float64: x @ W.T + b, heads by
# reshape(B, S, H, D).transpose, softmax attention, heads concatenated by
# transpose + reshape, @ Wo.T + bo. Independent of runtime/reference (which
# uses the same index formulas as the decomposition), so a weight-layout or
# head-order mistake shared by both fails here.
# RUN: %attn_python %s | FileCheck %s
# REQUIRES: numpy
import ctypes

import numpy as np

from attn import _core

L = _core.lib()
i64, c_int, c_double, vp = ctypes.c_int64, ctypes.c_int, ctypes.c_double, ctypes.c_void_p


# The package's mirror of attn_mha_spec / attn_mha_args (python/attn/_lib.py,
# declared on the library it loads).
from attn import _lib
MhaSpec, MhaArgs = _lib.MhaSpec, _lib.MhaArgs
L.attn_last_error.restype = ctypes.c_char_p
ctx = vp()
assert L.attn_context_create(ctypes.byref(ctx)) == 0

rng = np.random.default_rng(7)


def torch_style(x, c, wq, wk, wv, wo, bq, bk, bv, bo, H, Hkv, causal):
    B, S, E = x.shape
    Skv = c.shape[1]
    q = x @ wq.T + bq
    k = c @ wk.T + bk
    v = c @ wv.T + bv
    D, Dv = q.shape[-1] // H, v.shape[-1] // Hkv
    q = q.reshape(B, S, H, D).transpose(0, 2, 1, 3)
    k = k.reshape(B, Skv, Hkv, D).transpose(0, 2, 1, 3)
    v = v.reshape(B, Skv, Hkv, Dv).transpose(0, 2, 1, 3)
    k = np.repeat(k, H // Hkv, axis=1)  # enable_gqa: head h reads h // g
    v = np.repeat(v, H // Hkv, axis=1)
    s = q @ k.transpose(0, 1, 3, 2) / np.sqrt(D)
    if causal:
        i = np.arange(S)[:, None]
        j = np.arange(Skv)[None, :]
        s = np.where(j <= i + (Skv - S), s, -np.inf)
    p = np.exp(s - s.max(-1, keepdims=True))
    p /= p.sum(-1, keepdims=True)
    o = (p @ v).transpose(0, 2, 1, 3).reshape(B, S, H * Dv)
    return o @ wo.T + bo


def run(name, dtype, B, S, E, H, Hkv, D=None, Dv=None, Skv=None, Ekv=None,
        fused=False, causal=False, tol=None):
    D = D or E // H
    Dv = Dv or D
    cross = Skv is not None or Ekv is not None
    Skv = Skv or S
    Ekv = Ekv or E
    npdt = {1: np.float16, 3: np.float32}[dtype]
    u = lambda *s, a=1.0: (rng.uniform(-a, a, s)).astype(npdt)
    x = u(B, S, E)
    c = u(B, Skv, Ekv) if cross else x
    wq, wk, wv = u(H * D, E, a=E ** -0.5), u(Hkv * D, Ekv, a=Ekv ** -0.5), u(Hkv * Dv, Ekv, a=Ekv ** -0.5)
    wo = u(E, H * Dv, a=(H * Dv) ** -0.5)
    bq, bk, bv, bo = u(H * D), u(Hkv * D), u(Hkv * Dv), u(E)
    y = np.full((B, S, E), np.nan, dtype=npdt)
    spec = MhaSpec()
    L.attn_mha_spec_init(ctypes.byref(spec))
    spec.dtype, spec.batch, spec.seq, spec.embed = dtype, B, S, E
    spec.heads_q, spec.heads_kv, spec.head_dim, spec.value_dim = H, Hkv, D, Dv
    spec.cross, spec.seq_kv, spec.kv_embed = int(cross), Skv if cross else 0, Ekv if cross else 0
    spec.fused_qkv, spec.bias, spec.causal = int(fused), 1, int(causal)
    k = vp()
    st = L.attn_mha_compile(ctx, ctypes.byref(spec), 0, ctypes.byref(k))
    assert st == 0, L.attn_last_error()
    a = MhaArgs()
    keep = []
    def ptr(arr):
        arr = np.ascontiguousarray(arr)
        keep.append(arr)
        return arr.ctypes.data
    a.x = ptr(x)
    if cross:
        a.kv = ptr(c)
    if fused:
        a.w_qkv = ptr(np.concatenate([wq, wk, wv]))
        a.b_qkv = ptr(np.concatenate([bq, bk, bv]))
    else:
        a.w_q, a.w_k, a.w_v = ptr(wq), ptr(wk), ptr(wv)
        a.b_q, a.b_k, a.b_v = ptr(bq), ptr(bk), ptr(bv)
    a.w_o, a.b_o = ptr(wo), ptr(bo)
    a.y = y.ctypes.data
    st = L.attn_mha_launch(k, ctypes.byref(a))
    assert st == 0, L.attn_last_error()
    f = lambda t: t.astype(np.float64)
    ref = torch_style(f(x), f(c), f(wq), f(wk), f(wv), f(wo), f(bq), f(bk),
                      f(bv), f(bo), H, Hkv, causal)
    err = np.linalg.norm(f(y) - ref) / np.linalg.norm(ref)
    ok = np.isfinite(y).all() and err <= tol
    print("%s: %s (rel. L2 %.2e, tol %.0e)" % (name, "ok" if ok else "FAILED", err, tol))
    assert ok


# CHECK: self f32: ok
run("self f32", 3, B=2, S=19, E=64, H=4, Hkv=4, tol=1e-5)
# CHECK: fused gqa causal f32: ok
run("fused gqa causal f32", 3, B=1, S=33, E=48, H=6, Hkv=2, D=8, Dv=12,
    fused=True, causal=True, tol=1e-5)
# CHECK: cross f32: ok
run("cross f32", 3, B=1, S=9, E=32, H=4, Hkv=1, Skv=70, Ekv=24, causal=True,
    tol=1e-5)
# CHECK: self f16: ok
run("self f16", 1, B=1, S=70, E=64, H=4, Hkv=4, causal=True, tol=2e-3)


# On cuda the JIT decomposes the layer first and checks the decomposition's
# attn.sdpa against the attention the runtime's plan launches (cuda's
# layerAttentionSpec); without a GPU the compile then stops at the driver
# (ATTN_ERROR_UNAVAILABLE = 5), never at that check (ATTN_ERROR_COMPILE).
# The layers on a GPU: bench/python/device_torch.sh.
def cuda_plan(name, **fields):
    spec = MhaSpec()
    L.attn_mha_spec_init(ctypes.byref(spec))
    spec.dtype, spec.batch, spec.seq, spec.embed, spec.heads_q = 1, 2, 40, 64, 4
    for f, v in fields.items():
        setattr(spec, f, v)
    k = vp()
    st = L.attn_mha_compile(ctx, ctypes.byref(spec), 1, ctypes.byref(k))
    msg = L.attn_last_error().decode()
    ok = st == 0 or (st == 5 and "cuda" in msg)
    print("cuda %s: %s" % (name, "ok" if ok else "FAILED (%d: %s)" % (st, msg)))
    assert ok


# CHECK: cuda self: ok
cuda_plan("self")
# CHECK: cuda cross gqa dv scale causal: ok
cuda_plan("cross gqa dv scale causal", cross=1, seq_kv=70, kv_embed=24,
          heads_kv=2, value_dim=12, scale=0.3, causal=1)
# CHECK: cuda fused bias bf16: ok
cuda_plan("fused bias bf16", dtype=2, fused_qkv=1, bias=1)


# attn.mha, the package's layer API, on NumPy arrays: the same float64
# formulation, fused and separate weights, GQA cross-attention, and its
# refusals (a shape the spec does not give, partial biases, mixed dtypes).
import attn


def api(name, dtype, B, S, E, H, Hkv, D=None, Dv=None, Skv=None, Ekv=None,
        fused=False, causal=False, bias=True, tol=1e-5):
    D = D or E // H
    Dv = Dv or D
    cross = Skv is not None or Ekv is not None
    Skv, Ekv = Skv or S, Ekv or E
    u = lambda *s, a=1.0: (rng.uniform(-a, a, s)).astype(dtype)
    x = u(B, S, E)
    c = u(B, Skv, Ekv) if cross else x
    wq, wk, wv = u(H * D, E, a=E ** -0.5), u(Hkv * D, Ekv, a=Ekv ** -0.5), u(Hkv * Dv, Ekv, a=Ekv ** -0.5)
    wo = u(E, H * Dv, a=(H * Dv) ** -0.5)
    bq, bk, bv, bo = u(H * D), u(Hkv * D), u(Hkv * Dv), u(E)
    kw = dict(w_o=wo, heads=H, kv_heads=Hkv, head_dim=D, value_dim=Dv,
              causal=causal, kv=c if cross else None)
    if fused:
        kw.update(w_qkv=np.concatenate([wq, wk, wv]))
    else:
        kw.update(w_q=wq, w_k=wk, w_v=wv)
    if bias:
        kw.update(b_o=bo)
        if fused:
            kw.update(b_qkv=np.concatenate([bq, bk, bv]))
        else:
            kw.update(b_q=bq, b_k=bk, b_v=bv)
    else:
        bq, bk, bv, bo = (np.zeros_like(t) for t in (bq, bk, bv, bo))
    y = attn.mha(x, **kw)
    f = lambda t: t.astype(np.float64)
    ref = torch_style(f(x), f(c), f(wq), f(wk), f(wv), f(wo), f(bq), f(bk),
                      f(bv), f(bo), H, Hkv, causal)
    err = np.linalg.norm(f(y) - ref) / np.linalg.norm(ref)
    ok = y.shape == x.shape and y.dtype == x.dtype and np.isfinite(y).all() \
        and err <= tol
    print("api %s: %s (rel. L2 %.2e, tol %.0e)" % (name, "ok" if ok else "FAILED", err, tol))
    assert ok
    return kw, x


# CHECK: api fused causal f32: ok
api("fused causal f32", np.float32, B=2, S=21, E=48, H=4, Hkv=4, fused=True,
    causal=True)
# CHECK: api cross gqa no bias f32: ok
kw, x = api("cross gqa no bias f32", np.float32, B=1, S=9, E=32, H=4, Hkv=2,
            Dv=6, Skv=40, Ekv=24, bias=False)
# CHECK: api separate f16: ok
api("separate f16", np.float16, B=1, S=30, E=64, H=4, Hkv=4, tol=2e-3)


def refused(name, fn):
    try:
        fn()
    except attn.InvalidArgumentError as e:
        print("api refuses %s: %s" % (name, e))
        return
    print("api refuses %s: FAILED (accepted)" % name)
    raise AssertionError(name)


# CHECK: api refuses a short weight: w_q has shape (4, 32)
refused("a short weight", lambda: attn.mha(x, **dict(kw, w_q=kw["w_q"][:4])))
# CHECK: api refuses partial biases: biases b_o given
refused("partial biases", lambda: attn.mha(x, **dict(kw, b_o=np.zeros(32, np.float32))))
# CHECK: api refuses mixed dtypes: {{.*}}share one dtype
refused("mixed dtypes", lambda: attn.mha(x.astype(np.float16), **kw))
# CHECK: api refuses a strided input: x is not dense row-major
refused("a strided input", lambda: attn.mha(np.ascontiguousarray(np.concatenate([x, x], 2))[:, :, ::2], **kw))
