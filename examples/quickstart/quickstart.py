# attn from Python with NumPy arrays (docs/Python.md): no copies, kernels
# compiled on first use and cached.
import numpy as np
import attn

rng = np.random.default_rng(0)
q = rng.standard_normal((2, 8, 256, 64), dtype=np.float32)   # [B, Hq, S, D]
k = rng.standard_normal((2, 2, 256, 64), dtype=np.float32)   # [B, Hkv, S, D]
v = rng.standard_normal((2, 2, 256, 64), dtype=np.float32)
out, lse = attn.sdpa(q, k, v, causal=True, enable_gqa=True, return_lse=True)
# Causal: query 0 sees key 0 only, so its output row is v's row 0.
assert np.allclose(out[:, :, 0], np.repeat(v, 4, axis=1)[:, :, 0], atol=1e-6)
print("attn", attn.library_version(), "python:", out.shape, lse.shape)
