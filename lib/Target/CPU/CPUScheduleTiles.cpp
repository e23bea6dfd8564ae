//===- CPUScheduleTiles.cpp - dynamic OpenMP schedule for the tiles -------===//
//
// attn-cpu-schedule-tiles (Passes.td): every omp.wsloop without a schedule
// gets schedule(dynamic), so the uneven tiles of a causal op balance
// across the threads.
//
//===----------------------------------------------------------------------===//
#include "attn/Target/CPU/Passes.h"

#include "mlir/Dialect/OpenMP/OpenMPDialect.h"

namespace mlir::attn {
#define GEN_PASS_DEF_CPUSCHEDULETILESPASS
#include "attn/Target/CPU/Passes.h.inc"
} // namespace mlir::attn

using namespace mlir;

namespace {

struct CPUScheduleTilesPass
    : public mlir::attn::impl::CPUScheduleTilesPassBase<CPUScheduleTilesPass> {
  void runOnOperation() override {
    getOperation()->walk([](omp::WsloopOp loop) {
      if (loop.getScheduleKind())
        return;
      loop.setScheduleKindAttr(omp::ClauseScheduleKindAttr::get(
          loop.getContext(), omp::ClauseScheduleKind::Dynamic));
    });
  }
};

} // namespace
