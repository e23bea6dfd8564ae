# GNU OpenMP (libgomp, which PyTorch loads) next to the LLVM libomp that
# attn's cpu kernels run on. The kernels call omp_get_thread_num to pick
# their thread's tile buffers; resolved process-wide, a libgomp loaded
# globally first would answer it (0 in every libomp thread) and the threads
# would overwrite each other's buffers. The JIT binds the kernels' OpenMP
# calls to its own libomp (lib/JIT/CPUCompiler.cpp), so both orders must
# give the reference's results, on several threads and without a warning
# (torch is not needed: libgomp is loaded with ctypes as torch would).
# RUN: env OMP_NUM_THREADS=4 %attn_python %s gomp-first | FileCheck %s --check-prefix=GOMP
# RUN: env OMP_NUM_THREADS=4 %attn_python %s attn-first | FileCheck %s --check-prefix=ATTN
# REQUIRES: numpy
import ctypes
import ctypes.util
import os
import sys
import warnings

order = sys.argv[1]
gomp = ctypes.util.find_library("gomp") or "libgomp.so.1"
if order == "gomp-first":
    ctypes.CDLL(gomp, mode=ctypes.RTLD_GLOBAL)
import numpy as np  # noqa: E402

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "Inputs"))
import ref  # noqa: E402

import attn  # noqa: E402
import attn._core  # noqa: E402

if order == "attn-first":
    ctypes.CDLL(gomp, mode=ctypes.RTLD_GLOBAL)
attn._core._numpy_empty = lambda shape, dtype: np.full(shape, np.nan, dtype)
rng = np.random.default_rng()
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    # The shapes with which cpu-numerics.py first showed the race.
    for sq, skv in ((5, 37), (37, 9), (37, 37)):
        q = ref.rand(rng, (2, 3, sq, 64), np.float32)
        k, v = (ref.rand(rng, (2, 3, skv, 64), np.float32) for _ in range(2))
        out = attn.sdpa(q, k, v, causal=True)
        want, _ = ref.sdpa(q, k, v, causal=True)
        e = ref.close("%s Sq=%d Skv=%d" % (order, sq, skv), out, want, 2e-5)
        print("PASS %s Sq=%d Skv=%d (max err %.1e)" % (order, sq, skv, e))
# The case is the one that matters: in gomp-first, the process-wide
# omp_get_thread_num is libgomp's.
libgomp = ctypes.CDLL(gomp)
first = ctypes.cast(ctypes.CDLL(None).omp_get_thread_num, ctypes.c_void_p).value
mine = ctypes.cast(libgomp.omp_get_thread_num, ctypes.c_void_p).value
print("process-wide omp_get_thread_num is libgomp's: %s" % (first == mine))
for w in caught:
    print("warning: " + str(w.message).split(";")[0])
print("warnings: %d" % len(caught))
# GOMP: PASS gomp-first Sq=5 Skv=37
# GOMP: PASS gomp-first Sq=37 Skv=9
# GOMP: PASS gomp-first Sq=37 Skv=37
# GOMP: process-wide omp_get_thread_num is libgomp's: True
# GOMP: warnings: 0
# ATTN: PASS attn-first Sq=5 Skv=37
# ATTN: PASS attn-first Sq=37 Skv=9
# ATTN: PASS attn-first Sq=37 Skv=37
# ATTN: warnings: 0
