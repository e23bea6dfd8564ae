# Kernels are cached per spec: a second call with the same spec compiles
# nothing (neither the package's dict nor the runtime's
# attn_context_cache_size grows); with the default dynamic B, H and S, other
# batch sizes, head counts and lengths reuse the kernel; a new flag
# compiles one more; set_static_shapes(True) compiles per shape.
# RUN: %python %s | FileCheck %s
# REQUIRES: numpy
import numpy as np

import attn

rng = np.random.default_rng()


def x(*shape):
    return rng.random(shape).astype(np.float32)


def expect(label, kernels, compiles):
    info = attn.cache_info()
    print(label + ":", info)
    assert info == {"kernels": kernels, "compiles": compiles}, (label, info)


expect("before any call", 0, 0)
# CHECK: before any call: {'kernels': 0, 'compiles': 0}
attn.sdpa(x(2, 4, 8, 16), x(2, 4, 10, 16), x(2, 4, 10, 16))
expect("after one call", 1, 1)
# CHECK: after one call: {'kernels': 1, 'compiles': 1}
attn.sdpa(x(2, 4, 8, 16), x(2, 4, 10, 16), x(2, 4, 10, 16))
attn.sdpa(x(3, 2, 33, 16), x(3, 1, 7, 16), x(3, 1, 7, 16), enable_gqa=True)
expect("same spec, other shapes", 1, 1)
# CHECK: same spec, other shapes: {'kernels': 1, 'compiles': 1}
attn.sdpa(x(2, 4, 8, 16), x(2, 4, 10, 16), x(2, 4, 10, 16), causal=True)
expect("causal", 2, 2)
# CHECK: causal: {'kernels': 2, 'compiles': 2}
old = attn.set_static_shapes(True)
assert old is False
attn.sdpa(x(2, 4, 8, 16), x(2, 4, 10, 16), x(2, 4, 10, 16))
attn.sdpa(x(2, 4, 8, 16), x(2, 4, 10, 16), x(2, 4, 10, 16))
expect("static, one shape twice", 3, 3)
# CHECK: static, one shape twice: {'kernels': 3, 'compiles': 3}
attn.sdpa(x(2, 4, 9, 16), x(2, 4, 10, 16), x(2, 4, 10, 16))
expect("static, another shape", 4, 4)
# CHECK: static, another shape: {'kernels': 4, 'compiles': 4}
attn.set_static_shapes(False)
attn.sdpa(x(1, 1, 5, 16), x(1, 1, 5, 16), x(1, 1, 5, 16))
expect("dynamic again", 4, 4)
# CHECK: dynamic again: {'kernels': 4, 'compiles': 4}
