#!/usr/bin/env python3
"""Seed 003's question on the GPU machine: the multi-head attention layer as
one launch sequence on a single stream vs the seed's per-head CUDA streams,
against PyTorch's nn.MultiheadAttention and a plain F.linear + SDPA
composition, in the same run on the same inputs (issue 21, part 2).

    python3 bench/cuda/mha_streams.py                       # the default matrix
    python3 bench/cuda/mha_streams.py --dtype bf16 --embed 2048 --seq 4096

Variants (self-attention, batch_first, Hq heads of D = E / Hq, biases):

  torch_mha      nn.MultiheadAttention(E, Hq, bias=True, batch_first=True),
                 need_weights=False (PyTorch's fused path where it takes it)
  torch_linear   F.linear(x, in_proj) -> views -> F.scaled_dot_product_attention
                 -> F.linear(out_proj): PyTorch's plain composition
  attn_mha       attn.mha itself (python/attn's attn.mha: attn_mha_compile /
                 attn_mha_launch on cuda, docs/Runtime.md "Layers"): cuBLASLt
                 projections with
                 bias epilogues writing BSHD rows, attn's attention kernel
                 reading them by strides, the output GEMM: one launch
                 sequence on the caller's stream
  attn_fused     torch's GEMMs around attn.sdpa (through python/attn) on the
                 [B, S, 3, H, D] projection read by strides (BSHD, no copy),
                 one output projection: one stream
  attn_streams   the seed's design: one CUDA stream per head, each running
                 its head's Q/K/V projection and attn.sdpa, then an event
                 join and one output projection on the main stream

Every variant is checked against torch_mha on the same weights (max abs
error on the output, reported; f16/bf16 tolerance 2e-2). Times are the
median of --reps CUDA-event-timed calls after warm-ups, the variants
alternated round-robin so drift hits all alike. Prints one JSON line per
shape and variant (ms, TFLOP/s counting projections, attention and output
projection) and a table.
"""
import argparse
import json
import math
import os
import statistics
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "python"))


def flops(B, S, E, causal):
    proj = 2.0 * B * S * E * 3 * E
    attn = 4.0 * B * S * S * E * (0.5 if causal else 1.0)
    out = 2.0 * B * S * E * E
    return proj + attn + out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--dtype", default="f16,bf16")
    ap.add_argument("--embed", default="1024,2048,4096")
    ap.add_argument("--seq", default="512,2048,8192")
    ap.add_argument("--heads-dim", type=int, default=128,
                    help="head dim D (Hq = E / D)")
    ap.add_argument("--batch", type=int, default=1)
    ap.add_argument("--causal", action="store_true")
    ap.add_argument("--reps", type=int, default=20)
    ap.add_argument("--warmup", type=int, default=3)
    args = ap.parse_args()

    import torch
    import torch.nn.functional as F
    import attn

    dev = torch.device("cuda")
    dtypes = {"f16": torch.float16, "bf16": torch.bfloat16}
    rows = []
    for dname in args.dtype.split(","):
        dt = dtypes[dname]
        for E in map(int, args.embed.split(",")):
            H = E // args.heads_dim
            D = args.heads_dim
            for S in map(int, args.seq.split(",")):
                B = args.batch
                torch.manual_seed(0)
                mha = torch.nn.MultiheadAttention(
                    E, H, bias=True, batch_first=True).to(dev, dt).eval()
                w_in, b_in = mha.in_proj_weight, mha.in_proj_bias
                w_out, b_out = mha.out_proj.weight, mha.out_proj.bias
                x = torch.rand(B, S, E, device=dev, dtype=dt) * 2 - 1
                mask = None
                if args.causal:
                    mask = torch.ones(S, S, device=dev, dtype=torch.bool).triu(1)
                streams = [torch.cuda.Stream() for _ in range(H)]

                def torch_mha():
                    return mha(x, x, x, need_weights=False, attn_mask=mask,
                               is_causal=args.causal)[0]

                def torch_linear():
                    qkv = F.linear(x, w_in, b_in).view(B, S, 3, H, D)
                    q, k, v = (qkv[:, :, i].transpose(1, 2) for i in range(3))
                    o = F.scaled_dot_product_attention(q, k, v,
                                                       is_causal=args.causal)
                    return F.linear(o.transpose(1, 2).reshape(B, S, E),
                                    w_out, b_out)

                def attn_mha():  # a fresh y each call: nothing stale passes
                    return attn.mha(x, w_qkv=w_in, b_qkv=b_in, w_o=w_out,
                                    b_o=b_out, heads=H, causal=args.causal)

                def attn_fused():
                    qkv = F.linear(x, w_in, b_in).view(B, S, 3, H, D)
                    q, k, v = (qkv[:, :, i].transpose(1, 2) for i in range(3))
                    o = attn.sdpa(q, k, v, causal=args.causal)  # BHSD out
                    return F.linear(o.transpose(1, 2).reshape(B, S, E),
                                    w_out, b_out)

                def attn_streams():
                    main = torch.cuda.current_stream()
                    outs = [None] * H
                    for h, st in enumerate(streams):
                        st.wait_stream(main)
                        with torch.cuda.stream(st):
                            rows_q = slice(h * D, (h + 1) * D)
                            rows_k = slice(E + h * D, E + (h + 1) * D)
                            rows_v = slice(2 * E + h * D, 2 * E + (h + 1) * D)
                            q = F.linear(x, w_in[rows_q], b_in[rows_q])
                            k = F.linear(x, w_in[rows_k], b_in[rows_k])
                            v = F.linear(x, w_in[rows_v], b_in[rows_v])
                            outs[h] = attn.sdpa(q.unsqueeze(1), k.unsqueeze(1),
                                                v.unsqueeze(1),
                                                causal=args.causal)
                    for st in streams:
                        main.wait_stream(st)
                    o = torch.cat(outs, dim=1)  # [B, H, S, D]
                    return F.linear(o.transpose(1, 2).reshape(B, S, E),
                                    w_out, b_out)

                variants = {"torch_mha": torch_mha, "torch_linear": torch_linear,
                            "attn_mha": attn_mha, "attn_fused": attn_fused,
                            "attn_streams": attn_streams}
                with torch.no_grad():
                    ref = torch_mha().float()
                    errs = {n: (f().float() - ref).abs().max().item()
                            for n, f in variants.items()}
                    for _ in range(args.warmup):
                        for f in variants.values():
                            f()
                    times = {n: [] for n in variants}
                    for _ in range(args.reps):
                        for n, f in variants.items():
                            a = torch.cuda.Event(enable_timing=True)
                            b = torch.cuda.Event(enable_timing=True)
                            a.record()
                            f()
                            b.record()
                            b.synchronize()
                            times[n].append(a.elapsed_time(b))
                fl = flops(B, S, E, args.causal)
                for n in variants:
                    ms = statistics.median(times[n])
                    row = {"dtype": dname, "batch": B, "seq": S, "embed": E,
                           "heads": H, "head_dim": D, "causal": args.causal,
                           "variant": n, "median_ms": ms,
                           "tflops": fl / (ms * 1e-3) / 1e12,
                           "max_abs_err_vs_torch_mha": errs[n],
                           "ok": errs[n] <= 2e-2}
                    rows.append(row)
                    print(json.dumps(row), flush=True)
    print("\n%-5s %6s %5s %-13s %9s %8s %9s" %
          ("dtype", "E", "S", "variant", "ms", "TFLOP/s", "err"))
    for r in rows:
        print("%-5s %6d %5d %-13s %9.3f %8.1f %9.2e%s" %
              (r["dtype"], r["embed"], r["seq"], r["variant"], r["median_ms"],
               r["tflops"], r["max_abs_err_vs_torch_mha"],
               "" if r["ok"] else "  FAIL"))
    return 0 if all(r["ok"] for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
