"""NumPy's side of attn-run's .npy round trips (attn-run-npy.test).

  make DIR DTYPE B H HKV SQ SKV D DV SEED [bool|additive]
      random q, k, v (and a mask) as attn-run --load reads them
  check DIR DTYPE SCALE CAUSAL
      the float64 reference of DIR's inputs against DIR's out.npy (and
      lse.npy), within the dtype's tolerance; prints "ok" or why not
  same A B NAME...
      the named arrays of folders A and B are equal (dtype, shape, values)
  corrupt SRC DST KIND
      a copy of the .npy SRC, broken in one way (magic, truncated, fortran,
      version, dtype, shape, trailing)
"""
import math
import os
import sys

import numpy as np


def bf16_bits(x):
    """float32 -> bf16 raw bits (round to nearest even), as uint16."""
    u = np.ascontiguousarray(x, dtype=np.float32).view(np.uint32).astype(np.uint64)
    u = (u + 0x7FFF + ((u >> 16) & 1)) >> 16
    return u.astype(np.uint16)


def from_bf16_bits(b):
    return (b.astype(np.uint32) << 16).view(np.float32)


def as_float(a, dtype):
    return from_bf16_bits(a) if dtype == "bf16" else a.astype(np.float64)


def make(d, dtype, B, H, HKV, SQ, SKV, D, DV, seed, mask=None):
    rng = np.random.default_rng(int(seed))
    os.makedirs(d, exist_ok=True)
    shapes = {"q": (B, H, SQ, D), "k": (B, HKV, SKV, D), "v": (B, HKV, SKV, DV)}
    for name, shape in shapes.items():
        x = rng.uniform(-1, 1, size=shape).astype(np.float32)
        if dtype == "bf16":
            x = bf16_bits(x)
        elif dtype == "f16":
            x = x.astype(np.float16)
        np.save(os.path.join(d, name + ".npy"), x)
    if mask == "bool":
        m = rng.uniform(size=(1, 1, SQ, SKV)) < 0.75
        m[:, :, :, 0] = True  # no empty rows
        np.save(os.path.join(d, "mask.npy"), m)
    elif mask == "additive":
        m = rng.uniform(-2, 2, size=(1, 1, SQ, SKV)).astype(np.float32)
        if dtype == "bf16":
            m = bf16_bits(m)
        elif dtype == "f16":
            m = m.astype(np.float16)
        np.save(os.path.join(d, "mask.npy"), m)


def check(d, dtype, scale, causal):
    load = lambda n: np.load(os.path.join(d, n + ".npy"))
    q, k, v = (as_float(load(n), dtype) for n in "qkv")
    B, H, SQ, D = q.shape
    HKV, SKV = k.shape[1], k.shape[2]
    scale = float(scale) or 1.0 / math.sqrt(D)
    k = np.repeat(k, H // HKV, axis=1)
    v = np.repeat(v, H // HKV, axis=1)
    s = np.einsum("bhid,bhjd->bhij", q, k) * scale
    keep = np.ones(s.shape, dtype=bool)
    if os.path.exists(os.path.join(d, "mask.npy")):
        m = load("mask")
        if m.dtype == np.bool_:
            keep &= m
        else:
            s = s + as_float(m, dtype)
    if causal == "1":
        i = np.arange(SQ)[:, None]
        j = np.arange(SKV)[None, :]
        keep &= j <= i + (SKV - SQ)
    s = np.where(keep, s, -np.inf)
    mx = np.max(s, axis=-1, keepdims=True)
    e = np.where(keep, np.exp(s - np.where(np.isfinite(mx), mx, 0)), 0)
    den = e.sum(-1, keepdims=True)
    ref = np.where(den > 0, np.einsum("bhij,bhjd->bhid", e, v) / np.where(den > 0, den, 1), 0)
    out = as_float(load("out"), dtype)
    tol = {"f32": 1e-5, "f16": 2e-3, "bf16": 2e-2}[dtype]
    err = np.linalg.norm(out - ref) / max(np.linalg.norm(ref), 1e-30)
    if not err <= tol:
        print(f"out: rel l2 error {err:.3g} > {tol}")
        return 1
    if os.path.exists(os.path.join(d, "lse.npy")):
        lse = load("lse").astype(np.float64)
        ref_lse = (mx[..., 0] + np.log(np.where(den[..., 0] > 0, den[..., 0], 1)))
        ref_lse = np.where(den[..., 0] > 0, ref_lse, -np.inf)
        fin = np.isfinite(ref_lse)
        if not (np.array_equal(np.isfinite(lse), fin) and
                np.max(np.abs(lse[fin] - ref_lse[fin]), initial=0) <= 1e-3):
            print("lse differs from the reference")
            return 1
    print("ok")
    return 0


def same(a, b, names):
    for n in names:
        x = np.load(os.path.join(a, n + ".npy"))
        y = np.load(os.path.join(b, n + ".npy"))
        if x.dtype != y.dtype or x.shape != y.shape or not np.array_equal(x, y, equal_nan=x.dtype.kind == "f"):
            print(f"{n}: differs ({x.dtype} {x.shape} vs {y.dtype} {y.shape})")
            return 1
    print("same")
    return 0


def corrupt(src, dst, kind):
    data = bytearray(open(src, "rb").read())
    hlen = data[8] | data[9] << 8
    header = bytes(data[10:10 + hlen]).decode("latin1")
    body = data[10 + hlen:]

    def with_header(h):
        h = h.rstrip("\n").rstrip()
        h += " " * ((64 - (10 + len(h) + 1) % 64) % 64) + "\n"
        return bytes(data[:8]) + bytes([len(h) & 0xFF, len(h) >> 8]) + h.encode("latin1") + body

    if kind == "magic":
        out = b"\x93NUMPZ" + bytes(data[6:])
    elif kind == "truncated":
        out = bytes(data[:-7])
    elif kind == "trailing":
        out = bytes(data) + b"\0\0\0\0"
    elif kind == "version":
        out = bytes(data[:6]) + b"\x03\x00" + bytes(data[8:])
    elif kind == "fortran":
        out = with_header(header.replace("'fortran_order': False", "'fortran_order': True"))
    elif kind == "dtype":
        out = with_header(header.replace("'<f4'", "'<f8'"))
    elif kind == "shape":
        out = with_header(header.replace("'shape': (1,", "'shape': (2,"))
    else:
        raise SystemExit("unknown kind " + kind)
    open(dst, "wb").write(out)
    return 0


if __name__ == "__main__":
    cmd, args = sys.argv[1], sys.argv[2:]
    if cmd == "make":
        d, dtype = args[0], args[1]
        dims = [int(a) for a in args[2:10]]
        make(d, dtype, *dims, mask=args[10] if len(args) > 10 else None)
        sys.exit(0)
    if cmd == "check":
        sys.exit(check(*args))
    if cmd == "same":
        sys.exit(same(args[0], args[1], args[2:]))
    if cmd == "corrupt":
        sys.exit(corrupt(*args))
    raise SystemExit("unknown command " + cmd)
