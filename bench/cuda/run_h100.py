#!/usr/bin/env python3
"""Checks and times attn's AOT CUDA kernels on a GPU, against PyTorch.

Runs on the GPU machine from carried files only (no build there):
libattn_runtime.so and the artifacts that bench/cuda/make_artifacts.sh wrote
(PTX + metadata per kernel kind, dynamic B/H/S). For every artifact:

1. correctness against a float64 reference on fresh random inputs, with the
   output poisoned (NaN) before each launch, over odd lengths, Sq != Skv both
   ways (causal rows that see no key must be 0), GQA, decode (Sq = 1), BSHD
   strides; PyTorch's flash backend is scored against the same reference so
   the error is read against FlashAttention-2's own;
2. timing with CUDA events (median) at B*S = 16k tokens, hidden 2048
   (H = 32 at D = 64, 16 at D = 128), S = 512..16k, next to PyTorch's SDPA
   backends (flash, cuDNN, efficient) on the same inputs in the same process;
   attn and the flash backend alternate over --rounds rounds per row (the
   median of the rounds' medians), so that a drift of the GPU's clocks
   between two measurements does not enter their ratio;
3. decode (Sq = 1, long Skv, GQA) in GB/s of K/V read, one call at a time
   and back to back, with the host time per call (attn through ctypes,
   attn_launch alone on prebuilt arguments, PyTorch's flash).

A/B of two compilers: an artifact named <kernel>_x_<tag> (make_artifacts.sh
with ATTN_AB_BUILD and ATTN_AB_TAG: the same spec built by another
compiler) is checked like any other and timed together with <kernel>: in
each round the new kernel (<kernel>), every twin and flash are timed one
after the other, the order rotated by one each round, so that both
compilers' kernels see the same clocks. ab.csv / ab.md give per cell
new/old = the median over the rounds of old_ms / new_ms (above 1: the new
compiler is faster) and a summary against the gate (median >= --ab-median,
no cell below --ab-min) over the prefill cells and the decode cells (back
to back). Exit status: 0; 1 when a check failed; 4 when the A/B gate
failed (checks all passed).

Writes results.json/.csv/.md, decode.csv and a chart (PNG) under --out,
and ab.csv / ab.md when twins were timed.
"""
import argparse
import ctypes
import glob
import json
import math
import os
import statistics
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "examples"))
import attn_ctypes as A  # noqa: E402

import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402
from torch.nn.attention import SDPBackend, sdpa_kernel  # noqa: E402

ap = argparse.ArgumentParser()
ap.add_argument("--artifacts", default=".carry/cuda")
ap.add_argument("--out", default=os.environ.get("OUT", "bench-out"))
ap.add_argument("--quick", action="store_true", help="small correctness set only")
ap.add_argument("--no-torch-checks", action="store_true",
                help="do not score PyTorch's flash backend in the checks (the "
                     "sanitizer runs: its split-KV combine kernel writes past "
                     "an allocation, which memcheck reports)")
ap.add_argument("--check-shapes", type=int, default=0,
                help="only the first N check shapes (0: --quick's 5, else all)")
ap.add_argument("--quick-checks", action="store_true",
                help="small correctness set, then the timings")
ap.add_argument("--full-checks", action="store_true",
                help="every check shape for this compiler's kernels, the quick "
                     "set for the A/B twins, then the timings")
ap.add_argument("--sq-decode", default="1,4,8,16",
                help="query lengths of the decode-by-Sq timings (empty: none): "
                     "the dynamic-Sq kernels (and their twins) next to the "
                     "static-Sq decode kernels of each length and flash")
ap.add_argument("--sq-decode-shape", default="2,32,8,100000",
                help="B,Hq,Hkv,Skv of the decode-by-Sq timings (D = 128); "
                     "several separated by ';'")
ap.add_argument("--sq-decode-causal", action="store_true",
                help="decode by Sq with the causal kernels (bottom-right: the "
                     "Sq rows see Skv - Sq + 1 .. Skv keys) next to flash "
                     "without causal, which reads the same bytes (PyTorch's "
                     "is_causal aligns top-left)")
ap.add_argument("--sq-decode-dtype", default="bf16",
                help="dtypes of the decode-by-Sq timings (f16, bf16)")
ap.add_argument("--only", default="",
                help="comma-separated substrings: run only kernels whose name has one")
ap.add_argument("--sizes", default="512,1024,2048,4096,8192,16384",
                help="prefill sequence lengths to time")
ap.add_argument("--no-decode", action="store_true", help="skip the decode timings")
ap.add_argument("--rounds", type=int, default=3,
                help="prefill: alternating attn / flash measurements per row")
ap.add_argument("--budget-s", type=float, default=420.0,
                help="stop timing new configs after this many seconds")
ap.add_argument("--no-twins", action="store_true",
                help="leave out the A/B twins <kernel>_x_<tag> (the sanitizer "
                     "runs: they check this compiler's kernels)")
ap.add_argument("--backends", default="flash,cudnn,efficient",
                help="PyTorch SDPA backends timed in the prefill rows: flash "
                     "alternates with attn per round, cudnn and efficient once "
                     "per shape ('flash' alone saves time in A/B runs)")
ap.add_argument("--ab-median", type=float, default=1.00,
                help="A/B gate: the median new/old over the cells at least this")
ap.add_argument("--ab-min", type=float, default=0.97,
                help="A/B gate: no cell's new/old below this")
ap.add_argument("--profile-decode", type=int, default=0, metavar="SKV",
                help="like --profile, at the decode shape B = 1, Hq = 32, "
                     "Hkv = 8, Sq = 1, Skv = SKV (flash only)")
ap.add_argument("--profile", type=int, default=0, metavar="S",
                help="no checks or timings: launch each kernel (--only) and "
                     "PyTorch's flash and cuDNN backends once at the prefill "
                     "shape of sequence length S inside cudaProfilerStart/Stop "
                     "(for ncu --profile-from-start off), then exit")
args = ap.parse_args()
for b in args.backends.split(","):
    if b and b not in ("flash", "cudnn", "efficient"):
        ap.error(f"--backends: unknown backend '{b}'")
os.makedirs(args.out, exist_ok=True)
T0 = time.time()

lib = A.load(os.path.join(args.artifacts, "libattn_runtime.so"))
dev = torch.device("cuda")
TORCH_DT = {A.ATTN_DTYPE_F16: torch.float16, A.ATTN_DTYPE_BF16: torch.bfloat16,
            A.ATTN_DTYPE_F32: torch.float32}
# Tolerances vs the float64 reference (rel_l2 = ||out - ref|| / ||ref||):
# f16/bf16 inputs with f32 accumulation; tensor-core kernels also round P to
# the input type before P.V, as FlashAttention does.
TOL = {torch.float16: 4e-3, torch.bfloat16: 2.5e-2, torch.float32: 1e-5}


try:
    # The current stream's cudaStream_t without building a torch.cuda.Stream
    # object (Triton's launcher reads it the same way); the public call is
    # the fallback.
    _raw_stream = torch._C._cuda_getCurrentRawStream

    def current_stream(t):
        return _raw_stream(t.get_device())
except AttributeError:
    def current_stream(t):
        return torch.cuda.current_stream(t.device).cuda_stream


class Kernel:
    def __init__(self, meta_path):
        self.name = os.path.basename(meta_path)[:-5]
        # A/B: set on <kernel>_x_<tag> when <kernel> is among the kernels.
        self.twin_of, self.tag = None, None
        # The compiled code's bytes (the PTX or cubin the metadata names),
        # to tell an A/B pair whose two compilers emitted the same kernel.
        self.binary = b""
        with open(meta_path) as f:
            binary = json.load(f).get("binary")
        if binary:
            with open(os.path.join(os.path.dirname(meta_path), binary), "rb") as f:
                self.binary = f.read()
        self.spec = A.AttnSpec()
        A.check(lib, lib.attn_cuda_load_artifact(meta_path.encode(),
                                                 ctypes.byref(self.spec)),
                "attn_cuda_load_artifact " + meta_path)
        self.ctx = ctypes.c_void_p()
        A.check(lib, lib.attn_context_create(ctypes.byref(self.ctx)), "ctx")
        self.k = ctypes.c_void_p()
        A.check(lib, lib.attn_compile(self.ctx, ctypes.byref(self.spec),
                                      A.ATTN_TARGET_CUDA, ctypes.byref(self.k)),
                "attn_compile " + self.name)
        self.dtype = TORCH_DT[self.spec.dtype]
        self.causal = bool(self.spec.causal)
        self.D = self.spec.head_dim
        self.mask = self.spec.mask  # A.ATTN_MASK_*
        self.lse = bool(self.spec.return_lse)
        self.dropout = float(self.spec.dropout_p)
        # A static query length (the decode artifacts: 1), else None.
        self.seq_q = self.spec.seq_q if self.spec.seq_q > 0 else None
        # kv_splits: 0 = chosen at launch by the runtime, N = forced.
        self.kv_splits = self.spec.kv_splits

    def launch(self, q, k, v, out, mask=None, lse=None, seed=0):
        self.launch_args(self.args(q, k, v, out, mask, lse, seed))

    def args(self, q, k, v, out, mask=None, lse=None, seed=0):
        """The launch's AttnLaunchArgs, on q's device's current stream."""
        return A.launch_args(q, k, v, out, mask, lse, seed, current_stream(q))

    def launch_args(self, la):
        """attn_launch on prebuilt arguments."""
        st = lib.attn_launch(self.k, ctypes.byref(la))
        if st != A.ATTN_OK:
            raise RuntimeError("attn_launch: " + lib.attn_last_error().decode())


def make(B, H, S, D, dtype, bshd=False):
    if bshd:
        return torch.randn(B, S, H, D, device=dev, dtype=dtype).transpose(1, 2)
    return torch.randn(B, H, S, D, device=dev, dtype=dtype)


PHILOX_M0, PHILOX_M1 = 0xD2511F53, 0xCD9E8D57
PHILOX_W0, PHILOX_W1 = 0x9E3779B9, 0xBB67AE85
U32 = 0xFFFFFFFF


def dropout_keep(seed, p, B, H, r0, r1, Skv):
    """[B, H, r1 - r0, Skv] bool for query rows [r0, r1): Philox-4x32-10
    keyed by the seed, counted by (key, row, head, batch), kept iff word >=
    ceil(p 2^32) (docs/Semantics.md; the same bits as runtime/reference and
    the compiler), in int64 torch."""
    def u(x):
        return x & U32
    b = torch.arange(B, device=dev, dtype=torch.int64).view(B, 1, 1, 1)
    h = torch.arange(H, device=dev, dtype=torch.int64).view(1, H, 1, 1)
    i = torch.arange(r0, r1, device=dev, dtype=torch.int64).view(1, 1, r1 - r0, 1)
    j = torch.arange(Skv, device=dev, dtype=torch.int64).view(1, 1, 1, Skv)
    shape = (B, H, r1 - r0, Skv)
    c0, c1, c2, c3 = (j.expand(shape), i.expand(shape), h.expand(shape),
                      b.expand(shape))
    k0, k1 = seed & U32, (seed >> 32) & U32
    for _ in range(10):
        hi0, lo0 = _mulhilo(PHILOX_M0, c0)
        hi1, lo1 = _mulhilo(PHILOX_M1, c2)
        c0, c1, c2, c3 = (hi1 ^ c1 ^ k0, lo1, hi0 ^ c3 ^ k1, lo0)
        k0, k1 = u(k0 + PHILOX_W0), u(k1 + PHILOX_W1)
    return c0 >= math.ceil(p * 2.0 ** 32)


def _mulhilo(m, x):
    """(high, low) 32-bit halves of m * x for 32-bit m and x, in int64."""
    m_hi, m_lo = m >> 16, m & 0xFFFF
    x_hi, x_lo = x >> 16, x & 0xFFFF
    ll = m_lo * x_lo
    lh = m_lo * x_hi
    hl = m_hi * x_lo
    hh = m_hi * x_hi
    mid = (ll >> 16) + (lh & 0xFFFF) + (hl & 0xFFFF)
    lo = ((mid & 0xFFFF) << 16) | (ll & 0xFFFF)
    hi = hh + (lh >> 16) + (hl >> 16) + (mid >> 16)
    return hi & U32, lo & U32


def reference(q, k, v, causal, scale, mask=None, dropout=0.0, seed=0):
    """float64 out and lse: bottom-right causal, bool keep-mask or additive
    mask broadcast over B/H, dropout on the normalized probabilities; rows
    with no visible key -> out 0, lse -inf. Computed over chunks of query
    rows (a float64 score matrix of a large check, with its temporaries,
    would take several GB; under compute-sanitizer the checks ran out of
    the H100's 80 GB)."""
    B, Hq, Hkv = q.shape[0], q.shape[1], k.shape[1]
    kr = k.double().repeat_interleave(Hq // Hkv, dim=1)
    vr = v.double().repeat_interleave(Hq // Hkv, dim=1)
    Sq, Skv = q.shape[2], k.shape[2]
    # 2^23 scores per chunk: dropout's int64 Philox temporaries are 8 bytes
    # per score each.
    step = max(1, (1 << 23) // max(1, B * Hq * Skv))
    outs, lses = [], []
    for r0 in range(0, Sq, step):
        r1 = min(Sq, r0 + step)
        s = torch.einsum("bhqd,bhkd->bhqk", q[:, :, r0:r1].double(), kr) * scale
        if mask is not None:
            mk = mask if mask.shape[2] == 1 else mask[:, :, r0:r1]  # broadcast over Sq
            if mask.dtype == torch.bool:
                s = s.masked_fill(~mk, float("-inf"))
            else:
                # The score is an f32 (docs/Semantics.md): a row of
                # finfo.min padding rounds to one value, the uniform
                # average, as every kernel computes it.
                s = (s + mk.double()).float().double()
        if causal:
            i = torch.arange(r0, r1, device=dev)[:, None]
            j = torch.arange(Skv, device=dev)[None, :]
            s = s.masked_fill(~(j <= i + (Skv - Sq)), float("-inf"))
        m = s.amax(-1, keepdim=True)
        empty = torch.isneginf(m)
        p = torch.exp(s - torch.where(empty, torch.zeros_like(m), m))
        del s
        l = p.sum(-1, keepdim=True)
        if dropout > 0.0:
            keep = dropout_keep(seed, dropout, B, Hq, r0, r1, Skv)
            p = torch.where(keep, p / (1.0 - dropout), torch.zeros_like(p))
        out = torch.einsum("bhqk,bhkd->bhqd", p, vr) / torch.where(empty, torch.ones_like(l), l)
        outs.append(torch.where(empty, torch.zeros_like(out), out))
        lses.append(torch.where(empty, m, m + torch.log(l)).squeeze(-1))
    return torch.cat(outs, dim=2), torch.cat(lses, dim=2)


def make_mask(kern, B, Hq, Sq, Skv):
    """The artifact's mask kind, broadcast as its type says (bool: one
    [1,1,Sq,Skv] for all; additive: [B,1,Sq,Skv]), with row 0 fully masked.
    Additive masks also carry the finite extremes (docs/Semantics.md,
    "Scores near the f32 range"): batch 1 all finfo(dtype).min (Hugging
    Face's padding: the uniform average, -3.4e38 in f32; bf16 and f32
    masks), row 1 of batch 0 likewise, and row 2 one key at finfo.max / 2
    (that key only)."""
    if kern.mask == A.ATTN_MASK_BOOL:
        m = torch.rand(1, 1, Sq, Skv, device=dev) < 0.7
        m[:, :, 0, :] = False
        return m
    m = (torch.randn(B, 1, Sq, Skv, device=dev) * 2).to(kern.dtype)
    m[:, :, 0, :] = float("-inf")
    fi = torch.finfo(kern.dtype)
    # (f16's min, -65504, does not swallow the scores as f32 rounding; its
    # rows would compare rounding orders, not the semantics.)
    if fi.min < -1e30 and B > 1:
        m[1] = fi.min
    if fi.min < -1e30 and Sq > 1:
        m[0, :, 1, :] = fi.min
    if Sq > 2:
        m[0, :, 2, Skv // 2] = fi.max / 2
    return m


def rel_l2(out, ref):
    return ((out.double() - ref).norm() / ref.norm().clamp_min(1e-30)).item()


def check(kern, B, Hq, Hkv, Sq, Skv, bshd=False):
    D = kern.D
    q = make(B, Hq, Sq, D, kern.dtype, bshd)
    k = make(B, Hkv, Skv, D, kern.dtype, bshd)
    v = make(B, Hkv, Skv, D, kern.dtype, bshd)
    out = make(B, Hq, Sq, D, kern.dtype, bshd).fill_(float("nan"))
    mask = make_mask(kern, B, Hq, Sq, Skv) if kern.mask != A.ATTN_MASK_NONE else None
    lse = (torch.full((B, Hq, Sq), float("nan"), device=dev, dtype=torch.float32)
           if kern.lse else None)
    # A seed with both 32-bit halves set, fresh per check.
    seed = int(torch.randint(1, 2 ** 62, (1,)).item()) | (1 << 40)
    kern.launch(q, k, v, out, mask, lse, seed)
    torch.cuda.synchronize()
    scale = 1.0 / math.sqrt(D)
    ref, ref_lse = reference(q, k, v, kern.causal, scale, mask,
                             kern.dropout, seed)
    nan = bool(torch.isnan(out).any().item())
    err = float("inf") if nan else rel_l2(out, ref)
    maxabs = float("inf") if nan else (out.double() - ref).abs().max().item()
    lse_err = None
    if lse is not None:
        # -inf exactly where the reference has it (rows with no key), else
        # |lse - ref| <= 1e-3 * max(1, |ref|); NaN never passes.
        fin = torch.isfinite(ref_lse)
        same_inf = bool((torch.isneginf(lse) == ~fin).all().item())
        d = ((lse.double() - ref_lse).abs() / ref_lse.abs().clamp_min(1.0))[fin]
        lse_err = float("inf") if (not same_inf or torch.isnan(lse).any()) else (
            d.max().item() if d.numel() else 0.0)
    flash_err = None
    if (mask is None and kern.dropout == 0.0 and (not kern.causal or Sq == Skv)
            and kern.dtype != torch.float32 and not args.no_torch_checks):
        try:
            with sdpa_kernel(SDPBackend.FLASH_ATTENTION):
                fo = F.scaled_dot_product_attention(q, k, v, is_causal=kern.causal,
                                                    enable_gqa=Hq != Hkv)
            flash_err = rel_l2(fo, ref)
        except RuntimeError:
            pass
    ok = (not nan) and err <= TOL[kern.dtype] and (lse_err is None or lse_err <= 1e-3)
    return dict(kernel=kern.name, B=B, Hq=Hq, Hkv=Hkv, Sq=Sq, Skv=Skv, D=D,
                bshd=bshd, nan=nan, rel_l2=err, max_abs=maxabs, lse_err=lse_err,
                flash_rel_l2=flash_err, tol=TOL[kern.dtype], ok=ok)


def time_fn(fn, budget_ms=600.0):
    """Median ms over repeats sized to the budget, after a warm-up."""
    fn()
    torch.cuda.synchronize()
    s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    s.record(); fn(); e.record(); torch.cuda.synchronize()
    one = max(s.elapsed_time(e), 1e-3)
    reps = int(max(3, min(50, budget_ms / one)))
    times = []
    for _ in range(reps):
        s.record(); fn(); e.record(); torch.cuda.synchronize()
        times.append(s.elapsed_time(e))
    return statistics.median(times)


def time_back_to_back(fn, n=20, reps=5):
    """Median ms per call over n calls queued between two events: the GPU
    work per call once the host keeps ahead (a call's host time hides
    behind earlier calls' kernels), against time_fn's one call at a time."""
    fn()
    torch.cuda.synchronize()
    s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    times = []
    for _ in range(reps):
        s.record()
        for _ in range(n):
            fn()
        e.record()
        torch.cuda.synchronize()
        times.append(s.elapsed_time(e) / n)
    return statistics.median(times)


def time_host(fn, n=50, reps=5):
    """Median host microseconds per call: n calls issued back to back with
    no synchronization, timed with time.perf_counter, then one (untimed)
    synchronization. The GPU work queues behind the calls, so this is what
    the host spends issuing one (Python, ctypes, runtime, driver), the part
    of time_fn's one-call time that time_back_to_back hides."""
    fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(reps):
        t0 = time.perf_counter()
        for _ in range(n):
            fn()
        t1 = time.perf_counter()
        torch.cuda.synchronize()
        times.append((t1 - t0) / n * 1e6)
    return statistics.median(times)


def flops(B, H, Sq, Skv, D, causal):
    f = 4.0 * B * H * Sq * Skv * D
    return f / 2 if causal and Sq == Skv else f


TWIN = "_x_"  # <kernel>_x_<tag>: <kernel>'s spec built by another compiler
paths = sorted(glob.glob(os.path.join(args.artifacts, "*.json")))
if args.only:
    paths = [p for p in paths
             if any(w in os.path.basename(p)[:-5] for w in args.only.split(","))]
if args.no_twins:
    paths = [p for p in paths if TWIN not in os.path.basename(p)]
# Each artifact is loaded and compiled before the next one is loaded: the
# runtime keys loaded artifacts by spec, and a twin has its kernel's spec.
kernels = [Kernel(p) for p in paths]
by_name = {k.name: k for k in kernels}
twins = {}  # kernel name -> its twins, in name order
for k in kernels:
    if TWIN in k.name and k.name.split(TWIN, 1)[0] in by_name:
        k.twin_of, k.tag = k.name.split(TWIN, 1)
        twins.setdefault(k.twin_of, []).append(k)
print("device:", torch.cuda.get_device_name(0), "torch", torch.__version__,
      "kernels:", [k.name for k in kernels], flush=True)

def profile_once(impls, shape):
    """Warms each (name, fn) up, then runs each once inside
    cudaProfilerStart/Stop (for ncu --profile-from-start off)."""
    for _, fn in impls:
        fn()
    torch.cuda.synchronize()
    for name, fn in impls:
        print(f"profile: {name} {shape}", flush=True)
        torch.cuda.profiler.start()
        fn()
        torch.cuda.synchronize()
        torch.cuda.profiler.stop()


if args.profile_decode:
    names = args.only.split(",")
    for kern in [k for k in kernels if k.name in names]:
        Skv, D = args.profile_decode, kern.D
        torch.manual_seed(Skv)
        q = make(1, 32, 1, D, kern.dtype)
        k, v = make(1, 8, Skv, D, kern.dtype), make(1, 8, Skv, D, kern.dtype)
        out = torch.empty_like(q)
        def run_flash():
            with sdpa_kernel(SDPBackend.FLASH_ATTENTION):
                F.scaled_dot_product_attention(q, k, v, enable_gqa=True)
        impls = [(kern.name, lambda: kern.launch(q, k, v, out)), ("flash", run_flash)]
        profile_once(impls, f"decode B=1 Hq=32 Hkv=8 Skv={Skv} D={D}")
    sys.exit(0)

if args.profile:
    # One launch of each implementation on the same inputs, warmed up
    # outside the profiled range (bench/cuda/profile_h100.sh).
    S = args.profile
    names = args.only.split(",")
    for kern in [k for k in kernels if k.name in names]:
        D = kern.D
        H, B = 2048 // D, max(1, 16384 // S)
        torch.manual_seed(S)
        q, k, v = (make(B, H, S, D, kern.dtype) for _ in range(3))
        out = torch.empty_like(q)
        impls = [(kern.name, lambda: kern.launch(q, k, v, out))]
        for name, be in (("flash", SDPBackend.FLASH_ATTENTION),
                         ("cudnn", SDPBackend.CUDNN_ATTENTION)):
            def run_torch(be=be):
                with sdpa_kernel(be):
                    F.scaled_dot_product_attention(q, k, v, is_causal=kern.causal)
            impls.append((name, run_torch))
        profile_once(impls, f"B={B} H={H} S={S} D={D} causal={kern.causal}")
    sys.exit(0)

# 1. correctness
checks = []
# Decode shapes (Sq = 1) split the keys at launch (few workgroups: the
# runtime picks the chunk count), as do (2, 8, 2, 3, 5000); causal with
# Skv > Sq and forced splits leaves some chunks of early rows empty.
# (3, 14, 7, 2100, 4096): with 17 query blocks of 128 rows (or 33 of 64),
# causal workgroups start heaviest first, in groups of heads whose K and V
# fit 16 MiB: 1, 2 or 4 MiB per KV head at D = 64, 128, 256, shared by 2
# query heads, split the 42 heads into groups of 32, 16 or 8, the last
# partial. It is in the quick set (memcheck's run; racecheck takes the
# first three shapes only).
shapes = [(2, 4, 4, 257, 257, False), (1, 8, 2, 100, 300, False),
          (1, 4, 2, 1, 1000, False), (3, 14, 7, 2100, 4096, False),
          # Sq = 4, GQA 4: a dynamic-Sq kernel's alternative for 2 <= Sq
          # <= 16 (in the quick set, which the A/B twins get).
          (2, 32, 8, 4, 777, False),
          (1, 4, 1, 300, 100, False),
          (2, 2, 2, 129, 65, True), (1, 16, 16, 1024, 1024, False),
          (2, 8, 2, 3, 5000, True), (1, 4, 2, 200, 3000, False),
          (1, 32, 8, 1, 4096, False), (3, 8, 2, 1, 777, True),
          # Decode-sized query lengths: a dynamic-Sq kernel runs its
          # alternative for 2 <= Sq <= 16 (and the default one from 17); the
          # static-Sq decode kernels of these lengths are checked here too.
          (1, 8, 2, 8, 3000, True), (2, 16, 4, 16, 1000, False),
          (1, 4, 2, 17, 500, False), (2, 32, 8, 8, 20000, False)]
QUICK = 5  # the quick set: shapes[:QUICK]
if args.quick or args.quick_checks:
    shapes = shapes[:QUICK]
if args.check_shapes < 0:
    ap.error("--check-shapes must be 0 (all) or a positive count")
if args.check_shapes:
    shapes = shapes[:args.check_shapes]
for kern in kernels:
    for i, (B, Hq, Hkv, Sq, Skv, bshd) in enumerate(shapes):
        if kern.seq_q is not None and Sq != kern.seq_q:
            continue
        if args.full_checks and kern.twin_of is not None and i >= QUICK:
            continue  # the twins (the other compiler): the quick set
        torch.manual_seed(len(checks) + 1)
        try:
            r = check(kern, B, Hq, Hkv, Sq, Skv, bshd)
        except Exception as ex:  # report, keep going
            r = dict(kernel=kern.name, B=B, Hq=Hq, Hkv=Hkv, Sq=Sq, Skv=Skv,
                     D=kern.D, bshd=bshd, ok=False, error=str(ex))
        checks.append(r)
        print("check", json.dumps(r), flush=True)
n_ok = sum(1 for c in checks if c["ok"])
print(f"correctness: {n_ok} ok, {len(checks) - n_ok} failed", flush=True)

def rotated(seq, r):
    """seq started at its (r mod len)-th element: the order of round r, so
    that no implementation is always timed first or right after another."""
    r %= len(seq)
    return seq[r:] + seq[:r]


def passed(kern):
    return any(c["kernel"] == kern.name and c["ok"] for c in checks)


def prefill_cell(kern, S):
    """Whether kern at length S is a prefill timing cell (checks and budget
    aside)."""
    if (kern.mask != A.ATTN_MASK_NONE or kern.lse
            or kern.seq_q is not None or kern.kv_splits != 0):
        return False  # checked above; timed without mask, lse, forced splits
    if kern.dropout and S not in (4096, 16384):
        return False  # dropout: two lengths, next to PyTorch's own dropout
    return True


def decode_cell(kern):
    """Whether kern has decode timing cells (checks and budget aside)."""
    return not (kern.D != 128 or kern.causal or kern.mask != A.ATTN_MASK_NONE
                or kern.lse or kern.dropout or kern.kv_splits != 0
                or kern.seq_q not in (None, 1)
                or not kern.name.startswith("tc"))


def sq_decode_impls(sq, dtype, causal=False):
    """The kernels of the decode-by-Sq cell at query length sq: the
    dynamic-Sq kernels (their twins, the other compiler's, beside them) and
    the static-Sq decode kernels of that length, D = 128 without mask, lse,
    dropout or a forced split count, of one dtype, causal or not."""
    out = []
    for k in kernels:
        if (k.D != 128 or k.causal != causal or k.mask != A.ATTN_MASK_NONE or k.lse
                or k.dropout or k.kv_splits != 0 or k.dtype != dtype
                or not k.name.startswith("tc") or not passed(k)):
            continue
        if k.seq_q is None or k.seq_q == sq:
            out.append(k)
    return out


DECODE_SHAPES = ((1, 4096), (1, 32768), (1, 131072), (16, 4096))
SIZES = [int(x) for x in args.sizes.split(",") if x]
BACKENDS = [b for b in args.backends.split(",") if b]
# Twins are timed with their kernel (below), not as rows of their own.
primaries = [k for k in kernels if k.twin_of is None]
ab = []  # one row per (kernel, twin, cell): new/old


def ab_row(kind, kern, tw, new_ms, old_ms, **cell):
    """new/old for one cell from the rounds' times of the kernel (new) and
    its twin (old): the median over the rounds of old_ms / new_ms, each
    round's pair timed back to back."""
    pairs = [o / n for n, o in zip(new_ms, old_ms) if n > 0]
    r = dict(kind=kind, kernel=kern.name, tag=tw.tag,
             dtype=str(kern.dtype).split(".")[1], D=kern.D,
             causal=kern.causal, dropout=kern.dropout, **cell,
             rounds=len(pairs), same_binary=kern.binary == tw.binary)
    if pairs:
        r.update(new_ms=statistics.median(new_ms),
                 old_ms=statistics.median(old_ms),
                 ratio=statistics.median(pairs), ratio_lo=min(pairs),
                 ratio_hi=max(pairs))
    return r


timings, decode, sq_decode = [], [], []
if not args.quick and args.sq_decode:
    # 2. decode by query length (speculative decoding: Sq = 4-16): GB/s of
    # K/V read, one call at a time and back to back, every implementation
    # of a cell timed in each round in a rotated order.
    D = 128
    dtypes = {"f16": torch.float16, "bf16": torch.bfloat16}
    cells = [(dn, tuple(int(x) for x in sh.split(",")))
             for sh in args.sq_decode_shape.split(";") if sh
             for dn in args.sq_decode_dtype.split(",") if dn]
    for dname, (B, Hq, Hkv, Skv) in cells:
        dt = dtypes[dname]
        torch.manual_seed(Skv)
        k, v = make(B, Hkv, Skv, D, dt), make(B, Hkv, Skv, D, dt)
        kv_bytes = 2 * B * Hkv * Skv * D * k.element_size()
        for Sq in [int(x) for x in args.sq_decode.split(",")]:
            impls = sq_decode_impls(Sq, dt, args.sq_decode_causal)
            if not impls:
                continue
            q = make(B, Hq, Sq, D, dt)
            out = torch.empty_like(q)

            def flash_fn():
                with sdpa_kernel(SDPBackend.FLASH_ATTENTION):
                    F.scaled_dot_product_attention(q, k, v, enable_gqa=True)
            order = impls + ["flash"]
            one = {x if x == "flash" else x.name: [] for x in order}
            b2b = {name: [] for name in one}
            errors = {}
            for times, timer in ((one, time_fn), (b2b, time_back_to_back)):
                for r in range(max(1, args.rounds)):
                    for x in rotated(order, r):
                        name = x if x == "flash" else x.name
                        if name in errors:
                            continue
                        fn = flash_fn if x == "flash" else (
                            lambda x=x: x.launch(q, k, v, out))
                        try:
                            times[name].append(timer(fn))
                        except Exception as ex:
                            errors[name] = str(ex)[:200]
            for name in one:
                row = dict(impl=name, dtype=dname, B=B, Hq=Hq, Hkv=Hkv,
                           Sq=Sq, Skv=Skv, D=D, rounds=len(one[name]),
                           causal=args.sq_decode_causal and name != "flash")
                if name in errors:
                    row["error"] = errors[name]
                if one[name]:
                    ms = statistics.median(one[name])
                    row.update(ms=ms, gbps=kv_bytes / ms / 1e6)
                if b2b[name]:
                    ms = statistics.median(b2b[name])
                    row.update(b2b_ms=ms, b2b_gbps=kv_bytes / ms / 1e6)
                sq_decode.append(row)
                print("sqdecode", json.dumps(row), flush=True)
        del k, v

if not args.quick:
    # 3. prefill timing, 16k tokens, hidden 2048
    backends = {"cudnn": SDPBackend.CUDNN_ATTENTION,
                "efficient": SDPBackend.EFFICIENT_ATTENTION}
    backends = {n: be for n, be in backends.items() if n in BACKENDS}
    torch_cache = {}  # cuDNN, efficient: once per (S, D, causal, dtype, p)
    for S in SIZES:
        for kern in primaries:
            if time.time() - T0 > args.budget_s:
                break
            if not (prefill_cell(kern, S) and passed(kern)):
                continue
            D = kern.D
            H, B = 2048 // D, 16384 // S
            tws = [t for t in twins.get(kern.name, []) if passed(t)]
            torch.manual_seed(S)
            q, k, v = (make(B, H, S, D, kern.dtype) for _ in range(3))
            out = torch.empty_like(q)
            fl = flops(B, H, S, S, D, kern.causal)

            def flash_fn():
                with sdpa_kernel(SDPBackend.FLASH_ATTENTION):
                    F.scaled_dot_product_attention(
                        q, k, v, is_causal=kern.causal, dropout_p=kern.dropout)
            # attn (and its twins) and flash alternate: each round times
            # each once, back to back, in an order rotated per round.
            ms = {x.name: [] for x in [kern] + tws}
            errors = {}
            flash_ms, flash_error = [], None
            order = [kern] + tws + (["flash"] if "flash" in BACKENDS else [])
            budget = 600.0 / max(1, args.rounds)
            for r in range(max(1, args.rounds)):
                for x in rotated(order, r):
                    if x == "flash":
                        if flash_error is None:
                            try:
                                flash_ms.append(time_fn(flash_fn, budget))
                            except RuntimeError as ex:
                                flash_error = str(ex)[:200]
                    elif x.name not in errors:
                        try:
                            ms[x.name].append(time_fn(
                                lambda x=x: x.launch(q, k, v, out, seed=12345),
                                budget))
                        except Exception as ex:
                            errors[x.name] = str(ex)
            key = (S, D, kern.causal, kern.dtype, kern.dropout)
            if key not in torch_cache:
                torch_cache[key] = {}
                for name, be in backends.items():
                    try:
                        with sdpa_kernel(be):
                            t = time_fn(lambda: F.scaled_dot_product_attention(
                                q, k, v, is_causal=kern.causal,
                                dropout_p=kern.dropout))
                        torch_cache[key][name + "_ms"] = t
                        torch_cache[key][name + "_tflops"] = fl / t / 1e9
                    except RuntimeError:
                        pass
            for x in [kern] + tws:
                row = dict(kernel=x.name, dtype=str(kern.dtype).split(".")[1],
                           D=D, causal=kern.causal, S=S, B=B, H=H,
                           dropout=kern.dropout)
                if x.name in errors:
                    row["attn_error"] = errors[x.name]
                elif ms[x.name]:
                    t = statistics.median(ms[x.name])
                    row["attn_ms"], row["attn_tflops"] = t, fl / t / 1e9
                row.update(torch_cache[key])
                if flash_error is not None:
                    row["flash_error"] = flash_error
                elif flash_ms:
                    t = statistics.median(flash_ms)
                    row["flash_ms"], row["flash_tflops"] = t, fl / t / 1e9
                timings.append(row)
                print("time", json.dumps(row), flush=True)
            for tw in tws:
                if kern.name in errors or tw.name in errors:
                    ab.append(ab_row("prefill", kern, tw, [], [], S=S,
                                     error=errors.get(kern.name) or errors[tw.name]))
                else:
                    ab.append(ab_row("prefill", kern, tw, ms[kern.name],
                                     ms[tw.name], S=S, B=B, H=H,
                                     tflop=fl / 1e12))
                print("ab", json.dumps(ab[-1]), flush=True)

    # 4. decode: Sq = 1, GQA 32:8, D = 128, K/V bytes read per second; the
    # tensor-core kernels, split at launch (the decode artifacts also with
    # the one-query geometry). A kernel with twins: it and its twins
    # alternate over --rounds rounds (one call at a time, then back to back).
    for kern in ([] if args.no_decode else primaries):
        if (not (decode_cell(kern) and passed(kern))
                or time.time() - T0 > args.budget_s + 60):
            continue
        tws = [t for t in twins.get(kern.name, []) if passed(t)]
        impls = [kern] + tws
        rounds = max(1, args.rounds) if tws else 1
        for (B, Skv) in DECODE_SHAPES:
            Hq, Hkv, D = 32, 8, 128
            q = make(B, Hq, 1, D, kern.dtype)
            k, v = make(B, Hkv, Skv, D, kern.dtype), make(B, Hkv, Skv, D, kern.dtype)
            out = torch.empty_like(q)
            kv_bytes = 2 * B * Hkv * Skv * D * k.element_size()
            rows = {x.name: dict(kernel=x.name, B=B, Hq=Hq, Hkv=Hkv, Skv=Skv, D=D)
                    for x in impls}
            one = {x.name: [] for x in impls}
            b2b = {x.name: [] for x in impls}
            for times, timer in ((one, time_fn), (b2b, time_back_to_back)):
                for r in range(rounds):
                    for x in rotated(impls, r):
                        if "attn_error" in rows[x.name]:
                            continue
                        try:
                            times[x.name].append(
                                timer(lambda x=x: x.launch(q, k, v, out)))
                        except Exception as ex:
                            rows[x.name]["attn_error"] = str(ex)
            for x in impls:
                row = rows[x.name]
                if "attn_error" in row:
                    continue
                try:
                    ms = statistics.median(one[x.name])
                    row["attn_ms"], row["attn_gbps"] = ms, kv_bytes / ms / 1e6
                    ms = statistics.median(b2b[x.name])
                    row["attn_b2b_ms"], row["attn_b2b_gbps"] = ms, kv_bytes / ms / 1e6
                    # Host time per call: the whole Python call, then
                    # attn_launch alone on arguments built once (the
                    # difference is the Python side's marshalling).
                    row["attn_host_us"] = time_host(lambda: x.launch(q, k, v, out))
                    la = x.args(q, k, v, out)
                    row["attn_launch_host_us"] = time_host(lambda: x.launch_args(la))
                except Exception as ex:
                    row["attn_error"] = str(ex)
            fl_row = {}
            try:
                def flash():
                    with sdpa_kernel(SDPBackend.FLASH_ATTENTION):
                        F.scaled_dot_product_attention(q, k, v, enable_gqa=True)
                ms = time_fn(flash)
                fl_row["flash_ms"], fl_row["flash_gbps"] = ms, kv_bytes / ms / 1e6
                ms = time_back_to_back(flash)
                fl_row["flash_b2b_ms"], fl_row["flash_b2b_gbps"] = ms, kv_bytes / ms / 1e6
                fl_row["flash_host_us"] = time_host(flash)
            except RuntimeError as ex:
                fl_row["flash_error"] = str(ex)[:200]
            for x in impls:
                rows[x.name].update(fl_row)
                decode.append(rows[x.name])
                print("decode", json.dumps(rows[x.name]), flush=True)
            for tw in tws:
                if "attn_error" in rows[kern.name] or "attn_error" in rows[tw.name]:
                    ab.append(ab_row("decode", kern, tw, [], [], B=B, Skv=Skv,
                                     error=rows[kern.name].get("attn_error")
                                     or rows[tw.name]["attn_error"]))
                else:
                    r = ab_row("decode", kern, tw, one[kern.name], one[tw.name],
                               B=B, Hq=Hq, Hkv=Hkv, Skv=Skv,
                               gbyte=kv_bytes / 1e9)
                    r2 = ab_row("decode", kern, tw, b2b[kern.name], b2b[tw.name])
                    if "ratio" in r2:
                        r.update(b2b_new_ms=r2["new_ms"], b2b_old_ms=r2["old_ms"],
                                 b2b_ratio=r2["ratio"], b2b_ratio_lo=r2["ratio_lo"],
                                 b2b_ratio_hi=r2["ratio_hi"])
                    ab.append(r)
                print("ab", json.dumps(ab[-1]), flush=True)

meta = dict(device=torch.cuda.get_device_name(0), torch=torch.__version__,
            date=time.strftime("%Y-%m-%d"), elapsed_s=time.time() - T0)
with open(os.path.join(args.out, "results.json"), "w") as f:
    json.dump(dict(meta=meta, checks=checks, timings=timings, decode=decode,
                   sq_decode=sq_decode), f, indent=1)

lines = [f"{meta['device']}, PyTorch {meta['torch']}, {meta['date']}.", "",
         "Correctness (rel_l2 vs float64; flash = PyTorch's flash backend on the same inputs):", "",
         "| kernel | B | Hq | Hkv | Sq | Skv | bshd | rel_l2 | lse err | flash rel_l2 | ok |",
         "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
for c in checks:
    fe = c.get("flash_rel_l2")
    lines.append(f"| {c['kernel']} | {c['B']} | {c['Hq']} | {c['Hkv']} | {c['Sq']} | {c['Skv']} | "
                 f"{c['bshd']} | {c.get('rel_l2', float('nan')):.2e} | "
                 f"{'' if c.get('lse_err') is None else format(c['lse_err'], '.1e')} | "
                 f"{'' if fe is None else format(fe, '.2e')} | {'ok' if c['ok'] else 'FAIL ' + c.get('error', '')} |")
lines += ["", "Prefill, 16k tokens, hidden 2048 (TFLOP/s):", "",
          "| kernel | causal | S | attn | flash | cuDNN | efficient |",
          "| --- | --- | --- | --- | --- | --- | --- |"]
for t in timings:
    g = lambda k: f"{t[k]:.1f}" if k in t else "-"
    lines.append(f"| {t['kernel']} | {t['causal']} | {t['S']} | {g('attn_tflops')} | "
                 f"{g('flash_tflops')} | {g('cudnn_tflops')} | {g('efficient_tflops')} |")
lines += ["", "Decode, Sq = 1, Hq = 32, Hkv = 8, D = 128 (GB/s of K/V read; one call "
          "at a time, and 20 calls back to back; then host microseconds per call: "
          "attn's whole Python call, attn_launch alone on prebuilt arguments, "
          "flash's Python call):", "",
          "| kernel | B | Skv | attn | flash | attn b2b | flash b2b "
          "| attn host us | attn_launch host us | flash host us |",
          "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
for d in decode:
    g = lambda k: f"{d[k]:.0f}" if k in d else "-"
    h = lambda k: f"{d[k]:.1f}" if k in d else "-"
    lines.append(f"| {d['kernel']} | {d['B']} | {d['Skv']} | {g('attn_gbps')} | "
                 f"{g('flash_gbps')} | {g('attn_b2b_gbps')} | {g('flash_b2b_gbps')} | "
                 f"{h('attn_host_us')} | {h('attn_launch_host_us')} | {h('flash_host_us')} |")
if sq_decode:
    lines += ["", "Decode by query length (GB/s of K/V read, one call at a time "
              "and 20 back to back; dynamic-Sq kernels, their twins, the "
              "static-Sq decode kernel of each length, flash):", "",
              "| impl | dtype | causal | B | Hq | Hkv | Sq | Skv | GB/s | b2b GB/s | ms |",
              "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
    for d in sq_decode:
        g = lambda k, f=".0f": format(d[k], f) if k in d else "-"
        lines.append(f"| {d['impl']} | {d['dtype']} | {d['causal']} | {d['B']} | {d['Hq']} | "
                     f"{d['Hkv']} | {d['Sq']} | {d['Skv']} | {g('gbps')} | "
                     f"{g('b2b_gbps')} | {g('ms', '.3f')}"
                     f"{' ERROR ' + d['error'] if 'error' in d else ''} |")
md = "\n".join(lines) + "\n"
with open(os.path.join(args.out, "results.md"), "w") as f:
    f.write(md)
with open(os.path.join(args.out, "results.csv"), "w") as f:
    keys = ["kernel", "dtype", "D", "causal", "S", "B", "H", "attn_tflops",
            "flash_tflops", "cudnn_tflops", "efficient_tflops"]
    f.write(",".join(keys) + "\n")
    for t in timings:
        f.write(",".join(str(t.get(k, "")) for k in keys) + "\n")
with open(os.path.join(args.out, "decode.csv"), "w") as f:
    keys = ["kernel", "B", "Hq", "Hkv", "Skv", "D",
            "attn_ms", "attn_gbps", "attn_b2b_ms", "attn_b2b_gbps",
            "attn_host_us", "attn_launch_host_us",
            "flash_ms", "flash_gbps", "flash_b2b_ms", "flash_b2b_gbps",
            "flash_host_us"]
    f.write(",".join(keys) + "\n")
    for d in decode:
        f.write(",".join(str(d.get(k, "")) for k in keys) + "\n")
try:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    groups = sorted({(t["D"], t["causal"]) for t in timings})
    fig, axes = plt.subplots(1, max(1, len(groups)), figsize=(5 * max(1, len(groups)), 4))
    axes = axes if len(groups) > 1 else [axes]
    for ax, (D, causal) in zip(axes, groups):
        rows = [t for t in timings if t["D"] == D and t["causal"] == causal
                and t["dtype"] == "float16" and not t.get("dropout")]
        for series in sorted({t["kernel"] for t in rows}):
            pts = [(t["S"], t["attn_tflops"]) for t in rows if t["kernel"] == series and "attn_tflops" in t]
            if pts:
                ax.plot(*zip(*pts), marker="o", label="attn " + series)
        for be in ("flash", "cudnn", "efficient"):
            pts = sorted({(t["S"], t[be + "_tflops"]) for t in rows if be + "_tflops" in t})
            if pts:
                ax.plot(*zip(*pts), marker="x", linestyle="--", label="torch " + be)
        ax.set_xscale("log", base=2)
        ax.set_title(f"f16, D={D}, causal={causal}")
        ax.set_xlabel("sequence length")
        ax.set_ylabel("TFLOP/s")
        ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(os.path.join(args.out, "tflops.png"), dpi=110)
except Exception as ex:
    print("chart skipped:", ex)
print(md)


def ab_summary():
    """Per tag and kind of cell: the cells expected, those timed, the median
    and the extremes of new/old, and the gate (median >= --ab-median, no
    cell below --ab-min). Prefill without dropout and decode back to back
    are gated; prefill with dropout and decode one call at a time are shown
    beside them."""
    out = []
    for tag in sorted({r["tag"] for r in ab}):
        # The cells the loops would have timed without a budget and with
        # every check passed.
        exp_prefill = [(k.name, S) for S in SIZES for k in primaries
                       if prefill_cell(k, S) and not k.dropout
                       and any(t.tag == tag for t in twins.get(k.name, []))]
        exp_decode = [] if args.no_decode else [
            (k.name, B, Skv) for k in primaries if decode_cell(k)
            and any(t.tag == tag for t in twins.get(k.name, []))
            for (B, Skv) in DECODE_SHAPES]
        cats = (
            ("prefill", True, "ratio", len(exp_prefill),
             lambda r: r["kind"] == "prefill" and not r.get("dropout"),
             lambda r: f"{r['kernel']} S={r['S']}"),
            ("prefill, kernels that differ", False, "ratio", None,
             lambda r: (r["kind"] == "prefill" and not r.get("dropout")
                        and not r.get("same_binary")),
             lambda r: f"{r['kernel']} S={r['S']}"),
            ("prefill, dropout", False, "ratio", None,
             lambda r: r["kind"] == "prefill" and r.get("dropout"),
             lambda r: f"{r['kernel']} S={r['S']}"),
            ("decode, back to back", True, "b2b_ratio", len(exp_decode),
             lambda r: r["kind"] == "decode",
             lambda r: f"{r['kernel']} B={r['B']} Skv={r['Skv']}"),
            ("decode, back to back, kernels that differ", False, "b2b_ratio", None,
             lambda r: r["kind"] == "decode" and not r.get("same_binary"),
             lambda r: f"{r['kernel']} B={r['B']} Skv={r['Skv']}"),
            ("decode, one call at a time", False, "ratio", None,
             lambda r: r["kind"] == "decode",
             lambda r: f"{r['kernel']} B={r['B']} Skv={r['Skv']}"),
        )
        for name, gated, key, expected, sel, cell in cats:
            rows = [r for r in ab if r["tag"] == tag and sel(r)]
            vals = [(r[key], cell(r)) for r in rows if key in r]
            errs = [r for r in rows if "error" in r]
            s = dict(tag=tag, cells=name, gated=gated, timed=len(vals),
                     expected=expected, errors=len(errs))
            if vals:
                lo, hi = min(vals), max(vals)
                s.update(median=statistics.median(v for v, _ in vals),
                         min=lo[0], min_cell=lo[1], max=hi[0], max_cell=hi[1],
                         below=sum(1 for v, _ in vals if v < args.ab_min),
                         same_binary=sum(1 for r in rows if r.get("same_binary")))
            if not gated:
                s["verdict"] = "-"
            elif errs:
                s["verdict"] = "FAIL (errors)"
            elif not vals:
                s["verdict"] = "no cells" if not expected else "FAIL (none timed)"
            elif s["median"] >= args.ab_median and s["min"] >= args.ab_min:
                s["verdict"] = "PASS" if len(vals) >= expected else \
                    f"PASS over {len(vals)} of {expected} cells (budget or failed checks)"
            else:
                s["verdict"] = "FAIL"
            out.append(s)
    return out


ab_fail = False
if ab:
    summary = ab_summary()
    ab_fail = any(s["verdict"].startswith("FAIL") for s in summary)
    keys = ["kind", "kernel", "tag", "dtype", "D", "causal", "dropout", "S",
            "B", "H", "Hq", "Hkv", "Skv", "rounds", "new_ms", "old_ms",
            "ratio", "ratio_lo", "ratio_hi", "b2b_new_ms", "b2b_old_ms",
            "b2b_ratio", "b2b_ratio_lo", "b2b_ratio_hi", "same_binary", "error"]
    with open(os.path.join(args.out, "ab.csv"), "w") as f:
        f.write(",".join(keys) + "\n")
        for r in ab:
            f.write(",".join(str(r.get(k, "")).replace(",", ";") for k in keys) + "\n")
    prov = os.path.join(args.artifacts, "provenance.txt")
    g = lambda d, k, fmt: format(d[k], fmt) if k in d else "-"
    lines = [f"# A/B: this compiler (new) against `_x_<tag>` (old), {meta['device']}, "
             f"{meta['date']}", "",
             "new/old = the median over the rounds of old_ms / new_ms (above 1: "
             "the new compiler's kernel is faster); in each round the new kernel, "
             "the old one (and flash, in prefill) are timed one after the other, "
             f"the order rotated each round ({max(1, args.rounds)} rounds). Gate: "
             f"median >= {args.ab_median:.2f} and no cell below {args.ab_min:.2f}, "
             "over the prefill cells (16k tokens, hidden 2048, without dropout) "
             "and the decode cells (back to back); the other lines are shown, "
             "not gated. 'same binary': cells whose two kernels are "
             "byte-identical (their ratio is noise; the 'kernels that differ' "
             "lines leave them out).", ""]
    if os.path.exists(prov):
        lines += ["Artifacts (make_artifacts.sh's provenance.txt):", "", "```"]
        lines += open(prov).read().rstrip("\n").split("\n") + ["```", ""]
    lines += ["| tag | cells | timed / expected | median | min (cell) | max (cell) "
              f"| below {args.ab_min:.2f} | same binary | gate |",
              "| --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
    for s in summary:
        lines.append(
            f"| {s['tag']} | {s['cells']} | {s['timed']} / "
            f"{s['expected'] if s['expected'] is not None else '-'}"
            f"{' (' + str(s['errors']) + ' errors)' if s['errors'] else ''} | "
            f"{g(s, 'median', '.3f')} | {g(s, 'min', '.3f')} ({s.get('min_cell', '-')}) | "
            f"{g(s, 'max', '.3f')} ({s.get('max_cell', '-')}) | {s.get('below', '-')} | "
            f"{s.get('same_binary', '-')} | {s['verdict']} |")
    lines += ["", "Prefill (TFLOP/s; new/old with the lowest and highest round's):", "",
              "| kernel | tag | S | new | old | new/old | rounds | same binary |",
              "| --- | --- | --- | --- | --- | --- | --- | --- |"]
    for r in ab:
        if r["kind"] != "prefill":
            continue
        if "error" in r:
            lines.append(f"| {r['kernel']} | {r['tag']} | {r['S']} | ERROR {r['error'][:80]} "
                         "| | | | |")
            continue
        tf = lambda k: f"{r['tflop'] / r[k] * 1e3:.1f}" if k in r else "-"
        lines.append(f"| {r['kernel']} | {r['tag']} | {r['S']} | {tf('new_ms')} | "
                     f"{tf('old_ms')} | {g(r, 'ratio', '.3f')} ({g(r, 'ratio_lo', '.3f')}-"
                     f"{g(r, 'ratio_hi', '.3f')}) | {r['rounds']} | {r['same_binary']} |")
    lines += ["", "Decode, Sq = 1, Hq = 32, Hkv = 8, D = 128 (GB/s of K/V read, one "
              "call at a time and 20 back to back):", "",
              "| kernel | tag | B | Skv | new | old | new/old | b2b new | b2b old "
              "| b2b new/old | same binary |",
              "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
    for r in ab:
        if r["kind"] != "decode":
            continue
        if "error" in r:
            lines.append(f"| {r['kernel']} | {r['tag']} | {r['B']} | {r['Skv']} | "
                         f"ERROR {r['error'][:80]} | | | | | | |")
            continue
        gb = lambda k: f"{r['gbyte'] / r[k] * 1e3:.0f}" if k in r else "-"
        lines.append(f"| {r['kernel']} | {r['tag']} | {r['B']} | {r['Skv']} | "
                     f"{gb('new_ms')} | {gb('old_ms')} | {g(r, 'ratio', '.3f')} | "
                     f"{gb('b2b_new_ms')} | {gb('b2b_old_ms')} | {g(r, 'b2b_ratio', '.3f')} | "
                     f"{r['same_binary']} |")
    abmd = "\n".join(lines) + "\n"
    with open(os.path.join(args.out, "ab.md"), "w") as f:
        f.write(abmd)
    print(abmd)
    for s in summary:
        if s["gated"]:
            print(f"ab-gate: {s['tag']} {s['cells']}: {s['verdict']} (median "
                  f"{g(s, 'median', '.3f')}, min {g(s, 'min', '.3f')} at "
                  f"{s.get('min_cell', '-')}, {s['timed']} cells)", flush=True)
if n_ok != len(checks):
    print(f"FAILED: {len(checks) - n_ok} of {len(checks)} checks", flush=True)
    sys.exit(1)
if ab_fail:
    print("FAILED: the A/B gate", flush=True)
    sys.exit(4)
