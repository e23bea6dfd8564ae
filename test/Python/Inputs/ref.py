"""Independent float64 references for the Python tests: attention as
docs/Semantics.md states it, and its dropout decision (Philox-4x32-10),
written from the document, not from attn's code."""
import math

import numpy as np

M32 = 0xFFFFFFFF


def philox_word0(seed, j, i, h, b):
    """word0 of Philox-4x32-10(key = seed, counter = (j, i, h, b)), for
    broadcastable index arrays (uint64 arithmetic: every product of two
    32-bit words fits)."""
    c0, c1, c2, c3 = np.broadcast_arrays(
        *[np.asarray(x, dtype=np.uint64) & np.uint64(M32) for x in (j, i, h, b)])
    c0, c1, c2, c3 = (c.copy() for c in (c0, c1, c2, c3))
    k0, k1 = seed & M32, (seed >> 32) & M32
    m0, m1 = np.uint64(0xD2511F53), np.uint64(0xCD9E8D57)
    s32, m = np.uint64(32), np.uint64(M32)
    for _ in range(10):
        p0, p1 = m0 * c0, m1 * c2
        hi0, lo0, hi1, lo1 = p0 >> s32, p0 & m, p1 >> s32, p1 & m
        c0, c1, c2, c3 = (hi1 ^ c1 ^ np.uint64(k0), lo1,
                          hi0 ^ c3 ^ np.uint64(k1), lo0)
        k0, k1 = (k0 + 0x9E3779B9) & M32, (k1 + 0xBB67AE85) & M32
    return c0


def keep_mask(seed, p, B, Hq, Sq, Skv):
    """[B, Hq, Sq, Skv] bool: the elements dropout keeps."""
    b = np.arange(B)[:, None, None, None]
    h = np.arange(Hq)[None, :, None, None]
    i = np.arange(Sq)[None, None, :, None]
    j = np.arange(Skv)[None, None, None, :]
    return philox_word0(seed, j, i, h, b) >= np.uint64(math.ceil(p * 2.0 ** 32))


def as64(x):
    return np.asarray(x).astype(np.float64)


def sdpa(q, k, v, mask=None, causal=False, scale=None, dropout_p=0.0,
         seed=0):
    """(out, lse) in float64 for rank-4 inputs; mask bool (keep) or float
    (additive, rounded to f32 as attn does), broadcast by NumPy rules."""
    q, k, v = as64(q), as64(k), as64(v)
    B, Hq, Sq, D = q.shape
    Hkv, Skv = k.shape[1], k.shape[2]
    g = Hq // Hkv
    k = np.repeat(k, g, axis=1)
    v = np.repeat(v, g, axis=1)
    scale = 1.0 / math.sqrt(D) if scale is None else scale
    # The scores are f32 products in attn; the f64 reference is exact-ish.
    s = np.einsum("bhid,bhjd->bhij", q, k) * scale
    if mask is not None:
        mask = np.asarray(mask)
        if mask.dtype == np.bool_:
            s = np.where(mask, s, -np.inf)
        else:
            s = s + mask.astype(np.float32).astype(np.float64)
    if causal:
        i = np.arange(Sq)[:, None]
        j = np.arange(Skv)[None, :]
        s = np.where(j > i + (Skv - Sq), -np.inf, s)
    m = s.max(axis=-1, keepdims=True)
    m_safe = np.where(np.isneginf(m), 0.0, m)
    p = np.exp(s - m_safe)
    l = p.sum(axis=-1, keepdims=True)
    with np.errstate(invalid="ignore", divide="ignore"):
        pn = np.where(l == 0, 0.0, p / np.where(l == 0, 1.0, l))
        lse = np.where(l == 0, -np.inf, m_safe + np.log(np.where(l == 0, 1.0, l)))
    if dropout_p > 0:
        keep = keep_mask(seed, dropout_p, B, Hq, Sq, Skv)
        pn = np.where(keep, pn / (1.0 - dropout_p), 0.0)
    out = np.einsum("bhij,bhjd->bhid", pn, v)
    return out, lse[..., 0]


def close(name, got, want, atol, rtol=0.0):
    """Raises (with the worst element) unless |got - want| <= atol + rtol |want|
    everywhere; NaN never passes; -inf must match -inf."""
    got = np.asarray(got).astype(np.float64)
    want = np.asarray(want, dtype=np.float64)
    assert got.shape == want.shape, "%s: shape %s, expected %s" % (
        name, got.shape, want.shape)
    both_inf = np.isinf(want) & (got == want)
    with np.errstate(invalid="ignore"):
        err = np.where(both_inf, 0.0, np.abs(got - want))
        ok = err <= atol + rtol * np.abs(np.where(both_inf, 0.0, want))
    if not np.all(ok):
        bad = np.argwhere(~ok)
        idx = tuple(bad[0])
        raise AssertionError(
            "%s: %d of %d elements off; first at %s: got %r, expected %r "
            "(atol %g, rtol %g)" % (name, len(bad), ok.size, idx, got[idx],
                                    want[idx], atol, rtol))
    finite = err[np.isfinite(err)]
    return float(finite.max()) if finite.size else 0.0


def rand(rng, shape, dtype):
    return rng.uniform(-1.0, 1.0, size=shape).astype(dtype)
