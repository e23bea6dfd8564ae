# attn.sdpa on NumPy arrays, cpu target, against the float64 reference
# (Inputs/ref.py) on fresh random inputs; outputs are allocated filled with
# NaN, so an element the kernel does not write fails. Tolerances: f32
# 2e-5 absolute (inputs in [-1, 1]: out and lse are O(1)), f16 2e-3 (the
# output's rounding to f16, 2^-11 relative, plus f32 accumulation).
# RUN: %attn_python %s | FileCheck %s
# REQUIRES: numpy
import os
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "Inputs"))
import ref  # noqa: E402

import attn  # noqa: E402
import attn._core  # noqa: E402

attn._core._numpy_empty = lambda shape, dtype: np.full(shape, np.nan, dtype)
rng = np.random.default_rng()  # fresh inputs each run
TOL = {np.float32: 2e-5, np.float16: 2e-3}


def check(name, dtype, q, k, v, **kw):
    out, lse = attn.sdpa(q, k, v, return_lse=True, **kw)
    assert out.dtype == q.dtype and lse.dtype == np.float32
    rkw = {x: kw[x] for x in ("mask", "causal", "scale") if x in kw}
    if q.ndim == 3:
        want, want_lse = ref.sdpa(q[None], k[None], v[None], **rkw)
        want, want_lse = want[0], want_lse[0]
    else:
        want, want_lse = ref.sdpa(q, k, v, **rkw)
    e = ref.close(name + " out", out, want, TOL[dtype])
    e2 = ref.close(name + " lse", lse, want_lse, 2e-5 if dtype == np.float32
                   else 1e-4)
    print("PASS %s (max err out %.1e, lse %.1e)" % (name, e, e2))
    return out


for dtype in (np.float32, np.float16):
    n = np.dtype(dtype).name
    B, H, S, D = 2, 3, 37, 64
    q, k, v = (ref.rand(rng, (B, H, S, D), dtype) for _ in range(3))
    check(n + " plain", dtype, q, k, v)
    # Sq != Skv, both ways, bottom-right causal (Sq > Skv: empty rows).
    check(n + " causal Sq<Skv", dtype, ref.rand(rng, (B, H, 5, D), dtype),
          k, v, causal=True)
    out = check(n + " causal Sq>Skv", dtype, q, k[:, :, :9], v[:, :, :9],
                causal=True)
    assert np.all(out[:, :, :S - 9] == 0), "rows that see no key must be 0"
# CHECK: PASS float32 plain
# CHECK: PASS float32 causal Sq<Skv
# CHECK: PASS float32 causal Sq>Skv
# CHECK: PASS float16 plain
# CHECK: PASS float16 causal Sq<Skv
# CHECK: PASS float16 causal Sq>Skv

f32 = np.float32
B, Hq, Hkv, Sq, Skv, D, Dv = 2, 4, 2, 19, 45, 32, 16
q = ref.rand(rng, (B, Hq, Sq, D), f32)
k = ref.rand(rng, (B, Hkv, Skv, D), f32)
v = ref.rand(rng, (B, Hkv, Skv, Dv), f32)
check("gqa Dv!=D", f32, q, k, v, enable_gqa=True)
# CHECK: PASS gqa Dv!=D

# Masks: bool broadcast over B ([1, Hq, Sq, Skv]) and over B and H
# ([Sq, Skv], rank 2), with one fully masked row; additive f32 over H,
# additive f16 with f32 inputs; a key-padding mask [B, 1, 1, Skv] (expanded
# along Sq by the package); a stride-0 expanded mask.
qh = ref.rand(rng, (B, Hkv, Sq, D), f32)
m = rng.random((1, Hkv, Sq, Skv)) < 0.7
m[0, 1, 3, :] = False
check("bool mask [1,H,Sq,Skv]", f32, qh, k, k, mask=m)
check("bool mask [Sq,Skv]", f32, qh, k, k, mask=m[0, 0])
add = rng.normal(size=(B, 1, Sq, Skv)).astype(f32)
check("additive f32 mask [B,1,Sq,Skv]", f32, qh, k, k, mask=add)
check("additive f16 mask, f32 inputs", f32, qh, k, k,
      mask=add.astype(np.float16))
pad = np.ones((B, 1, 1, Skv), dtype=bool)
pad[0, :, :, 30:] = False
check("key padding mask [B,1,1,Skv]", f32, qh, k, k, mask=pad)
check("stride-0 mask", f32, qh, k, k,
      mask=np.broadcast_to(m[:, :1], (B, Hkv, Sq, Skv)))
check("bool mask + causal", f32, qh, k, k, mask=m, causal=True)
# CHECK: PASS bool mask [1,H,Sq,Skv]
# CHECK: PASS bool mask [Sq,Skv]
# CHECK: PASS additive f32 mask [B,1,Sq,Skv]
# CHECK: PASS additive f16 mask, f32 inputs
# CHECK: PASS key padding mask [B,1,1,Skv]
# CHECK: PASS stride-0 mask
# CHECK: PASS bool mask + causal

check("scale 0.3", f32, qh, k, k, scale=0.3)
# CHECK: PASS scale 0.3

# BSHD storage ([B, S, H, D] transposed to [B, H, S, D]): passed by
# strides; the result must equal that of a contiguous copy.
qs = ref.rand(rng, (B, Sq, Hkv, D), f32)
ks = ref.rand(rng, (B, Skv, Hkv, D), f32)
vs = ref.rand(rng, (B, Skv, Hkv, D), f32)
qt, kt, vt = (x.transpose(0, 2, 1, 3) for x in (qs, ks, vs))
assert not qt.flags.c_contiguous
out = check("BSHD strides", f32, qt, kt, vt)
assert np.array_equal(out, attn.sdpa(*(np.ascontiguousarray(x)
                                       for x in (qt, kt, vt)))), \
    "BSHD and BHSD results differ"
# Zero copies: what reaches attn_launch is the views' own pointers and
# element strides (a copy would have other pointers and dense strides).
seen = []
orig_pack = attn._lib.pack_launch_args


def recording_pack(*fields):
    seen.append(fields)
    return orig_pack(*fields)


attn._lib.pack_launch_args = recording_pack
smask = np.broadcast_to(m[:, :1], (B, Hkv, Sq, Skv))
attn.sdpa(qt, kt, vt, mask=smask)
attn._lib.pack_launch_args = orig_pack
qf, kf, vf, mf = seen[-1][:4]
H4 = Hkv * D
for name, f, x, rows in (("q", qf, qt, Sq), ("k", kf, kt, Skv), ("v", vf, vt, Skv)):
    want = (x.__array_interface__["data"][0], B, Hkv, rows, D,
            rows * H4, D, H4, 1)
    assert tuple(f) == want, "%s passed as %s, expected %s" % (name, f, want)
assert mf[0] == smask.__array_interface__["data"][0] and mf[1:3] == (1, 1), \
    "a stride-0 mask must be passed as itself, B and H of extent 1: %s" % (mf,)
print("PASS zero copy: q, k, v and a broadcast mask passed by pointer and strides")

# A sliced head dim is strided but its last dimension is contiguous.
wide = ref.rand(rng, (B, Hkv, Sq, 2 * D), f32)
check("rows with gaps", f32, wide[..., :D], kt, vt)
# CHECK: PASS BSHD strides
# CHECK: PASS zero copy
# CHECK: PASS rows with gaps

# Rank 3 [H, S, D]: one batch, rank-3 results.
out = check("rank 3", f32, qh[0], k[0], k[0])
assert out.shape == (Hkv, Sq, D)
# CHECK: PASS rank 3

# Read-only inputs and other buffer-protocol objects (no copy).
ro = qh.copy()
ro.setflags(write=False)
check("read-only q", f32, ro, k, k)
# CHECK: PASS read-only q
print("ok")
# CHECK: ok
