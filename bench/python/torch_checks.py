#!/usr/bin/env python3
"""attn's PyTorch path (python/attn): attn.sdpa on torch tensors and the
custom op torch.ops.attn.sdpa, against PyTorch's own SDPA in float64.

    python3 bench/python/torch_checks.py --device cuda   # the GPU machine
    python3 bench/python/torch_checks.py --device cpu    # wherever torch is

Checks (each prints PASS, FAIL or SKIP with the reason; the exit status is
1 when any FAILs, 2 when torch or the library is missing):

  - f32, f16, bf16 vs F.scaled_dot_product_attention on float64 copies
    (tolerances: f32 2e-5 on cpu and 1e-4 on cuda, f16 2e-3, bf16 1.6e-2;
    inputs uniform in [-1, 1]);
  - causal with Sq == Skv (= torch's is_causal) and Sq != Skv (attn is
    bottom-right aligned: equal to torch with the explicit mask, and shown
    to differ from torch's top-left is_causal);
  - GQA (enable_gqa=True, against repeat_interleave'd k and v), bool and
    additive masks broadcast over B and H, a key-padding mask, lse against
    float64 logsumexp, rank-3 inputs, BSHD storage passed by strides;
  - dropout: p = 0 equals none, the same seed reproduces bit for bit;
  - the custom op: torch.library.opcheck (schema, fake vs real), and
    torch.compile(fullgraph=True) of a function calling attn.sdpa
    (aot_eager, and inductor on cuda) equal to eager;
  - cuda: the launch is on the current stream: inputs written on a
    non-default stream after a long sleep there, attn.sdpa on that stream,
    the result right (a launch on another stream would read the inputs
    before they are written);
  - bad input: mixed devices, cpu tensors with target='cuda', float64,
    a non-contiguous last dimension, NumPy mixed with torch.
"""
import argparse
import math
import os
import sys
import traceback

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "python"))

results = {"PASS": 0, "FAIL": 0, "SKIP": 0}


def report(kind, name, detail=""):
    results[kind] += 1
    print("%s %s%s" % (kind, name, (": " + detail) if detail else ""),
          flush=True)


def case(name):
    def wrap(fn):
        try:
            detail = fn()
            if isinstance(detail, tuple) and detail and detail[0] == "SKIP":
                report("SKIP", name, detail[1])
            else:
                report("PASS", name, detail or "")
        except Exception as e:  # noqa: BLE001 - every failure is reported
            report("FAIL", name, "%s: %s" % (type(e).__name__, e))
            traceback.print_exc(file=sys.stdout)
        return fn
    return wrap


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--device", default="cuda", choices=["cpu", "cuda"])
    ap.add_argument("--no-compile", action="store_true",
                    help="skip the torch.compile checks")
    args = ap.parse_args()
    try:
        import torch
        import torch.nn.functional as F
    except ImportError as e:
        print("SKIP everything: torch is not importable here (%s)" % e)
        return 2
    import attn
    try:
        print("attn %s, library %s (attn_version %s), torch %s"
              % (attn.__version__, attn.library_path(),
                 attn.library_version(), torch.__version__), flush=True)
    except attn.LibraryNotFoundError as e:
        print("FAIL library: %s" % e)
        return 2
    dev = torch.device(args.device)
    cuda = dev.type == "cuda"
    if cuda and not torch.cuda.is_available():
        print("FAIL cuda: torch.cuda.is_available() is False")
        return 2
    if cuda:
        print("device: %s" % torch.cuda.get_device_name(dev))
    ok, why = attn.available(args.device)
    if not ok:
        print("FAIL attn.available(%r): %s" % (args.device, why))
        return 2
    import attn.torch as attn_torch
    print("custom op: %s" % ("torch.ops.attn.sdpa" if attn_torch.OP is not None
                             else "none (torch without torch.library.custom_op:"
                                  " eager only)"), flush=True)
    gen = torch.Generator(device="cpu")
    gen.manual_seed(int.from_bytes(os.urandom(4), "little"))

    def rand(*shape, dtype=torch.float32):
        x = torch.rand(shape, generator=gen, dtype=torch.float32) * 2 - 1
        return x.to(dtype=dtype, device=dev)

    have_sdpa = hasattr(F, "scaled_dot_product_attention")
    if not have_sdpa:
        print("note: torch %s has no F.scaled_dot_product_attention: the "
              "reference is the same math written out in float64"
              % torch.__version__)

    def torch_sdpa64(q, k, v, attn_mask=None, scale=None, is_causal=False):
        """PyTorch's SDPA on float64 inputs (the math backend), or the same
        math written out where torch has no SDPA (< 2.0)."""
        if have_sdpa:
            kw = {} if scale is None else {"scale": scale}
            return F.scaled_dot_product_attention(q, k, v, attn_mask=attn_mask,
                                                  is_causal=is_causal, **kw)
        scale_ = scale if scale is not None else 1.0 / math.sqrt(q.shape[-1])
        s = q @ k.transpose(-1, -2) * scale_
        if attn_mask is not None:
            s = s + attn_mask
        if is_causal:
            i = torch.arange(q.shape[-2], device=q.device)[:, None]
            j = torch.arange(k.shape[-2], device=q.device)[None, :]
            s = s.masked_fill(j > i, float("-inf"))
        return torch.softmax(s, dim=-1) @ v

    TOL = {torch.float32: 1e-4 if cuda else 2e-5, torch.float16: 2e-3,
           torch.bfloat16: 1.6e-2}

    def reference(q, k, v, mask=None, scale=None, causal_br=False):
        """torch's SDPA (math, float64) with attn's semantics: GQA by
        repeat_interleave, bottom-right causal as an explicit mask, and
        fully masked rows 0 (torch gives NaN there). Also lse."""
        q64, k64, v64 = q.double(), k.double(), v.double()
        g = q.shape[-3] // k.shape[-3]
        if g > 1:
            k64 = k64.repeat_interleave(g, dim=-3)
            v64 = v64.repeat_interleave(g, dim=-3)
        sq, skv = q.shape[-2], k.shape[-2]
        keep = None
        bias = None
        if mask is not None:
            if mask.dtype == torch.bool:
                keep = mask
            else:
                bias = mask.float().double()
        if causal_br:
            i = torch.arange(sq, device=dev)[:, None]
            j = torch.arange(skv, device=dev)[None, :]
            c = j <= i + (skv - sq)
            keep = c if keep is None else (keep & c)
        if keep is not None:
            neg = torch.zeros(keep.shape, dtype=torch.float64, device=dev)
            neg = neg.masked_fill(~keep, float("-inf"))
            bias = neg if bias is None else bias + neg
        scale_ = scale if scale is not None else 1.0 / math.sqrt(q.shape[-1])
        out = torch_sdpa64(q64, k64, v64, attn_mask=bias, scale=scale_)
        s = q64 @ k64.transpose(-1, -2) * scale_
        if bias is not None:
            s = s + bias
        lse = torch.logsumexp(s, dim=-1)
        empty = torch.isneginf(lse)
        out = torch.where(empty[..., None], torch.zeros_like(out), out)
        return out, lse

    def close(name, got, want, tol):
        got = got.double()
        want = want.double()
        assert got.shape == want.shape, "%s: shape %s, expected %s" % (
            name, tuple(got.shape), tuple(want.shape))
        both_inf = torch.isinf(want) & (got == want)
        err = torch.where(both_inf, torch.zeros_like(got), (got - want).abs())
        bad = ~(err <= tol)  # NaN is bad
        if bad.any():
            idx = tuple(int(x) for x in bad.nonzero()[0])
            raise AssertionError("%s: %d of %d elements off; first at %s: got "
                                 "%r, expected %r (tol %g)"
                                 % (name, int(bad.sum()), bad.numel(), idx,
                                    got[idx].item(), want[idx].item(), tol))
        e = err[torch.isfinite(err)]
        return float(e.max()) if e.numel() else 0.0

    dtypes = [torch.float32, torch.float16, torch.bfloat16]
    for dt in dtypes:
        n = str(dt).replace("torch.", "")

        @case("%s plain + lse vs torch float64" % n)
        def _():
            q, k, v = (rand(2, 4, 37, 64, dtype=dt) for _ in range(3))
            out, lse = attn.sdpa(q, k, v, return_lse=True)
            assert out.dtype == dt and out.device == q.device
            assert lse.dtype == torch.float32 and lse.shape == (2, 4, 37)
            want, want_lse = reference(q, k, v)
            e = close("out", out, want, TOL[dt])
            close("lse", lse, want_lse, 1e-4)
            return "max err %.1e" % e

        @case("%s causal Sq == Skv equals torch is_causal" % n)
        def _():
            q, k, v = (rand(1, 2, 50, 64, dtype=dt) for _ in range(3))
            out = attn.sdpa(q, k, v, causal=True)
            want = torch_sdpa64(q.double(), k.double(), v.double(),
                                is_causal=True)
            return "max err %.1e" % close("out", out, want, TOL[dt])

    @case("causal Sq < Skv is bottom-right (differs from torch is_causal)")
    def _():
        q = rand(1, 2, 7, 64)
        k, v = rand(1, 2, 30, 64), rand(1, 2, 30, 64)
        out = attn.sdpa(q, k, v, causal=True)
        want, _ = reference(q, k, v, causal_br=True)
        e = close("out", out, want, TOL[torch.float32])
        tl = torch_sdpa64(q.double(), k.double(), v.double(), is_causal=True)
        d = (out.double() - tl).abs().max().item()
        assert d > 1e-2, "expected to differ from top-left is_causal"
        return "max err %.1e; |attn - torch is_causal| = %.2f" % (e, d)

    @case("causal Sq > Skv: first rows see no key, out 0, lse -inf")
    def _():
        q = rand(1, 2, 12, 32)
        k, v = rand(1, 2, 5, 32), rand(1, 2, 5, 32)
        out, lse = attn.sdpa(q, k, v, causal=True, return_lse=True)
        want, want_lse = reference(q, k, v, causal_br=True)
        close("out", out, want, TOL[torch.float32])
        close("lse", lse, want_lse, 1e-4)
        assert torch.isneginf(lse[..., :7]).all() and (out[..., :7, :] == 0).all()

    @case("GQA enable_gqa=True, Dv != D")
    def _():
        q = rand(2, 8, 33, 64, dtype=torch.float16)
        k = rand(2, 2, 45, 64, dtype=torch.float16)
        v = rand(2, 2, 45, 32, dtype=torch.float16)
        out = attn.sdpa(q, k, v, enable_gqa=True)
        want, _ = reference(q, k, v)
        return "max err %.1e" % close("out", out, want, TOL[torch.float16])

    @case("masks: bool [1,1,Sq,Skv], additive [B,1,Sq,Skv], padding [B,1,1,Skv]")
    def _():
        q = rand(2, 4, 19, 64, dtype=torch.bfloat16)
        k, v = (rand(2, 4, 40, 64, dtype=torch.bfloat16) for _ in range(2))
        m = torch.rand(1, 1, 19, 40, generator=gen).to(dev) < 0.7
        m[..., 3, :] = False  # a fully masked row
        add = (torch.randn(2, 1, 19, 40, generator=gen)).to(dev)
        pad = torch.ones(2, 1, 1, 40, dtype=torch.bool, device=dev)
        pad[1, ..., 25:] = False
        errs = []
        for mask in (m, add, add.to(torch.bfloat16), pad):
            out = attn.sdpa(q, k, v, mask=mask)
            want, _ = reference(q, k, v, mask=mask)
            errs.append(close("out", out, want, TOL[torch.bfloat16]))
        out = attn.sdpa(q, k, v, mask=m, causal=True)
        want, _ = reference(q, k, v, mask=m, causal_br=True)
        errs.append(close("out", out, want, TOL[torch.bfloat16]))
        return "max err %.1e" % max(errs)

    @case("BSHD storage by strides, rank 3, custom scale")
    def _():
        qs = rand(2, 29, 4, 64)  # [B, S, H, D]
        ks, vs = rand(2, 31, 4, 64), rand(2, 31, 4, 64)
        q, k, v = (x.transpose(1, 2) for x in (qs, ks, vs))
        assert not q.is_contiguous()
        out = attn.sdpa(q, k, v, scale=0.2)
        want, _ = reference(q, k, v, scale=0.2)
        e = close("out", out, want, TOL[torch.float32])
        out3 = attn.sdpa(q[0], k[0], v[0], scale=0.2)
        assert out3.shape == (4, 29, 64)
        close("rank 3", out3, want[0], TOL[torch.float32])
        return "max err %.1e" % e

    @case("dropout: p=0 equals none; same seed reproduces; seeds differ")
    def _():
        q, k, v = (rand(2, 4, 40, 64, dtype=torch.float16) for _ in range(3))
        a = attn.sdpa(q, k, v, dropout_p=0.25, seed=123456789012)
        b = attn.sdpa(q, k, v, dropout_p=0.25, seed=123456789012)
        c = attn.sdpa(q, k, v, dropout_p=0.25, seed=7)
        assert torch.equal(a, b) and not torch.equal(a, c)
        assert torch.equal(attn.sdpa(q, k, v, dropout_p=0.0, seed=5),
                           attn.sdpa(q, k, v))
        big = attn.sdpa(q, k, v, dropout_p=0.25, seed=2 ** 64 - 3)
        neg = attn.sdpa(q, k, v, dropout_p=0.25, seed=-3)
        assert torch.equal(big, neg)

    @case("custom op: torch.library.opcheck")
    def _():
        if attn_torch.OP is None:
            return ("SKIP", "no custom op with this torch (%s)" % torch.__version__)
        if not hasattr(torch.library, "opcheck"):
            return ("SKIP", "torch %s has no torch.library.opcheck"
                    % torch.__version__)
        q, k, v = (rand(2, 4, 16, 64, dtype=torch.float16) for _ in range(3))
        m = torch.rand(1, 1, 16, 16, generator=gen).to(dev) < 0.8
        for a in [(q, k, v, None, True, None, 0.0, 0, True, False, None),
                  (q, k, v, m, False, 0.3, 0.0, 0, False, False, None),
                  (q[0], k[0], v[0], None, False, None, 0.1, 3, True, False,
                   None)]:
            torch.library.opcheck(attn_torch.OP, a)

    def compiled(backend):
        if args.no_compile:
            return ("SKIP", "--no-compile")
        if attn_torch.OP is None:
            return ("SKIP", "torch %s has no torch.library.custom_op: "
                    "torch.compile cannot trace attn.sdpa" % torch.__version__)
        torch._dynamo.reset()

        def f(q, k, v, m):
            out, lse = attn.sdpa(q * 2, k, v, mask=m, causal=True,
                                 return_lse=True, enable_gqa=True)
            return out.float().sum(-1) + lse, out

        q = rand(2, 8, 48, 64, dtype=torch.float16)
        k, v = rand(2, 2, 64, 64, dtype=torch.float16), rand(2, 2, 64, 64, dtype=torch.float16)
        m = torch.rand(2, 1, 48, 64, generator=gen).to(dev) < 0.9
        cf = torch.compile(f, fullgraph=True, backend=backend)
        got = cf(q, k, v, m)
        want = f(q, k, v, m)
        close("out", got[1], want[1], 0)
        close("sum + lse", got[0], want[0], 1e-3)
        # Other lengths: traced again or dynamic, still right.
        q2 = rand(2, 8, 20, 64, dtype=torch.float16)
        m2 = torch.rand(2, 1, 20, 64, generator=gen).to(dev) < 0.9
        close("out (Sq 20)", cf(q2, k, v, m2)[1], f(q2, k, v, m2)[1], 0)
        return "fullgraph=True, equal to eager"

    @case("torch.compile(fullgraph=True, backend='aot_eager')")
    def _():
        return compiled("aot_eager")

    @case("torch.compile(fullgraph=True) with inductor")
    def _():
        if not cuda:
            return ("SKIP", "inductor is checked on cuda only (a C++ "
                    "toolchain for cpu inductor is not assumed)")
        return compiled("inductor")

    @case("current stream: launch on a non-default stream")
    def _():
        if not cuda:
            return ("SKIP", "cpu")
        src = [rand(2, 8, 256, 64, dtype=torch.float16) for _ in range(3)]
        want = attn.sdpa(*src)
        torch.cuda.synchronize()
        s = torch.cuda.Stream(device=dev)
        with torch.cuda.stream(s):
            dst = [torch.zeros_like(x) for x in src]
            torch.cuda._sleep(200_000_000)  # ~0.1 s of GPU time on s
            for d, x in zip(dst, src):
                d.copy_(x)
            out = attn.sdpa(*dst)
        # Nothing synchronizes s with the default stream: an out computed on
        # another stream would have read zeros.
        s.synchronize()
        close("out", out, want, 0)
        return "equal to the default-stream result"

    @case("cuda device index: tensors on the current device")
    def _():
        if not cuda:
            return ("SKIP", "cpu")
        n = torch.cuda.device_count()
        q = rand(1, 2, 16, 64, dtype=torch.float16)
        out = attn.sdpa(q, q, q)
        assert out.device == q.device
        if n < 2:
            return ("SKIP", "one GPU: a second device's kernel is not checked")
        q1 = q.to("cuda:1")
        out1 = attn.sdpa(q1, q1, q1)
        assert out1.device == q1.device
        close("cuda:1", out1.to(dev), out, 0)

    def expect(fragment, fn):
        try:
            fn()
        except attn.InvalidArgumentError as e:
            assert fragment in str(e), "message lacks %r: %s" % (fragment, e)
            return str(e).splitlines()[0]
        raise AssertionError("no InvalidArgumentError")

    @case("errors: float64, non-contiguous last dim, numpy mixed in")
    def _():
        q = rand(1, 2, 8, 64)
        msgs = [expect("q.dtype is float64", lambda: attn.sdpa(q.double(), q, q)),
                expect("last dimension is not contiguous",
                       lambda: attn.sdpa(rand(1, 2, 8, 128)[..., ::2], q, q)),
                expect("pass all NumPy arrays or all torch tensors",
                       lambda: attn.sdpa(q, q.cpu().numpy(), q))]
        if attn_torch.OP is not None:  # the same through the op
            msgs.append(expect("ranks 2, 2, 2",
                               lambda: attn_torch.OP(q[0, 0], q[0, 0], q[0, 0],
                                                     None, False, None, 0.0, 0,
                                                     False, False, None)))
        return " | ".join(msgs)

    @case("errors: devices")
    def _():
        if not cuda:
            q = rand(1, 2, 8, 64)
            return expect("target='cuda' needs torch CUDA tensors",
                          lambda: attn.sdpa(q, q, q, target="cuda"))
        q = rand(1, 2, 8, 64)
        return " | ".join([
            expect("inputs on different devices",
                   lambda: attn.sdpa(q, q.cpu(), q)),
            expect("target='cpu' runs on host memory",
                   lambda: attn.sdpa(q, q, q, target="cpu")),
            expect("target='cuda' needs torch CUDA tensors",
                   lambda: attn.sdpa(q.cpu(), q.cpu(), q.cpu(), target="cuda"))])

    print("%d passed, %d failed, %d skipped" % (results["PASS"],
                                                results["FAIL"],
                                                results["SKIP"]))
    return 1 if results["FAIL"] else 0


if __name__ == "__main__":
    sys.exit(main())
