#include "attn/Pipelines/Pipelines.h"
void mlir::attn::registerAttnPipelines() {}
