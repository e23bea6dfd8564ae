# Kernels are cached per spec: a call whose spec is cached compiles
# nothing (neither the package's dict nor the runtime's
# attn_context_cache_size grows). Shape policies (attn.set_shape_policy):
# 'auto' (default) compiles a spec's first shape statically and one
# dynamic kernel for all its other shapes; 'dynamic' one kernel per spec;
# 'static' one per shape.
# RUN: %attn_python %s | FileCheck %s
# REQUIRES: numpy
import numpy as np

import attn

rng = np.random.default_rng()


def x(*shape):
    return rng.random(shape).astype(np.float32)


def call(b, hq, hkv, sq, skv, **kw):
    attn.sdpa(x(b, hq, sq, 16), x(b, hkv, skv, 16), x(b, hkv, skv, 16),
              enable_gqa=hq != hkv, **kw)


def expect(label, kernels, compiles):
    info = attn.cache_info()
    print(label + ":", info)
    assert info == {"kernels": kernels, "compiles": compiles}, (label, info)


expect("before any call", 0, 0)
# CHECK: before any call: {'kernels': 0, 'compiles': 0}
A, B, C, D, E = ((2, 4, 4, 8, 10), (3, 2, 1, 33, 7), (1, 1, 1, 5, 5),
                 (2, 2, 2, 12, 12), (1, 2, 2, 3, 9))
call(*A)
expect("auto: first shape", 1, 1)
call(*A)
expect("auto: same shape again", 1, 1)
# CHECK: auto: first shape: {'kernels': 1, 'compiles': 1}
# CHECK: auto: same shape again: {'kernels': 1, 'compiles': 1}
call(*B)
expect("auto: a second shape (dynamic kernel)", 2, 2)
call(*C)
call(*A)
expect("auto: more shapes, and the first again", 2, 2)
# CHECK: auto: a second shape (dynamic kernel): {'kernels': 2, 'compiles': 2}
# CHECK: auto: more shapes, and the first again: {'kernels': 2, 'compiles': 2}
call(*A, causal=True)
expect("auto: another spec", 3, 3)
# CHECK: auto: another spec: {'kernels': 3, 'compiles': 3}

assert attn.set_shape_policy("dynamic") == "auto"
call(*D)
expect("dynamic: reuses auto's dynamic kernel", 3, 3)
call(*D, causal=True)
call(*E, causal=True)
expect("dynamic: one kernel for the causal spec", 4, 4)
# CHECK: dynamic: reuses auto's dynamic kernel: {'kernels': 3, 'compiles': 3}
# CHECK: dynamic: one kernel for the causal spec: {'kernels': 4, 'compiles': 4}

assert attn.set_shape_policy("static") == "dynamic"
call(*D)
call(*D)
expect("static: one shape twice", 5, 5)
call(*E)
expect("static: another shape", 6, 6)
# CHECK: static: one shape twice: {'kernels': 5, 'compiles': 5}
# CHECK: static: another shape: {'kernels': 6, 'compiles': 6}
try:
    attn.set_shape_policy("sometimes")
    raise SystemExit("no error for a bad policy")
except attn.InvalidArgumentError as e:
    print("bad policy:", e)
# CHECK: bad policy: shape policy 'sometimes'; expected one of auto, dynamic, static
