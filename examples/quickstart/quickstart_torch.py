# attn from PyTorch: attn.sdpa on cpu or cuda tensors (the current CUDA
# stream), a custom op that torch.compile traces through (docs/Python.md).
import sys

try:
    import torch
except ImportError:
    print("torch: not installed here, skipped")
    sys.exit(0)
import attn

dev = "cuda" if torch.cuda.is_available() else "cpu"
dt = torch.float16 if dev == "cuda" else torch.float32
q, k, v = (torch.randn(2, 8, 256, 64, device=dev, dtype=dt) for _ in range(3))
out = attn.sdpa(q, k, v)
want = torch.nn.functional.scaled_dot_product_attention(q.float(), k.float(), v.float())
assert torch.allclose(out.float(), want, atol=2e-2 if dev == "cuda" else 1e-4)
if tuple(int(x) for x in torch.__version__.split(".")[:2]) >= (2, 4):
    f = torch.compile(lambda q, k, v: attn.sdpa(q, k, v) * 2, fullgraph=True)
    assert torch.allclose(f(q, k, v), out * 2)
print("attn", attn.library_version(), "torch", torch.__version__, dev, tuple(out.shape))
