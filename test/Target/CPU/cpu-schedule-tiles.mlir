// RUN: attn-opt %s -attn-cpu-schedule-tiles | FileCheck %s

// The parallel tiles' work-sharing loop gets schedule(dynamic) (chunks of
// one tile); a loop with a schedule of its own keeps it.
// CHECK-LABEL: func.func @tiles
// CHECK:       omp.wsloop schedule(dynamic) {
// CHECK:         omp.loop_nest
// CHECK:       omp.wsloop schedule(static) {
// CHECK-LABEL: func.func @no_loops
// CHECK-NOT:   schedule
func.func @tiles(%n: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  omp.parallel {
    omp.wsloop {
      omp.loop_nest (%i) : index = (%c0) to (%n) step (%c1) {
        omp.yield
      }
    }
    omp.wsloop schedule(static) {
      omp.loop_nest (%i) : index = (%c0) to (%n) step (%c1) {
        omp.yield
      }
    }
    omp.terminator
  }
  return
}

func.func @no_loops() {
  return
}
