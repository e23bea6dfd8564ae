# Every bad input to attn.sdpa (NumPy) raises a clear exception of the
# documented class, with a message naming the problem; errors the C
# runtime finds carry its attn_last_error() text and status. Each case
# prints its message, checked below.
# RUN: %attn_python %s | FileCheck %s
# REQUIRES: numpy
import numpy as np

import attn

f32, f16 = np.float32, np.float16
rng = np.random.default_rng(1)
q = rng.random((2, 4, 8, 16)).astype(f32)
k = rng.random((2, 4, 10, 16)).astype(f32)
failures = []


def expect(name, exc, fragment, fn):
    try:
        fn()
    except exc as e:
        msg = str(e)
        if fragment not in msg:
            failures.append("%s: message lacks %r: %s" % (name, fragment, msg))
        print("PASS %s: %s: %s" % (name, type(e).__name__,
                                   msg.splitlines()[0]))
        return e
    except Exception as e:  # the wrong class
        failures.append("%s: raised %s (%s), expected %s"
                        % (name, type(e).__name__, e, exc.__name__))
        return None
    failures.append("%s: no exception" % name)


IA = attn.InvalidArgumentError
e = expect("rank 2", IA, "ranks 2, 2, 2", lambda: attn.sdpa(q[0, 0], k[0, 0], k[0, 0]))
assert isinstance(e, ValueError) and isinstance(e, attn.Error)
# CHECK: PASS rank 2: InvalidArgumentError: q, k, v have ranks 2, 2, 2
expect("rank 5", IA, "ranks 5", lambda: attn.sdpa(q[None], k[None], k[None]))
expect("mixed ranks", IA, "ranks 4, 3, 4", lambda: attn.sdpa(q, k[0], k))
# CHECK: PASS rank 5
# CHECK: PASS mixed ranks
expect("float64", IA, "q.dtype is float64", lambda: attn.sdpa(q.astype(np.float64), k, k))
# CHECK: PASS float64: InvalidArgumentError: q.dtype is float64; attn takes float16, float32
expect("int32 k", IA, "k.dtype is int32", lambda: attn.sdpa(q, k.astype(np.int32), k))
expect("bool q", IA, "q.dtype is bool", lambda: attn.sdpa(q > 0, k, k))
expect("dtype mismatch", IA, "dtypes differ: float32, float16, float32",
       lambda: attn.sdpa(q, k.astype(f16), k))
# CHECK: PASS int32 k
# CHECK: PASS bool q
# CHECK: PASS dtype mismatch
expect("int mask", IA, "mask.dtype is int64", lambda: attn.sdpa(q, k, k, mask=np.ones((8, 10), np.int64)))
# CHECK: PASS int mask
wide = rng.random((2, 4, 8, 32)).astype(f32)
expect("non-contiguous last dim", IA, "last dimension is not contiguous",
       lambda: attn.sdpa(wide[..., ::2], k, k))
# CHECK: PASS non-contiguous last dim: InvalidArgumentError: q's last dimension is not contiguous (stride 2 elements
expect("transposed mask", IA, "mask's last dimension is not contiguous",
       lambda: attn.sdpa(q, k, k, mask=np.ones((10, 8), bool).T))
# CHECK: PASS transposed mask
buf = np.zeros(8192, np.uint8)
odd = np.ndarray((2, 4, 8, 16), dtype=f32, buffer=buf, strides=(2048, 512, 66, 4))
expect("byte strides", IA, "q.strides[2] is 66 bytes, not a multiple of its 4-byte elements",
       lambda: attn.sdpa(odd, k, k))
# CHECK: PASS byte strides
unaligned = np.ndarray((2, 4, 8, 16), dtype=f32, buffer=buf, offset=1)
expect("unaligned", IA, "not aligned to its 4-byte elements",
       lambda: attn.sdpa(unaligned, k, k))
# CHECK: PASS unaligned
expect("reversed", IA, "positive strides", lambda: attn.sdpa(q[:, :, ::-1], k, k))
expect("broadcast q", IA, "q.strides[0] is 0",
       lambda: attn.sdpa(np.broadcast_to(q[:1], q.shape), k, k))
# CHECK: PASS reversed
# CHECK: PASS broadcast q
kg = k[:, :2]
expect("gqa off", IA, "q has 4 heads but k and v have 2; pass enable_gqa=True",
       lambda: attn.sdpa(q, kg, kg))
expect("gqa ratio", IA, "multiple", lambda: attn.sdpa(q[:, :3], kg, kg, enable_gqa=True))
# CHECK: PASS gqa off
# CHECK: PASS gqa ratio
expect("batch", IA, "batch sizes differ", lambda: attn.sdpa(q, k[:1], k[:1]))
expect("head dim", IA, "head dims differ", lambda: attn.sdpa(q, k[..., :8], k))
expect("k vs v", IA, "same heads and length", lambda: attn.sdpa(q, k, k[:, :, :5]))
expect("empty", IA, "empty dimension", lambda: attn.sdpa(q[:, :, :0], k, k))
# CHECK: PASS batch
# CHECK: PASS head dim
# CHECK: PASS k vs v
# CHECK: PASS empty
expect("mask shape", IA, "dimension 1 (Hq) is 3, expected 1 or 4",
       lambda: attn.sdpa(q, k, k, mask=np.ones((1, 3, 8, 10), bool)))
expect("mask Skv", IA, "dimension 3 (Skv) is 7, expected 1 or 10",
       lambda: attn.sdpa(q, k, k, mask=np.ones((8, 7), bool)))
expect("mask rank", IA, "mask has rank 5", lambda: attn.sdpa(q, k, k, mask=np.ones((1, 1, 1, 8, 10), bool)))
# CHECK: PASS mask shape
# CHECK: PASS mask Skv
# CHECK: PASS mask rank
expect("target cuda with numpy", IA, "target='cuda' needs torch CUDA tensors",
       lambda: attn.sdpa(q, k, k, target="cuda"))
expect("unknown target", IA, "target='tpu'", lambda: attn.sdpa(q, k, k, target="tpu"))
# CHECK: PASS target cuda with numpy
# CHECK: PASS unknown target
expect("scale 0", IA, "scale=0.0 is not supported", lambda: attn.sdpa(q, k, k, scale=0.0))
expect("dropout 1", IA, "dropout_p is 1.0", lambda: attn.sdpa(q, k, k, dropout_p=1.0))
expect("seed range", IA, "seed is 18446744073709551616", lambda: attn.sdpa(q, k, k, seed=2 ** 64))
expect("seed type", TypeError, "seed must be an int", lambda: attn.sdpa(q, k, k, seed=1.5))
expect("list input", TypeError, "q must be a numpy.ndarray or a torch.Tensor",
       lambda: attn.sdpa(q.tolist(), k, k))
# CHECK: PASS scale 0
# CHECK: PASS dropout 1
# CHECK: PASS seed range
# CHECK: PASS seed type
# CHECK: PASS list input

# Errors found by the C runtime: its status and message come through.
e = expect("runtime: scale inf", IA, "spec.scale is inf",
           lambda: attn.sdpa(q, k, k, scale=float("inf")))
assert e is not None and e.status == 1, e
# CHECK: PASS runtime: scale inf: InvalidArgumentError: attn_compile: spec.scale is inf
big = rng.random((1, 1, 2, 1100)).astype(f32)
e = expect("runtime: head_dim", IA, "spec.head_dim is 1100", lambda: attn.sdpa(big, big, big))
# CHECK: PASS runtime: head_dim: InvalidArgumentError: attn_compile: spec.head_dim is 1100

# A failed call leaves the package usable.
out = attn.sdpa(q, k, k)
assert np.isfinite(out).all()
if failures:
    print("FAILURES:\n" + "\n".join(failures))
    raise SystemExit(1)
print("all errors as documented")
# CHECK: all errors as documented
