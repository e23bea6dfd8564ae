// RUN: attn-opt %s -split-input-file -attn-spirv-loop-budget=max-iterations=226 -verify-diagnostics
// RUN: not attn-opt %s -split-input-file -attn-spirv-loop-budget=max-iterations=225 2>&1 | FileCheck %s --check-prefix=OVER
// RUN: not attn-opt %s -split-input-file -attn-spirv-loop-budget=max-iterations=125 2>&1 | FileCheck %s --check-prefix=CHUNK
// RUN: not attn-opt %s -split-input-file -attn-spirv-loop-budget=max-iterations=121 2>&1 | FileCheck %s --check-prefix=TIGHT
// TIGHT: error: attn-spirv-loop-budget: one invocation of this kernel can run up to 122 loop iterations; the target ends loops after 121
// TIGHT-NOT: can run up to 101 loop iterations

// attn-spirv-loop-budget requires outlined kernels; it guarantees success
// only if, for every kernel, the bound on the loop iterations one invocation
// runs (scf.for trip counts from integer ranges, nested counts multiplied,
// one exiting pass per loop execution) is within max-iterations, and
// otherwise an error on the kernel giving the bound, or, when a loop has no
// bound, an error with a note on that loop. It never changes the IR.

// Nested constant loops: the outer runs 10 times plus its exiting pass (11),
// the inner 20 + 1 each time: 11 + 10 * 21 = 221. A loop whose lower bound
// is the invocation id (0..15, from known_block_size) and upper bound 64,
// step 16, runs at most 4 times + 1 = 5. Under an scf.if, loops count as if
// the branch were taken: 226 in all.
// OVER: error: attn-spirv-loop-budget: one invocation of this kernel can run up to 226 loop iterations; the target ends loops after 225
gpu.module @kernels {
  gpu.func @nested(%flag: i1, %buf: memref<64xf32>) kernel attributes {known_block_size = array<i32: 16, 1, 1>} {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c10 = arith.constant 10 : index
    %c16 = arith.constant 16 : index
    %c20 = arith.constant 20 : index
    %c64 = arith.constant 64 : index
    %x = arith.constant 1.0 : f32
    scf.for %i = %c0 to %c10 step %c1 {
      scf.for %j = %c0 to %c20 step %c1 {
        memref.store %x, %buf[%j] : memref<64xf32>
      }
    }
    %tid = gpu.thread_id x
    scf.if %flag {
      scf.for %e = %tid to %c64 step %c16 {
        memref.store %x, %buf[%e] : memref<64xf32>
      }
    }
    gpu.return
  }
}

// -----

// A bound computed from the data: no bound, an error that points at the loop.
gpu.module @kernels {
  // expected-error @+1 {{attn-spirv-loop-budget: cannot bound the loop iterations of one invocation of this kernel; the target allows at most 226}}
  gpu.func @data_bound(%n: index, %buf: memref<64xf32>) kernel {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %x = arith.constant 1.0 : f32
    // expected-note @+1 {{this loop's trip count has no bound}}
    scf.for %i = %c0 to %n step %c1 {
      memref.store %x, %buf[%c0] : memref<64xf32>
    }
    gpu.return
  }
}

// -----

// A bound clamped by min: at most 8 iterations whatever %n is (9 with the
// exiting pass); functions that are not kernels are not checked.
gpu.module @kernels {
  gpu.func @clamped(%n: index, %buf: memref<64xf32>) kernel {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c8 = arith.constant 8 : index
    %x = arith.constant 1.0 : f32
    %ub = arith.minui %n, %c8 : index
    scf.for %i = %c0 to %ub step %c1 {
      memref.store %x, %buf[%i] : memref<64xf32>
    }
    gpu.return
  }
  gpu.func @helper(%n: index, %buf: memref<64xf32>) {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %x = arith.constant 1.0 : f32
    scf.for %i = %c0 to %n step %c1 {
      memref.store %x, %buf[%c0] : memref<64xf32>
    }
    gpu.return
  }
}

// -----

// Other loop forms have no trip count to bound.
gpu.module @kernels {
  // expected-error @+1 {{cannot bound the loop iterations}}
  gpu.func @while_loop(%buf: memref<64xf32>) kernel {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c9 = arith.constant 9 : index
    // expected-note @+1 {{this loop's trip count has no bound}}
    %r = scf.while (%i = %c0) : (index) -> index {
      %go = arith.cmpi ult, %i, %c9 : index
      scf.condition(%go) %i : index
    } do {
    ^bb0(%i: index):
      %n = arith.addi %i, %c1 : index
      scf.yield %n : index
    }
    gpu.return
  }
}

// -----

// One chunk of a range, as split-KV walks its share of the key blocks:
// [begin, min(begin + chunk, blocks)) with begin = min(split * chunk,
// blocks). From the ranges alone the loop could run 0..1000 (1001 with the
// exiting pass, over the budget); the bound follows the upper bound back to
// begin + chunk: at most 125 iterations, 126 with the exiting pass.
// CHUNK: error: attn-spirv-loop-budget: one invocation of this kernel can run up to 126 loop iterations; the target ends loops after 125
gpu.module @kernels {
  gpu.func @chunk(%buf: memref<1000xf32>) kernel {
    %c1 = arith.constant 1 : index
    %c8 = arith.constant 8 : index
    %c125 = arith.constant 125 : index
    %c1000 = arith.constant 1000 : index
    %x = arith.constant 1.0 : f32
    %b = gpu.block_id y
    %split = arith.remui %b, %c8 : index
    %start = arith.muli %split, %c125 : index
    %begin = arith.minui %start, %c1000 : index
    %stop = arith.addi %begin, %c125 : index
    %end = arith.minui %stop, %c1000 : index
    scf.for %j = %begin to %end step %c1 {
      memref.store %x, %buf[%j] : memref<1000xf32>
    }
    gpu.return
  }
}

// -----

// Two loops over consecutive ranges, [0, mid) then [mid, n) with n <= 40
// (a causal tile's unmasked and diagonal key blocks): each alone could run
// 40 times (40 + 1 + 40 x 2 = 121 with its inner loop of 1 + 1), 242 for
// the two; together they run at most n: 40 + 2 + 40 x 2 = 122, within 226.
gpu.module @kernels {
  gpu.func @chained(%a: index, %b: index, %buf: memref<64xf32>) kernel {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c40 = arith.constant 40 : index
    %x = arith.constant 1.0 : f32
    %n = arith.minui %a, %c40 : index
    %mid = arith.minui %b, %n : index
    scf.for %i = %c0 to %mid step %c1 {
      scf.for %j = %c0 to %c1 step %c1 {
        memref.store %x, %buf[%j] : memref<64xf32>
      }
    }
    scf.for %i = %mid to %n step %c1 {
      scf.for %j = %c0 to %c1 step %c1 {
        memref.store %x, %buf[%j] : memref<64xf32>
      }
    }
    gpu.return
  }
}

// -----

// A block count as lower-affine writes ceildiv(x, 10) for x in [0, 1000]:
// x <= 0 ? -((0 - x) / 10) : (x - 1) / 10 + 1. The integer range analysis
// joins the select's operands without its condition (a negative range); the
// budget evaluates each operand where the condition holds or fails: at
// most 100 iterations, 101 with the exiting pass.
gpu.module @kernels {
  gpu.func @ceil_div(%a: index, %buf: memref<1000xf32>) kernel {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c10 = arith.constant 10 : index
    %c1000 = arith.constant 1000 : index
    %y = arith.constant 1.0 : f32
    %x = arith.minui %a, %c1000 : index
    %nonpos = arith.cmpi sle, %x, %c0 : index
    %neg = arith.subi %c0, %x : index
    %dec = arith.subi %x, %c1 : index
    %sel = arith.select %nonpos, %neg, %dec : index
    %q = arith.divsi %sel, %c10 : index
    %negq = arith.subi %c0, %q : index
    %incq = arith.addi %q, %c1 : index
    %n = arith.select %nonpos, %negq, %incq : index
    scf.for %i = %c0 to %n step %c1 {
      memref.store %y, %buf[%i] : memref<1000xf32>
    }
    gpu.return
  }
}
