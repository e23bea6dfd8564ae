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

Writes results.json/.csv/.md, decode.csv and a chart (PNG) under --out.
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
                help="only the first N check shapes (0: --quick's 4, else all)")
ap.add_argument("--quick-checks", action="store_true",
                help="small correctness set, then the timings")
ap.add_argument("--only", default="",
                help="comma-separated substrings: run only kernels whose name has one")
ap.add_argument("--sizes", default="512,1024,2048,4096,8192,16384",
                help="prefill sequence lengths to time")
ap.add_argument("--no-decode", action="store_true", help="skip the decode timings")
ap.add_argument("--rounds", type=int, default=3,
                help="prefill: alternating attn / flash measurements per row")
ap.add_argument("--budget-s", type=float, default=420.0,
                help="stop timing new configs after this many seconds")
ap.add_argument("--profile-decode", type=int, default=0, metavar="SKV",
                help="like --profile, at the decode shape B = 1, Hq = 32, "
                     "Hkv = 8, Sq = 1, Skv = SKV (flash only)")
ap.add_argument("--profile", type=int, default=0, metavar="S",
                help="no checks or timings: launch each kernel (--only) and "
                     "PyTorch's flash and cuDNN backends once at the prefill "
                     "shape of sequence length S inside cudaProfilerStart/Stop "
                     "(for ncu --profile-from-start off), then exit")
args = ap.parse_args()
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
                s = s + mk.double()
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
    [1,1,Sq,Skv] for all; additive: [B,1,Sq,Skv]), with row 0 fully masked."""
    if kern.mask == A.ATTN_MASK_BOOL:
        m = torch.rand(1, 1, Sq, Skv, device=dev) < 0.7
        m[:, :, 0, :] = False
        return m
    m = (torch.randn(B, 1, Sq, Skv, device=dev) * 2).to(kern.dtype)
    m[:, :, 0, :] = float("-inf")
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


kernels = [Kernel(p) for p in sorted(glob.glob(os.path.join(args.artifacts, "*.json")))]
if args.only:
    kernels = [k for k in kernels if any(w in k.name for w in args.only.split(","))]
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
          (1, 4, 1, 300, 100, False),
          (2, 2, 2, 129, 65, True), (1, 16, 16, 1024, 1024, False),
          (2, 8, 2, 3, 5000, True), (1, 4, 2, 200, 3000, False),
          (1, 32, 8, 1, 4096, False), (3, 8, 2, 1, 777, True)]
if args.quick or args.quick_checks:
    shapes = shapes[:4]
if args.check_shapes < 0:
    ap.error("--check-shapes must be 0 (all) or a positive count")
if args.check_shapes:
    shapes = shapes[:args.check_shapes]
for kern in kernels:
    for (B, Hq, Hkv, Sq, Skv, bshd) in shapes:
        if kern.seq_q is not None and Sq != kern.seq_q:
            continue
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

timings, decode = [], []
if not args.quick:
    # 2. prefill timing, 16k tokens, hidden 2048
    backends = {"flash": SDPBackend.FLASH_ATTENTION, "cudnn": SDPBackend.CUDNN_ATTENTION,
                "efficient": SDPBackend.EFFICIENT_ATTENTION}
    torch_cache = {}  # cuDNN, efficient: once per (S, D, causal, dtype, p)
    for S in [int(x) for x in args.sizes.split(",")]:
        for kern in kernels:
            if time.time() - T0 > args.budget_s:
                break
            D = kern.D
            H, B = 2048 // D, 16384 // S
            if (kern.mask != A.ATTN_MASK_NONE or kern.lse
                    or kern.seq_q is not None or kern.kv_splits != 0):
                continue  # checked above; timed without mask, lse, forced splits
            if kern.dropout and S not in (4096, 16384):
                continue  # dropout: two lengths, next to PyTorch's own dropout
            if not next((c for c in checks if c["kernel"] == kern.name and c["ok"]), None):
                continue
            torch.manual_seed(S)
            q, k, v = (make(B, H, S, D, kern.dtype) for _ in range(3))
            out = torch.empty_like(q)
            row = dict(kernel=kern.name, dtype=str(kern.dtype).split(".")[1], D=D,
                       causal=kern.causal, S=S, B=B, H=H, dropout=kern.dropout)
            fl = flops(B, H, S, S, D, kern.causal)

            def flash_fn():
                with sdpa_kernel(SDPBackend.FLASH_ATTENTION):
                    F.scaled_dot_product_attention(
                        q, k, v, is_causal=kern.causal, dropout_p=kern.dropout)
            # attn and flash alternate: each round times both, back to back.
            attn_ms, flash_ms, budget = [], [], 600.0 / max(1, args.rounds)
            for _ in range(max(1, args.rounds)):
                if "attn_error" not in row:
                    try:
                        attn_ms.append(time_fn(
                            lambda: kern.launch(q, k, v, out, seed=12345), budget))
                    except Exception as ex:
                        row["attn_error"] = str(ex)
                if "flash_error" not in row:
                    try:
                        flash_ms.append(time_fn(flash_fn, budget))
                    except RuntimeError as ex:
                        row["flash_error"] = str(ex)[:200]
            if attn_ms and "attn_error" not in row:
                ms = statistics.median(attn_ms)
                row["attn_ms"], row["attn_tflops"] = ms, fl / ms / 1e9
            key = (S, D, kern.causal, kern.dtype, kern.dropout)
            if key not in torch_cache:
                torch_cache[key] = {}
                for name, be in backends.items():
                    if name == "flash":
                        continue  # per row, above
                    try:
                        with sdpa_kernel(be):
                            ms = time_fn(lambda: F.scaled_dot_product_attention(
                                q, k, v, is_causal=kern.causal,
                                dropout_p=kern.dropout))
                        torch_cache[key][name + "_ms"] = ms
                        torch_cache[key][name + "_tflops"] = fl / ms / 1e9
                    except RuntimeError:
                        pass
            row.update(torch_cache[key])
            if flash_ms and "flash_error" not in row:
                ms = statistics.median(flash_ms)
                row["flash_ms"], row["flash_tflops"] = ms, fl / ms / 1e9
            timings.append(row)
            print("time", json.dumps(row), flush=True)

    # 3. decode: Sq = 1, GQA 32:8, D = 128, K/V bytes read per second; the
    # tensor-core kernels, split at launch (the decode artifacts also with
    # the one-query geometry).
    for kern in ([] if args.no_decode else kernels):
        if (kern.D != 128 or kern.causal or kern.mask != A.ATTN_MASK_NONE
                or kern.lse or kern.dropout or kern.kv_splits != 0
                or not kern.name.startswith("tc")
                or time.time() - T0 > args.budget_s + 60):
            continue
        for (B, Skv) in ((1, 4096), (1, 32768), (1, 131072), (16, 4096)):
            Hq, Hkv, D = 32, 8, 128
            q = make(B, Hq, 1, D, kern.dtype)
            k, v = make(B, Hkv, Skv, D, kern.dtype), make(B, Hkv, Skv, D, kern.dtype)
            out = torch.empty_like(q)
            kv_bytes = 2 * B * Hkv * Skv * D * k.element_size()
            row = dict(kernel=kern.name, B=B, Hq=Hq, Hkv=Hkv, Skv=Skv, D=D)
            try:
                ms = time_fn(lambda: kern.launch(q, k, v, out))
                row["attn_ms"], row["attn_gbps"] = ms, kv_bytes / ms / 1e6
                ms = time_back_to_back(lambda: kern.launch(q, k, v, out))
                row["attn_b2b_ms"], row["attn_b2b_gbps"] = ms, kv_bytes / ms / 1e6
                # Host time per call: the whole Python call, then
                # attn_launch alone on arguments built once (the difference
                # is the Python side's marshalling).
                row["attn_host_us"] = time_host(lambda: kern.launch(q, k, v, out))
                la = kern.args(q, k, v, out)
                row["attn_launch_host_us"] = time_host(lambda: kern.launch_args(la))
            except Exception as ex:
                row["attn_error"] = str(ex)
            try:
                def flash():
                    with sdpa_kernel(SDPBackend.FLASH_ATTENTION):
                        F.scaled_dot_product_attention(q, k, v, enable_gqa=True)
                ms = time_fn(flash)
                row["flash_ms"], row["flash_gbps"] = ms, kv_bytes / ms / 1e6
                ms = time_back_to_back(flash)
                row["flash_b2b_ms"], row["flash_b2b_gbps"] = ms, kv_bytes / ms / 1e6
                row["flash_host_us"] = time_host(flash)
            except RuntimeError as ex:
                row["flash_error"] = str(ex)[:200]
            decode.append(row)
            print("decode", json.dumps(row), flush=True)

meta = dict(device=torch.cuda.get_device_name(0), torch=torch.__version__,
            date=time.strftime("%Y-%m-%d"), elapsed_s=time.time() - T0)
with open(os.path.join(args.out, "results.json"), "w") as f:
    json.dump(dict(meta=meta, checks=checks, timings=timings, decode=decode), f, indent=1)

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
