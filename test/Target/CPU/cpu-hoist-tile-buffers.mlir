// RUN: attn-opt %s --split-input-file -attn-cpu-hoist-tile-buffers -canonicalize -cse | FileCheck %s
// RUN: attn-opt %s --split-input-file -attn-cpu-hoist-tile-buffers=openmp=0 -canonicalize -cse | FileCheck %s --check-prefix=SERIAL
// RUN: attn-opt %s --split-input-file -attn-cpu-hoist-tile-buffers=strict=1 -verify-diagnostics -o /dev/null

// attn-cpu-hoist-tile-buffers requires memrefs after the deallocation
// pipeline; it guarantees that every alloc inside an outermost scf.parallel
// whose lifetime ends in its own block, that nothing carries out of it, and
// whose dynamic sizes are bounded, is a memref.view of one slab allocated
// before the loop (threads x per-thread bytes, overflow asking for
// 2^63 - 1) and freed after it; with strict, any other alloc inside a
// parallel loop is an error.

// Two temporaries, one per tile and one per key step: a slab each (256
// and 12 -> 128 bytes per thread), sized by omp_get_max_threads and indexed
// by omp_get_thread_num; without openmp, one part each at offset 0.
// CHECK-LABEL: func.func @static
// CHECK-DAG: %[[C256:.*]] = arith.constant 256 : index
// CHECK-DAG: %[[C128:.*]] = arith.constant 128 : index
// CHECK:     %[[MAX:.*]] = call @omp_get_max_threads() : () -> i32
// CHECK:     %[[N:.*]] = arith.index_cast %[[MAX]] : i32 to index
// CHECK:     arith.maxsi %[[N]], %{{.*}} : index
// CHECK:     arith.mului_extended %{{.*}}, %c256_i64 : i64
// CHECK:     arith.mului_extended %{{.*}}, %c128_i64 : i64
// CHECK:     %[[BYTES0:.*]] = arith.select
// CHECK:     %[[SLAB0:.*]] = memref.alloc(%[[BYTES0]]) {alignment = 128 : i64} : memref<?xi8>
// CHECK:     %[[BYTES1:.*]] = arith.select
// CHECK:     %[[SLAB1:.*]] = memref.alloc(%[[BYTES1]]) {alignment = 128 : i64} : memref<?xi8>
// CHECK:     scf.parallel
// CHECK:       %[[TID:.*]] = func.call @omp_get_thread_num() : () -> i32
// CHECK:       %[[T:.*]] = arith.index_cast %[[TID]] : i32 to index
// CHECK:       %[[BASE0:.*]] = arith.muli %[[T]], %[[C256]] : index
// CHECK:       %[[ACC:.*]] = memref.view %[[SLAB0]][%[[BASE0]]][] : memref<?xi8> to memref<64xf32>
// CHECK:       scf.for
// CHECK:         %[[BASE1:.*]] = arith.muli %[[T]], %[[C128]] : index
// CHECK:         memref.view %[[SLAB1]][%[[BASE1]]][] : memref<?xi8> to memref<3xi32>
// CHECK-NOT:     memref.dealloc
// CHECK:       memref.copy %[[ACC]]
// CHECK-NOT:   memref.alloc
// CHECK-NOT:   memref.dealloc
// CHECK:     memref.dealloc %[[SLAB0]] : memref<?xi8>
// CHECK:     memref.dealloc %[[SLAB1]] : memref<?xi8>
// CHECK:     func.func private @omp_get_max_threads() -> i32
// CHECK:     func.func private @omp_get_thread_num() -> i32
// SERIAL-LABEL: func.func @static
// SERIAL-NOT: omp_get
// SERIAL:     %[[SLAB0:.*]] = memref.alloc() {alignment = 128 : i64} : memref<256xi8>
// SERIAL:     %[[SLAB1:.*]] = memref.alloc() {alignment = 128 : i64} : memref<128xi8>
// SERIAL:     scf.parallel
// SERIAL:       memref.view %[[SLAB0]][%c0][] : memref<256xi8> to memref<64xf32>
// SERIAL:       memref.view %[[SLAB1]][%c0][] : memref<128xi8> to memref<3xi32>
// SERIAL:     memref.dealloc %[[SLAB0]]
// SERIAL:     memref.dealloc %[[SLAB1]]
// SERIAL-NOT: omp_get
func.func @static(%n: index, %out: memref<?x64xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %cst = arith.constant 0.0 : f32
  %z = arith.constant 0 : i32
  scf.parallel (%i) = (%c0) to (%n) step (%c1) {
    %acc = memref.alloc() {alignment = 64 : i64} : memref<64xf32>
    scf.for %j = %c0 to %c4 step %c1 {
      %s = memref.alloc() {alignment = 64 : i64} : memref<3xi32>
      memref.store %z, %s[%c1] : memref<3xi32>
      memref.store %cst, %acc[%j] : memref<64xf32>
      memref.dealloc %s : memref<3xi32>
    }
    %row = memref.subview %out[%i, 0] [1, 64] [1, 1] : memref<?x64xf32> to memref<64xf32, strided<[1], offset: ?>>
    memref.copy %acc, %row : memref<64xf32> to memref<64xf32, strided<[1], offset: ?>>
    memref.dealloc %acc : memref<64xf32>
    scf.reduce
  }
  return
}

// -----

// The last, partial query block: min(64, %sq - 64 i) rows, with i the
// parallel tile. Its bound before the loop is the smaller of 64 and %sq, so
// a short sequence with a large block reserves what the sequence needs.
// The key block's start (an arith.minui, as a split's start is) has no
// bound the analysis can express, but the block sizes a view of %k, so it
// is at most %k's extent; a size with neither falls back to a constant
// bound (the third alloc: 64).
// CHECK-LABEL: func.func @partial_block
// CHECK-SAME: (%[[SQ:arg[0-9]+]]: index, %{{.*}}: index, %{{.*}}: index, %{{.*}}: index, %[[K:arg[0-9]+]]: memref<?x8xf32>)
// CHECK-DAG: %[[ROWS:.*]] = arith.minsi %[[SQ]], %c64 : index
// CHECK-DAG: %[[SKV:.*]] = memref.dim %[[K]], %c0 : memref<?x8xf32>
// CHECK-DAG: arith.minsi %[[SKV]], %c64 : index
// CHECK:     %[[SLABQ:.*]] = memref.alloc(%{{.*}}) {alignment = 128 : i64} : memref<?xi8>
// CHECK:     %[[SLABS:.*]] = memref.alloc(%{{.*}}) {alignment = 128 : i64} : memref<?xi8>
// CHECK:     %[[SLABT:.*]] = memref.alloc(%{{.*}}) {alignment = 128 : i64} : memref<?xi8>
// CHECK:     scf.parallel (%[[I:.*]]) =
// CHECK:       %[[LEN:.*]] = affine.min {{.*}}(%[[I]])[%[[SQ]]]
// CHECK:       memref.view %[[SLABQ]][%{{.*}}][%[[LEN]]] : memref<?xi8> to memref<?x8xf32>
// CHECK:       scf.for %[[J:.*]] =
// CHECK:         %[[KEYS:.*]] = affine.min
// CHECK:         memref.view %[[SLABS]][%{{.*}}][%[[LEN]], %[[KEYS]]] : memref<?xi8> to memref<?x?xf32>
// CHECK:         memref.view %[[SLABT]][%{{.*}}][%[[KEYS]]] : memref<?xi8> to memref<?xf32>
func.func @partial_block(%sq: index, %skv: index, %n: index, %first: index,
                         %k: memref<?x8xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %cst = arith.constant 0.0 : f32
  scf.parallel (%i) = (%c0) to (%n) step (%c1) {
    %rows = affine.min affine_map<(d0)[s0] -> (64, s0 - d0 * 64)>(%i)[%sq]
    %q = memref.alloc(%rows) {alignment = 64 : i64} : memref<?x8xf32>
    memref.store %cst, %q[%c0, %c0] : memref<?x8xf32>
    %blocks = affine.apply affine_map<()[s0] -> (s0 ceildiv 64)>()[%skv]
    %start = arith.minui %first, %blocks : index
    scf.for %j = %start to %blocks step %c1 {
      %keys = affine.min affine_map<(d0)[s0] -> (64, s0 - d0 * 64)>(%j)[%skv]
      %off = affine.apply affine_map<(d0) -> (d0 * 64)>(%j)
      %kt = memref.subview %k[%off, 0] [%keys, 8] [1, 1] : memref<?x8xf32> to memref<?x8xf32, strided<[8, 1], offset: ?>>
      %s = memref.alloc(%rows, %keys) {alignment = 64 : i64} : memref<?x?xf32>
      %x = memref.load %kt[%c0, %c0] : memref<?x8xf32, strided<[8, 1], offset: ?>>
      memref.store %x, %s[%c0, %c0] : memref<?x?xf32>
      %keys2 = affine.min affine_map<(d0)[s0] -> (64, s0 - d0 * 64)>(%j)[%skv]
      %t = memref.alloc(%keys2) {alignment = 64 : i64} : memref<?xf32>
      memref.store %x, %t[%c0] : memref<?xf32>
      memref.dealloc %t : memref<?xf32>
      memref.dealloc %s : memref<?x?xf32>
    }
    memref.dealloc %q : memref<?x8xf32>
    scf.reduce
  }
  return
}

// -----

// Sizes whose product overflows 64 bits ask for 2^63 - 1 bytes: the
// allocation fails before the loop instead of wrapping to a small slab.
// CHECK-LABEL: func.func @overflow

// CHECK:     memref.alloc() {alignment = 128 : i64} : memref<9223372036854775807xi8>
func.func @overflow(%n: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %cst = arith.constant 0.0 : f32
  scf.parallel (%i) = (%c0) to (%n) step (%c1) {
    %s = memref.alloc() : memref<4611686018427387904x4xf32>
    memref.store %cst, %s[%c0, %c0] : memref<4611686018427387904x4xf32>
    memref.dealloc %s : memref<4611686018427387904x4xf32>
    scf.reduce
  }
  return
}

// -----

// Allocations the pass cannot move stay (strict: an error naming why):
// one that a loop carries out of its iteration, and one that outlives the
// loop.
// CHECK-LABEL: func.func @not_moved
// CHECK:     scf.parallel
// CHECK:       memref.alloc() : memref<4xf32>
// CHECK:       scf.for
// CHECK:         memref.alloc() : memref<4xf32>
// CHECK-NOT: memref.view
func.func @not_moved(%n: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  scf.parallel (%i) = (%c0) to (%n) step (%c1) {
    // expected-error @below {{attn-cpu-hoist-tile-buffers: this allocation inside a parallel loop cannot be moved before it: it is not deallocated in the block that allocates it}}
    %first = memref.alloc() : memref<4xf32>
    %last = scf.for %j = %c0 to %c4 step %c1 iter_args(%prev = %first) -> (memref<4xf32>) {
      %next = memref.alloc() : memref<4xf32>
      memref.copy %prev, %next : memref<4xf32> to memref<4xf32>
      memref.dealloc %prev : memref<4xf32>
      scf.yield %next : memref<4xf32>
    }
    memref.dealloc %last : memref<4xf32>
    scf.reduce
  }
  return
}
