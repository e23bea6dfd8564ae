#!/usr/bin/env python3
"""The Vulkan variants on one device, checked and timed; the CUDA
tensor-core kernels on the same shapes beside them.

Run by bench/vulkan/device_run.sh (which unpacks the carried JIT and the
Vulkan loader and finds the driver); needs python3 only (torch for the
CUDA comparison, which bench/cuda/run_h100.py runs in its own process).

1. correctness: every case of CASES (test/Integration/vulkan/numeric.test's
   matrix: GQA, causal with Sq > Skv, masks broadcast, lse, Dv != D, BSHD,
   bf16, dropout, forced and automatic split-KV, decode, dynamic sizes, and
   a few GPU-sized shapes) on each variant of --variants through
   `attn-run --target=vulkan --check` (fresh random inputs, poisoned
   outputs, the float64 reference). A case is ok, FAIL (a failed check, a
   crash, a timeout, an error) or refused (ATTN_ERROR_UNSUPPORTED, with
   attn's message). A refusal fails the run when the variant is in
   --require and the case is not one the variant may refuse (f32, head
   dims that are not multiples of 16 and bf16 for coopmat);
2. the CUDA comparison: run_h100.py on --cuda-artifacts (the tc_* kernels
   at D = 64 and 128, and the decode kernels), S = --sizes, one round;
3. decode timings, Sq = 1, Hq = 32, Hkv = 8, D = 128, Skv = 32k and 128k,
   f16, coopmat and portable: GB/s of K/V read;
4. prefill timings of the coopmat variant at 16k tokens (H = 16 at D = 128,
   32 at D = 64), f16 and bf16, causal and not, S = --sizes, next to the
   CUDA kernel's TFLOP/s.

Timings come from `attn-run --bench=N --json`: device_ms is the launch's
dispatches alone (GPU timestamps), the number to set beside CUDA's (kernel
time on device memory); median_ms (e2e) is the launch end to end. Where
attn-run reports "memory": "device" (JSON schema 3, attn_vulkan.h's device
buffers: dense tensors) e2e is the submission to the wait, no copies; with
"host" (older builds, or BSHD / broadcast masks) it is the whole
attn_launch, which stages every tensor through host memory. A build whose
attn-run has no device_ms gives only the latter, and the tables say so.

Nothing new starts once --budget-s seconds have passed since --t0; each
subprocess is killed past the budget (plus a little for the files).

Writes under --out: summary.md, checks.csv, timings.csv, cuda-results.json
(run_h100.py's results.json) and appends to run.log (every command and the
lines of its output that matter). Exit status: 0; 1 when a check failed
(or was wrongly refused, or was not run for the budget), a timed run
crashed, or the CUDA run failed.
"""
import argparse
import csv
import json
import os
import shutil
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))

ap = argparse.ArgumentParser()
ap.add_argument("--root", required=True,
                help="the unpacked JIT: bin/attn-run, lib/, cuda/")
ap.add_argument("--ld-path", default="",
                help="LD_LIBRARY_PATH for attn-run (not for python/torch)")
ap.add_argument("--out", required=True)
ap.add_argument("--t0", type=float, default=0.0,
                help="epoch seconds the budget counts from (default: now)")
ap.add_argument("--budget-s", type=float, default=540.0)
ap.add_argument("--check-share", type=float, default=0.45,
                help="the checks stop once this share of the budget is spent")
ap.add_argument("--variants", default="coopmat,portable,portable-rows")
ap.add_argument("--require", default="coopmat,portable,portable-rows",
                help="variants whose refusals (beyond the expected ones) fail")
ap.add_argument("--cases", default="",
                help="comma-separated substrings: only the cases named so")
ap.add_argument("--sizes", default="4096,8192,16384")
ap.add_argument("--decode-skv", default="32768,131072")
ap.add_argument("--bench", type=int, default=10, help="timed runs per config")
ap.add_argument("--cuda-artifacts", default="",
                help="bench/cuda artifacts to time beside (empty: none)")
ap.add_argument("--require-cuda", action="store_true",
                help="fail when the CUDA comparison cannot run")
ap.add_argument("--no-timings", action="store_true")
ap.add_argument("--aot", default="",
                help="bench/vulkan/make_aot.sh's folder: time its kernels "
                     "(built here for the device its device.json describes) "
                     "through libattn_runtime.so alone, where that "
                     "description is this device's; the JIT for the rest")
ap.add_argument("--warmup-ms", type=int, default=1000,
                help="untimed launches back to back before the timed ones "
                     "back to back (attn-run --warmup-ms)")
args = ap.parse_args()
T0 = args.t0 or time.time()
os.makedirs(args.out, exist_ok=True)
LOG = open(os.path.join(args.out, "run.log"), "a")
ATTN_RUN = os.path.join(args.root, "bin", "attn-run")
failures = []  # what makes the exit status 1


def log(*parts):
    line = " ".join(str(p) for p in parts)
    print(line, flush=True)
    LOG.write(line + "\n")
    LOG.flush()


def elapsed():
    return time.time() - T0


def remaining():
    return args.budget_s - elapsed()


# name, attn-run flags, variants that may refuse it (the rest must run).
# coopmat: f16/bf16 only, head dims multiples of 16; bf16 needs
# VK_KHR_shader_bfloat16 on the device.
COOP_BF16 = {"coopmat"}
CASES = [
    ("f16 gqa causal Sq<Skv", "--dtype=f16 --batch=2 --heads=4 --kv-heads=2 "
     "--seq-q=50 --seq-kv=70 --head-dim=32 --causal --repeat-check=2", set()),
    ("f16 causal Sq>Skv lse", "--dtype=f16 --heads=3 --seq-q=33 --seq-kv=17 "
     "--head-dim=16 --causal --lse", set()),
    ("f16 Dv!=D", "--dtype=f16 --heads=2 --seq-q=40 --seq-kv=56 --head-dim=32 "
     "--value-dim=16", set()),
    ("f16 bshd", "--dtype=f16 --batch=2 --heads=2 --seq-q=40 --head-dim=64 "
     "--layout=bshd", set()),
    ("f16 causal scale", "--dtype=f16 --seq-q=64 --head-dim=16 --causal "
     "--scale=0.3", set()),
    ("f16 one row", "--dtype=f16 --seq-q=1 --seq-kv=5 --head-dim=16", set()),
    ("f16 odd dims lse", "--dtype=f16 --heads=2 --seq-q=30 --seq-kv=45 "
     "--head-dim=24 --value-dim=13 --lse", {"coopmat"}),
    ("boolmask b,h gqa causal lse", "--dtype=f16 --batch=2 --heads=4 "
     "--kv-heads=2 --seq-q=24 --seq-kv=40 --head-dim=16 --mask=bool "
     "--mask-broadcast=none --lse --causal --repeat-check=2", set()),
    ("boolmask bcast-b causal Sq>Skv lse", "--dtype=f16 --batch=2 --heads=3 "
     "--seq-q=33 --seq-kv=17 --head-dim=16 --mask=bool --mask-broadcast=b "
     "--lse --causal", set()),
    ("addmask bcast-h bshd lse", "--dtype=f16 --batch=2 --heads=2 --seq-q=32 "
     "--head-dim=32 --mask=additive --mask-broadcast=h --lse --layout=bshd",
     set()),
    ("addmask bcast-bh scale lse", "--dtype=f16 --seq-q=20 --seq-kv=36 "
     "--head-dim=16 --value-dim=32 --mask=additive --lse --scale=0.5", set()),
    ("dropout gqa causal lse", "--dtype=f16 --heads=4 --kv-heads=2 --seq-q=65 "
     "--seq-kv=130 --head-dim=64 --causal --dropout=0.3 "
     "--seed=81985529216486895 --lse --repeat-check=2", set()),
    ("dropout boolmask bshd", "--dtype=f16 --batch=2 --heads=3 --seq-q=20 "
     "--seq-kv=37 --head-dim=32 --value-dim=16 --mask=bool "
     "--mask-broadcast=none --dropout=0.5 --seed=18446744073709551615 "
     "--layout=bshd", set()),
    ("split5 boolmask causal lse", "--dtype=f16 --batch=2 --heads=4 "
     "--kv-heads=2 --seq-q=50 --seq-kv=200 --head-dim=16 --mask=bool "
     "--mask-broadcast=none --lse --causal --kv-splits=5", set()),
    ("split3 dropout gqa causal lse", "--dtype=f16 --heads=4 --kv-heads=2 "
     "--seq-q=33 --seq-kv=500 --head-dim=32 --causal --dropout=0.2 "
     "--seed=81985529216486895 --lse --kv-splits=3", set()),
    ("split2 addmask bshd lse", "--dtype=f16 --batch=2 --heads=2 --seq-q=32 "
     "--seq-kv=300 --head-dim=32 --mask=additive --mask-broadcast=h --lse "
     "--layout=bshd --kv-splits=2", set()),
    ("decode auto-split lse", "--dtype=f16 --heads=2 --seq-q=1 --seq-kv=2000 "
     "--head-dim=64 --lse", set()),
    ("decode gqa 8:1 D128 lse", "--dtype=f16 --heads=8 --kv-heads=1 --seq-q=1 "
     "--seq-kv=1000 --head-dim=128 --lse", set()),
    ("bf16 gqa causal odd lengths", "--dtype=bf16 --batch=2 --heads=4 "
     "--kv-heads=2 --seq-q=37 --seq-kv=91 --head-dim=64 --causal "
     "--repeat-check=2", COOP_BF16),
    ("bf16 addmask bshd Dv!=D lse", "--dtype=bf16 --heads=2 --seq-q=33 "
     "--seq-kv=50 --head-dim=32 --value-dim=16 --mask=additive "
     "--mask-broadcast=none --lse --layout=bshd", COOP_BF16),
    ("bf16 split3 dropout lse", "--dtype=bf16 --heads=2 --seq-q=9 --seq-kv=300 "
     "--head-dim=16 --kv-splits=3 --dropout=0.2 --seed=81985529216486895 "
     "--lse", COOP_BF16),
    ("bf16 gqa 8:1 bshd split2", "--dtype=bf16 --heads=8 --kv-heads=1 "
     "--seq-q=33 --seq-kv=65 --head-dim=48 --layout=bshd --kv-splits=2",
     COOP_BF16),
    ("f32 D128 causal addmask lse", "--dtype=f32 --seq-q=40 --seq-kv=100 "
     "--head-dim=128 --causal --lse --mask=additive --mask-broadcast=h",
     {"coopmat"}),
    ("f32 Dv!=D causal Sq>Skv", "--dtype=f32 --heads=3 --seq-q=33 --seq-kv=17 "
     "--head-dim=8 --value-dim=24 --causal", {"coopmat"}),
    ("dynamic f16 gqa causal boolmask lse", "--dynamic-shapes --dtype=f16 "
     "--batch=2 --heads=4 --kv-heads=2 --seq-q=50 --seq-kv=33 --head-dim=32 "
     "--causal --mask=bool --mask-broadcast=none --lse --repeat-check=2",
     set()),
    ("dynamic bf16 dropout split3 bshd", "--dynamic-shapes --dtype=bf16 "
     "--heads=2 --seq-q=21 --seq-kv=130 --head-dim=64 --dropout=0.2 "
     "--seed=81985529216486895 --kv-splits=3 --layout=bshd", set()),
    ("dynamic decode 8:1 5000 keys", "--dynamic-shapes --dtype=f16 --heads=8 "
     "--kv-heads=1 --seq-q=1 --seq-kv=5000 --head-dim=128 --lse", set()),
    ("large f16 D128 causal S1024", "--dtype=f16 --heads=8 --seq-q=1024 "
     "--head-dim=128 --causal", set()),
    ("large bf16 D64 gqa S1024", "--dtype=bf16 --heads=8 --kv-heads=2 "
     "--seq-q=1024 --head-dim=64", COOP_BF16),
    ("large decode 32:8 D128 32k", "--dtype=f16 --heads=32 --kv-heads=8 "
     "--seq-q=1 --seq-kv=32768 --head-dim=128", set()),
]
if args.cases:
    CASES = [c for c in CASES if any(w in c[0] for w in args.cases.split(","))]
VARIANTS = [v for v in args.variants.split(",") if v]
REQUIRE = {v for v in args.require.split(",") if v}


def base_variant(variant):
    """The ATTN_VULKAN_VARIANT of a --variants name: coopmat-smem is
    coopmat with ATTN_VULKAN_COOP_REGISTERS=0."""
    return "coopmat" if variant == "coopmat-smem" else variant


def run_logged(cmd, env, pre, timeout):
    """Runs cmd (its command line into run.log, after `pre`); returns the
    process and dict(wall_s, rc), or None and a FAIL dict on a timeout."""
    LOG.write(f"$ {pre} {' '.join(cmd)}\n")
    t = time.time()
    try:
        p = subprocess.run(cmd, env=env, capture_output=True, text=True,
                           timeout=max(1.0, timeout))
    except subprocess.TimeoutExpired:
        LOG.write(f"  timeout after {timeout:.0f} s\n")
        return None, dict(status="FAIL", message=f"timeout after {timeout:.0f} s",
                          wall_s=time.time() - t)
    return p, dict(wall_s=time.time() - t, rc=p.returncode)


def attn_run(variant, flags, timeout):
    """Runs attn-run (vulkan) with ATTN_VULKAN_VARIANT=variant; returns a
    dict: status ok / FAIL / refused, the JSON's fields, the kernel lines
    of --dump-ir (which variant and kernel, the split count), message."""
    env = dict(os.environ)
    if args.ld_path:
        env["LD_LIBRARY_PATH"] = args.ld_path
    env["ATTN_VULKAN_VARIANT"] = base_variant(variant)
    pre = f"ATTN_VULKAN_VARIANT={base_variant(variant)}"
    if variant == "coopmat-smem":
        # the coopmat kernel with its accumulator in workgroup memory (the
        # kernel before the registers mapping), for a same-call comparison
        env["ATTN_VULKAN_COOP_REGISTERS"] = "0"
        pre += " ATTN_VULKAN_COOP_REGISTERS=0"
    cmd = [ATTN_RUN, "--target=vulkan", "--dump-ir", "--json"] + flags.split()
    p, r = run_logged(cmd, env, pre, timeout)
    if p is None:
        return r
    lines = p.stdout.splitlines()
    r["kernel"] = " | ".join(l[3:] for l in lines if l.startswith("// vulkan"))
    js = [l for l in lines if l.startswith("{")]
    if js:
        try:
            r.update(json.loads(js[-1]))
        except ValueError:
            pass
    err = p.stderr.strip()
    for l in lines:
        if l.startswith("// vulkan"):
            LOG.write("  " + l + "\n")
    if js:
        LOG.write("  " + js[-1] + "\n")
    if err:
        LOG.write("  stderr: " + err[-2000:].replace("\n", "\n  stderr: ") + "\n")
    if p.returncode == 0 and r.get("ok") is True:
        r["status"] = "ok"
    elif p.returncode == 2 and "failed: unsupported:" in err:
        r["status"] = "refused"
        msg = err.split("failed: unsupported:", 1)[1].strip()
        for prefix in ("attn_compile: ", "attn_launch: ", "vulkan: ",
                       f"ATTN_VULKAN_VARIANT={variant}: "):
            if msg.startswith(prefix):
                msg = msg[len(prefix):]
        r["message"] = msg
    else:
        r["status"] = "FAIL"
        r["message"] = r.get("message") or err[-500:] or f"exit status {p.returncode}"
    return r


def short_kernel(r):
    """'coopmat', 'portable: a subgroup of 32 lanes per row', ... from the
    IR's first line."""
    k = r.get("kernel", "")
    if not k.startswith("vulkan variant: "):
        return ""
    first = k.split(" | ")[0][len("vulkan variant: "):]
    name = first.split(" ")[0]
    if "kernel: " in first:
        name += ": " + first.split("kernel: ", 1)[1].split(" (")[0]
    splits = [p for p in k.split(" | ") if p.startswith("vulkan kv splits: ")]
    if splits:
        name += ", splits " + splits[0][len("vulkan kv splits: "):].split(" ")[0]
    return name


# 1. correctness
log(f"== checks: {len(CASES)} cases x {VARIANTS} (require {sorted(REQUIRE)}), "
    f"budget {args.budget_s:.0f} s, {elapsed():.0f} s spent")
checks = []
check_deadline = args.budget_s * args.check_share
# Case by case, each on every variant: a budget that runs out leaves the
# variants with the same cases checked.
for name, flags, may in CASES:
    for variant in VARIANTS:
        if elapsed() > check_deadline:
            checks.append(dict(variant=variant, case=name, status="skipped",
                               message="budget"))
            continue
        r = attn_run(variant, "--check " + flags,
                     min(120.0, remaining() + 20))
        r.update(variant=variant, case=name, flags=flags)
        if (r["status"] == "refused" and variant in REQUIRE
                and base_variant(variant) not in may):
            r["status"] = "FAIL"
            r["message"] = "refused, but this variant must run it: " + r["message"]
        checks.append(r)
        log(f"check {variant:14s} {name:38s} {r['status']:8s} "
            f"{short_kernel(r) or r.get('message', '')[:100]}"
            + (f"  rel_l2 {r['rel_l2_err']:.2e}" if r.get("rel_l2_err") is not None else ""))
        if r["status"] == "FAIL":
            failures.append(f"check {variant} '{name}': {r.get('message', '')[:300]}")
n_skipped = sum(1 for c in checks if c["status"] == "skipped")
if n_skipped:
    failures.append(f"INCOMPLETE: {n_skipped} checks not run (the budget's "
                    f"{args.check_share:.0%} for checks was spent)")
for variant in VARIANTS:
    cs = [c for c in checks if c["variant"] == variant]
    log(f"checks {variant}: " + ", ".join(
        f"{sum(1 for c in cs if c['status'] == s)} {s}"
        for s in ("ok", "FAIL", "refused", "skipped")))

with open(os.path.join(args.out, "checks.csv"), "w", newline="") as f:
    w = csv.writer(f)
    keys = ["variant", "case", "status", "kernel", "rel_l2_err", "max_abs_err",
            "lse_max_abs_err", "checks", "data_seed", "compile_ms", "wall_s",
            "message", "flags"]
    w.writerow(keys)
    for c in checks:
        w.writerow([short_kernel(c) if k == "kernel" else c.get(k, "") for k in keys])

# 2. CUDA: run_h100.py on the tensor-core kernels, in its own process
# (torch; without the JIT's library path).
cuda = None
if args.cuda_artifacts and not args.no_timings:
    if remaining() < 90:
        failures.append("CUDA comparison: no budget left")
        log("CUDA comparison skipped: no budget left")
    else:
        cuda_out = os.path.join(args.root, "cuda-out")
        cmd = [sys.executable, os.path.join(REPO, "bench", "cuda", "run_h100.py"),
               "--artifacts", args.cuda_artifacts, "--out", cuda_out,
               "--quick-checks", "--sizes", args.sizes, "--rounds", "1",
               "--backends", "flash", "--budget-s", str(min(150, remaining() - 80))]
        env = dict(os.environ)
        env.pop("LD_LIBRARY_PATH", None)
        env["PYTHONUNBUFFERED"] = "1"
        log("$ " + " ".join(cmd))
        try:
            p = subprocess.run(cmd, env=env, capture_output=True, text=True,
                               timeout=max(30.0, remaining() - 40))
            LOG.write(p.stdout[-20000:] + p.stderr[-5000:])
            ok_line = [l for l in p.stdout.splitlines() if l.startswith("correctness:")]
            log("CUDA run: exit", p.returncode, ok_line[0] if ok_line else "")
            res = os.path.join(cuda_out, "results.json")
            if os.path.exists(res):
                shutil.copy(res, os.path.join(args.out, "cuda-results.json"))
                cuda = json.load(open(res))
            if p.returncode != 0 or cuda is None:
                failures.append(f"CUDA run exit {p.returncode}: "
                                f"{(p.stderr.strip() or p.stdout.strip())[-300:]}")
        except subprocess.TimeoutExpired:
            failures.append("CUDA run: timeout")
            log("CUDA run: timeout")
elif args.require_cuda:
    failures.append("CUDA comparison: no --cuda-artifacts")

# 3. and 4. timings (no --check: the float64 reference on the CPU would take
# minutes at these sizes; the same kernels were checked above on smaller
# shapes, and the GPU-sized cases).
timings = []


# The device description keys that only launches read (not the compiler's
# choices), and the name: a kernel built for one device's description runs
# as built on another whose description differs only there.
LAUNCH_ONLY_KEYS = {"name", "index", "timestamps", "timestampPeriodNs",
                    "minStorageBufferOffsetAlignment"}


def aot_usable():
    """Whether --aot's kernels were built for this device's description
    (every key the compiler reads equal), with why not."""
    if not args.aot:
        return False, "no --aot"
    try:
        built = json.load(open(os.path.join(args.aot, "device.json")))
        here = json.load(open(os.path.join(args.out, "device.json")))
    except (OSError, ValueError) as e:
        return False, f"cannot read the descriptions: {e}"
    diff = sorted(k for k in set(built) | set(here)
                  if k not in LAUNCH_ONLY_KEYS and built.get(k) != here.get(k))
    if diff:
        def both(k):
            a, b = json.dumps(built.get(k)), json.dumps(here.get(k))
            return f" ({a} there, {b} here)" if len(a) + len(b) < 60 else ""
        return False, ("built for a device whose description differs in " +
                       ", ".join(k + both(k) for k in diff))
    return True, f"built for {built.get('name')}, the same description"


AOT_OK, AOT_WHY = aot_usable() if not args.no_timings else (False, "")
if args.aot:
    log(f"AOT kernels ({args.aot}): {'used' if AOT_OK else 'not used'}: {AOT_WHY}")


def aot_name(kind, variant, dtype, cell):
    """make_aot.sh's file name for a timed cell."""
    if kind == "decode":
        return f"{variant}_decode_{dtype}_skv{cell['Skv']}_d{cell['D']}.spv.json"
    return (f"{variant}_prefill_{dtype}_s{cell['Sq']}_d{cell['D']}"
            + ("_causal" if cell["causal"] else "") + ".spv.json")


def aot_bench(meta, cell, dtype, timeout):
    """attn-vulkan-aot-test bench on an artifact: the same fields as
    attn_run's timings (rates computed as attn-run does)."""
    exe = os.path.join(args.aot, "attn-vulkan-aot-test")
    cmd = [exe, "bench", meta, str(args.bench), str(args.warmup_ms), "64"]
    env = dict(os.environ)
    env["LD_LIBRARY_PATH"] = args.aot
    p, r = run_logged(cmd, env, f"LD_LIBRARY_PATH={args.aot}", timeout)
    if p is None:
        return r
    lines = [l for l in p.stdout.splitlines() if l.startswith("{")]
    for l in p.stdout.splitlines():
        LOG.write("  " + l + "\n")
    if p.stderr.strip():
        LOG.write("  stderr: " + p.stderr.strip()[-2000:] + "\n")
    if lines:
        try:
            r.update(json.loads(lines[-1]))
        except ValueError:
            pass
    if p.returncode == 0 and r.get("ok") is True:
        r["status"] = "ok"
    else:
        r["status"] = "FAIL"
        r["message"] = (f"sampled check: worst error / tolerance {r.get('check_worst')}"
                        if r.get("ok") is False else
                        (p.stderr.strip()[-500:] or f"exit status {p.returncode}"))
    d = cell["D"]
    size = 2 if dtype in ("f16", "bf16") else 4
    flops = (2.0 * cell["B"] * cell["Hq"] * cell["Sq"] * cell["Skv"] * 2 * d
             * (0.5 if cell["causal"] and cell["Sq"] == cell["Skv"] else 1.0))
    kv = cell["B"] * cell["Hkv"] * cell["Skv"] * 2 * d * size
    for ms_key, tf_key, gb_key in (("median_ms", "tflops", "kv_gbps"),
                                   ("device_ms", "device_tflops", "device_kv_gbps")):
        ms = r.get(ms_key)
        if ms:
            r[tf_key] = flops / (ms * 1e-3) / 1e12
            r[gb_key] = kv / (ms * 1e-3) / 1e9
    r["kernel"] = (f"vulkan variant: {r.get('variant')} (AOT) | vulkan kv splits: "
                   f"{r.get('kv_splits')}")
    return r


def timed(kind, variant, dtype, flags, **cell):
    if remaining() < 15:
        timings.append(dict(kind=kind, variant=variant, dtype=dtype, status="skipped",
                            message="budget", **cell))
        return
    meta = os.path.join(args.aot, aot_name(kind, variant, dtype, cell)) if AOT_OK else ""
    if meta and os.path.exists(meta):
        build = "aot"
        r = aot_bench(meta, cell, dtype, min(150.0, remaining() + 20))
    else:
        build = "jit"
        r = attn_run(variant, f"--static-shapes --bench={args.bench} "
                     f"--warmup-ms={args.warmup_ms} --dtype={dtype} " + flags,
                     min(150.0, remaining() + 20))
    row = dict(kind=kind, variant=variant, dtype=dtype, **cell, build=build,
               status=r["status"], kernel=short_kernel(r),
               e2e_ms=r.get("median_ms"), device_ms=r.get("device_ms"),
               device_min_ms=r.get("device_min_ms"),
               device_b2b_ms=r.get("device_b2b_ms"), b2b_ms=r.get("b2b_ms"),
               e2e_tflops=r.get("tflops"), device_tflops=r.get("device_tflops"),
               e2e_gbps=r.get("kv_gbps"), device_gbps=r.get("device_kv_gbps"),
               compile_ms=r.get("compile_ms"), memory=r.get("memory", "host"),
               message=r.get("message", ""))
    # Back to back (attn-run's second pass: the launches submitted at once,
    # no host work between them): the rates from the GPU timestamps.
    if row["device_b2b_ms"] and row["device_ms"]:
        f = row["device_ms"] / row["device_b2b_ms"]
        row["b2b_tflops"] = row["device_tflops"] * f if row["device_tflops"] else None
        row["b2b_gbps"] = row["device_gbps"] * f if row["device_gbps"] else None
    if r["status"] == "FAIL":
        failures.append(f"timing {kind} {variant} {dtype} {cell}: {row['message'][:300]}")
    timings.append(row)
    log(f"time {kind} {variant} {dtype} {cell} {row['status']} {row['kernel']} "
        f"device_ms {row['device_ms']} e2e_ms {row['e2e_ms']} {row['message'][:100]}")


SIZES = [int(s) for s in args.sizes.split(",") if s]
if not args.no_timings:
    log(f"== timings, {elapsed():.0f} s spent")
    for skv in [int(s) for s in args.decode_skv.split(",") if s]:
        for variant in ("coopmat", "coopmat-smem", "portable"):
            if variant in VARIANTS:
                timed("decode", variant, "f16", f"--batch=1 --heads=32 --kv-heads=8 "
                      f"--seq-q=1 --seq-kv={skv} --head-dim=128",
                      B=1, Hq=32, Hkv=8, Sq=1, Skv=skv, D=128, causal=False)
    coop_variants = [v for v in ("coopmat", "coopmat-smem") if v in VARIANTS]
    for S in SIZES:
        for dtype in ("f16", "bf16"):
            for D in (64, 128):
                for causal in (False, True):
                    H, B = 2048 // D, 16384 // S
                    # (the coopmat kernels one after the other per cell)
                    for variant in coop_variants:
                        timed("prefill", variant, dtype,
                              f"--batch={B} --heads={H} --seq-q={S} --head-dim={D}"
                              + (" --causal" if causal else ""),
                              B=B, Hq=H, Hkv=H, Sq=S, Skv=S, D=D, causal=causal)


def cuda_row(t):
    """The CUDA tensor-core kernel's numbers for a timing row, if measured."""
    if not cuda:
        return {}
    dt = {"f16": "float16", "bf16": "bfloat16"}[t["dtype"]]
    if t["kind"] == "prefill":
        name = f"tc_{t['dtype']}_d{t['D']}" + ("_causal" if t["causal"] else "")
        for c in cuda.get("timings", []):
            if c["kernel"] == name and c["S"] == t["Sq"] and c.get("dtype") == dt:
                return dict(cuda_kernel=name, cuda_tflops=c.get("attn_tflops"),
                            flash_tflops=c.get("flash_tflops"))
    else:
        name = f"tc_decode_{t['dtype']}_d128"
        for c in cuda.get("decode", []):
            if c["kernel"] == name and c["B"] == t["B"] and c["Skv"] == t["Skv"]:
                return dict(cuda_kernel=name, cuda_gbps=c.get("attn_gbps"),
                            cuda_b2b_gbps=c.get("attn_b2b_gbps"),
                            flash_gbps=c.get("flash_gbps"))
    return {}


for t in timings:
    t.update(cuda_row(t))
with open(os.path.join(args.out, "timings.csv"), "w", newline="") as f:
    keys = ["kind", "variant", "dtype", "B", "Hq", "Hkv", "Sq", "Skv", "D",
            "causal", "status", "kernel", "device_ms", "device_min_ms",
            "device_b2b_ms", "b2b_ms", "b2b_tflops", "b2b_gbps", "device_tflops",
            "device_gbps", "e2e_ms", "e2e_tflops", "e2e_gbps", "memory", "compile_ms",
            "cuda_kernel", "cuda_tflops", "flash_tflops", "cuda_gbps",
            "cuda_b2b_gbps", "flash_gbps", "build", "message"]
    w = csv.writer(f)
    w.writerow(keys)
    for t in timings:
        w.writerow([t.get(k, "") for k in keys])

# summary.md
info = {}
try:
    info = json.load(open(os.path.join(args.out, "device.json")))
except (OSError, ValueError):
    pass
fmt = lambda v, spec: "-" if v is None or v == "" else format(v, spec)
md = [f"# Vulkan variants on {info.get('name', 'the device')}, "
      f"{time.strftime('%Y-%m-%d')}", ""]
if info:
    shapes = [f"{s['MxNxK']} {s['A']}x{s['B']}+{s['C']}->{s['result']}"
              f"{' sat' if s['saturating'] else ''} ({s['scope']})"
              for s in info.get("coopMatShapes", [])]
    md += [f"Vulkan {info.get('api')}; subgroup {info.get('subgroupSize')} "
           f"[{info.get('minSubgroupSize')}, {info.get('maxSubgroupSize')}], "
           f"arithmetic {info.get('subgroupArithmetic')}, shuffle "
           f"{info.get('subgroupShuffle')}; cooperative matrix "
           f"{info.get('cooperativeMatrix')}; bf16 type "
           f"{info.get('shaderBFloat16Type')}, bf16 cooperative matrix "
           f"{info.get('shaderBFloat16CooperativeMatrix')}; memory model "
           f"{info.get('vulkanMemoryModel')}; shared memory "
           f"{info.get('maxComputeSharedMemorySize')} B; timestamps "
           f"{info.get('timestamps')}.", "",
           "Cooperative-matrix shapes: " + ("; ".join(shapes) or "none") + ".", ""]
md += ["## Checks against the float64 reference (attn-run --check)", "",
       "| case | " + " | ".join(VARIANTS) + " |",
       "| --- |" + " --- |" * len(VARIANTS)]
for name, flags, may in CASES:
    cells = []
    for v in VARIANTS:
        c = next((c for c in checks if c["variant"] == v and c["case"] == name), {})
        s = c.get("status", "-")
        if s == "ok":
            s = f"ok {fmt(c.get('rel_l2_err'), '.1e')}"
        elif s in ("refused", "FAIL"):
            s = f"{s}: {c.get('message', '')[:160]}"
        cells.append(s.replace("|", "/"))
    md.append(f"| {name} | " + " | ".join(cells) + " |")
md += ["", "Kernels (the IR's first lines), per variant: " + "; ".join(
    f"{v}: " + ", ".join(sorted({short_kernel(c).split(', splits')[0]
                                 for c in checks if c['variant'] == v
                                 and c['status'] == 'ok'})) for v in VARIANTS), ""]
for v in VARIANTS:
    cs = [c for c in checks if c["variant"] == v]
    md.append(f"- {v}: " + ", ".join(f"{sum(1 for c in cs if c['status'] == s)} {s}"
                                      for s in ("ok", "FAIL", "refused", "skipped")))
if timings:
    have_dev = any(t.get("device_ms") is not None for t in timings)
    aot_note = ("Every kernel is the JIT's (attn-run); no --aot." if not args.aot else
                f"Kernels marked (aot) were built ahead of time for the device "
                f"description in {args.aot}/device.json (bench/vulkan/make_aot.sh: "
                "attn-translate --attn-to-spirv --vulkan-device, the JIT's choices "
                "for that device) and timed through libattn_runtime.so alone "
                "(attn-vulkan-aot-test bench, which also checks 64 sampled rows "
                "of the timed launch against float64); (jit): attn-run. "
                + ("" if AOT_OK else f"AOT kernels not used: {AOT_WHY}."))
    md += ["", "## Prefill, 16k tokens, hidden 2048 (TFLOP/s)", "", aot_note, "",
           "device: the dispatches alone (GPU timestamps), each launch after "
           "the host poisoned the output; b2b: the same launches submitted back "
           "to back (GPU timestamps, median); e2e: the launch end to end. "
           "CUDA: bench/cuda's tensor-core kernel (device memory, CUDA events), "
           "flash: PyTorch's, both from the same call; the ratio is b2b / CUDA "
           "(device / CUDA where b2b is missing)."
           + ("" if have_dev else " THIS attn-run REPORTS NO device_ms: the "
              "vulkan numbers include the staging and are not kernel speeds."), "",
           "| variant | dtype | D | causal | S | device | b2b | e2e | CUDA tc | "
           "attn / CUDA | flash | kernel |",
           "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
    for t in timings:
        if t["kind"] != "prefill":
            continue
        if t["status"] != "ok":
            md.append(f"| {t['variant']} | {t['dtype']} | {t['D']} | {t['causal']} | "
                      f"{t['Sq']} | {t['status']}: {t.get('message', '')[:90]} "
                      "| | | | | | |")
            continue
        best = t.get("b2b_tflops") or t.get("device_tflops")
        ratio = best / t["cuda_tflops"] if best and t.get("cuda_tflops") else None
        md.append(f"| {t['variant']} | {t['dtype']} | {t['D']} | {t['causal']} | "
                  f"{t['Sq']} | {fmt(t.get('device_tflops'), '.1f')} | "
                  f"{fmt(t.get('b2b_tflops'), '.1f')} | {fmt(t.get('e2e_tflops'), '.1f')} | "
                  f"{fmt(t.get('cuda_tflops'), '.1f')} | {fmt(ratio, '.2f')} | "
                  f"{fmt(t.get('flash_tflops'), '.1f')} | {t['kernel']} ({t['build']}) |")
    md += ["", "## Decode, Sq = 1, Hq = 32, Hkv = 8, D = 128, f16 (GB/s of K/V read)", "",
           "| variant | Skv | device | b2b | e2e | CUDA tc (one call) | "
           "CUDA tc (back to back) | flash | kernel |",
           "| --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
    for t in timings:
        if t["kind"] != "decode":
            continue
        if t["status"] != "ok":
            md.append(f"| {t['variant']} | {t['Skv']} | {t['status']}: "
                      f"{t.get('message', '')[:90]} | | | | | | |")
            continue
        md.append(f"| {t['variant']} | {t['Skv']} | {fmt(t.get('device_gbps'), '.4g')} | "
                  f"{fmt(t.get('b2b_gbps'), '.4g')} | "
                  f"{fmt(t.get('e2e_gbps'), '.4g')} | {fmt(t.get('cuda_gbps'), '.0f')} | "
                  f"{fmt(t.get('cuda_b2b_gbps'), '.0f')} | {fmt(t.get('flash_gbps'), '.0f')} | "
                  f"{t['kernel']} ({t['build']}) |")
md += ["", f"Elapsed {elapsed():.0f} s of a {args.budget_s:.0f} s budget"
       + (f"; {n_skipped} checks skipped for the budget" if n_skipped else "") + ".", ""]
if failures:
    md += ["## FAILED", ""] + [f"- {x}" for x in failures]
else:
    md += ["No failures."]
with open(os.path.join(args.out, "summary.md"), "w") as f:
    f.write("\n".join(md) + "\n")
print("\n".join(md))
LOG.write("\n".join(md) + "\n")
if failures:
    log(f"vk_bench.py: FAILED ({len(failures)}):")
    for x in failures:
        log("  " + x)
    sys.exit(1)
