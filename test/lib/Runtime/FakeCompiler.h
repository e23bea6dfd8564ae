//===- FakeCompiler.h - a recording compiler for the runtime's unit tests -===//
#ifndef ATTN_TEST_RUNTIME_FAKECOMPILER_H
#define ATTN_TEST_RUNTIME_FAKECOMPILER_H

#include "attn/runtime/Backend.h"

#include <atomic>
#include <cstring>
#include <mutex>
#include <stdexcept>
#include <string>
#include <vector>

namespace attn_test {

/// What the fake's executables saw, shared so tests can inspect it.
struct Record {
  std::mutex mutex;
  std::vector<attn::KernelArgs> launches;
  std::vector<attn_spec> compiledSpecs;
  std::atomic<int> compiles{0};
  attn_status runStatus = ATTN_OK;
  std::string runError;
};

/// The value the fake writes to out[b, h, i, e] (f32 kernels), so a test can
/// tell a written element from a poisoned one and check the strides used.
inline float pattern(int64_t b, int64_t h, int64_t i, int64_t e) {
  return static_cast<float>(1000 * b + 100 * h + 10 * i + e);
}

class FakeExecutable final : public attn::Executable {
public:
  FakeExecutable(Record &record, attn_dtype dtype)
      : record(record), dtype(dtype) {}

  attn_status run(const attn::KernelArgs &a, std::string &error) override {
    {
      std::lock_guard<std::mutex> lock(record.mutex);
      record.launches.push_back(a);
    }
    ++launches;
    if (record.runStatus != ATTN_OK) {
      error = record.runError;
      return record.runStatus;
    }
    const attn::TensorView &o = a.out;
    for (int64_t b = 0; b < o.shape[0]; ++b)
      for (int64_t h = 0; h < o.shape[1]; ++h)
        for (int64_t i = 0; i < o.shape[2]; ++i)
          for (int64_t e = 0; e < o.shape[3]; ++e) {
            int64_t off = b * o.strides[0] + h * o.strides[1] +
                          i * o.strides[2] + e * o.strides[3];
            if (dtype == ATTN_DTYPE_F32) {
              float v = pattern(b, h, i, e);
              std::memcpy(static_cast<float *>(o.data) + off, &v, sizeof v);
            } else {
              uint16_t one = 0x3c00; // 1.0 in f16
              std::memcpy(static_cast<uint16_t *>(o.data) + off, &one, 2);
            }
          }
    if (a.lse.data) {
      const attn::TensorView &l = a.lse;
      for (int64_t b = 0; b < l.shape[0]; ++b)
        for (int64_t h = 0; h < l.shape[1]; ++h)
          for (int64_t i = 0; i < l.shape[2]; ++i)
            static_cast<float *>(l.data)[b * l.strides[0] + h * l.strides[1] +
                                         i * l.strides[2]] = -1.5f;
    }
    return ATTN_OK;
  }

  /// What attn_kernel_get_info reports: fixed names, and the launches
  /// this kernel ran as its "split count" (0 before the first).
  void kernelInfo(attn::KernelInfo &info) const override {
    info.variant = "fake";
    info.device = "fake device";
    info.blockQ = 32;
    info.blockKv = 16;
    info.kvSplits = launches.load();
  }

private:
  Record &record;
  attn_dtype dtype;
public:
  std::atomic<int64_t> launches{0};
};

class FakeCompiler final : public attn::Compiler {
public:
  explicit FakeCompiler(Record &record) : record(record) {}

  attn_status available(std::string &error) override {
    error = availableError;
    return availableStatus;
  }

  attn_status compile(const attn_spec &spec, attn::CompileResult &result,
                      std::string &error) override {
    ++record.compiles;
    {
      std::lock_guard<std::mutex> lock(record.mutex);
      record.compiledSpecs.push_back(spec);
    }
    if (throwOnCompile)
      throw std::runtime_error("fake compiler exploded");
    if (growHugeVector) {
      // What a host allocation sized by a huge product does.
      std::vector<double> huge;
      huge.resize(size_t(1) << 60);
    }
    if (compileStatus != ATTN_OK) {
      error = compileError;
      return compileStatus;
    }
    result.executable = std::make_unique<FakeExecutable>(record, spec.dtype);
    result.source = "// fake kernel D=" + std::to_string(spec.head_dim);
    return ATTN_OK;
  }

  std::string configuration() const override { return configurationValue; }

  attn_status availableStatus = ATTN_OK;
  std::string availableError;
  std::string configurationValue; // what configuration() returns
  attn_status compileStatus = ATTN_OK;
  std::string compileError;
  bool throwOnCompile = false;
  bool growHugeVector = false; // compile() asks std::vector for 2^63 bytes

private:
  Record &record;
};

} // namespace attn_test

#endif // ATTN_TEST_RUNTIME_FAKECOMPILER_H
