# Dropout through attn.sdpa (cpu, NumPy): the kept elements are those of
# docs/Semantics.md's Philox-4x32-10 rule, recomputed independently in
# Inputs/ref.py, so the output is compared element for element with the
# float64 reference (f32 tolerance 2e-5); dropout_p = 0 equals no dropout;
# the same seed reproduces the result bit for bit, another seed changes it;
# lse does not depend on dropout.
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
rng = np.random.default_rng()
f32 = np.float32

assert int(ref.philox_word0(0, 0, 0, 0, 0)) == 0x6627E8D5  # known answer
B, Hq, Hkv, Sq, Skv, D = 2, 4, 2, 23, 70, 32
q = ref.rand(rng, (B, Hq, Sq, D), f32)
k = ref.rand(rng, (B, Hkv, Skv, D), f32)
v = ref.rand(rng, (B, Hkv, Skv, D), f32)
p = 0.3
seed = int(rng.integers(0, 2 ** 63)) * 2 + 1  # above 2^32: both key words

out, lse = attn.sdpa(q, k, v, dropout_p=p, seed=seed, return_lse=True,
                     enable_gqa=True, causal=True)
want, want_lse = ref.sdpa(q, k, v, dropout_p=p, seed=seed, causal=True)
e = ref.close("dropout out", out, want, 2e-5)
ref.close("dropout lse", lse, want_lse, 2e-5)
keep = ref.keep_mask(seed, p, B, Hq, Sq, Skv)
print("PASS dropout p=%.1f matches the Philox reference (max err %.1e, kept "
      "%.3f of the elements)" % (p, e, keep.mean()))
# CHECK: PASS dropout p=0.3 matches the Philox reference
assert 0.6 < keep.mean() < 0.8

again = attn.sdpa(q, k, v, dropout_p=p, seed=seed, enable_gqa=True,
                  causal=True)
assert np.array_equal(again, out), "the same seed must reproduce the output"
other = attn.sdpa(q, k, v, dropout_p=p, seed=seed + 1, enable_gqa=True,
                  causal=True)
assert not np.array_equal(other, out), "another seed must drop other elements"
print("PASS same seed reproduces, another seed differs")
# CHECK: PASS same seed reproduces, another seed differs

zero = attn.sdpa(q, k, v, dropout_p=0.0, seed=seed, enable_gqa=True)
none = attn.sdpa(q, k, v, enable_gqa=True)
assert np.array_equal(zero, none), "dropout_p=0 must equal no dropout"
print("PASS dropout_p=0 equals no dropout")
# CHECK: PASS dropout_p=0 equals no dropout

# A negative seed is its two's complement.
neg = attn.sdpa(q, k, v, dropout_p=p, seed=-5, enable_gqa=True, causal=True)
big = attn.sdpa(q, k, v, dropout_p=p, seed=2 ** 64 - 5, enable_gqa=True,
                causal=True)
assert np.array_equal(neg, big)
print("PASS seed -5 is 2**64 - 5")
# CHECK: PASS seed -5 is 2**64 - 5
