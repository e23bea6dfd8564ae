# attn.sdpa(..., target='vulkan') on NumPy arrays (host memory, which the
# Vulkan backend stages in and out), here on Mesa's lavapipe: f32 with lse,
# f16 causal with a bool mask over BSHD strides, GQA, against the float64
# reference (f32 2e-5, f16 2e-3, lse 1e-4); outputs allocated as NaN. Then
# attn.mha(..., target='vulkan') against a float64 layer.
# REQUIRES: vulkan, numpy
# RUN: %attn_python %s | FileCheck %s
import os
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "Inputs"))
import ref  # noqa: E402

import attn  # noqa: E402
import attn._core  # noqa: E402

ok, why = attn.available("vulkan")
if not ok:  # lit's probe found a device; say why this one did not
    print("vulkan unavailable to the Python package: " + why)
    raise SystemExit(1)
attn._core._numpy_empty = lambda shape, dtype: np.full(shape, np.nan, dtype)
rng = np.random.default_rng()

B, Hq, Hkv, Sq, Skv, D = 2, 4, 2, 21, 40, 32
q = ref.rand(rng, (B, Hq, Sq, D), np.float32)
k = ref.rand(rng, (B, Hkv, Skv, D), np.float32)
v = ref.rand(rng, (B, Hkv, Skv, D), np.float32)
out, lse = attn.sdpa(q, k, v, enable_gqa=True, return_lse=True, target="vulkan")
want, want_lse = ref.sdpa(q, k, v)
e = ref.close("vulkan f32 out", out, want, 2e-5)
ref.close("vulkan f32 lse", lse, want_lse, 1e-4)
print("PASS vulkan f32 gqa lse (max err %.1e)" % e)
# CHECK: PASS vulkan f32 gqa lse

qs = ref.rand(rng, (B, Sq, Hkv, D), np.float16).transpose(0, 2, 1, 3)
ks = ref.rand(rng, (B, Skv, Hkv, D), np.float16).transpose(0, 2, 1, 3)
m = rng.random((Sq, Skv)) < 0.8
out = attn.sdpa(qs, ks, ks, mask=m, causal=True, target="vulkan")
want, _ = ref.sdpa(qs, ks, ks, mask=m, causal=True)
e = ref.close("vulkan f16 out", out, want, 2e-3)
cpu = attn.sdpa(qs, ks, ks, mask=m, causal=True, target="cpu")
ref.close("vulkan vs cpu", out, cpu, 2e-3)
print("PASS vulkan f16 causal bool mask BSHD (max err %.1e)" % e)
# CHECK: PASS vulkan f16 causal bool mask BSHD

# The layer (attn.mha, target='vulkan'): GQA with biases, f32, against
# nn.MultiheadAttention's formulation in float64 (x @ W.T + b, heads by
# reshape, the reference attention, concatenated back), 2e-5.
E, S, H, Hk = 64, 19, 4, 2
Dh = E // H
x = ref.rand(rng, (2, S, E), np.float32)
w_q, w_k, w_v = (ref.rand(rng, (h * Dh, E), np.float32) * 0.125
                 for h in (H, Hk, Hk))
w_o = ref.rand(rng, (E, E), np.float32) * 0.125
b_q, b_k, b_v, b_o = (ref.rand(rng, (n,), np.float32)
                      for n in (H * Dh, Hk * Dh, Hk * Dh, E))
y = attn.mha(x, w_q=w_q, w_k=w_k, w_v=w_v, w_o=w_o, b_q=b_q, b_k=b_k,
             b_v=b_v, b_o=b_o, heads=H, kv_heads=Hk, target="vulkan")
f = np.float64
def heads(t, n):
    return t.reshape(2, S, n, Dh).transpose(0, 2, 1, 3)
q64 = heads(x.astype(f) @ w_q.astype(f).T + b_q, H)
k64 = heads(x.astype(f) @ w_k.astype(f).T + b_k, Hk)
v64 = heads(x.astype(f) @ w_v.astype(f).T + b_v, Hk)
o64, _ = ref.sdpa(q64, k64, v64)
want = (o64.transpose(0, 2, 1, 3).reshape(2, S, E) @ w_o.astype(f).T + b_o)
e = ref.close("vulkan mha", y, want, 2e-5)
print("PASS vulkan mha gqa bias (max err %.1e)" % e)
# CHECK: PASS vulkan mha gqa bias
