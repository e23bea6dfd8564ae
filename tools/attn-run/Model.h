//===- Model.h - attn-run's --model: the performance model beside a run ---===//
//
// Kept apart from attn-run.cpp so that the flag's code is one place: the
// problem and geometry handed to attn::model, the text lines and the JSON
// member (docs/attn-run.md, "--model").
//
//===----------------------------------------------------------------------===//
#ifndef ATTN_RUN_MODEL_H
#define ATTN_RUN_MODEL_H

#include "attn/Model/PerfModel.h"
#include "attn/runtime/attn.h"

#include <string>

namespace attn_run {

struct ModelInput {
  attn_target target = ATTN_TARGET_CPU;
  std::string device;        // --model-device, "" = from the target
  std::string deviceSeen;    // the runtime's device name ("" when not run)
  attn::model::Problem problem;
  int64_t blockQ = 0, blockKv = 0, kvSplits = 0; // chosen (0: not known)
  int64_t specKvSplits = 0;  // the spec's (0 automatic)
  std::string geometry;      // --model-geometry: "key=N,..." overrides
};

struct ModelOutput {
  bool ok = false;
  std::string error;
  std::string device;
  attn::model::Geometry geometry;
  attn::model::Prediction prediction;
  int64_t bestKvSplits = 0; // the model's own split count for this geometry
};

/// Predicts for `in` (the geometry the kernel reported where known, the
/// target's rules elsewhere).
ModelOutput runModel(const ModelInput &in);

/// The text lines ("  model ...") for the report; measuredMs NaN when
/// nothing was timed.
void printModel(const ModelOutput &m, double measuredMs);

/// The JSON value of the "model" member.
std::string modelJson(const ModelOutput &m, double measuredMs);

} // namespace attn_run

#endif // ATTN_RUN_MODEL_H
