"""Long key sequences on the CUDA kernels, up to 2^31 - 1 keys (issue 22 item 3).

Runs on the GPU machine from carried files (make_artifacts.sh's output):
the artifacts named by --kernels, each a dynamic-shape kernel, launched at
B = Hq = Hkv = 1, Sq = 2 over key lengths up to --max-skv, against a
float64 reference computed on the GPU in chunks (streaming). As
test/lib/Numeric/LongKeysTest.cpp does on the cpu and Vulkan: V drawn in
[0.5, 1.5] (no cancellation) and in [-1, 1] (a cancelling average), out
compared normwise, |out - ref| / max(|ref|, sum p|v| / sum p), lse (where the
kernel returns it) absolutely. Tolerances (as the test's): out 1e-4 (f32 data: one f32
chunk of 2^16 keys), 2^-7 (bf16/f16 rounding of out) for the generic
kernel; the tensor-core kernels also round P to the input type before P.V
(as FlashAttention), so their out is held to 1e-2 normwise; lse 1e-4 +
1e-6 |lse| for every kernel (f32 state).

An A/B twin (<kernel>_x_<tag>, the previous compiler) is run on the same
inputs and reported, not gated: it shows what the key-chunk floor fixes.
Writes long_keys.json and long_keys.md under --out.
"""
import argparse
import ctypes
import json
import math
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "examples"))
import attn_ctypes as A  # noqa: E402

import torch  # noqa: E402

ap = argparse.ArgumentParser()
ap.add_argument("--artifacts", default=".carry/cuda")
ap.add_argument("--out", default=os.environ.get("OUT", "bench-out"))
ap.add_argument("--kernels", default="long/generic_bf16_d1,long/generic_bf16_d1_split1",
                help="artifacts (names under --artifacts; make_artifacts.sh puts the "
                     "D = 1 ones in long/, where run_h100.py does not look)")
ap.add_argument("--lengths", default="65537,1048579,16777221,268435459,2147483647")
ap.add_argument("--tc-kernel", default="tc_bf16_d64",
                help="a tensor-core artifact run at --tc-lengths (D = its head dim)")
ap.add_argument("--tc-lengths", default="1048579,67108867")
ap.add_argument("--seed", type=int, default=int(time.time()))
args = ap.parse_args()
os.makedirs(args.out, exist_ok=True)
print(f"long_keys.py: seed {args.seed}", flush=True)

lib = A.load(os.path.join(args.artifacts, "libattn_runtime.so"))
dev = torch.device("cuda")
TORCH_DT = {A.ATTN_DTYPE_F16: torch.float16, A.ATTN_DTYPE_BF16: torch.bfloat16,
            A.ATTN_DTYPE_F32: torch.float32}


class Kernel:
    def __init__(self, name):
        self.name = name
        path = os.path.join(args.artifacts, name + ".json")
        self.spec = A.AttnSpec()
        A.check(lib, lib.attn_cuda_load_artifact(path.encode(), ctypes.byref(self.spec)),
                "attn_cuda_load_artifact " + path)
        self.ctx = ctypes.c_void_p()
        A.check(lib, lib.attn_context_create(ctypes.byref(self.ctx)), "ctx")
        self.k = ctypes.c_void_p()
        A.check(lib, lib.attn_compile(self.ctx, ctypes.byref(self.spec),
                                      A.ATTN_TARGET_CUDA, ctypes.byref(self.k)),
                "attn_compile " + name)
        self.dtype = TORCH_DT[self.spec.dtype]
        self.D = self.spec.head_dim
        self.lse = bool(self.spec.return_lse)

    def launch(self, q, k, v, out, lse):
        la = A.launch_args(q, k, v, out, None, lse, 0,
                           torch.cuda.current_stream().cuda_stream)
        st = lib.attn_launch(self.k, ctypes.byref(la))
        if st != A.ATTN_OK:
            return lib.attn_last_error().decode()
        return None


def reference(q, k, v, scale):
    """Per row: out, lse and the normwise scale, in float64, over chunks
    of keys (the scores of 2^31 keys in f64 would be 16 GiB per row)."""
    Sq, n = q.shape[2], k.shape[2]
    step = max(1, (1 << 30) // (8 * k.shape[3]))  # 1 GiB of f64 keys at a time
    qd = q[0, 0].double()
    m = torch.full((Sq,), -math.inf, dtype=torch.float64, device=dev)
    for j in range(0, n, step):
        s = (qd @ k[0, 0, j:j + step].double().T) * scale
        m = torch.maximum(m, s.max(dim=1).values)
    L = torch.zeros(Sq, dtype=torch.float64, device=dev)
    O = torch.zeros(Sq, v.shape[3], dtype=torch.float64, device=dev)
    Aa = torch.zeros(Sq, v.shape[3], dtype=torch.float64, device=dev)
    for j in range(0, n, step):
        s = (qd @ k[0, 0, j:j + step].double().T) * scale
        p = torch.exp(s - m[:, None])
        vv = v[0, 0, j:j + step].double()
        L += p.sum(dim=1)
        O += p @ vv
        Aa += p @ vv.abs()
    out = O / L[:, None]
    return out, m + torch.log(L), torch.maximum(out.abs(), Aa / L[:, None])


def run(kern, twins, n, positive, rows):
    D = kern.D
    g = torch.Generator(device=dev)
    g.manual_seed(args.seed * 1000003 + n * 7 + int(positive))
    q = (torch.rand(1, 1, 2, D, device=dev, generator=g) * 2 - 1)
    q = (q / math.sqrt(D)).to(kern.dtype)  # scores in about [-2, 2]
    k = ((torch.rand(1, 1, n, D, device=dev, generator=g) * 4 - 2)).to(kern.dtype)
    lo, hi = (0.5, 1.5) if positive else (-1.0, 1.0)
    v = (torch.rand(1, 1, n, D, device=dev, generator=g) * (hi - lo) + lo).to(kern.dtype)
    scale = 1.0 / math.sqrt(D)
    ref, ref_lse, ref_scale = reference(q, k, v, scale)
    generic = os.path.basename(kern.name).startswith("generic_")
    out_tol = 1e-4 if kern.dtype == torch.float32 else (2.0 ** -7 if generic else 1e-2)
    for kk in [kern] + twins:
        out = torch.full((1, 1, 2, D), float("nan"), dtype=kern.dtype, device=dev)
        lse = (torch.full((1, 1, 2), float("nan"), dtype=torch.float32, device=dev)
               if kern.lse else None)
        err = kk.launch(q, k, v, out, lse)
        torch.cuda.synchronize()
        row = {"kernel": kk.name, "skv": n, "D": D, "v": "pos" if positive else "sym",
               "twin": kk is not kern}
        if err:
            row.update(ok=kk is not kern and "UNSUPPORTED" in err.upper(), error=err)
            print(f"  {kk.name} Skv={n} v{row['v']}: {err}", flush=True)
            rows.append(row)
            if kk is kern:
                return False
            continue
        o = out[0, 0].double()
        normwise = ((o - ref).abs() / ref_scale).max().item()
        # (a kernel without lse: its out alone is compared)
        lse_err = ((lse[0, 0].double() - ref_lse).abs().max().item()
                   if lse is not None else 0.0)
        lse_tol = 1e-4 + 1e-6 * ref_lse.abs().max().item()
        ok = (not math.isnan(normwise)) and normwise <= out_tol and lse_err <= lse_tol
        row.update(normwise=normwise, out_tol=out_tol, lse_err=lse_err, lse_tol=lse_tol,
                   ok=ok if kk is kern else None,
                   out=o[:, 0].tolist(), ref=ref[:, 0].tolist())
        rows.append(row)
        print(f"  {kk.name} Skv={n} v{row['v']}: normwise {normwise:.3g} (tol {out_tol:g}) "
              f"lse err {lse_err:.3g} (tol {lse_tol:.3g}){'' if kk is kern else ' [twin, not gated]'}"
              f"{'' if ok or kk is not kern else '  FAILED'}", flush=True)
    del q, k, v
    torch.cuda.empty_cache()
    return rows[-1 - len(twins)].get("ok", False)


def twins_of(name):
    sub, base = os.path.split(name)
    out = []
    for f in sorted(os.listdir(os.path.join(args.artifacts, sub))):
        if f.startswith(base + "_x_") and f.endswith(".json"):
            out.append(Kernel(os.path.join(sub, f[:-5])))
    return out


rows, failed = [], 0
plan = [(k, [int(x) for x in args.lengths.split(",") if x]) for k in args.kernels.split(",") if k]
if args.tc_kernel:
    plan.append((args.tc_kernel, [int(x) for x in args.tc_lengths.split(",") if x]))
for name, lengths in plan:
    kern = Kernel(name)
    twins = twins_of(name)
    print(f"{name}: D = {kern.D}, {kern.dtype}, twins {[t.name for t in twins]}", flush=True)
    for n in lengths:
        for positive in (True, False):
            if not run(kern, twins, n, positive, rows):
                failed += 1
print(f"long keys: {sum(1 for r in rows if not r['twin'])} cases, {failed} failed", flush=True)
with open(os.path.join(args.out, "long_keys.json"), "w") as f:
    json.dump({"seed": args.seed, "gpu": torch.cuda.get_device_name(), "rows": rows}, f, indent=1)
with open(os.path.join(args.out, "long_keys.md"), "w") as f:
    f.write(f"# Long key sequences, {torch.cuda.get_device_name()}, seed {args.seed}\n\n")
    f.write("| kernel | Skv | D | V | normwise out err | tol | lse err | tol | ok |\n")
    f.write("| --- | ---: | ---: | --- | ---: | ---: | ---: | ---: | --- |\n")
    for r in rows:
        if "error" in r:
            f.write(f"| {r['kernel']} | {r['skv']} | {r['D']} | {r['v']} | {r['error']} | | | | "
                    f"{'twin' if r['twin'] else r['ok']} |\n")
            continue
        f.write(f"| {r['kernel']} | {r['skv']} | {r['D']} | {r['v']} | {r['normwise']:.3g} | "
                f"{r['out_tol']:g} | {r['lse_err']:.3g} | {r['lse_tol']:.3g} | "
                f"{'twin (not gated)' if r['twin'] else r['ok']} |\n")
sys.exit(1 if failed else 0)
