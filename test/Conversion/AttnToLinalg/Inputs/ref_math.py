#!/usr/bin/env python3
# Float64 reference for attn.sdpa that generates ../run-math.mlir.
#
# Usage (from the repository root), after changing a case or the lowering:
#   python3 test/Conversion/AttnToLinalg/Inputs/ref_math.py \
#       > test/Conversion/AttnToLinalg/run-math.mlir
# It writes one @main that runs every case below through attn.sdpa on
# constant inputs and prints out and lse, plus CHECK lines with the values
# this script computes independently (plain Python floats, no numpy). Inputs
# are multiples of 1/8 so that they are exact in f32; the CHECK lines keep
# five significant digits, enough to catch any semantic error while leaving
# room for f32 accumulation and libm rounding.
import math

M32 = 0xFFFFFFFF
PHILOX_M0, PHILOX_M1 = 0xD2511F53, 0xCD9E8D57
PHILOX_W0, PHILOX_W1 = 0x9E3779B9, 0xBB67AE85


def philox_word0(seed, b, h, i, j):
    """First output word of Philox-4x32-10, key = seed (lo, hi words),
    counter = (j, i, h, b); the same bits as lib/Dialect/Attn/Transforms/
    Dropout.cpp."""
    k0, k1 = seed & M32, (seed >> 32) & M32
    c0, c1, c2, c3 = j & M32, i & M32, h & M32, b & M32
    for _ in range(10):
        p0 = PHILOX_M0 * c0
        p1 = PHILOX_M1 * c2
        c0, c1, c2, c3 = ((p1 >> 32) ^ c1 ^ k0, p1 & M32,
                          (p0 >> 32) ^ c3 ^ k1, p0 & M32)
        k0 = (k0 + PHILOX_W0) & M32
        k1 = (k1 + PHILOX_W1) & M32
    return c0


def keep(seed, p, b, h, i, j):
    return philox_word0(seed, b, h, i, j) >= math.ceil(p * 2.0**32)


def sdpa(q, k, v, mask=None, causal=False, scale=None, dropout=None):
    """q [B][Hq][Sq][D], k [B][Hkv][Skv][D], v [B][Hkv][Skv][Dv]; mask
    [Bm][Hm][Sq][Skv] of bools (keep) or floats (additive). Returns
    (out, lse) as nested lists."""
    B, Hq, Sq, D = len(q), len(q[0]), len(q[0][0]), len(q[0][0][0])
    Hkv, Skv, Dv = len(k[0]), len(k[0][0]), len(v[0][0][0])
    g = Hq // Hkv
    if scale is None:
        scale = 1.0 / math.sqrt(D)
    out = [[[[0.0] * Dv for _ in range(Sq)] for _ in range(Hq)] for _ in range(B)]
    lse = [[[0.0] * Sq for _ in range(Hq)] for _ in range(B)]
    for b in range(B):
        for h in range(Hq):
            for i in range(Sq):
                s = []
                for j in range(Skv):
                    x = scale * sum(q[b][h][i][d] * k[b][h // g][j][d]
                                    for d in range(D))
                    if mask is not None:
                        mv = mask[b if len(mask) > 1 else 0][
                            h if len(mask[0]) > 1 else 0][i][j]
                        if isinstance(mv, bool):
                            x = x if mv else -math.inf
                        else:
                            x += mv
                    if causal and j > i + (Skv - Sq):
                        x = -math.inf
                    s.append(x)
                m = max(s) if s else -math.inf
                if m == -math.inf:
                    out[b][h][i] = [0.0] * Dv
                    lse[b][h][i] = -math.inf
                    continue
                e = [math.exp(x - m) for x in s]
                l = sum(e)
                pn = [x / l for x in e]
                if dropout is not None:
                    p, seed = dropout
                    pn = [x / (1.0 - p) if keep(seed, p, b, h, i, j) else 0.0
                          for j, x in enumerate(pn)]
                out[b][h][i] = [sum(pn[j] * v[b][h // g][j][c]
                                    for j in range(Skv)) for c in range(Dv)]
                lse[b][h][i] = m + math.log(l)
    return out, lse


class Lcg:
    """Deterministic inputs that do not depend on Python's random module."""

    def __init__(self, seed):
        self.state = seed

    def eighth(self):
        self.state = (self.state * 6364136223846793005 + 1442695040888963407) % 2**64
        return ((self.state >> 33) % 17 - 8) / 8.0

    def tensor(self, shape):
        if len(shape) == 1:
            return [self.eighth() for _ in range(shape[0])]
        return [self.tensor(shape[1:]) for _ in range(shape[0])]


def shape_of(t):
    s = []
    while isinstance(t, list):
        s.append(len(t))
        t = t[0]
    return s


def flat(t):
    return [y for x in t for y in flat(x)] if isinstance(t, list) else [t]


def ttype(shape, elt):
    return "tensor<" + "x".join(str(d) for d in shape) + "x" + elt + ">"


def dense(t):
    if isinstance(t, list):
        return "[" + ", ".join(dense(x) for x in t) + "]"
    if isinstance(t, bool):
        return "true" if t else "false"
    return repr(t)


def check_num(x):
    """printMemrefF32 prints like printf %g; keep five significant digits."""
    if x == -math.inf:
        return "-inf"
    if x == 0.0:
        return "{{-?0}}"
    s = "%.5e" % x  # d.ddddde+XX, six significant digits
    mant, exp = s.split("e")
    exp = int(exp)
    if exp < -4 or exp >= 6:
        raise ValueError("value out of the fixed-notation range: %r" % x)
    text = "%.*f" % (max(0, 4 - exp), float(mant[:-1]) * 10.0**exp)
    if "." in text:
        text = text.rstrip("0").rstrip(".")
    return "{{" + text.replace(".", "\\.") + "[0-9]*}}"


def check_line(values):
    return "[" + ",  ".join(check_num(x) for x in values) + "]"


CASES = []


def case(name, q, k, v, mask=None, dyn=False, causal=False, scale=None,
         dropout=None):
    CASES.append(dict(name=name, q=q, k=k, v=v, mask=mask, dyn=dyn,
                      causal=causal, scale=scale, dropout=dropout))


def build_cases():
    r = Lcg(2024)
    T = r.tensor
    # Plain MHA with the default scale 1/sqrt(4) = 0.5.
    case("plain", T([1, 2, 3, 4]), T([1, 2, 4, 4]), T([1, 2, 4, 3]))
    # Causal with Sq > Skv and an explicit scale: bottom-right alignment
    # hides every key from row 0 (out 0, lse -inf).
    case("causal", T([1, 1, 3, 4]), T([1, 1, 2, 4]), T([1, 1, 2, 2]),
         causal=True, scale=0.75)
    # Causal with Sq < Skv.
    case("causal_wide", T([1, 1, 2, 4]), T([1, 1, 4, 4]), T([1, 1, 4, 2]),
         causal=True)
    # GQA, Hq = 4 over Hkv = 2, every dimension dynamic in the IR, so the
    # kv head is computed at run time.
    case("gqa_dynamic", T([2, 4, 2, 4]), T([2, 2, 3, 4]), T([2, 2, 3, 2]),
         dyn=True)
    # Boolean keep-mask [B, 1, Sq, Skv] broadcast over 2 query heads of one
    # kv head; row (b=1, i=1) keeps no key.
    bmask = [[[[True, False, True], [False, True, True]]],
             [[[True, True, False], [False, False, False]]]]
    case("bool_mask", T([2, 2, 2, 4]), T([2, 1, 3, 4]), T([2, 1, 3, 2]),
         mask=bmask)
    # The same keep-mask with dynamic mask dimensions (run-time broadcast).
    case("bool_mask_dynamic", T([2, 2, 2, 4]), T([2, 1, 3, 4]),
         T([2, 1, 3, 2]), mask=bmask, dyn=True)
    # Additive f32 mask [1, Hq, Sq, Skv] broadcast over B.
    case("additive_mask", T([2, 2, 2, 4]), T([2, 2, 3, 4]), T([2, 2, 3, 2]),
         mask=T([1, 2, 2, 3]))
    # Dropout p = 0.5 with a seed that uses both key words.
    case("dropout", T([2, 2, 3, 4]), T([2, 2, 4, 4]), T([2, 2, 4, 2]),
         dropout=(0.5, 0x123456789))


def emit():
    out = []
    w = out.append
    w("// Numerical check of convert-attn-to-linalg: runs the reference lowering")
    w("// on the CPU and compares with a float64 Python reference.")
    w("// GENERATED by Inputs/ref_math.py (see there); do not edit by hand.")
    w("// RUN: attn-opt %s --convert-attn-to-linalg --one-shot-bufferize=\"bufferize-function-boundaries\" \\")
    w("// RUN:   --convert-linalg-to-loops --convert-scf-to-cf --expand-strided-metadata --lower-affine \\")
    w("// RUN:   --arith-expand --convert-math-to-llvm --convert-math-to-libm --convert-vector-to-llvm \\")
    w("// RUN:   --finalize-memref-to-llvm \\")
    w("// RUN:   --convert-arith-to-llvm --convert-index-to-llvm --convert-cf-to-llvm --convert-func-to-llvm \\")
    w("// RUN:   --reconcile-unrealized-casts \\")
    w("// RUN: | %mlir_runner -e main -entry-point-result=void \\")
    w("// RUN:   -shared-libs=%mlir_runner_utils_dir/libmlir_runner_utils.so,%mlir_runner_utils_dir/libmlir_c_runner_utils.so \\")
    w("// RUN: | FileCheck %s")
    w("")
    w("func.func private @printMemrefF32(tensor<*xf32>)")
    w("")
    w("func.func @print(%t: tensor<?xf32>) {")
    w("  %u = tensor.cast %t : tensor<?xf32> to tensor<*xf32>")
    w("  call @printMemrefF32(%u) : (tensor<*xf32>) -> ()")
    w("  return")
    w("}")
    checks = []
    body = []
    for n, c in enumerate(CASES):
        q, k, v, mask = c["q"], c["k"], c["v"], c["mask"]
        qs, ks, vs = shape_of(q), shape_of(k), shape_of(v)
        os_ = qs[:3] + [vs[3]]
        ls = qs[:3]
        pre = "%%c%d_" % n
        body.append("  // Case %s" % c["name"])
        body.append('  vector.print str "case %s\\n"' % c["name"])
        names = {}
        for nm, t, elt in (("q", q, "f32"), ("k", k, "f32"), ("v", v, "f32")) + (
                (("m", mask, "i1" if isinstance(flat(mask)[0], bool) else "f32"),)
                if mask is not None else ()):
            ty = ttype(shape_of(t), elt)
            body.append("  %s%s = arith.constant dense<%s> : %s" % (pre, nm, dense(t), ty))
            names[nm] = (pre + nm, ty)
            if c["dyn"]:
                dty = ttype(["?"] * 3 + [shape_of(t)[3]] if nm != "m" else ["?"] * 4, elt)
                body.append("  %s%sd = tensor.cast %s%s : %s to %s" % (pre, nm, pre, nm, ty, dty))
                names[nm] = (pre + nm + "d", dty)
        oty = ttype(os_ if not c["dyn"] else ["?"] * 3 + [os_[3]], "f32")
        lty = ttype(ls if not c["dyn"] else ["?"] * 3, "f32")
        opts = ""
        if mask is not None:
            opts += " mask(%s : %s)" % names["m"]
        if c["causal"]:
            opts += " causal"
        if c["scale"] is not None:
            opts += " scale(%r)" % c["scale"]
        if c["dropout"] is not None:
            body.append("  %sseed = arith.constant %d : i64" % (pre, c["dropout"][1]))
            opts += " dropout(%r, seed %sseed)" % (c["dropout"][0], pre)
        body.append("  %so, %sl = attn.sdpa %s, %s, %s%s : %s, %s, %s -> %s, %s" % (
            pre, pre, names["q"][0], names["k"][0], names["v"][0], opts,
            names["q"][1], names["k"][1], names["v"][1], oty, lty))
        for res, ty, shape in (("o", oty, os_), ("l", lty, ls)):
            sty = ttype(shape, "f32")
            src = pre + res
            if c["dyn"]:
                body.append("  %ss = tensor.cast %s : %s to %s" % (src, src, ty, sty))
                src += "s"
            groups = ", ".join(str(i) for i in range(len(shape)))
            n_el = 1
            for d in shape:
                n_el *= d
            body.append("  %sf = tensor.collapse_shape %s [[%s]] : %s into tensor<%dxf32>" % (
                pre + res, src, groups, sty, n_el))
            body.append("  %sx = tensor.cast %sf : tensor<%dxf32> to tensor<?xf32>" % (
                pre + res, pre + res, n_el))
            body.append("  call @print(%sx) : (tensor<?xf32>) -> ()" % (pre + res))
        o, l = sdpa(q, k, v, mask=mask, causal=c["causal"], scale=c["scale"],
                    dropout=c["dropout"])
        checks.append("// Case %s: out, then lse" % c["name"])
        checks.append("// CHECK-LABEL: case %s{{$}}" % c["name"])
        checks.append("// CHECK: data =")
        checks.append("// CHECK-NEXT: " + check_line(flat(o)))
        checks.append("// CHECK: data =")
        checks.append("// CHECK-NEXT: " + check_line(flat(l)))
    w("")
    out.extend(checks)
    w("func.func @main() {")
    out.extend(body)
    w("  return")
    w("}")
    print("\n".join(out))


if __name__ == "__main__":
    build_cases()
    emit()
