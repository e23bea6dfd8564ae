//===- Model.cpp - attn-run's --model: the performance model beside a run -===//
#include "Model.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <sstream>

using namespace attn::model;

namespace attn_run {
namespace {

std::string num(double v) {
  if (!std::isfinite(v))
    return "null";
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.6g", v);
  return buf;
}

std::string str(const std::string &s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\')
      out += '\\';
    if (static_cast<unsigned char>(c) < 0x20)
      continue;
    out += c;
  }
  return out + "\"";
}

} // namespace

ModelOutput runModel(const ModelInput &in) {
  ModelOutput m;
  std::string name = in.device;
  if (name.empty()) {
    if (in.target == ATTN_TARGET_CPU)
      name = "cpu";
    else if (in.target == ATTN_TARGET_CUDA)
      name = in.deviceSeen.find("H200") != std::string::npos ? "h200" : "h100";
    else {
      m.error = "model: no device table for the vulkan target (tables: h100, "
                "h200, cpu; --model-device names one)";
      return m;
    }
  }
  const Device *d = findDevice(name);
  if (!d) {
    m.error = "model: unknown --model-device '" + name + "' (tables:";
    for (const std::string &n : deviceNames())
      m.error += " " + n;
    m.error += ")";
    return m;
  }
  m.device = name;
  const Problem &p = in.problem;
  if (in.target == ATTN_TARGET_CUDA) {
    const int64_t dv = p.valueDim > 0 ? p.valueDim : p.headDim;
    if (p.dtype == DType::F32 || p.headDim % 16 || dv % 16 || p.headDim > 256 ||
        dv > 256) {
      m.error = "model: only the cuda tensor-core kernel is modelled (f16/bf16, "
                "head dims multiples of 16 up to 256)";
      return m;
    }
    m.geometry = cudaGeometry(p, in.specKvSplits, d->units);
  } else if (d->kind == DeviceKind::CPU) {
    m.geometry = cpuGeometry(p, in.blockQ, in.blockKv, in.specKvSplits, d->units);
  } else {
    m.geometry = cudaGeometry(p, in.specKvSplits, d->units);
  }
  // What the kernel reported wins over the mirrored rules.
  if (in.blockQ > 0)
    m.geometry.blockQ = in.blockQ;
  if (in.blockKv > 0)
    m.geometry.blockKv = in.blockKv;
  if (in.kvSplits > 0)
    m.geometry.kvSplits = in.kvSplits;
  // --model-geometry: candidate geometries the compiler did not choose.
  if (!in.geometry.empty()) {
    Geometry &g = m.geometry;
    bool blockQGiven = false;
    std::stringstream ss(in.geometry);
    std::string item;
    while (std::getline(ss, item, ',')) {
      size_t eq = item.find('=');
      std::string key = item.substr(0, eq);
      char *end = nullptr;
      long long v = eq == std::string::npos
                        ? -1
                        : std::strtoll(item.c_str() + eq + 1, &end, 10);
      if (eq == std::string::npos || !end || *end || v < 1) {
        m.error = "--model-geometry: expected key=N with N >= 1, got '" +
                  item + "'";
        return m;
      }
      if (key == "block_q")
        g.blockQ = v, blockQGiven = true;
      else if (key == "block_kv")
        g.blockKv = v;
      else if (key == "warps")
        g.warps = v;
      else if (key == "row_tiles")
        g.rowTiles = v;
      else if (key == "stages")
        g.stages = v;
      else if (key == "kv_splits")
        g.kvSplits = v;
      else if (key == "max_registers")
        g.maxRegisters = v;
      else {
        m.error = "--model-geometry: unknown key '" + key +
                  "' (block_q, block_kv, warps, row_tiles, stages, "
                  "kv_splits, max_registers)";
        return m;
      }
    }
    if (d->kind == DeviceKind::GPU) {
      if (!blockQGiven)
        g.blockQ = 16 * g.warps * g.rowTiles;
      deriveCudaGeometry(p, g);
    }
  }
  m.ok = predict(p, m.geometry, *d, m.prediction, m.error);
  // The split count the model would pick for the same tiles: a check of
  // the target's fixed rule (chooseKvSplits), shown beside what it ran.
  if (m.ok)
    m.bestKvSplits = chooseKvSplitsByModel(p, m.geometry, *d);
  return m;
}

void printModel(const ModelOutput &m, double measuredMs) {
  if (!m.ok) {
    std::printf("  model         unavailable: %s\n", m.error.c_str());
    return;
  }
  const Prediction &pr = m.prediction;
  const Geometry &g = m.geometry;
  std::printf("  model_device  %s\n", m.device.c_str());
  std::printf("  model_geometry block_q %lld, block_kv %lld, warps %lld, "
              "row_tiles %lld, stages %lld, kv_splits %lld, pack_heads %d; "
              "%lld workgroups, %lld per unit, %lld waves\n",
              (long long)g.blockQ, (long long)g.blockKv, (long long)g.warps,
              (long long)g.rowTiles, (long long)g.stages,
              (long long)g.kvSplits, int(g.packHeads),
              (long long)pr.workgroups, (long long)pr.perUnit,
              (long long)pr.waves);
  std::printf("  model_splits  %lld (the model's pick for these tiles; "
              "the geometry has %lld)\n",
              (long long)m.bestKvSplits, (long long)g.kvSplits);
  std::printf("  model_ms      %.4f (%.4f TFLOP/s, bound by %s)\n",
              pr.seconds * 1e3, pr.tflops, pr.bottleneck.c_str());
  std::printf("  model_terms_ms");
  for (const Term &t : pr.terms)
    std::printf(" %s %.4f", t.name.c_str(), t.seconds * 1e3);
  std::printf("\n");
  if (std::isfinite(measuredMs) && measuredMs > 0)
    std::printf("  model_error   %+.1f%% (predicted / measured - 1)\n",
                (pr.seconds * 1e3 / measuredMs - 1) * 100);
}

std::string modelJson(const ModelOutput &m, double measuredMs) {
  std::ostringstream js;
  if (!m.ok) {
    js << "{\"ok\": false, \"message\": " << str(m.error) << "}";
    return js.str();
  }
  const Prediction &pr = m.prediction;
  const Geometry &g = m.geometry;
  js << "{\"ok\": true, \"device\": " << str(m.device)
     << ", \"ms\": " << num(pr.seconds * 1e3)
     << ", \"tflops\": " << num(pr.tflops)
     << ", \"bottleneck\": " << str(pr.bottleneck) << ", \"terms_ms\": {";
  for (size_t i = 0; i < pr.terms.size(); ++i)
    js << (i ? ", " : "") << str(pr.terms[i].name) << ": "
       << num(pr.terms[i].seconds * 1e3);
  js << "}, \"geometry\": {\"block_q\": " << g.blockQ
     << ", \"block_kv\": " << g.blockKv << ", \"warps\": " << g.warps
     << ", \"row_tiles\": " << g.rowTiles << ", \"stages\": " << g.stages
     << ", \"kv_splits\": " << g.kvSplits
     << ", \"pack_heads\": " << (g.packHeads ? "true" : "false")
     << ", \"shared_bytes\": " << g.sharedBytes << "}"
     << ", \"workgroups\": " << pr.workgroups
     << ", \"per_unit\": " << pr.perUnit << ", \"waves\": " << pr.waves
     << ", \"useful_flops\": " << num(pr.usefulFlops)
     << ", \"matrix_flops\": " << num(pr.matrixFlops)
     << ", \"exps\": " << num(pr.exps)
     << ", \"dram_bytes\": " << num(pr.dramBytes)
     << ", \"l2_bytes\": " << num(pr.l2Bytes)
     << ", \"smem_bytes\": " << num(pr.smemBytes)
     << ", \"best_kv_splits\": " << m.bestKvSplits << ", \"error\": "
     << (std::isfinite(measuredMs) && measuredMs > 0
             ? num(pr.seconds * 1e3 / measuredMs - 1)
             : "null")
     << "}";
  return js.str();
}

} // namespace attn_run
