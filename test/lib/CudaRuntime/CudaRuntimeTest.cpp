//===- CudaRuntimeTest.cpp - the CUDA runtime half without a GPU -----------===//
#include "CudaDriver.h"
#include "CudaExecutable.h"

#include "attn/runtime/CudaKernel.h"
#include "attn/runtime/attn.h"
#include "attn/runtime/attn_cuda.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <unistd.h>
#include <vector>

#ifdef ATTN_CHECK_CUDA_H
#include <cuda.h>
// attn declares the driver's values itself (no header needed to build);
// they must be the header's.
static_assert(attn::cuda::CUDA_ERROR_NO_DEVICE == CUDA_ERROR_NO_DEVICE, "");
static_assert(attn::cuda::CU_JIT_INFO_LOG_BUFFER == CU_JIT_INFO_LOG_BUFFER, "");
static_assert(attn::cuda::CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES ==
                  CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES, "");
static_assert(attn::cuda::CU_JIT_ERROR_LOG_BUFFER == CU_JIT_ERROR_LOG_BUFFER, "");
static_assert(attn::cuda::CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES ==
                  CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES, "");
static_assert(attn::cuda::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES ==
                  CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, "");
static_assert(attn::cuda::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR ==
                  CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, "");
static_assert(attn::cuda::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR ==
                  CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, "");
static_assert(attn::cuda::CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN ==
                  CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN, "");
static_assert(attn::cuda::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT ==
                  CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, "");
static_assert(attn::cuda::CUDA_ERROR_NOT_SUPPORTED == CUDA_ERROR_NOT_SUPPORTED,
              "");
static_assert(sizeof(attn::cuda::CUdeviceptr) == sizeof(CUdeviceptr), "");
// The memory-pool values and cuMemPoolCreate's properties struct.
static_assert(attn::cuda::CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED ==
                  CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED, "");
static_assert(attn::cuda::CU_MEM_ALLOCATION_TYPE_PINNED ==
                  CU_MEM_ALLOCATION_TYPE_PINNED, "");
static_assert(attn::cuda::CU_MEM_HANDLE_TYPE_NONE == CU_MEM_HANDLE_TYPE_NONE, "");
static_assert(attn::cuda::CU_MEM_LOCATION_TYPE_DEVICE ==
                  CU_MEM_LOCATION_TYPE_DEVICE, "");
static_assert(attn::cuda::CU_MEMPOOL_ATTR_RELEASE_THRESHOLD ==
                  CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, "");
static_assert(sizeof(attn::cuda::CUmemLocation) == sizeof(CUmemLocation), "");
static_assert(offsetof(attn::cuda::CUmemLocation, id) ==
                  offsetof(CUmemLocation, id), "");
static_assert(sizeof(attn::cuda::CUmemPoolProps) == sizeof(CUmemPoolProps), "");
static_assert(offsetof(attn::cuda::CUmemPoolProps, handleTypes) ==
                  offsetof(CUmemPoolProps, handleTypes), "");
static_assert(offsetof(attn::cuda::CUmemPoolProps, location) ==
                  offsetof(CUmemPoolProps, location), "");
static_assert(offsetof(attn::cuda::CUmemPoolProps, win32SecurityAttributes) ==
                  offsetof(CUmemPoolProps, win32SecurityAttributes), "");
#if CUDA_VERSION >= 13000 // maxSize and usage, carved out of `reserved`
static_assert(offsetof(attn::cuda::CUmemPoolProps, maxSize) ==
                  offsetof(CUmemPoolProps, maxSize), "");
static_assert(offsetof(attn::cuda::CUmemPoolProps, usage) ==
                  offsetof(CUmemPoolProps, usage), "");
static_assert(offsetof(attn::cuda::CUmemPoolProps, reserved) ==
                  offsetof(CUmemPoolProps, reserved), "");
#endif
// cuda.h maps some entry points to versioned names with macros
// (cuCtxPushCurrent -> cuCtxPushCurrent_v2); attn's Driver members keep the
// plain names, which the fake driver below assigns.
#undef cuDevicePrimaryCtxRelease
#undef cuCtxPushCurrent
#undef cuCtxPopCurrent
#endif

// A driver table for the executable's launch path without a GPU: one sm_90
// device with 132 multiprocessors, whose entry points record what they are
// asked (in attn::cuda, so the names are attn's own even where cuda.h is
// included above) and fail where a test says so.
namespace attn {
namespace cuda {
namespace fake {

const auto kContext = reinterpret_cast<CUcontext>(0x10);
const auto kModule = reinterpret_cast<CUmodule>(0x20);
const auto kPool = reinterpret_cast<CUmemoryPool>(0x30);
constexpr CUdeviceptr kBase = 0x7f0000000000ull; // every allocation's address

struct LaunchRecord {
  std::string entry;
  unsigned grid[3];
  CUstream stream;
  std::vector<uint64_t> params; // every parameter read as 8 bytes
};

struct Data {
  /// What was called, in order: entry points by name, with the entry for
  /// cuLaunchKernel and the attribute for cuDeviceGetAttribute, e.g.
  /// "cuLaunchKernel(attn_kernel)", "cuDeviceGetAttribute(115)". Context
  /// pushes and pops are counted in `depth` instead.
  std::vector<std::string> calls;
  /// Calls (as recorded) that fail, and the CUresult they answer.
  std::map<std::string, CUresult> fail;
  int poolsSupported = 1;  // CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED
  int depth = 0;           // context pushes minus pops
  std::vector<std::string> entries; // CUfunction i + 1 is entries[i]
  std::map<std::string, size_t> paramCounts; // parameters per entry
  CUmemPoolProps props{};  // the last cuMemPoolCreate's
  int poolAttribute = -1;  // the last cuMemPoolSetAttribute's
  uint64_t poolValue = 0;
  int poolsCreated = 0, poolsDestroyed = 0, allocations = 0, frees = 0;
  size_t allocBytes = 0;
  CUmemoryPool allocPool = nullptr;
  CUstream allocStream = nullptr;
  CUdeviceptr freed = 0;
  CUstream freeStream = nullptr;
  std::vector<LaunchRecord> launches;
};

struct State {
  std::mutex mutex;
  Data data;
};
State &state() {
  static State s;
  return s;
}

/// Records `call` (state().mutex held) and answers its configured failure.
CUresult answer(const std::string &call) {
  Data &d = state().data;
  d.calls.push_back(call);
  auto it = d.fail.find(call);
  return it == d.fail.end() ? CUDA_SUCCESS : it->second;
}

using Lock = std::lock_guard<std::mutex>;

/// Forgets everything recorded; `m` says how many parameters each kernel
/// takes (cuLaunchKernel copies them).
void reset(const KernelMetadata &m) {
  Lock lock(state().mutex);
  state().data = Data{};
  for (const Kernel &k : m.kernels)
    state().data.paramCounts[k.entry] = k.params.size();
}

/// A copy of what was recorded.
Data data() {
  Lock lock(state().mutex);
  return state().data;
}

/// Runs `f` on the recorded state, under the lock.
template <typename F> void edit(F f) {
  Lock lock(state().mutex);
  f(state().data);
}

const Driver &driver() {
  static const Driver table = [] {
    Driver d{};
    d.cuInit = [](unsigned) -> CUresult { return CUDA_SUCCESS; };
    d.cuDriverGetVersion = [](int *v) -> CUresult {
      *v = 13000;
      return CUDA_SUCCESS;
    };
    d.cuDeviceGetCount = [](int *n) -> CUresult {
      *n = 1;
      return CUDA_SUCCESS;
    };
    d.cuDeviceGet = [](CUdevice *dev, int ordinal) -> CUresult {
      *dev = ordinal;
      return CUDA_SUCCESS;
    };
    d.cuDeviceGetAttribute = [](int *v, int attribute, CUdevice) -> CUresult {
      Lock lock(state().mutex);
      if (CUresult r = answer("cuDeviceGetAttribute(" +
                              std::to_string(attribute) + ")"))
        return r;
      switch (attribute) {
      case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR: *v = 9; break;
      case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR: *v = 0; break;
      case CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN:
        *v = 227 * 1024;
        break;
      case CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT: *v = 132; break;
      case CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED:
        *v = state().data.poolsSupported;
        break;
      default: return 1; // CUDA_ERROR_INVALID_VALUE
      }
      return CUDA_SUCCESS;
    };
    d.cuDeviceGetName = [](char *name, int n, CUdevice) -> CUresult {
      std::snprintf(name, n, "fake");
      return CUDA_SUCCESS;
    };
    d.cuDevicePrimaryCtxRetain = [](CUcontext *ctx, CUdevice) -> CUresult {
      Lock lock(state().mutex);
      *ctx = kContext;
      return answer("cuDevicePrimaryCtxRetain");
    };
    d.cuDevicePrimaryCtxRelease = [](CUdevice) -> CUresult {
      Lock lock(state().mutex);
      return answer("cuDevicePrimaryCtxRelease");
    };
    d.cuCtxGetCurrent = [](CUcontext *ctx) -> CUresult {
      *ctx = nullptr;
      return CUDA_SUCCESS;
    };
    d.cuCtxGetDevice = [](CUdevice *dev) -> CUresult {
      *dev = 0;
      return CUDA_SUCCESS;
    };
    d.cuCtxPushCurrent = [](CUcontext) -> CUresult {
      Lock lock(state().mutex);
      ++state().data.depth;
      return CUDA_SUCCESS;
    };
    d.cuCtxPopCurrent = [](CUcontext *ctx) -> CUresult {
      Lock lock(state().mutex);
      --state().data.depth;
      *ctx = kContext;
      return CUDA_SUCCESS;
    };
    d.cuModuleLoadDataEx = [](CUmodule *m, const void *, unsigned, int *,
                              void **) -> CUresult {
      Lock lock(state().mutex);
      *m = kModule;
      return answer("cuModuleLoadDataEx");
    };
    d.cuModuleUnload = [](CUmodule) -> CUresult {
      Lock lock(state().mutex);
      return answer("cuModuleUnload");
    };
    d.cuModuleGetFunction = [](CUfunction *f, CUmodule,
                               const char *name) -> CUresult {
      Lock lock(state().mutex);
      state().data.entries.push_back(name);
      *f = reinterpret_cast<CUfunction>(state().data.entries.size());
      return answer("cuModuleGetFunction");
    };
    d.cuFuncSetAttribute = [](CUfunction, int, int) -> CUresult {
      Lock lock(state().mutex);
      return answer("cuFuncSetAttribute");
    };
    d.cuLaunchKernel = [](CUfunction f, unsigned gx, unsigned gy, unsigned gz,
                          unsigned, unsigned, unsigned, unsigned,
                          CUstream stream, void **params,
                          void **) -> CUresult {
      Lock lock(state().mutex);
      Data &rec = state().data;
      std::string entry = rec.entries.at(reinterpret_cast<size_t>(f) - 1);
      if (CUresult r = answer("cuLaunchKernel(" + entry + ")"))
        return r;
      LaunchRecord l{entry, {gx, gy, gz}, stream, {}};
      for (size_t i = 0; i < rec.paramCounts.at(entry); ++i) {
        uint64_t v;
        std::memcpy(&v, params[i], 8);
        l.params.push_back(v);
      }
      rec.launches.push_back(l);
      return CUDA_SUCCESS;
    };
    d.cuGetErrorName = [](CUresult r, const char **name) -> CUresult {
      switch (r) {
      case 1: *name = "CUDA_ERROR_INVALID_VALUE"; break;
      case 2: *name = "CUDA_ERROR_OUT_OF_MEMORY"; break;
      case 701: *name = "CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES"; break;
      case 801: *name = "CUDA_ERROR_NOT_SUPPORTED"; break;
      default: return 1;
      }
      return CUDA_SUCCESS;
    };
    d.cuGetErrorString = [](CUresult, const char **text) -> CUresult {
      *text = "fake";
      return CUDA_SUCCESS;
    };
    d.cuMemPoolCreate = [](CUmemoryPool *pool,
                           const CUmemPoolProps *props) -> CUresult {
      Lock lock(state().mutex);
      if (CUresult r = answer("cuMemPoolCreate"))
        return r;
      state().data.props = *props;
      ++state().data.poolsCreated;
      *pool = kPool;
      return CUDA_SUCCESS;
    };
    d.cuMemPoolDestroy = [](CUmemoryPool) -> CUresult {
      Lock lock(state().mutex);
      ++state().data.poolsDestroyed;
      return answer("cuMemPoolDestroy");
    };
    d.cuMemPoolSetAttribute = [](CUmemoryPool, int attribute,
                                 void *value) -> CUresult {
      Lock lock(state().mutex);
      if (CUresult r = answer("cuMemPoolSetAttribute"))
        return r;
      state().data.poolAttribute = attribute;
      std::memcpy(&state().data.poolValue, value, 8);
      return CUDA_SUCCESS;
    };
    d.cuMemAllocFromPoolAsync = [](CUdeviceptr *p, size_t bytes,
                                   CUmemoryPool pool,
                                   CUstream stream) -> CUresult {
      Lock lock(state().mutex);
      if (CUresult r = answer("cuMemAllocFromPoolAsync"))
        return r;
      Data &rec = state().data;
      ++rec.allocations;
      rec.allocBytes = bytes;
      rec.allocPool = pool;
      rec.allocStream = stream;
      *p = kBase;
      return CUDA_SUCCESS;
    };
    d.cuMemFreeAsync = [](CUdeviceptr p, CUstream stream) -> CUresult {
      Lock lock(state().mutex);
      if (CUresult r = answer("cuMemFreeAsync"))
        return r;
      ++state().data.frees;
      state().data.freed = p;
      state().data.freeStream = stream;
      return CUDA_SUCCESS;
    };
    return d;
  }();
  return table;
}

} // namespace fake
} // namespace cuda
} // namespace attn

using namespace attn;
using namespace attn::cuda;

namespace {

/// Appends the memref descriptor of `tensor` (rank `rank`): data, data,
/// offset, sizes, strides.
void addDescriptor(std::vector<Param> &params, const std::string &tensor,
                   int rank) {
  params.push_back({tensor, ParamField::Data, 0, ParamType::Ptr});
  params.push_back({tensor, ParamField::Data, 0, ParamType::Ptr});
  params.push_back({tensor, ParamField::Offset, 0, ParamType::I64});
  for (int d = 0; d < rank; ++d)
    params.push_back({tensor, ParamField::Size, d, ParamType::I64});
  for (int d = 0; d < rank; ++d)
    params.push_back({tensor, ParamField::Stride, d, ParamType::I64});
}

/// A metadata description like the one attn-translate writes for a static
/// f16 spec: one kernel taking memref descriptors (data, data, offset, 4
/// sizes, 4 strides).
KernelMetadata sampleMetadata() {
  KernelMetadata m;
  m.format = BinaryFormat::PTX;
  m.binaryFile = "k.ptx";
  m.chip = "sm_90a";
  m.alignBytes = 16;
  Kernel &k = m.kernels.emplace_back();
  k.entry = "attn_kernel";
  k.grid[0] = {Extent::Sq, 64, 1};
  k.grid[1] = {Extent::Hq, 1, 1};
  k.grid[2] = {Extent::B, 1, 1};
  k.block[0] = 128;
  k.sharedBytes = 64 * 1024;
  for (const char *t : {"q", "k", "v", "out"})
    addDescriptor(k.params, t, 4);
  attn_spec_init(&m.spec);
  m.spec.dtype = ATTN_DTYPE_F16;
  m.spec.batch = 2;
  m.spec.heads_q = 8;
  m.spec.heads_kv = 2;
  m.spec.seq_q = 200;
  m.spec.seq_kv = 300;
  m.spec.head_dim = 64;
  m.spec.value_dim = 64;
  m.spec.causal = 1;
  m.spec.scale = 0.125;
  return m;
}

std::string replace(std::string s, const std::string &from,
                    const std::string &to) {
  size_t at = s.find(from);
  EXPECT_NE(at, std::string::npos) << "'" << from << "' not in the metadata";
  if (at != std::string::npos)
    s.replace(at, from.size(), to);
  return s;
}

std::string parseError(const std::string &text) {
  KernelMetadata m;
  std::string error;
  EXPECT_FALSE(parseMetadata(text, m, error)) << text;
  return error;
}

KernelArgs sampleArgs() {
  KernelArgs a;
  auto set = [](TensorView &t, void *data, int64_t b, int64_t h, int64_t s,
                int64_t d) {
    t.data = data;
    t.rank = 4;
    int64_t shape[4] = {b, h, s, d};
    // BSHD strides, to see they are passed as given.
    int64_t strides[4] = {s * h * d, d, h * d, 1};
    std::memcpy(t.shape, shape, sizeof(shape));
    std::memcpy(t.strides, strides, sizeof(strides));
  };
  set(a.q, reinterpret_cast<void *>(0x1000), 2, 8, 200, 64);
  set(a.k, reinterpret_cast<void *>(0x2000), 2, 2, 300, 64);
  set(a.v, reinterpret_cast<void *>(0x3000), 2, 2, 300, 64);
  set(a.out, reinterpret_cast<void *>(0x4000), 2, 8, 200, 64);
  a.seed = 0x1234567890abcdefull;
  return a;
}

struct TempDir {
  std::string path;
  TempDir() {
    char tmpl[] = "/tmp/attn-cuda-test-XXXXXX";
    path = mkdtemp(tmpl);
  }
  ~TempDir() { std::system(("rm -rf '" + path + "'").c_str()); }
  std::string write(const std::string &name, const std::string &text) const {
    std::string p = path + "/" + name;
    std::ofstream(p, std::ios::binary) << text;
    return p;
  }
};

/// A split-KV artifact like the one the compiler writes: the attention
/// kernel on a (query block, head x split, batch) grid writing partial
/// results to two workspaces, then a merge kernel launched only when the
/// keys are split.
KernelMetadata splitMetadata() {
  KernelMetadata m = sampleMetadata();
  m.kvSplits = {64, 64, 64};
  using D = WorkspaceDim;
  m.workspaces = {
      {"partial_out",
       {D::of(Extent::B), D::of(Extent::Hq), D::splits(), D::of(Extent::Sq),
        D::constant(64)},
       4},
      {"partial_lse",
       {D::of(Extent::B), D::of(Extent::Hq), D::splits(), D::of(Extent::Sq)},
       4}};
  Kernel &first = m.kernels[0];
  first.grid[1] = {Extent::Hq, 1, 1, /*timesSplits=*/true};
  addDescriptor(first.params, "partial_out", 5);
  addDescriptor(first.params, "partial_lse", 4);
  Kernel merge;
  merge.entry = "attn_kernel_0";
  merge.when = LaunchCondition::split();
  merge.grid[0] = {Extent::Sq, 64, 1};
  merge.grid[1] = {Extent::Hq, 1, 1};
  merge.grid[2] = {Extent::B, 1, 1};
  merge.block[0] = 256;
  addDescriptor(merge.params, "partial_out", 5);
  addDescriptor(merge.params, "partial_lse", 4);
  addDescriptor(merge.params, "out", 4);
  m.kernels.push_back(merge);
  return m;
}

/// Launch arguments of the given shape (f16, BHSD, D = 64, aligned).
KernelArgs argsOfShape(int64_t b, int64_t hq, int64_t sq, int64_t skv) {
  KernelArgs a;
  auto set = [](TensorView &t, uintptr_t data, int64_t b, int64_t h,
                int64_t s) {
    t.data = reinterpret_cast<void *>(data);
    t.rank = 4;
    int64_t shape[4] = {b, h, s, 64};
    int64_t strides[4] = {h * s * 64, s * 64, 64, 1};
    std::memcpy(t.shape, shape, sizeof(shape));
    std::memcpy(t.strides, strides, sizeof(strides));
  };
  set(a.q, 0x1000, b, hq, sq);
  set(a.k, 0x2000, b, hq, skv);
  set(a.v, 0x3000, b, hq, skv);
  set(a.out, 0x4000, b, hq, sq);
  return a;
}

void expectSameKernels(const KernelMetadata &x, const KernelMetadata &y) {
  ASSERT_EQ(x.kernels.size(), y.kernels.size());
  for (size_t k = 0; k < x.kernels.size(); ++k) {
    const Kernel &a = x.kernels[k], &b = y.kernels[k];
    SCOPED_TRACE("kernel " + std::to_string(k));
    EXPECT_EQ(a.entry, b.entry);
    EXPECT_EQ(a.when, b.when);
    for (int i = 0; i < 3; ++i) {
      EXPECT_EQ(a.grid[i].of, b.grid[i].of);
      EXPECT_EQ(a.grid[i].ceildiv, b.grid[i].ceildiv);
      EXPECT_EQ(a.grid[i].times, b.grid[i].times);
      EXPECT_EQ(a.grid[i].timesSplits, b.grid[i].timesSplits);
      EXPECT_EQ(a.block[i], b.block[i]);
    }
    EXPECT_EQ(a.sharedBytes, b.sharedBytes);
    ASSERT_EQ(a.params.size(), b.params.size());
    for (size_t i = 0; i < a.params.size(); ++i) {
      EXPECT_EQ(a.params[i].tensor, b.params[i].tensor) << "param " << i;
      EXPECT_EQ(a.params[i].field, b.params[i].field) << "param " << i;
      EXPECT_EQ(a.params[i].dim, b.params[i].dim) << "param " << i;
      EXPECT_EQ(a.params[i].type, b.params[i].type) << "param " << i;
    }
  }
}

void expectSameWorkspaces(const KernelMetadata &x, const KernelMetadata &y) {
  EXPECT_EQ(x.kvSplits.blockQ, y.kvSplits.blockQ);
  EXPECT_EQ(x.kvSplits.blockKv, y.kvSplits.blockKv);
  EXPECT_EQ(x.kvSplits.max, y.kvSplits.max);
  ASSERT_EQ(x.workspaces.size(), y.workspaces.size());
  for (size_t w = 0; w < x.workspaces.size(); ++w) {
    const Workspace &a = x.workspaces[w], &b = y.workspaces[w];
    EXPECT_EQ(a.name, b.name);
    EXPECT_EQ(a.elementBytes, b.elementBytes);
    ASSERT_EQ(a.shape.size(), b.shape.size()) << a.name;
    for (size_t d = 0; d < a.shape.size(); ++d) {
      EXPECT_EQ(a.shape[d].kind, b.shape[d].kind) << a.name << " dim " << d;
      EXPECT_EQ(a.shape[d].extent, b.shape[d].extent) << a.name << " dim " << d;
      EXPECT_EQ(a.shape[d].value, b.shape[d].value) << a.name << " dim " << d;
    }
  }
}

/// What attn-translate wrote before version 2 (one kernel, its keys at the
/// top level).
const char *kVersion1 = R"({
  "format": "attn-cuda-kernel",
  "version": 1,
  "entry": "attn_kernel_kernel",
  "binary": "k80.ptx",
  "binary_format": "ptx",
  "chip": "sm_80",
  "grid": [{"of": "Sq", "ceildiv": 128, "times": 1}, {"of": "Hq", "ceildiv": 1, "times": 1}, {"of": "B", "ceildiv": 1, "times": 2}],
  "block": [128, 1, 1],
  "shared_bytes": 4096,
  "align_bytes": 16,
  "params": [
    {"field": "data", "tensor": "q", "type": "ptr"},
    {"field": "size", "tensor": "k", "dim": 2, "type": "i64"},
    {"field": "stride", "tensor": "lse", "dim": 2, "type": "i32"}
  ],
  "spec": {"dtype": "bf16", "batch": 2, "heads_q": 8, "heads_kv": 2, "seq_q": 200, "seq_kv": 300, "head_dim": 64, "value_dim": 64, "causal": 1, "mask": "none", "mask_dtype": "bool", "scale": 0, "dropout_p": 0, "return_lse": 1, "variant": "default", "block_q": 128, "block_kv": 64, "kv_splits": 1}
}
)";

const char *kPtx = "//\n.version 8.0\n.target sm_90a\n.address_size 64\n"
                   ".visible .entry attn_kernel(\n)\n{\n\tret;\n}\n";

TEST(CudaMetadata, RoundTrip) {
  KernelMetadata m = sampleMetadata(), back;
  std::string error;
  std::string text = writeMetadata(m);
  EXPECT_NE(text.find("\"version\": 3,"), std::string::npos) << text;
  // Without split support the artifact says nothing about splits.
  EXPECT_EQ(text.find("kv_splits\": {"), std::string::npos) << text;
  EXPECT_EQ(text.find("\"splits\""), std::string::npos) << text;
  ASSERT_TRUE(parseMetadata(text, back, error)) << error;
  EXPECT_EQ(back.binaryFile, m.binaryFile);
  EXPECT_EQ(back.chip, m.chip);
  EXPECT_EQ(back.format, BinaryFormat::PTX);
  EXPECT_EQ(back.alignBytes, m.alignBytes);
  expectSameKernels(back, m);
  expectSameWorkspaces(back, m);
  EXPECT_EQ(back.kvSplits.max, 0);
  EXPECT_TRUE(back.workspaces.empty());
  const attn_spec &x = back.spec, &y = m.spec;
  EXPECT_EQ(x.dtype, y.dtype);
  EXPECT_EQ(x.batch, y.batch);
  EXPECT_EQ(x.heads_q, y.heads_q);
  EXPECT_EQ(x.heads_kv, y.heads_kv);
  EXPECT_EQ(x.seq_q, y.seq_q);
  EXPECT_EQ(x.seq_kv, y.seq_kv);
  EXPECT_EQ(x.head_dim, y.head_dim);
  EXPECT_EQ(x.value_dim, y.value_dim);
  EXPECT_EQ(x.causal, y.causal);
  EXPECT_EQ(x.mask, y.mask);
  EXPECT_EQ(x.mask_dtype, y.mask_dtype);
  EXPECT_EQ(x.scale, y.scale);
  EXPECT_EQ(x.dropout_p, y.dropout_p);
  EXPECT_EQ(x.return_lse, y.return_lse);
  EXPECT_EQ(x.variant, y.variant);
  EXPECT_EQ(x.block_q, y.block_q);
  EXPECT_EQ(x.block_kv, y.block_kv);
  EXPECT_EQ(x.kv_splits, y.kv_splits);
}

TEST(CudaMetadata, RoundTripsSplitKernels) {
  KernelMetadata m = splitMetadata(), back;
  m.format = BinaryFormat::Cubin;
  m.binaryFile = "k.cubin";
  m.workspaces[1].elementBytes = 8;
  m.kernels[1].grid[2].times = 3;
  m.kernels[1].sharedBytes = 1024;
  m.kernels[1].params.push_back({"partial_lse", ParamField::Stride, 1,
                                 ParamType::I32});
  std::string error, text = writeMetadata(m);
  EXPECT_NE(text.find("\"kv_splits\": {\"block_q\": 64, \"block_kv\": 64, "
                      "\"max\": 64}"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("{\"name\": \"partial_out\", \"shape\": [\"B\", \"Hq\", "
                      "\"splits\", \"Sq\", 64], \"element_bytes\": 4}"),
            std::string::npos)
      << text;
  EXPECT_NE(
      text.find("{\"of\": \"Hq\", \"ceildiv\": 1, \"times\": \"splits\"}"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("\"when\": \"split\""), std::string::npos) << text;
  ASSERT_TRUE(parseMetadata(text, back, error)) << error;
  EXPECT_EQ(back.format, BinaryFormat::Cubin);
  EXPECT_EQ(back.binaryFile, "k.cubin");
  EXPECT_EQ(back.alignBytes, 16u);
  expectSameWorkspaces(back, m);
  expectSameKernels(back, m);
  ASSERT_EQ(back.kernels.size(), 2u);
  EXPECT_EQ(back.kernels[0].when, LaunchCondition::always());
  EXPECT_EQ(back.kernels[1].when, LaunchCondition::split());
  EXPECT_TRUE(back.kernels[0].grid[1].timesSplits);
  EXPECT_EQ(back.workspaces[0].shape[2].kind, WorkspaceDim::Kind::Splits);
  EXPECT_EQ(back.workspaces[0].shape[4].kind, WorkspaceDim::Kind::Constant);
  EXPECT_EQ(back.workspaces[0].shape[4].value, 64);
  // Written again, the text is the same.
  EXPECT_EQ(writeMetadata(back), text);
}

// Alternatives of one launch: a kernel for a split count of 1 (writing the
// result itself), the partial and merge kernels for more.
TEST(CudaMetadata, UnsplitAndSplitAlternatives) {
  KernelMetadata m = splitMetadata();
  Kernel unsplit = m.kernels[0];
  unsplit.entry = "attn_kernel";
  unsplit.when = LaunchCondition::unsplit();
  unsplit.grid[1].timesSplits = false;
  unsplit.params.clear();
  addDescriptor(unsplit.params, "q", 4);
  addDescriptor(unsplit.params, "out", 4);
  m.kernels[0].when = LaunchCondition::split();
  m.kernels.insert(m.kernels.begin(), unsplit);
  EXPECT_TRUE(m.kernels[0].runs(200, 1));
  EXPECT_FALSE(m.kernels[0].runs(200, 2));
  EXPECT_FALSE(m.kernels[1].runs(200, 1));
  EXPECT_TRUE(m.kernels[1].runs(200, 3));
  EXPECT_TRUE(m.kernels[2].runs(200, 2));
  std::string text = writeMetadata(m);
  EXPECT_NE(text.find("\"when\": \"unsplit\""), std::string::npos) << text;
  KernelMetadata back;
  std::string error;
  ASSERT_TRUE(parseMetadata(text, back, error)) << error;
  expectSameKernels(back, m);
  EXPECT_EQ(writeMetadata(back), text);
  // Without a kernel for a count above 1, it is refused.
  text = replace(text, "\"when\": \"split\"", "\"when\": \"unsplit\"");
  text = replace(text, "\"when\": \"split\"", "\"when\": \"unsplit\"");
  EXPECT_FALSE(parseMetadata(text, back, error));
  EXPECT_NE(error.find("no kernel runs when the split count is above 1"),
            std::string::npos)
      << error;
  // Nor may a kernel depend on the count without kv_splits.
  KernelMetadata one = sampleMetadata();
  one.kernels[0].when = LaunchCondition::unsplit();
  EXPECT_FALSE(parseMetadata(writeMetadata(one), back, error));
  EXPECT_NE(error.find("'when' is 'unsplit', but the metadata has no "
                       "'kv_splits'"),
            std::string::npos)
      << error;
}

TEST(CudaMetadata, WhenDefaultsToAlways) {
  std::string text = replace(writeMetadata(splitMetadata()),
                             "\"when\": \"always\",", "");
  KernelMetadata m;
  std::string error;
  ASSERT_TRUE(parseMetadata(text, m, error)) << error;
  EXPECT_EQ(m.kernels[0].when, LaunchCondition::always());
  // So is the workspace list empty when absent.
  text = replace(writeMetadata(sampleMetadata()), "\"workspace\": [],", "");
  ASSERT_TRUE(parseMetadata(text, m, error)) << error;
  EXPECT_TRUE(m.workspaces.empty());
}

TEST(CudaMetadata, ReadsVersion1) {
  KernelMetadata m;
  std::string error;
  ASSERT_TRUE(parseMetadata(kVersion1, m, error)) << error;
  EXPECT_EQ(m.binaryFile, "k80.ptx");
  EXPECT_EQ(m.chip, "sm_80");
  EXPECT_EQ(m.alignBytes, 16u);
  EXPECT_EQ(m.kvSplits.max, 0);
  EXPECT_TRUE(m.workspaces.empty());
  ASSERT_EQ(m.kernels.size(), 1u);
  const Kernel &k = m.kernels[0];
  EXPECT_EQ(k.entry, "attn_kernel_kernel");
  EXPECT_EQ(k.when, LaunchCondition::always());
  EXPECT_EQ(k.grid[0].of, Extent::Sq);
  EXPECT_EQ(k.grid[0].ceildiv, 128);
  EXPECT_EQ(k.grid[2].times, 2);
  EXPECT_FALSE(k.grid[1].timesSplits);
  EXPECT_EQ(k.block[0], 128u);
  EXPECT_EQ(k.sharedBytes, 4096u);
  ASSERT_EQ(k.params.size(), 3u);
  EXPECT_EQ(k.params[1].tensor, "k");
  EXPECT_EQ(k.params[1].field, ParamField::Size);
  EXPECT_EQ(k.params[1].dim, 2);
  EXPECT_EQ(k.params[2].type, ParamType::I32);
  EXPECT_EQ(m.spec.dtype, ATTN_DTYPE_BF16);
  EXPECT_EQ(m.spec.return_lse, 1);

  // Version 1's errors name its top-level keys, and it has no splits.
  std::string v1 = kVersion1;
  struct Case {
    std::string from, to, message;
  } cases[] = {
      {"\"entry\": \"attn_kernel_kernel\",", "",
       "metadata: missing key 'entry'"},
      {"\"ceildiv\": 128", "\"ceildiv\": 0",
       "metadata: grid[0]: 'ceildiv' is 0"},
      {"\"times\": 2", "\"times\": \"splits\"",
       "metadata: grid[2]: 'times' is \"splits\", but the metadata has no "
       "'kv_splits'"},
      {"\"block\": [128, 1, 1]", "\"block\": [0, 1, 1]",
       "metadata: block[0] must be an integer in [1, 1024]"},
      {"\"dim\": 2, \"type\": \"i32\"", "\"dim\": 3, \"type\": \"i32\"",
       "metadata: params[2]: 'dim' is 3; it must be an integer in [0, 2]"},
      {"\"return_lse\": 1", "\"return_lse\": 0",
       "metadata: a parameter reads 'lse', which the spec does not have"},
  };
  for (const Case &c : cases) {
    std::string error = parseError(replace(v1, c.from, c.to));
    EXPECT_NE(error.find(c.message), std::string::npos)
        << "replacing " << c.from << " by " << c.to << "\n  got: " << error
        << "\n  expected to contain: " << c.message;
  }
}

TEST(CudaMetadata, NormalizesTheSpec) {
  KernelMetadata m = sampleMetadata(), back;
  m.spec.value_dim = 0;
  std::string error;
  ASSERT_TRUE(parseMetadata(writeMetadata(m), back, error)) << error;
  EXPECT_EQ(back.spec.value_dim, 64);
}

TEST(CudaMetadata, RejectsMalformedText) {
  std::string good = writeMetadata(sampleMetadata());
  EXPECT_NE(parseError("").find("not valid JSON"), std::string::npos);
  EXPECT_NE(parseError("[1, 2]").find("top level must be an object"),
            std::string::npos);
  EXPECT_NE(parseError(good + "x").find("trailing text"), std::string::npos);
  EXPECT_NE(parseError(good.substr(0, good.size() / 2)).find("not valid JSON"),
            std::string::npos);
  EXPECT_NE(parseError(replace(good, "\"version\": 3,",
                               "\"version\": 3, \"version\": 3,"))
                .find("duplicate key 'version'"),
            std::string::npos);
}

TEST(CudaMetadata, RejectsBadFields) {
  std::string good = writeMetadata(sampleMetadata());
  struct Case {
    std::string from, to, message;
  } cases[] = {
      {"\"attn-cuda-kernel\"", "\"other\"", "'format' is 'other'"},
      {"\"version\": 3", "\"version\": 4",
       "'version' is 4; it must be an integer in [1, 3]"},
      {"\"binary\": \"k.ptx\"", "\"binary\": \"\"",
       "metadata: 'binary' must not be empty"},
      {"\"entry\": \"attn_kernel\",", "",
       "metadata: kernels[0]: missing key 'entry'"},
      {"\"entry\": \"attn_kernel\"", "\"entry\": 7",
       "metadata: kernels[0]: 'entry' must be a string"},
      {"\"entry\": \"attn_kernel\"", "\"entry\": \"\"",
       "metadata: kernels[0]: 'entry' must not be empty"},
      {"\"kernels\": [", "\"kernelz\": [", "metadata: missing key 'kernels'"},
      {"\"binary_format\": \"ptx\"", "\"binary_format\": \"elf\"",
       "'binary_format' is 'elf'"},
      {"{\"of\": \"Sq\"", "{\"of\": \"Sk\"",
       "metadata: kernels[0].grid[0]: 'of' is 'Sk'; expected one of 1, B, Hq, "
       "Sq, Skv"},
      {"\"ceildiv\": 64", "\"ceildiv\": 0",
       "metadata: kernels[0].grid[0]: 'ceildiv' is 0"},
      {"\"ceildiv\": 64", "\"ceildiv\": 6.5", "'ceildiv' is 6.5"},
      {"\"ceildiv\": 64, \"times\": 1", "\"ceildiv\": 64",
       "metadata: kernels[0].grid[0]: missing key 'times'"},
      {"\"block\": [128, 1, 1]", "\"block\": [128, 1]",
       "metadata: kernels[0]: 'block' must have 3"},
      {"\"block\": [128, 1, 1]", "\"block\": [512, 4, 1]",
       "metadata: kernels[0]: the block has 2048 threads"},
      {"\"block\": [128, 1, 1]", "\"block\": [0, 1, 1]",
       "metadata: kernels[0].block[0] must be an integer in [1, 1024]"},
      {"\"shared_bytes\": 65536", "\"shared_bytes\": 300000",
       "metadata: kernels[0]: 'shared_bytes' is 300000"},
      {"\"align_bytes\": 16", "\"align_bytes\": 12",
       "'align_bytes' is 12; it must be 0 or a power of two"},
      {"{\"field\": \"data\", \"tensor\": \"q\"",
       "{\"field\": \"data\", \"tensor\": \"x\"",
       "metadata: kernels[0].params[0]: 'tensor' is 'x'; expected q, k, v, "
       "mask, out or lse"},
      {"{\"field\": \"data\", \"tensor\": \"q\", \"type\": \"ptr\"}",
       "{\"field\": \"data\", \"tensor\": \"q\", \"type\": \"i64\"}",
       "metadata: kernels[0].params[0]: a 'data' parameter must have type "
       "'ptr'"},
      {"\"dim\": 3", "\"dim\": 4", "'dim' is 4"},
      {"{\"field\": \"data\", \"tensor\": \"q\"",
       "{\"field\": \"data\", \"tensor\": \"lse\"",
       "metadata: kernels[0]: a parameter reads 'lse', which the spec does not "
       "have"},
      {"\"head_dim\": 64", "\"head_dim\": 0",
       "the spec is invalid: spec.head_dim is 0"},
      {"\"heads_kv\": 2", "\"heads_kv\": 3",
       "the spec is invalid: spec.heads_q (8) is not a multiple"},
      {"\"dtype\": \"f16\"", "\"dtype\": \"f64\"", "spec: 'dtype' is 'f64'"},
      {"\"causal\": 1", "\"causal\": 2", "spec: 'causal' is 2"},
  };
  for (const Case &c : cases) {
    std::string error = parseError(replace(good, c.from, c.to));
    EXPECT_NE(error.find(c.message), std::string::npos)
        << "replacing " << c.from << " by " << c.to << "\n  got: " << error
        << "\n  expected to contain: " << c.message;
  }
}

TEST(CudaMetadata, RejectsBadSplitFields) {
  std::string good = writeMetadata(splitMetadata());
  const std::string outShape =
      "\"shape\": [\"B\", \"Hq\", \"splits\", \"Sq\", 64]";
  struct Case {
    std::string from, to, message;
  } cases[] = {
      // when
      {"\"when\": \"split\"", "\"when\": \"sometimes\"",
       "metadata: kernels[1]: 'when' is 'sometimes': 'sometimes' is not a "
       "term; expected 'always', or terms 'split', 'unsplit' or 'sq <op> <n>'"},
      {"\"when\": \"split\"", "\"when\": \"split && unsplit\"",
       "metadata: kernels[1]: 'when' is 'split && unsplit' says both split "
       "and unsplit"},
      {"\"when\": \"split\"", "\"when\": \"sq >= 5 && sq < 5\"",
       "metadata: kernels[1]: 'when' is 'sq >= 5 && sq < 5' holds for no "
       "query length"},
      {"\"when\": \"split\"", "\"when\": \"sq = 1\"",
       "metadata: kernels[1]: 'when' is 'sq = 1': 'sq = 1' is not a term"},
      {"\"when\": \"split\"", "\"when\": \"split &&\"",
       "metadata: kernels[1]: 'when' is 'split &&': '' is not a term"},
      {"\"when\": \"split\"", "\"when\": 1",
       "metadata: kernels[1]: 'when' must be a string"},
      {"\"when\": \"always\"", "\"when\": \"split\"",
       "metadata: no kernel runs when the split count is 1 ('when' of every "
       "kernel excludes it)"},

      // times
      {"\"times\": \"splits\"", "\"times\": \"split\"",
       "metadata: kernels[0].grid[1]: 'times' is 'split'; expected a positive "
       "integer or \"splits\""},
      {"\"times\": \"splits\"", "\"times\": true",
       "metadata: kernels[0].grid[1]: 'times' must be a positive integer or "
       "\"splits\""},
      {"\"times\": \"splits\"", "\"times\": 0",
       "metadata: kernels[0].grid[1]: 'times' is 0; it must be an integer in "
       "[1, 2147483647]"},
      // kv_splits
      {"\"kv_splits\": {\"block_q\": 64, \"block_kv\": 64, \"max\": 64},", "",
       "metadata: workspace[0].shape[2]: is \"splits\", but the metadata has "
       "no 'kv_splits'"},
      {"\"block_q\": 64, \"block_kv\": 64, \"max\": 64",
       "\"block_q\": 0, \"block_kv\": 64, \"max\": 64",
       "metadata: kv_splits: 'block_q' is 0; it must be an integer in [1, "},
      {"\"block_q\": 64, \"block_kv\": 64, \"max\": 64",
       "\"block_q\": 64, \"block_kv\": 64",
       "metadata: kv_splits: missing key 'max'"},
      {"\"kv_splits\": {\"block_q\": 64, \"block_kv\": 64, \"max\": 64}",
       "\"kv_splits\": 4", "metadata: 'kv_splits' must be an object"},
      // workspace names
      {"\"name\": \"partial_lse\"", "\"name\": \"out\"",
       "metadata: workspace[1]: 'name' is 'out', which is a launch tensor"},
      {"\"name\": \"partial_lse\"", "\"name\": \"partial_out\"",
       "metadata: workspace[1]: 'name' is 'partial_out', which workspace[0] "
       "already has"},
      {"\"name\": \"partial_lse\"", "\"name\": \"\"",
       "metadata: workspace[1]: 'name' is ''; it must be non-empty and made of "
       "A-Z, a-z, 0-9 and _"},
      {"\"name\": \"partial_lse\"", "\"name\": \"partial-lse\"",
       "metadata: workspace[1]: 'name' is 'partial-lse'; it must be"},
      {"{\"name\": \"partial_lse\", ", "{",
       "metadata: workspace[1]: missing key 'name'"},
      // workspace shapes
      {outShape, "\"shape\": [\"B\", \"Hq\", \"splits\", \"1\", 64]",
       "metadata: workspace[0].shape[3]: '1' is not an extent; expected B, Hq, "
       "Sq, Skv, splits or a positive integer"},
      {outShape, "\"shape\": [\"B\", \"Hq\", \"splits\", \"Sk\", 64]",
       "metadata: workspace[0].shape[3]: 'Sk' is not an extent"},
      {outShape, "\"shape\": [\"B\", \"Hq\", \"splits\", \"Sq\", 0]",
       "metadata: workspace[0].shape[4]: 0 is not a positive integer"},
      {outShape, "\"shape\": [\"B\", \"Hq\", \"splits\", \"Sq\", 6.5]",
       "metadata: workspace[0].shape[4]: 6.5 is not a positive integer"},
      {outShape, "\"shape\": [\"B\", \"Hq\", \"splits\", \"Sq\", [64]]",
       "metadata: workspace[0].shape[4]: must be a string or an integer"},
      {outShape, "\"shape\": []",
       "metadata: workspace[0]: 'shape' has 0 entries; expected 1 to 6"},
      {outShape, "\"shape\": [1, 2, 3, 4, 5, 6, 7]",
       "metadata: workspace[0]: 'shape' has 7 entries; expected 1 to 6"},
      {outShape, "\"shape\": \"B\"",
       "metadata: workspace[0]: 'shape' must be an array"},
      // element sizes
      {"64], \"element_bytes\": 4", "64], \"element_bytes\": 3",
       "metadata: workspace[0]: 'element_bytes' is 3; expected 1, 2, 4 or 8"},
      {"64], \"element_bytes\": 4", "64], \"element_bytes\": 16",
       "metadata: workspace[0]: 'element_bytes' is 16; it must be an integer "
       "in [1, 8]"},
      {"\"workspace\": [", "\"workspace\": [7, ",
       "metadata: workspace[0] must be an object"},
      // parameters naming workspaces
      {"{\"field\": \"data\", \"tensor\": \"partial_lse\"",
       "{\"field\": \"data\", \"tensor\": \"partial_ls\"",
       "metadata: kernels[0].params[57]: 'tensor' is 'partial_ls'; expected q, "
       "k, v, mask, out, lse or a workspace (partial_out, partial_lse)"},
      {"{\"field\": \"size\", \"tensor\": \"partial_lse\", \"dim\": 3",
       "{\"field\": \"size\", \"tensor\": \"partial_lse\", \"dim\": 4",
       "metadata: kernels[0].params[63]: 'dim' is 4; it must be an integer in "
       "[0, 3]"},
      {"{\"field\": \"stride\", \"tensor\": \"partial_out\", \"dim\": 4",
       "{\"field\": \"stride\", \"tensor\": \"partial_out\", \"dim\": 5",
       "metadata: kernels[0].params[56]: 'dim' is 5; it must be an integer in "
       "[0, 4]"},
      {"{\"field\": \"data\", \"tensor\": \"partial_out\", \"type\": \"ptr\"}",
       "{\"field\": \"data\", \"tensor\": \"partial_out\", \"type\": \"i64\"}",
       "metadata: kernels[0].params[44]: a 'data' parameter must have type "
       "'ptr'"},
      // kernels
      {"\"kernels\": [", "\"kernels\": [7, ",
       "metadata: kernels[0] must be an object"},
      {"\"kernels\": [", "\"kernels\": {\"a\": [",
       "not valid JSON"},
      {"\"entry\": \"attn_kernel_0\"", "\"entry\": \"\"",
       "metadata: kernels[1]: 'entry' must not be empty"},
      {"\"block\": [256, 1, 1]", "\"block\": [256, 8, 1]",
       "metadata: kernels[1]: the block has 2048 threads"},
  };
  for (const Case &c : cases) {
    std::string error = parseError(replace(good, c.from, c.to));
    EXPECT_NE(error.find(c.message), std::string::npos)
        << "replacing " << c.from << " by " << c.to << "\n  got: " << error
        << "\n  expected to contain: " << c.message;
  }
}

TEST(CudaMetadata, SplitsNeedKvSplits) {
  // A grid that multiplies by the split count, with no kv_splits.
  KernelMetadata m = sampleMetadata();
  m.kernels[0].grid[1].timesSplits = true;
  std::string text = writeMetadata(m);
  ASSERT_EQ(text.find("\"kv_splits\": {"), std::string::npos);
  EXPECT_NE(parseError(text).find(
                "metadata: kernels[0].grid[1]: 'times' is \"splits\", but the "
                "metadata has no 'kv_splits' (the split count is always 1)"),
            std::string::npos)
      << parseError(text);
  // A workspace whose shape has the split count, with no kv_splits.
  m = sampleMetadata();
  m.workspaces = {
      {"w", {WorkspaceDim::of(Extent::B), WorkspaceDim::splits()}, 2}};
  EXPECT_NE(parseError(writeMetadata(m))
                .find("metadata: workspace[0].shape[1]: is \"splits\", but the "
                      "metadata has no 'kv_splits'"),
            std::string::npos);
  // Without "splits" anywhere, a workspace needs no kv_splits.
  m.workspaces[0].shape[1] = WorkspaceDim::constant(3);
  m.kernels[0].params.push_back({"w", ParamField::Size, 1, ParamType::I64});
  KernelMetadata back;
  std::string error;
  EXPECT_TRUE(parseMetadata(writeMetadata(m), back, error)) << error;
}

TEST(CudaMetadata, KernelCount) {
  KernelMetadata m = splitMetadata();
  m.kernels.clear();
  EXPECT_NE(parseError(writeMetadata(m))
                .find("metadata: 'kernels' has 0 entries; expected 1 to 16"),
            std::string::npos);
  m = splitMetadata();
  while (m.kernels.size() < 16)
    m.kernels.push_back(m.kernels[1]);
  KernelMetadata back;
  std::string error;
  ASSERT_TRUE(parseMetadata(writeMetadata(m), back, error)) << error;
  EXPECT_EQ(back.kernels.size(), 16u);
  m.kernels.push_back(m.kernels[1]);
  EXPECT_NE(parseError(writeMetadata(m))
                .find("metadata: 'kernels' has 17 entries; expected 1 to 16"),
            std::string::npos);
  // Version 2 held at most 4.
  m.kernels.resize(5);
  EXPECT_NE(parseError(replace(writeMetadata(m), "\"version\": 3",
                               "\"version\": 2"))
                .find("metadata: 'kernels' has 5 entries; expected 1 to 4"),
            std::string::npos);
  std::string notArray = replace(writeMetadata(sampleMetadata()),
                                 "\"kernels\": [",
                                 "\"kernels\": {\"x\": 1}, \"y\": [");
  EXPECT_NE(parseError(notArray).find("metadata: 'kernels' must be an array"),
            std::string::npos);
}

TEST(CudaMetadata, SpecChecksEveryKernel) {
  KernelMetadata m = splitMetadata();
  m.kernels[1].params.push_back({"lse", ParamField::Data, 0, ParamType::Ptr});
  EXPECT_NE(parseError(writeMetadata(m))
                .find("metadata: kernels[1]: a parameter reads 'lse', which "
                      "the spec does not have"),
            std::string::npos);
  m = splitMetadata();
  m.kernels[1].params.push_back({"", ParamField::Seed, 0, ParamType::I64});
  EXPECT_NE(parseError(writeMetadata(m))
                .find("metadata: kernels[1]: a parameter is the dropout seed, "
                      "but the spec has no dropout"),
            std::string::npos);
}

TEST(CudaMetadata, SeedNeedsDropout) {
  KernelMetadata m = sampleMetadata();
  m.kernels[0].params.push_back({"", ParamField::Seed, 0, ParamType::I64});
  EXPECT_NE(parseError(writeMetadata(m)).find("the spec has no dropout"),
            std::string::npos);
  m.spec.dropout_p = 0.1;
  KernelMetadata back;
  std::string error;
  EXPECT_TRUE(parseMetadata(writeMetadata(m), back, error)) << error;
}

TEST(CudaSplits, WithoutSupportOneSplit) {
  KernelMetadata m = sampleMetadata();
  KernelArgs decode = argsOfShape(1, 32, 1, 32768);
  EXPECT_EQ(chooseKvSplits(m, decode, 132), 1);
  m.spec.kv_splits = 8; // a fixed choice the kernels cannot take
  EXPECT_EQ(chooseKvSplits(m, decode, 132), 1);
}

TEST(CudaSplits, AutomaticFillsOneWaveOfTwoPerSM) {
  KernelMetadata m = splitMetadata();
  ASSERT_EQ(m.spec.kv_splits, 0);
  // Decode: 32 query tiles on 132 SMs; floor(264 / 32) = 8 splits of the
  // 512 key blocks (9 would make 288 workgroups, 24 of them a second
  // wave).
  EXPECT_EQ(chooseKvSplits(m, argsOfShape(1, 32, 1, 32768), 132), 8);
  // 16 tiles: floor(264 / 16) = 16 splits, and 64 key blocks allow 16
  // splits of at least 4 blocks.
  EXPECT_EQ(chooseKvSplits(m, argsOfShape(1, 8, 128, 4096), 132), 16);
  // ... but 32 blocks only 8.
  EXPECT_EQ(chooseKvSplits(m, argsOfShape(1, 8, 128, 2048), 132), 8);
  // 64 tiles: floor(264 / 64) = 4.
  EXPECT_EQ(chooseKvSplits(m, argsOfShape(2, 32, 64, 8192), 132), 4);
  // 8 tiles: exactly 33.
  EXPECT_EQ(chooseKvSplits(m, argsOfShape(1, 8, 1, 32768), 132), 33);
  // Never more workgroups than two per SM, and no fewer than fit (from 5
  // tiles up: below, the 64-split cap binds; 2^16 keys: one key chunk).
  for (int64_t heads = 5; heads < 132; ++heads) {
    int64_t n = chooseKvSplits(m, argsOfShape(1, heads, 1, 65536), 132);
    EXPECT_LE(n * heads, 264) << heads << " tiles";
    EXPECT_GT((n + 1) * heads, 264) << heads << " tiles";
  }
  // A large prefill fills the GPU unsplit: 2 * 8 * 64 tiles.
  EXPECT_EQ(chooseKvSplits(m, argsOfShape(2, 8, 4096, 4096), 132), 1);
  // Exactly one wave of tiles is enough too.
  EXPECT_EQ(chooseKvSplits(m, argsOfShape(1, 132, 1, 32768), 132), 1);
  // One key block: nothing to split. Seven: fewer than 4 per split.
  EXPECT_EQ(chooseKvSplits(m, argsOfShape(1, 32, 1, 64), 132), 1);
  EXPECT_EQ(chooseKvSplits(m, argsOfShape(1, 32, 1, 7 * 64), 132), 1);
  // Eight blocks: 2 splits of 4.
  EXPECT_EQ(chooseKvSplits(m, argsOfShape(1, 32, 1, 8 * 64), 132), 2);
  // At most `max`.
  m.kvSplits.max = 4;
  EXPECT_EQ(chooseKvSplits(m, argsOfShape(1, 32, 1, 32768), 132), 4);
  // An unknown SM count or an empty launch: no split.
  m = splitMetadata();
  EXPECT_EQ(chooseKvSplits(m, argsOfShape(1, 32, 1, 32768), 0), 1);
  EXPECT_EQ(chooseKvSplits(m, argsOfShape(1, 32, 0, 32768), 132), 1);
  EXPECT_EQ(chooseKvSplits(m, argsOfShape(1, 32, 1, 0), 132), 1);
  // Huge extents do not overflow the tile count.
  EXPECT_EQ(chooseKvSplits(m, argsOfShape(int64_t(1) << 40, int64_t(1) << 40,
                                          int64_t(1) << 40, 32768),
                           132),
            1);
}

/// A decode artifact that packs a GQA group's query heads into the rows of
/// one workgroup (32 rows): grid (ceil(Group / 32), Hkv x splits, B).
KernelMetadata packedDecodeMetadata() {
  KernelMetadata m = splitMetadata();
  m.kernels[0].grid[0] = {Extent::Group, 32, 1};
  m.kernels[0].grid[1] = {Extent::Hkv, 1, 1, /*timesSplits=*/true};
  return m;
}

/// What the compiler writes for a spec whose Sq is dynamic, with split-KV
/// (attn-configure-nvgpu's alternatives): for Sq = 1 a decode kernel that
/// packs a GQA group's query heads (32 rows, 64-key blocks), for 2 <= Sq <=
/// 16 one of 32 query rows (64-key blocks), for the rest one of 128 rows
/// (32-key blocks); each an unsplit kernel, a partial kernel and a merge.
/// The packed alternative has workspaces of its own shape.
KernelMetadata alternativesMetadata() {
  KernelMetadata m = sampleMetadata();
  m.spec.batch = m.spec.heads_q = m.spec.heads_kv = ATTN_DYNAMIC;
  m.spec.seq_q = m.spec.seq_kv = ATTN_DYNAMIC;
  m.kvSplits = {128, 32, 64};
  using D = WorkspaceDim;
  for (bool packed : {false, true}) {
    std::string suffix = packed ? "_packed" : "";
    D heads = D::of(packed ? Extent::Hkv : Extent::Hq);
    D rows = D::of(packed ? Extent::Group : Extent::Sq);
    m.workspaces.push_back({"partial_out" + suffix,
                            {D::of(Extent::B), heads, D::splits(), rows,
                             D::constant(64)},
                            4});
    m.workspaces.push_back(
        {"partial_lse" + suffix, {D::of(Extent::B), heads, D::splits(), rows},
         4});
  }
  Kernel base = m.kernels[0];
  m.kernels.clear();
  struct Alt {
    const char *name;
    LaunchCondition sq;
    bool packed;
    int64_t rows, blockKv;
  } alts[] = {{"k_sq1", LaunchCondition().sq(1, 1), true, 32, 64},
              {"k_sq2to16", LaunchCondition().sq(2, 16), false, 32, 64},
              {"k", LaunchCondition().sq(17), false, 128, 32}};
  for (const Alt &alt : alts) {
    std::string suffix = alt.packed ? "_packed" : "";
    Kernel unsplit = base;
    unsplit.entry = alt.name;
    unsplit.when = alt.sq;
    unsplit.when.splits = LaunchCondition::Splits::Unsplit;
    unsplit.blockKv = alt.blockKv;
    unsplit.grid[0] = {alt.packed ? Extent::Group : Extent::Sq, alt.rows, 1};
    unsplit.grid[1] = {alt.packed ? Extent::Hkv : Extent::Hq, 1, 1};
    Kernel partial = unsplit;
    partial.entry = std::string(alt.name) + "_split_kv";
    partial.when.splits = LaunchCondition::Splits::Split;
    partial.grid[1].timesSplits = true;
    partial.params.resize(33); // q, k, v
    addDescriptor(partial.params, "partial_out" + suffix, 5);
    addDescriptor(partial.params, "partial_lse" + suffix, 4);
    Kernel merge;
    merge.entry = std::string(alt.name) + "_split_kv_merge";
    merge.when = partial.when;
    merge.grid[0] = {alt.packed ? Extent::Group : Extent::Sq, 2, 1};
    merge.grid[1] = {alt.packed ? Extent::Hkv : Extent::Hq, 1, 1};
    merge.grid[2] = {Extent::B, 1, 1};
    merge.block[0] = 128;
    addDescriptor(merge.params, "partial_out" + suffix, 5);
    addDescriptor(merge.params, "partial_lse" + suffix, 4);
    addDescriptor(merge.params, "out", 4);
    m.kernels.insert(m.kernels.end(), {unsplit, partial, merge});
  }
  return m;
}

/// GQA launch arguments: Hq query heads over Hkv KV heads.
KernelArgs gqaArgs(int64_t b, int64_t hq, int64_t hkv, int64_t sq,
                   int64_t skv) {
  KernelArgs a = argsOfShape(b, hq, sq, skv);
  KernelArgs kv = argsOfShape(b, hkv, sq, skv);
  a.k = kv.k;
  a.v = kv.v;
  a.stream = reinterpret_cast<cuda::CUstream>(0x5eed);
  return a;
}

TEST(CudaMetadata, SqAlternativesRoundTrip) {
  KernelMetadata m = alternativesMetadata(), back;
  std::string error, text = writeMetadata(m);
  EXPECT_NE(text.find("\"version\": 3,"), std::string::npos) << text;
  for (const char *when :
       {"\"when\": \"sq == 1 && unsplit\",", "\"when\": \"sq == 1 && split\",",
        "\"when\": \"sq >= 2 && sq <= 16 && split\",",
        "\"when\": \"sq >= 17 && unsplit\","})
    EXPECT_NE(text.find(when), std::string::npos) << when << "\n" << text;
  EXPECT_NE(text.find("\"block_kv\": 64,"), std::string::npos) << text;
  ASSERT_TRUE(parseMetadata(text, back, error)) << error;
  expectSameKernels(back, m);
  expectSameWorkspaces(back, m);
  for (size_t i = 0; i < m.kernels.size(); ++i)
    EXPECT_EQ(back.kernels[i].blockKv, m.kernels[i].blockKv) << i;
  EXPECT_EQ(writeMetadata(back), text);
  // Each Sq selects the first kernel of its alternative.
  EXPECT_EQ(firstKernelFor(back, 1), 0);
  EXPECT_EQ(firstKernelFor(back, 2), 3);
  EXPECT_EQ(firstKernelFor(back, 16), 3);
  EXPECT_EQ(firstKernelFor(back, 17), 6);
  EXPECT_EQ(firstKernelFor(back, 100000), 6);
  EXPECT_EQ(firstKernelFor(back, 0), -1);
  // Exactly one alternative's kernels run for every (Sq, split count).
  for (int64_t sq : {1, 2, 9, 16, 17, 4096})
    for (int64_t splits : {1, 2, 7}) {
      std::vector<std::string> runs;
      for (const Kernel &k : back.kernels)
        if (k.runs(sq, splits))
          runs.push_back(k.entry);
      std::string base = sq == 1 ? "k_sq1" : sq <= 16 ? "k_sq2to16" : "k";
      std::vector<std::string> expected = {base};
      if (splits > 1)
        expected = {base + "_split_kv", base + "_split_kv_merge"};
      EXPECT_EQ(runs, expected) << "Sq " << sq << ", " << splits << " splits";
    }
}

TEST(CudaMetadata, LaunchConditionText) {
  LaunchCondition c;
  std::string error;
  for (auto [in, out] : std::vector<std::pair<std::string, std::string>>{
           {"always", "always"},
           {"split", "split"},
           {" unsplit ", "unsplit"},
           {"sq == 1", "sq == 1"},
           {"sq<=16&&split", "sq <= 16 && split"},
           {"split && sq > 1 && sq < 17", "sq >= 2 && sq <= 16 && split"},
           {"sq >= 17 && sq >= 20", "sq >= 20"},
           {"sq >= 1", "always"},
           {"unsplit && unsplit", "unsplit"}}) {
    ASSERT_TRUE(LaunchCondition::parse(in, c, error)) << in << ": " << error;
    EXPECT_EQ(c.str(), out) << in;
    LaunchCondition again;
    ASSERT_TRUE(LaunchCondition::parse(c.str(), again, error)) << error;
    EXPECT_EQ(again, c) << in;
  }
  ASSERT_TRUE(LaunchCondition::parse("sq >= 2 && sq <= 16 && split", c, error));
  EXPECT_FALSE(c.holds(1, 2));
  EXPECT_TRUE(c.holds(2, 2));
  EXPECT_TRUE(c.holds(16, 64));
  EXPECT_FALSE(c.holds(16, 1));
  EXPECT_FALSE(c.holds(17, 2));
  for (const char *bad : {"", "sometimes", "always && split", "sq", "sq == ",
                          "sq == -1", "sq == 1x", "sq != 3", "sq < 1",
                          "sq == 0", "sq == 1 && sq == 2", "split && unsplit",
                          "&& split", "sq == 99999999999999999999"})
    EXPECT_FALSE(LaunchCondition::parse(bad, c, error)) << bad;
}

// Bad alternatives are refused when the metadata is read, with the kernels
// at fault named: two alternatives for one Sq, an Sq no kernel takes, an
// alternative without a kernel for some split count.
TEST(CudaMetadata, AlternativesMustPartitionSq) {
  std::string good = writeMetadata(alternativesMetadata());
  struct Case {
    std::string from, to, message;
  } cases[] = {
      {"\"sq >= 2 && sq <= 16 && unsplit\"", "\"sq <= 16 && unsplit\"",
       "metadata: kernels[0] ('sq == 1 && unsplit') and kernels[3] ('sq <= 16 "
       "&& unsplit') overlap at Sq = 1: they are alternatives (different Sq "
       "ranges), so a launch would run both"},
      {"\"sq >= 17 && unsplit\"", "\"unsplit\"",
       "metadata: kernels[0] ('sq == 1 && unsplit') and kernels[6] ('unsplit') "
       "overlap at Sq = 1"},
      {"\"sq >= 17 && unsplit\"", "\"sq >= 16 && unsplit\"",
       "metadata: kernels[3] ('sq >= 2 && sq <= 16 && unsplit') and kernels[6] "
       "('sq >= 16 && unsplit') overlap at Sq = 16"},
      {"\"sq >= 17 && unsplit\"", "\"sq >= 17 && split\"",
       "metadata: no kernel runs when the split count is 1 and Sq is in [17, "
       "inf)"},
  };
  for (const Case &c : cases) {
    std::string error = parseError(replace(good, c.from, c.to));
    EXPECT_NE(error.find(c.message), std::string::npos)
        << "replacing " << c.from << " by " << c.to << "\n  got: " << error
        << "\n  expected to contain: " << c.message;
  }
  // Sq = 17 left to no alternative.
  KernelMetadata m = alternativesMetadata();
  for (size_t i = 6; i < 9; ++i)
    m.kernels[i].when.sqMin = 18;
  EXPECT_NE(parseError(writeMetadata(m))
                .find("metadata: no kernel runs when Sq is in [17, 17] (the "
                      "kernels' Sq ranges are [1, 1], [2, 16], [18, inf))"),
            std::string::npos)
      << parseError(writeMetadata(m));
  // The Sq = 1 alternative without its partial and merge kernels.
  m = alternativesMetadata();
  m.kernels[1].when.splits = m.kernels[2].when.splits =
      LaunchCondition::Splits::Unsplit;
  EXPECT_NE(parseError(writeMetadata(m))
                .find("metadata: no kernel runs when the split count is above "
                      "1 and Sq is in [1, 1] ('when' of every kernel excludes "
                      "it)"),
            std::string::npos)
      << parseError(writeMetadata(m));
  // Without the default alternative no kernel runs for Sq >= 17.
  m = alternativesMetadata();
  m.kernels.resize(6);
  EXPECT_NE(parseError(writeMetadata(m))
                .find("metadata: no kernel runs when Sq is in [17, inf) (the "
                      "kernels' Sq ranges are [1, 1], [2, 16])"),
            std::string::npos)
      << parseError(writeMetadata(m));
  // A static Sq needs only its own: Sq = 4 is the second alternative's.
  m.spec.seq_q = 4;
  KernelMetadata back;
  std::string error;
  EXPECT_TRUE(parseMetadata(writeMetadata(m), back, error)) << error;
  m.spec.seq_q = 40;
  EXPECT_NE(parseError(writeMetadata(m))
                .find("metadata: no kernel runs when Sq is in [40, 40]"),
            std::string::npos);
  // Version 2 knows no Sq conditions.
  m = alternativesMetadata();
  m.kernels.resize(3);
  EXPECT_NE(parseError(replace(writeMetadata(m), "\"version\": 3",
                               "\"version\": 2"))
                .find("metadata: kernels[0]: 'when' is 'sq == 1 && unsplit'; "
                      "version 2 knows always, split and unsplit (conditions "
                      "on Sq need version 3)"),
            std::string::npos);
  // block_kv is a positive integer.
  EXPECT_NE(parseError(replace(good, "\"block_kv\": 64,", "\"block_kv\": 0,"))
                .find("metadata: kernels[0]: 'block_kv' is 0; it must be an "
                      "integer in [1, "),
            std::string::npos);
}

// Version 2 files (what attn-translate wrote before version 3) still load.
TEST(CudaMetadata, ReadsVersion2) {
  KernelMetadata m = splitMetadata();
  m.kernels[0].when = LaunchCondition::unsplit();
  m.kernels[0].grid[1].timesSplits = false;
  Kernel partial = m.kernels[0];
  partial.entry = "attn_kernel_split_kv";
  partial.when = LaunchCondition::split();
  partial.grid[1].timesSplits = true;
  m.kernels.insert(m.kernels.begin() + 1, partial);
  std::string v2 =
      replace(writeMetadata(m), "\"version\": 3", "\"version\": 2");
  KernelMetadata back;
  std::string error;
  ASSERT_TRUE(parseMetadata(v2, back, error)) << error;
  expectSameKernels(back, m);
  EXPECT_EQ(back.kernels[0].when, LaunchCondition::unsplit());
  EXPECT_EQ(back.kernels[2].when, LaunchCondition::split());
}

TEST(CudaSplits, TheLaunchSqPicksTheAlternative) {
  KernelMetadata m = alternativesMetadata();
  // Sq = 1, B = 2, Hq = 32 over Hkv = 8: the packed alternative's 16 tiles,
  // its 64-key blocks (1563 at Skv = 100000): floor(264 / 16) = 16 splits.
  EXPECT_EQ(chooseKvSplits(m, gqaArgs(2, 32, 8, 1, 100000), 132), 16);
  // Sq = 4: 64 tiles of 32 rows: 4.
  EXPECT_EQ(chooseKvSplits(m, gqaArgs(2, 32, 8, 4, 100000), 132), 4);
  // Skv = 4096: 64-key blocks allow 16 splits of 4 at Sq = 1, the default
  // alternative's 32-key blocks 32 at Sq = 17 (B = 1, Hkv = 2: 8 tiles).
  EXPECT_EQ(chooseKvSplits(m, gqaArgs(1, 2, 2, 1, 4096), 132), 16);
  EXPECT_EQ(chooseKvSplits(m, gqaArgs(1, 2, 2, 17, 4096), 132), 32);
  // Prefill fills the GPU.
  EXPECT_EQ(chooseKvSplits(m, gqaArgs(2, 32, 8, 4096, 4096), 132), 1);
}

TEST(CudaSplits, PackedHeadsGridAndSplits) {
  KernelMetadata m = packedDecodeMetadata(), back;
  std::string error;
  std::string text = writeMetadata(m);
  EXPECT_NE(text.find("{\"of\": \"Group\", \"ceildiv\": 32, \"times\": 1}"),
            std::string::npos);
  EXPECT_NE(text.find("{\"of\": \"Hkv\", \"ceildiv\": 1, \"times\": \"splits\"}"),
            std::string::npos);
  ASSERT_TRUE(parseMetadata(text, back, error)) << error;
  expectSameKernels(m, back);
  // Hq = 32 over Hkv = 8: 4 heads per group, one workgroup of rows per KV
  // head, 8 per batch entry.
  KernelArgs a = argsOfShape(2, 32, 1, 32768);
  a.k.shape[1] = a.v.shape[1] = 8;
  unsigned grid[3];
  ASSERT_TRUE(computeGrid(back.kernels[0], a, 3, grid, error)) << error;
  EXPECT_EQ(grid[0], 1u);
  EXPECT_EQ(grid[1], 24u);
  EXPECT_EQ(grid[2], 2u);
  // The split count fills one wave (two per SM) with the 16 packed tiles
  // (not the 64 query heads): floor(264 / 16) = 16, at most 512 / 4 key
  // blocks.
  EXPECT_EQ(chooseKvSplits(back, a, 132), 16);
  // Without packing the same shape has 64 tiles: floor(264 / 64) = 4.
  EXPECT_EQ(chooseKvSplits(splitMetadata(), a, 132), 4);
  // A group of 40 heads takes two workgroups of 32 rows.
  a.q.shape[1] = 320;
  ASSERT_TRUE(computeGrid(back.kernels[0], a, 1, grid, error)) << error;
  EXPECT_EQ(grid[0], 2u);
  EXPECT_EQ(grid[1], 8u);
}

TEST(CudaSplits, FixedChoiceIsClamped) {
  KernelMetadata m = splitMetadata();
  m.spec.kv_splits = 3;
  EXPECT_EQ(chooseKvSplits(m, argsOfShape(1, 32, 1, 32768), 132), 3);
  // Fixed means fixed, even where the automatic rule would not split.
  EXPECT_EQ(chooseKvSplits(m, argsOfShape(2, 8, 4096, 4096), 132), 3);
  m.spec.kv_splits = 1;
  EXPECT_EQ(chooseKvSplits(m, argsOfShape(1, 32, 1, 32768), 132), 1);
  m.spec.kv_splits = 1000;
  // To max (64 of 512 blocks), then to the block count (10).
  EXPECT_EQ(chooseKvSplits(m, argsOfShape(1, 32, 1, 32768), 132), 64);
  EXPECT_EQ(chooseKvSplits(m, argsOfShape(1, 32, 1, 640), 132), 10);
  EXPECT_EQ(chooseKvSplits(m, argsOfShape(1, 32, 1, 577), 132), 10);
  // Skv = 64 is one key block: 1 whatever the spec says.
  EXPECT_EQ(chooseKvSplits(m, argsOfShape(1, 32, 1, 64), 132), 1);
}

TEST(CudaLaunch, GridFollowsTheShape) {
  KernelMetadata m = sampleMetadata();
  Kernel &k = m.kernels[0];
  KernelArgs a = sampleArgs();
  unsigned grid[3];
  std::string error;
  ASSERT_TRUE(computeGrid(k, a, 1, grid, error)) << error;
  // ceildiv(200, 64) query blocks, 8 heads, 2 batches.
  EXPECT_EQ(grid[0], 4u);
  EXPECT_EQ(grid[1], 8u);
  EXPECT_EQ(grid[2], 2u);
  // A constant factor does not depend on the split count.
  ASSERT_TRUE(computeGrid(k, a, 7, grid, error)) << error;
  EXPECT_EQ(grid[1], 8u);

  k.grid[0].times = 3;
  k.grid[1] = {Extent::One, 1, 1};
  ASSERT_TRUE(computeGrid(k, a, 1, grid, error)) << error;
  EXPECT_EQ(grid[0], 12u);
  EXPECT_EQ(grid[1], 1u);

  k.grid[1] = {Extent::Skv, 1, 1000};
  EXPECT_FALSE(computeGrid(k, a, 1, grid, error));
  EXPECT_NE(error.find("grid.y would exceed CUDA's limit of 65535"),
            std::string::npos)
      << error;

  a.q.shape[2] = 0;
  k.grid[1] = {Extent::Hq, 1, 1};
  EXPECT_FALSE(computeGrid(k, a, 1, grid, error));
  EXPECT_NE(error.find("grid.x is 0 (Sq = 0)"), std::string::npos) << error;
}

TEST(CudaLaunch, GridMultipliesBySplits) {
  KernelMetadata m = splitMetadata();
  KernelArgs a = sampleArgs();
  unsigned grid[3];
  std::string error;
  ASSERT_TRUE(computeGrid(m.kernels[0], a, 5, grid, error)) << error;
  EXPECT_EQ(grid[0], 4u);
  EXPECT_EQ(grid[1], 8u * 5); // Hq x splits
  EXPECT_EQ(grid[2], 2u);
  ASSERT_TRUE(computeGrid(m.kernels[0], a, 1, grid, error)) << error;
  EXPECT_EQ(grid[1], 8u);
  // The merge kernel's grid has no split factor.
  ASSERT_TRUE(computeGrid(m.kernels[1], a, 5, grid, error)) << error;
  EXPECT_EQ(grid[1], 8u);

  // CUDA's limits: y <= 65535 (8 x 8191 fits, 8 x 8192 does not) ...
  ASSERT_TRUE(computeGrid(m.kernels[0], a, 8191, grid, error)) << error;
  EXPECT_EQ(grid[1], 65528u);
  EXPECT_FALSE(computeGrid(m.kernels[0], a, 8192, grid, error));
  EXPECT_NE(error.find("grid.y would exceed CUDA's limit of 65535"),
            std::string::npos)
      << error;
  // ... x < 2^31, also before the factor ...
  Kernel k = m.kernels[0];
  k.grid[0] = {Extent::Skv, 1, 1, true};
  k.grid[1] = {Extent::One, 1, 1};
  k.grid[2] = {Extent::One, 1, 1};
  a.k.shape[2] = int64_t(1) << 30;
  ASSERT_TRUE(computeGrid(k, a, 1, grid, error)) << error;
  EXPECT_FALSE(computeGrid(k, a, 2, grid, error));
  EXPECT_NE(error.find("grid.x would exceed CUDA's limit of 2147483647"),
            std::string::npos)
      << error;
  a.k.shape[2] = int64_t(1) << 31;
  EXPECT_FALSE(computeGrid(k, a, 1, grid, error));
  EXPECT_NE(error.find("grid.x would exceed"), std::string::npos) << error;
  // ... and x * y * z < 2^32 (the causal kernels' 32-bit linear id):
  // 65537 x 65535 = 2^32 - 1 and 2^30 x 3 fit, 2^30 x 4 does not.
  a.k.shape[2] = 65537;
  k.grid[1] = {Extent::One, 1, 65535};
  ASSERT_TRUE(computeGrid(k, a, 1, grid, error)) << error;
  EXPECT_EQ(uint64_t(grid[0]) * grid[1] * grid[2], uint64_t(UINT32_MAX));
  a.k.shape[2] = int64_t(1) << 30;
  k.grid[1] = {Extent::One, 1, 3};
  ASSERT_TRUE(computeGrid(k, a, 1, grid, error)) << error;
  k.grid[1] = {Extent::One, 1, 2};
  k.grid[2] = {Extent::One, 1, 2};
  EXPECT_FALSE(computeGrid(k, a, 1, grid, error));
  EXPECT_NE(error.find("the grid's 1073741824 x 2 x 2 = 4294967296 "
                       "workgroups exceed 2^32 - 1"),
            std::string::npos)
      << error;
  // ... and no dimension is 0.
  EXPECT_FALSE(computeGrid(m.kernels[0], sampleArgs(), 0, grid, error));
  EXPECT_NE(error.find("grid.y is 0 (Hq = 8, splits = 0)"), std::string::npos)
      << error;
}

/// The 64-bit parameter values of a packing whose parameters are all 8
/// bytes wide.
std::vector<uint64_t> values(PackedParams &p) {
  std::vector<uint64_t> out;
  for (void *ptr : p.pointers()) {
    uint64_t v;
    std::memcpy(&v, ptr, 8);
    out.push_back(v);
  }
  return out;
}

TEST(CudaLaunch, PacksWorkspaceDescriptors) {
  KernelMetadata m = splitMetadata();
  KernelArgs a = sampleArgs(); // B = 2, Hq = 8, Sq = 200
  PackedParams p;
  std::string error;
  // Kernel 0: q, k, v, out (44 parameters), then partial_out [B, Hq,
  // splits, Sq, 64] and partial_lse [B, Hq, splits, Sq], row-major.
  ASSERT_TRUE(packParams(m, m.kernels[0], a, 5, {0xa000, 0xb000}, p, error))
      << error;
  std::vector<uint64_t> v = values(p);
  ASSERT_EQ(v.size(), 44u + 13 + 11);
  EXPECT_EQ(std::vector<uint64_t>(v.begin() + 44, v.begin() + 57),
            (std::vector<uint64_t>{0xa000, 0xa000, 0, 2, 8, 5, 200, 64,
                                   8 * 5 * 200 * 64, 5 * 200 * 64, 200 * 64,
                                   64, 1}));
  EXPECT_EQ(std::vector<uint64_t>(v.begin() + 57, v.end()),
            (std::vector<uint64_t>{0xb000, 0xb000, 0, 2, 8, 5, 200,
                                   8 * 5 * 200, 5 * 200, 200, 1}));
  // The launch tensors are unchanged by the workspaces.
  EXPECT_EQ(v[0], 0x1000u);
  EXPECT_EQ(v[33], 0x4000u);

  // One split: nothing is allocated, the pointers are 0 and the split
  // dimension is 1.
  ASSERT_TRUE(packParams(m, m.kernels[0], a, 1, {0, 0}, p, error)) << error;
  v = values(p);
  EXPECT_EQ(std::vector<uint64_t>(v.begin() + 44, v.begin() + 57),
            (std::vector<uint64_t>{0, 0, 0, 2, 8, 1, 200, 64, 8 * 200 * 64,
                                   200 * 64, 200 * 64, 64, 1}));
  EXPECT_EQ(std::vector<uint64_t>(v.begin() + 57, v.end()),
            (std::vector<uint64_t>{0, 0, 0, 2, 8, 1, 200, 8 * 200, 200, 200,
                                   1}));

  // The merge kernel reads the same workspaces, then writes out.
  ASSERT_TRUE(packParams(m, m.kernels[1], a, 5, {0xa000, 0xb000}, p, error))
      << error;
  v = values(p);
  ASSERT_EQ(v.size(), 13u + 11 + 11);
  EXPECT_EQ(v[5], 5u);
  EXPECT_EQ(v[13], 0xb000u);
  EXPECT_EQ(v[24], 0x4000u);
}

TEST(CudaLaunch, WorkspaceParamErrors) {
  KernelMetadata m = splitMetadata();
  KernelArgs a = sampleArgs();
  PackedParams p;
  std::string error;
  EXPECT_FALSE(packParams(m, m.kernels[0], a, 5, {0xa000}, p, error));
  EXPECT_NE(error.find("1 workspace pointers for 2 workspaces"),
            std::string::npos)
      << error;
  // Built by hand, past the workspace's rank.
  Kernel k = m.kernels[1];
  k.params = {{"partial_lse", ParamField::Stride, 4, ParamType::I64}};
  EXPECT_FALSE(packParams(m, k, a, 5, {0, 0}, p, error));
  EXPECT_NE(error.find("parameter 0 reads dimension 4 of workspace "
                       "'partial_lse', which has 4"),
            std::string::npos)
      << error;
  // 32-bit sizes and strides must fit.
  k.params = {{"partial_out", ParamField::Stride, 0, ParamType::I32}};
  a.q.shape[2] = 1 << 20;
  EXPECT_FALSE(packParams(m, k, a, 64, {0, 0}, p, error));
  EXPECT_NE(error.find("parameter 0 (partial_out stride 0 = 34359738368) does "
                       "not fit the kernel's 32-bit parameter"),
            std::string::npos)
      << error;
}

TEST(CudaLaunch, LaysOutWorkspaces) {
  KernelMetadata m = splitMetadata();
  std::vector<WorkspaceLayout> l;
  uint64_t total = 0;
  std::string error;
  ASSERT_TRUE(layoutWorkspaces(m, sampleArgs(), 5, l, total, error)) << error;
  ASSERT_EQ(l.size(), 2u);
  EXPECT_EQ(l[0].shape, (std::vector<int64_t>{2, 8, 5, 200, 64}));
  EXPECT_EQ(l[0].bytes, 2u * 8 * 5 * 200 * 64 * 4);
  EXPECT_EQ(l[0].offset, 0u);
  EXPECT_EQ(l[1].shape, (std::vector<int64_t>{2, 8, 5, 200}));
  EXPECT_EQ(l[1].bytes, 2u * 8 * 5 * 200 * 4);
  EXPECT_EQ(l[1].offset, l[0].bytes); // already a multiple of 256
  EXPECT_EQ(total, l[1].offset + l[1].bytes);

  // Every workspace starts on a 256-byte boundary.
  using D = WorkspaceDim;
  m.workspaces = {{"a", {D::constant(3)}, 1},
                  {"b", {D::splits()}, 8},
                  {"c", {D::of(Extent::Skv), D::of(Extent::B)}, 2}};
  ASSERT_TRUE(layoutWorkspaces(m, sampleArgs(), 5, l, total, error)) << error;
  ASSERT_EQ(l.size(), 3u);
  EXPECT_EQ(l[0].offset, 0u);
  EXPECT_EQ(l[0].bytes, 3u);
  EXPECT_EQ(l[1].offset, 256u);
  EXPECT_EQ(l[1].bytes, 40u);
  EXPECT_EQ(l[2].offset, 512u);
  EXPECT_EQ(l[2].bytes, 300u * 2 * 2);
  EXPECT_EQ(total, 512u + 1200);

  // 2^40 bytes is the most, for one workspace and for all of them.
  m.workspaces = {{"big", {D::constant(1 << 20), D::constant(1 << 20)}, 1}};
  ASSERT_TRUE(layoutWorkspaces(m, sampleArgs(), 5, l, total, error)) << error;
  EXPECT_EQ(total, uint64_t(1) << 40);
  m.workspaces[0].elementBytes = 2;
  EXPECT_FALSE(layoutWorkspaces(m, sampleArgs(), 5, l, total, error));
  EXPECT_NE(error.find("workspace 'big' ([1048576, 1048576] x 2 bytes) would "
                       "exceed 2^40 bytes"),
            std::string::npos)
      << error;
  m.workspaces = {{"huge",
                   {D::constant(INT32_MAX), D::constant(INT32_MAX),
                    D::constant(INT32_MAX)},
                   8}};
  EXPECT_FALSE(layoutWorkspaces(m, sampleArgs(), 5, l, total, error));
  EXPECT_NE(error.find("workspace 'huge'"), std::string::npos) << error;
  m.workspaces = {{"x", {D::constant(1 << 20), D::constant(1 << 19)}, 1},
                  {"y", {D::constant(1 << 20), D::constant(1 << 19)}, 1},
                  {"z", {D::constant(1)}, 1}};
  EXPECT_FALSE(layoutWorkspaces(m, sampleArgs(), 5, l, total, error));
  EXPECT_NE(error.find("the workspaces would exceed 2^40 bytes in all "
                       "(workspace 'z'"),
            std::string::npos)
      << error;
  // An empty extent is not a workspace.
  m.workspaces = {{"w", {D::of(Extent::Sq), D::splits()}, 4}};
  KernelArgs a = sampleArgs();
  a.q.shape[2] = 0;
  EXPECT_FALSE(layoutWorkspaces(m, a, 5, l, total, error));
  EXPECT_NE(error.find("workspace 'w': dimension 0 (Sq) is 0 for this launch"),
            std::string::npos)
      << error;
  // No workspace: nothing to allocate.
  m.workspaces.clear();
  ASSERT_TRUE(layoutWorkspaces(m, a, 5, l, total, error)) << error;
  EXPECT_TRUE(l.empty());
  EXPECT_EQ(total, 0u);
}

TEST(CudaLaunch, PacksMemRefDescriptors) {
  KernelMetadata m = sampleMetadata();
  KernelArgs a = sampleArgs();
  PackedParams p;
  std::string error;
  ASSERT_TRUE(packParams(m, m.kernels[0], a, 1, {}, p, error)) << error;
  ASSERT_EQ(p.offsets.size(), m.kernels[0].params.size());
  std::vector<void *> ptrs = p.pointers();
  auto u64 = [&](size_t i) {
    uint64_t v;
    std::memcpy(&v, ptrs[i], 8);
    return v;
  };
  // k's descriptor starts at parameter 11: allocated, aligned, offset,
  // sizes [2, 2, 300, 64], strides as the caller gave them (BSHD).
  EXPECT_EQ(u64(11), 0x2000u);
  EXPECT_EQ(u64(12), 0x2000u);
  EXPECT_EQ(u64(13), 0u);
  EXPECT_EQ(u64(14), 2u);
  EXPECT_EQ(u64(16), 300u);
  EXPECT_EQ(u64(18), 300u * 2 * 64);
  EXPECT_EQ(u64(19), 64u);
  EXPECT_EQ(u64(20), 2u * 64);
  EXPECT_EQ(u64(21), 1u);
  for (size_t i = 0; i < p.offsets.size(); ++i)
    EXPECT_EQ(p.offsets[i], 8 * i);
}

TEST(CudaLaunch, AlignsMixedWidths) {
  KernelMetadata m = sampleMetadata();
  m.spec.dropout_p = 0.5;
  m.kernels[0].params = {{"q", ParamField::Size, 2, ParamType::I32},
                         {"q", ParamField::Data, 0, ParamType::Ptr},
                         {"k", ParamField::Size, 2, ParamType::I32},
                         {"k", ParamField::Stride, 2, ParamType::I32},
                         {"", ParamField::Seed, 0, ParamType::I64}};
  KernelArgs a = sampleArgs();
  PackedParams p;
  std::string error;
  ASSERT_TRUE(packParams(m, m.kernels[0], a, 1, {}, p, error)) << error;
  EXPECT_EQ(p.offsets, (std::vector<size_t>{0, 8, 16, 20, 24}));
  std::vector<void *> ptrs = p.pointers();
  uint32_t sq, skv, kStride;
  uint64_t data, seed;
  std::memcpy(&sq, ptrs[0], 4);
  std::memcpy(&data, ptrs[1], 8);
  std::memcpy(&skv, ptrs[2], 4);
  std::memcpy(&kStride, ptrs[3], 4);
  std::memcpy(&seed, ptrs[4], 8);
  EXPECT_EQ(sq, 200u);
  EXPECT_EQ(data, 0x1000u);
  EXPECT_EQ(skv, 300u);
  EXPECT_EQ(kStride, 2u * 64);
  EXPECT_EQ(seed, 0x1234567890abcdefull);

  a.k.strides[2] = int64_t(1) << 33;
  EXPECT_FALSE(packParams(m, m.kernels[0], a, 1, {}, p, error));
  EXPECT_NE(error.find("does not fit the kernel's 32-bit parameter"),
            std::string::npos)
      << error;
}

// The tensor-core kernel copies q/k/v rows in 16-byte chunks (cp.async):
// its metadata asks for 16-byte alignment, checked at every launch.
TEST(CudaLaunch, ChecksRowAlignment) {
  KernelMetadata m = sampleMetadata(), back;
  std::string error;
  m.alignBytes = 0;
  // Artifacts written before align_bytes existed have no requirement.
  std::string text = replace(writeMetadata(m), "\"align_bytes\": 0,\n", "");
  ASSERT_EQ(text.find("align_bytes"), std::string::npos);
  ASSERT_TRUE(parseMetadata(text, back, error)) << error;
  EXPECT_EQ(back.alignBytes, 0u);

  m.alignBytes = 16;
  const Kernel &k = m.kernels[0];
  KernelArgs a = sampleArgs(); // f16, D = 64: every stride 128 B multiple
  PackedParams p;
  ASSERT_TRUE(packParams(m, k, a, 1, {}, p, error)) << error;
  a.k.data = reinterpret_cast<void *>(0x2002);
  EXPECT_FALSE(packParams(m, k, a, 1, {}, p, error));
  EXPECT_NE(error.find("tensor 'k' (strides [38400, 64, 128, 1]) is not "
                       "16-byte aligned"),
            std::string::npos)
      << error;
  EXPECT_NE(error.find("ATTN_CUDA_TENSOR_CORES=0"), std::string::npos);
  a = sampleArgs();
  a.v.strides[2] = 65; // rows 130 bytes apart
  EXPECT_FALSE(packParams(m, k, a, 1, {}, p, error));
  EXPECT_NE(error.find("tensor 'v'"), std::string::npos) << error;
  m.alignBytes = 0;
  EXPECT_TRUE(packParams(m, k, a, 1, {}, p, error)) << error;
}

TEST(CudaLaunch, EveryLaunchTensorByName) {
  KernelMetadata m = sampleMetadata();
  KernelArgs a = sampleArgs();
  a.mask = a.out;
  a.mask.data = reinterpret_cast<void *>(0x5000);
  a.lse = a.out;
  a.lse.data = reinterpret_cast<void *>(0x6000);
  m.kernels[0].params.clear();
  for (const char *t : {"q", "k", "v", "mask", "out", "lse"})
    m.kernels[0].params.push_back({t, ParamField::Data, 0, ParamType::Ptr});
  PackedParams p;
  std::string error;
  ASSERT_TRUE(packParams(m, m.kernels[0], a, 1, {}, p, error)) << error;
  EXPECT_EQ(values(p), (std::vector<uint64_t>{0x1000, 0x2000, 0x3000, 0x5000,
                                              0x4000, 0x6000}));
  // Names of a launch tensor's length that are none (a struct built by
  // hand; parsed metadata rejects them).
  for (const char *name : {"x", "ou", "lsf", "mas", "masks", ""}) {
    m.kernels[0].params = {{name, ParamField::Data, 0, ParamType::Ptr}};
    EXPECT_FALSE(packParams(m, m.kernels[0], a, 1, {}, p, error)) << name;
    EXPECT_NE(error.find("reads tensor '" + std::string(name) +
                         "', which this launch does not have"),
              std::string::npos)
        << error;
  }
}

TEST(CudaLaunch, MissingTensorIsAnError) {
  KernelMetadata m = sampleMetadata();
  m.kernels[0].params = {{"lse", ParamField::Data, 0, ParamType::Ptr}};
  PackedParams p;
  std::string error;
  EXPECT_FALSE(packParams(m, m.kernels[0], sampleArgs(), 1, {}, p, error));
  EXPECT_NE(error.find("reads tensor 'lse', which this launch does not have"),
            std::string::npos)
      << error;
  // Neither a launch tensor nor a workspace (a struct built by hand).
  m.kernels[0].params = {{"partial", ParamField::Size, 0, ParamType::I64}};
  EXPECT_FALSE(packParams(m, m.kernels[0], sampleArgs(), 1, {}, p, error));
  EXPECT_NE(error.find("reads tensor 'partial', which this launch does not "
                       "have"),
            std::string::npos)
      << error;
}

TEST(CudaArtifact, ReadsMetadataAndBinary) {
  TempDir dir;
  dir.write("k.ptx", kPtx);
  std::string path = dir.write("k.json", writeMetadata(sampleMetadata()));
  KernelMetadata m;
  std::string binary, error;
  ASSERT_TRUE(readArtifact(path, m, binary, error)) << error;
  EXPECT_EQ(binary, kPtx);

  // Version 1 artifacts on disk still load.
  dir.write("k80.ptx",
            ".version 8.0\n.visible .entry attn_kernel_kernel(\n)\n");
  path = dir.write("v1.json", kVersion1);
  ASSERT_TRUE(readArtifact(path, m, binary, error)) << error;
  EXPECT_EQ(m.kernels.size(), 1u);
}

// A split artifact's PTX defines every kernel; the merge kernel's name
// extends the first's, which alone is not enough.
TEST(CudaArtifact, EveryKernelNeedsItsEntry) {
  TempDir dir;
  std::string path = dir.write("k.json", writeMetadata(splitMetadata()));
  KernelMetadata m;
  std::string binary, error;
  dir.write("k.ptx", ".version 8.0\n.visible .entry attn_kernel(\n)\n{\n}\n"
                     ".visible .entry attn_kernel_0(\n)\n{\n}\n");
  ASSERT_TRUE(readArtifact(path, m, binary, error)) << error;
  EXPECT_EQ(m.kernels.size(), 2u);

  dir.write("k.ptx", ".version 8.0\n.visible .entry attn_kernel_0(\n)\n{\n}\n");
  EXPECT_FALSE(readArtifact(path, m, binary, error));
  EXPECT_NE(error.find("has no PTX entry 'attn_kernel'"), std::string::npos)
      << error;

  dir.write("k.ptx", ".version 8.0\n.visible .entry attn_kernel(\n)\n{\n}\n");
  EXPECT_FALSE(readArtifact(path, m, binary, error));
  EXPECT_NE(error.find("has no PTX entry 'attn_kernel_0'"), std::string::npos)
      << error;

  // An entry at the very end of the text, and one followed by a tab.
  dir.write("k.ptx", ".entry\tattn_kernel\t()\n.entry attn_kernel_0");
  EXPECT_TRUE(readArtifact(path, m, binary, error)) << error;
}

TEST(CudaArtifact, ReportsBadFiles) {
  TempDir dir;
  KernelMetadata m;
  std::string binary, error;
  EXPECT_FALSE(readArtifact(dir.path + "/none.json", m, binary, error));
  EXPECT_NE(error.find("cannot read '" + dir.path + "/none.json'"),
            std::string::npos)
      << error;

  std::string path = dir.write("k.json", writeMetadata(sampleMetadata()));
  EXPECT_FALSE(readArtifact(path, m, binary, error));
  EXPECT_NE(error.find("k.ptx"), std::string::npos) << error;

  dir.write("k.ptx", ".version 8.0\n.visible .entry other()\n{\n}\n");
  EXPECT_FALSE(readArtifact(path, m, binary, error));
  EXPECT_NE(error.find("has no PTX entry 'attn_kernel'"), std::string::npos)
      << error;

  KernelMetadata cubin = sampleMetadata();
  cubin.format = BinaryFormat::Cubin;
  cubin.binaryFile = "k.cubin";
  dir.write("k.cubin", "not an elf");
  path = dir.write("c.json", writeMetadata(cubin));
  EXPECT_FALSE(readArtifact(path, m, binary, error));
  EXPECT_NE(error.find("is not a cubin"), std::string::npos) << error;

  path = dir.write("bad.json", "{\"format\": \"attn-cuda-kernel\"}");
  EXPECT_FALSE(readArtifact(path, m, binary, error));
  EXPECT_NE(error.find(path + ": metadata: missing key 'version'"),
            std::string::npos)
      << error;
}

// The executable's launch path on the fake driver (fake::driver above):
// split-KV workspaces from the executable's own memory pool, and every
// driver error on the way reported with nothing launched.

const auto kStream = reinterpret_cast<cuda::CUstream>(0x5eed);

/// An executable of `m` on `driver` (which must outlive it), with the fake
/// driver's record reset first.
std::unique_ptr<Executable> fakeExecutable(const Driver &driver,
                                           const KernelMetadata &m) {
  fake::reset(m);
  std::unique_ptr<Executable> exe;
  std::string error;
  EXPECT_EQ(createExecutableWithDriver(driver, m, kPtx, exe, error), ATTN_OK)
      << error;
  return exe;
}

/// The calls the fake driver recorded from index `from` on.
std::vector<std::string> callsFrom(size_t from) {
  std::vector<std::string> calls = fake::data().calls;
  return std::vector<std::string>(calls.begin() + std::min(from, calls.size()),
                                  calls.end());
}

/// A decode launch the runtime splits (B = 1, Hq = 8, Sq = 1, Skv = 4096:
/// 8 workgroups unsplit on 132 multiprocessors) on kStream.
KernelArgs splitArgs() {
  KernelArgs a = argsOfShape(1, 8, 1, 4096);
  a.stream = kStream;
  return a;
}

/// A launch whose query tiles fill the GPU, so it runs unsplit.
KernelArgs unsplitArgs() {
  KernelArgs a = argsOfShape(2, 8, 4096, 4096);
  a.stream = kStream;
  return a;
}

TEST(CudaPool, SplitLaunchAllocatesFromItsOwnPool) {
  KernelMetadata m = splitMetadata();
  std::unique_ptr<Executable> exe = fakeExecutable(fake::driver(), m);
  ASSERT_TRUE(exe);
  // Created by the first launch that needs it, not with the executable.
  EXPECT_EQ(fake::data().poolsCreated, 0);
  size_t mark = fake::data().calls.size();

  KernelArgs a = splitArgs();
  int64_t splits = chooseKvSplits(m, a, 132);
  ASSERT_GT(splits, 1);
  std::vector<WorkspaceLayout> layouts;
  uint64_t total = 0;
  std::string error;
  ASSERT_TRUE(layoutWorkspaces(m, a, splits, layouts, total, error)) << error;

  ASSERT_EQ(exe->run(a, error), ATTN_OK) << error;
  EXPECT_EQ(callsFrom(mark),
            (std::vector<std::string>{
                "cuDeviceGetAttribute(115)", "cuMemPoolCreate",
                "cuMemPoolSetAttribute", "cuMemAllocFromPoolAsync",
                "cuLaunchKernel(attn_kernel)", "cuLaunchKernel(attn_kernel_0)",
                "cuMemFreeAsync"}));
  fake::Data d = fake::data();
  // Device memory of the executable's device, no IPC handles, nothing else
  // set.
  EXPECT_EQ(d.props.allocType, cuda::CU_MEM_ALLOCATION_TYPE_PINNED);
  EXPECT_EQ(d.props.handleTypes, cuda::CU_MEM_HANDLE_TYPE_NONE);
  EXPECT_EQ(d.props.location.type, cuda::CU_MEM_LOCATION_TYPE_DEVICE);
  EXPECT_EQ(d.props.location.id, 0);
  EXPECT_EQ(d.props.win32SecurityAttributes, nullptr);
  EXPECT_EQ(d.props.maxSize, 0u);
  EXPECT_EQ(d.props.usage, 0);
  for (unsigned char byte : d.props.reserved)
    EXPECT_EQ(byte, 0);
  // Freed memory stays in the pool.
  EXPECT_EQ(d.poolAttribute, cuda::CU_MEMPOOL_ATTR_RELEASE_THRESHOLD);
  EXPECT_EQ(d.poolValue, UINT64_MAX);
  // One allocation for both workspaces, from that pool, on the caller's
  // stream, freed on it.
  EXPECT_EQ(d.allocPool, fake::kPool);
  EXPECT_EQ(d.allocBytes, total);
  EXPECT_EQ(d.allocStream, kStream);
  EXPECT_EQ(d.freed, fake::kBase);
  EXPECT_EQ(d.freeStream, kStream);
  EXPECT_EQ(d.depth, 0) << "context pushes and pops unbalanced";
  // Each kernel's parameters are what packParams gives with the
  // workspaces' addresses in the allocation.
  std::vector<uint64_t> addresses = {fake::kBase + layouts[0].offset,
                                     fake::kBase + layouts[1].offset};
  ASSERT_EQ(d.launches.size(), 2u);
  for (size_t i = 0; i < 2; ++i) {
    SCOPED_TRACE("kernel " + std::to_string(i));
    const Kernel &k = m.kernels[i];
    EXPECT_EQ(d.launches[i].entry, k.entry);
    EXPECT_EQ(d.launches[i].stream, kStream);
    unsigned grid[3];
    ASSERT_TRUE(computeGrid(k, a, splits, grid, error)) << error;
    EXPECT_EQ(std::vector<unsigned>(grid, grid + 3),
              std::vector<unsigned>(d.launches[i].grid, d.launches[i].grid + 3));
    PackedParams p;
    ASSERT_TRUE(packParams(m, k, a, splits, addresses, p, error)) << error;
    EXPECT_EQ(d.launches[i].params, values(p));
  }

  // Later launches reuse the pool.
  mark = fake::data().calls.size();
  ASSERT_EQ(exe->run(a, error), ATTN_OK) << error;
  EXPECT_EQ(callsFrom(mark),
            (std::vector<std::string>{
                "cuMemAllocFromPoolAsync", "cuLaunchKernel(attn_kernel)",
                "cuLaunchKernel(attn_kernel_0)", "cuMemFreeAsync"}));
  EXPECT_EQ(fake::data().poolsCreated, 1);

  // Destroyed with the executable, before the module goes.
  mark = fake::data().calls.size();
  exe.reset();
  EXPECT_EQ(callsFrom(mark),
            (std::vector<std::string>{"cuMemPoolDestroy", "cuModuleUnload",
                                      "cuDevicePrimaryCtxRelease"}));
  EXPECT_EQ(fake::data().depth, 0);
}

TEST(CudaPool, UnsplitLaunchNeedsNoPool) {
  KernelMetadata m = splitMetadata();
  std::unique_ptr<Executable> exe = fakeExecutable(fake::driver(), m);
  ASSERT_TRUE(exe);
  size_t mark = fake::data().calls.size();
  KernelArgs a = unsplitArgs();
  ASSERT_EQ(chooseKvSplits(m, a, 132), 1);
  std::string error;
  ASSERT_EQ(exe->run(a, error), ATTN_OK) << error;
  EXPECT_EQ(callsFrom(mark),
            std::vector<std::string>{"cuLaunchKernel(attn_kernel)"});
  PackedParams p;
  ASSERT_TRUE(packParams(m, m.kernels[0], a, 1, {0, 0}, p, error)) << error;
  EXPECT_EQ(fake::data().launches.at(0).params, values(p));
  mark = fake::data().calls.size();
  exe.reset();
  EXPECT_EQ(callsFrom(mark),
            (std::vector<std::string>{"cuModuleUnload",
                                      "cuDevicePrimaryCtxRelease"}));
}

// A launch runs the alternative its Sq selects, with that alternative's
// split count, and allocates only the workspaces its kernels read.
TEST(CudaPool, LaunchRunsTheAlternativeOfItsSq) {
  KernelMetadata m = alternativesMetadata();
  std::unique_ptr<Executable> exe = fakeExecutable(fake::driver(), m);
  ASSERT_TRUE(exe);
  std::string error;
  struct Case {
    KernelArgs args;
    std::vector<std::string> launched;
    std::vector<bool> used; // partial_out, partial_lse, then _packed
  } cases[] = {
      // Decode at Sq = 1: the packed kernels, 17 splits.
      {gqaArgs(2, 32, 8, 1, 100000),
       {"k_sq1_split_kv", "k_sq1_split_kv_merge"},
       {false, false, true, true}},
      // Speculative decoding at Sq = 4 and 16: the 32-row kernels.
      {gqaArgs(2, 32, 8, 4, 100000),
       {"k_sq2to16_split_kv", "k_sq2to16_split_kv_merge"},
       {true, true, false, false}},
      {gqaArgs(2, 32, 8, 16, 100000),
       {"k_sq2to16_split_kv", "k_sq2to16_split_kv_merge"},
       {true, true, false, false}},
      // Sq = 17 and more: the 128-row kernels; split when they do not fill
      // the GPU, unsplit (nothing allocated) when they do.
      {gqaArgs(1, 4, 2, 17, 100000),
       {"k_split_kv", "k_split_kv_merge"},
       {true, true, false, false}},
      {gqaArgs(2, 32, 8, 4096, 4096), {"k"}, {}},
      // Decode whose packed tiles fill the GPU: unsplit.
      {gqaArgs(132, 8, 8, 1, 4096), {"k_sq1"}, {}},
  };
  for (Case &c : cases) {
    SCOPED_TRACE("Sq " + std::to_string(c.args.q.shape[2]));
    fake::edit([](fake::Data &d) { d.launches.clear(); d.allocBytes = 0; });
    int64_t splits = chooseKvSplits(m, c.args, 132);
    ASSERT_EQ(exe->run(c.args, error), ATTN_OK) << error;
    fake::Data d = fake::data();
    std::vector<std::string> launched;
    for (const fake::LaunchRecord &l : d.launches)
      launched.push_back(l.entry);
    EXPECT_EQ(launched, c.launched);
    if (c.used.empty()) {
      EXPECT_EQ(splits, 1);
      EXPECT_EQ(d.allocBytes, 0u);
      continue;
    }
    std::vector<WorkspaceLayout> layouts;
    uint64_t total = 0;
    ASSERT_TRUE(layoutWorkspaces(m, c.args, splits, layouts, total, error,
                                 &c.used))
        << error;
    EXPECT_EQ(d.allocBytes, total);
    // The used workspaces, and only those, got bytes.
    for (size_t w = 0; w < layouts.size(); ++w)
      EXPECT_EQ(layouts[w].bytes > 0, bool(c.used[w])) << w;
    // The launched kernels were given the addresses of their workspaces
    // in the allocation, and the grids of this split count.
    std::vector<uint64_t> addresses;
    for (size_t w = 0; w < layouts.size(); ++w)
      addresses.push_back(c.used[w] ? fake::kBase + layouts[w].offset : 0);
    for (size_t i = 0; i < d.launches.size(); ++i) {
      const Kernel *k = nullptr;
      for (const Kernel &x : m.kernels)
        if (x.entry == d.launches[i].entry)
          k = &x;
      ASSERT_TRUE(k);
      PackedParams p;
      ASSERT_TRUE(packParams(m, *k, c.args, splits, addresses, p, error))
          << error;
      EXPECT_EQ(d.launches[i].params, values(p)) << k->entry;
      unsigned grid[3];
      ASSERT_TRUE(computeGrid(*k, c.args, splits, grid, error)) << error;
      EXPECT_EQ(std::vector<unsigned>(grid, grid + 3),
                std::vector<unsigned>(d.launches[i].grid,
                                      d.launches[i].grid + 3))
          << k->entry;
    }
  }
  EXPECT_EQ(fake::data().depth, 0);
}

TEST(CudaPool, DriverWithoutPoolEntryPoints) {
  // A driver before CUDA 11.2 lacks them all; any one missing is enough.
  using Slot = void (*)(Driver &);
  std::pair<const char *, Slot> missing[] = {
      {"cuMemPoolCreate", [](Driver &d) { d.cuMemPoolCreate = nullptr; }},
      {"cuMemPoolDestroy", [](Driver &d) { d.cuMemPoolDestroy = nullptr; }},
      {"cuMemPoolSetAttribute",
       [](Driver &d) { d.cuMemPoolSetAttribute = nullptr; }},
      {"cuMemAllocFromPoolAsync",
       [](Driver &d) { d.cuMemAllocFromPoolAsync = nullptr; }},
      {"cuMemFreeAsync", [](Driver &d) { d.cuMemFreeAsync = nullptr; }}};
  for (auto &[name, drop] : missing) {
    SCOPED_TRACE(name);
    Driver driver = fake::driver();
    drop(driver);
    EXPECT_FALSE(driver.hasMemoryPools());
    KernelMetadata m = splitMetadata();
    std::unique_ptr<Executable> exe = fakeExecutable(driver, m);
    ASSERT_TRUE(exe);
    size_t mark = fake::data().calls.size();
    std::string error;
    EXPECT_EQ(exe->run(splitArgs(), error), ATTN_ERROR_UNSUPPORTED);
    EXPECT_NE(error.find(std::string("the CUDA driver lacks ") + name),
              std::string::npos)
        << error;
    EXPECT_NE(error.find("set the spec's kv_splits to 1"), std::string::npos)
        << error;
    EXPECT_TRUE(callsFrom(mark).empty());
    // Unsplit launches need no workspace.
    EXPECT_EQ(exe->run(unsplitArgs(), error), ATTN_OK) << error;
    EXPECT_EQ(fake::data().launches.size(), 1u);
  }
  Driver none = fake::driver();
  none.cuMemPoolCreate = nullptr;
  none.cuMemAllocFromPoolAsync = nullptr;
  std::unique_ptr<Executable> exe = fakeExecutable(none, splitMetadata());
  ASSERT_TRUE(exe);
  std::string error;
  EXPECT_EQ(exe->run(splitArgs(), error), ATTN_ERROR_UNSUPPORTED);
  EXPECT_NE(error.find("lacks cuMemPoolCreate, cuMemAllocFromPoolAsync "
                       "(stream-ordered memory pools, CUDA 11.2+)"),
            std::string::npos)
      << error;
}

TEST(CudaPool, DeviceWithoutPools) {
  std::unique_ptr<Executable> exe =
      fakeExecutable(fake::driver(), splitMetadata());
  ASSERT_TRUE(exe);
  fake::edit([](fake::Data &d) { d.poolsSupported = 0; });
  size_t mark = fake::data().calls.size();
  std::string error;
  EXPECT_EQ(exe->run(splitArgs(), error), ATTN_ERROR_UNSUPPORTED);
  EXPECT_NE(error.find("device 0 does not support stream-ordered memory pools "
                       "(CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED is 0)"),
            std::string::npos)
      << error;
  EXPECT_EQ(callsFrom(mark),
            std::vector<std::string>{"cuDeviceGetAttribute(115)"});
  EXPECT_EQ(fake::data().depth, 0);
}

TEST(CudaPool, PoolCreationErrors) {
  struct Case {
    const char *call;
    cuda::CUresult result;
    attn_status status;
    const char *message;
    std::vector<std::string> calls;
  } cases[] = {
      {"cuDeviceGetAttribute(115)", 1, ATTN_ERROR_BACKEND,
       "cuda: cuDeviceGetAttribute failed: CUDA_ERROR_INVALID_VALUE (1, fake) "
       "asking for CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED (the split-KV "
       "workspace pool of device 0)",
       {"cuDeviceGetAttribute(115)"}},
      {"cuMemPoolCreate", 2, ATTN_ERROR_BACKEND,
       "cuda: cuMemPoolCreate failed: CUDA_ERROR_OUT_OF_MEMORY (2, fake) (the "
       "split-KV workspace pool of device 0)",
       {"cuDeviceGetAttribute(115)", "cuMemPoolCreate"}},
      {"cuMemPoolCreate", 801, ATTN_ERROR_UNSUPPORTED,
       "cuMemPoolCreate failed: CUDA_ERROR_NOT_SUPPORTED",
       {"cuDeviceGetAttribute(115)", "cuMemPoolCreate"}},
      // The pool just created goes again.
      {"cuMemPoolSetAttribute", 1, ATTN_ERROR_BACKEND,
       "cuda: cuMemPoolSetAttribute failed: CUDA_ERROR_INVALID_VALUE (1, "
       "fake) setting CU_MEMPOOL_ATTR_RELEASE_THRESHOLD (the split-KV "
       "workspace pool of device 0)",
       {"cuDeviceGetAttribute(115)", "cuMemPoolCreate", "cuMemPoolSetAttribute",
        "cuMemPoolDestroy"}},
  };
  for (const Case &c : cases) {
    SCOPED_TRACE(std::string(c.call) + " -> " + std::to_string(c.result));
    std::unique_ptr<Executable> exe =
        fakeExecutable(fake::driver(), splitMetadata());
    ASSERT_TRUE(exe);
    fake::edit([&](fake::Data &d) { d.fail[c.call] = c.result; });
    size_t mark = fake::data().calls.size();
    std::string error;
    EXPECT_EQ(exe->run(splitArgs(), error), c.status);
    EXPECT_NE(error.find(c.message), std::string::npos) << error;
    EXPECT_EQ(callsFrom(mark), c.calls); // nothing allocated or launched
    EXPECT_EQ(fake::data().depth, 0);
    // Not remembered: the next launch tries again.
    fake::edit([](fake::Data &d) { d.fail.clear(); });
    EXPECT_EQ(exe->run(splitArgs(), error), ATTN_OK) << error;
    EXPECT_EQ(fake::data().launches.size(), 2u);
    mark = fake::data().calls.size();
    exe.reset();
    EXPECT_EQ(callsFrom(mark).front(), "cuMemPoolDestroy");
    fake::Data d = fake::data();
    EXPECT_EQ(d.poolsCreated, d.poolsDestroyed);
  }
}

TEST(CudaPool, AllocationAndLaunchErrors) {
  KernelMetadata m = splitMetadata();
  int64_t splits = chooseKvSplits(m, splitArgs(), 132);
  std::string nSplits = std::to_string(splits) + " splits";
  std::vector<WorkspaceLayout> layouts;
  uint64_t total = 0;
  std::string error;
  ASSERT_TRUE(layoutWorkspaces(m, splitArgs(), splits, layouts, total, error));
  struct Case {
    const char *call;
    cuda::CUresult result;
    attn_status status;
    std::string message;
    std::vector<std::string> calls;
  } cases[] = {
      // Nothing launched, nothing to free.
      {"cuMemAllocFromPoolAsync", 2, ATTN_ERROR_BACKEND,
       "cuda: cuMemAllocFromPoolAsync failed: CUDA_ERROR_OUT_OF_MEMORY (2, "
       "fake) allocating " +
           std::to_string(total) + " bytes of split-KV workspace (" + nSplits +
           ")",
       {"cuMemAllocFromPoolAsync"}},
      {"cuMemAllocFromPoolAsync", 801, ATTN_ERROR_UNSUPPORTED,
       "cuMemAllocFromPoolAsync failed: CUDA_ERROR_NOT_SUPPORTED",
       {"cuMemAllocFromPoolAsync"}},
      // A failed launch stops the next; the workspace is freed regardless.
      {"cuLaunchKernel(attn_kernel)", 701, ATTN_ERROR_BACKEND,
       "cuda: cuLaunchKernel failed: CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES (701, "
       "fake) (entry 'attn_kernel', grid 1x" +
           std::to_string(8 * splits) + "x1, block 128x1x1, 65536 B shared, " +
           nSplits + ")",
       {"cuMemAllocFromPoolAsync", "cuLaunchKernel(attn_kernel)",
        "cuMemFreeAsync"}},
      {"cuLaunchKernel(attn_kernel_0)", 701, ATTN_ERROR_BACKEND,
       "(entry 'attn_kernel_0', grid 1x8x1, block 256x1x1, 0 B shared, " +
           nSplits + ")",
       {"cuMemAllocFromPoolAsync", "cuLaunchKernel(attn_kernel)",
        "cuLaunchKernel(attn_kernel_0)", "cuMemFreeAsync"}},
      {"cuMemFreeAsync", 1, ATTN_ERROR_BACKEND,
       "cuda: cuMemFreeAsync failed: CUDA_ERROR_INVALID_VALUE (1, fake) "
       "freeing the split-KV workspace",
       {"cuMemAllocFromPoolAsync", "cuLaunchKernel(attn_kernel)",
        "cuLaunchKernel(attn_kernel_0)", "cuMemFreeAsync"}},
  };
  for (const Case &c : cases) {
    SCOPED_TRACE(std::string(c.call) + " -> " + std::to_string(c.result));
    std::unique_ptr<Executable> exe = fakeExecutable(fake::driver(), m);
    ASSERT_TRUE(exe);
    // The pool exists (first launch), then the call fails.
    ASSERT_EQ(exe->run(splitArgs(), error), ATTN_OK) << error;
    fake::edit([&](fake::Data &d) { d.fail[c.call] = c.result; });
    size_t mark = fake::data().calls.size();
    EXPECT_EQ(exe->run(splitArgs(), error), c.status);
    EXPECT_NE(error.find(c.message), std::string::npos) << error;
    EXPECT_EQ(callsFrom(mark), c.calls);
    EXPECT_EQ(fake::data().depth, 0);
  }
}

TEST(CudaPool, BadInputTouchesNothing) {
  std::unique_ptr<Executable> exe =
      fakeExecutable(fake::driver(), splitMetadata());
  ASSERT_TRUE(exe);
  size_t mark = fake::data().calls.size();
  KernelArgs a = splitArgs();
  a.q.data = reinterpret_cast<void *>(0x1008); // not 16-byte aligned
  std::string error;
  EXPECT_EQ(exe->run(a, error), ATTN_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(error.find("kernel 'attn_kernel': tensor 'q'"), std::string::npos)
      << error;
  EXPECT_TRUE(callsFrom(mark).empty());
  EXPECT_EQ(fake::data().depth, 0);
}

TEST(CudaPool, StridesOfExtentOneDimensionsNeedNoAlignment) {
  // PyTorch gives a dimension of extent 1 any stride (1 after a transpose
  // of a [1, S, H, D] tensor): it is only indexed at 0, so the 16-byte
  // rule does not apply to it; a longer dimension's stride still counts.
  std::unique_ptr<Executable> exe =
      fakeExecutable(fake::driver(), splitMetadata());
  ASSERT_TRUE(exe);
  KernelArgs a = splitArgs();
  std::string error;
  for (TensorView *t : {&a.q, &a.k, &a.v}) {
    if (t->shape[0] != 1)
      GTEST_SKIP() << "splitArgs() has B = " << t->shape[0];
    t->strides[0] = 1;
  }
  EXPECT_EQ(exe->run(a, error), ATTN_OK) << error;
  a.q.strides[1] += 1; // Hq > 1: an odd head stride is refused
  ASSERT_GT(a.q.shape[1], 1);
  EXPECT_EQ(exe->run(a, error), ATTN_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(error.find("tensor 'q'"), std::string::npos) << error;
}

TEST(CudaPool, ConcurrentLaunchesCreateOnePool) {
  std::unique_ptr<Executable> exe =
      fakeExecutable(fake::driver(), splitMetadata());
  ASSERT_TRUE(exe);
  constexpr int kThreads = 4, kRuns = 25;
  std::vector<std::thread> threads;
  std::vector<int> failures(kThreads, 0);
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back([&, t] {
      for (int i = 0; i < kRuns; ++i) {
        std::string error;
        failures[t] += exe->run(splitArgs(), error) != ATTN_OK;
      }
    });
  for (std::thread &t : threads)
    t.join();
  for (int f : failures)
    EXPECT_EQ(f, 0);
  fake::Data d = fake::data();
  EXPECT_EQ(d.poolsCreated, 1);
  EXPECT_EQ(d.allocations, kThreads * kRuns);
  EXPECT_EQ(d.frees, kThreads * kRuns);
  EXPECT_EQ(d.launches.size(), 2u * kThreads * kRuns);
}

TEST(CudaPool, KernelCountIsChecked) {
  KernelMetadata m = splitMetadata();
  while (m.kernels.size() < 17)
    m.kernels.push_back(m.kernels.back());
  fake::reset(m);
  std::unique_ptr<Executable> exe;
  std::string error;
  EXPECT_EQ(createExecutableWithDriver(fake::driver(), m, kPtx, exe, error),
            ATTN_ERROR_INVALID_ARGUMENT);
  EXPECT_FALSE(exe);
  EXPECT_NE(error.find("the kernel metadata has 17 kernels; expected 1 to 16"),
            std::string::npos)
      << error;
  std::vector<std::string> calls = fake::data().calls;
  EXPECT_EQ(std::count(calls.begin(), calls.end(), "cuModuleLoadDataEx"), 0);
  EXPECT_EQ(calls.back(), "cuDevicePrimaryCtxRelease");
  EXPECT_EQ(fake::data().depth, 0);
}

// Metadata built in memory (the JIT's) is held to the same launch
// conditions as a file's: a gap in the Sq ranges is refused before the
// module is loaded.
TEST(CudaPool, LaunchConditionsAreCheckedAtCreation) {
  KernelMetadata m = alternativesMetadata();
  m.kernels.resize(6); // no kernel for Sq >= 17
  fake::reset(m);
  std::unique_ptr<Executable> exe;
  std::string error;
  EXPECT_EQ(createExecutableWithDriver(fake::driver(), m, kPtx, exe, error),
            ATTN_ERROR_INVALID_ARGUMENT);
  EXPECT_FALSE(exe);
  EXPECT_NE(error.find("cuda: metadata: no kernel runs when Sq is in [17, "
                       "inf)"),
            std::string::npos)
      << error;
  std::vector<std::string> calls = fake::data().calls;
  EXPECT_EQ(std::count(calls.begin(), calls.end(), "cuModuleLoadDataEx"), 0);
  EXPECT_EQ(fake::data().depth, 0);
}

// loadDriverLibrary on stand-ins for libcuda.so.1 (FakeCudaDriver.c): the
// memory-pool entry points are found where exported and null where not;
// a missing required one is an error.
TEST(CudaDriver, ResolvesMemoryPoolEntryPoints) {
  Driver d;
  std::string error;
  ASSERT_TRUE(loadDriverLibrary(ATTN_FAKE_CUDA_ALL, d, error)) << error;
  EXPECT_TRUE(d.hasMemoryPools());
  EXPECT_TRUE(d.cuLaunchKernel);
  // Each pointer reaches its own symbol (the stand-ins answer 1001..1005).
  cuda::CUdeviceptr p = 0;
  EXPECT_EQ(d.cuMemPoolCreate(nullptr, nullptr), 1001);
  EXPECT_EQ(d.cuMemPoolDestroy(nullptr), 1002);
  EXPECT_EQ(d.cuMemPoolSetAttribute(nullptr, 0, nullptr), 1003);
  EXPECT_EQ(d.cuMemAllocFromPoolAsync(&p, 0, nullptr, nullptr), 1004);
  EXPECT_EQ(d.cuMemFreeAsync(0, nullptr), 1005);

  ASSERT_TRUE(loadDriverLibrary(ATTN_FAKE_CUDA_NO_POOLS, d, error)) << error;
  EXPECT_FALSE(d.hasMemoryPools());
  EXPECT_FALSE(d.cuMemPoolCreate);
  EXPECT_FALSE(d.cuMemPoolDestroy);
  EXPECT_FALSE(d.cuMemPoolSetAttribute);
  EXPECT_FALSE(d.cuMemAllocFromPoolAsync);
  EXPECT_FALSE(d.cuMemFreeAsync);
  EXPECT_TRUE(d.cuLaunchKernel);

  EXPECT_FALSE(loadDriverLibrary(ATTN_FAKE_CUDA_NO_LAUNCH, d, error));
  EXPECT_NE(error.find("the CUDA driver library lacks cuLaunchKernel"),
            std::string::npos)
      << error;
  EXPECT_FALSE(d.cuInit); // nothing half-resolved is left behind

  EXPECT_FALSE(loadDriverLibrary("/nonexistent/libcuda.so.1", d, error));
  EXPECT_NE(error.find("cannot load the CUDA driver (/nonexistent/libcuda.so.1)"),
            std::string::npos)
      << error;
}

// main() points the driver at a library that does not exist, so these run
// the same on machines with and without a GPU.
TEST(CudaDriver, UnavailableIsReportedCleanly) {
  std::string error;
  EXPECT_EQ(driverAvailable(error), ATTN_ERROR_UNAVAILABLE);
  EXPECT_NE(error.find("cannot load the CUDA driver (/nonexistent/libcuda.so.1)"),
            std::string::npos)
      << error;

  std::unique_ptr<Executable> exe;
  EXPECT_EQ(createExecutable(sampleMetadata(), kPtx, exe, error),
            ATTN_ERROR_UNAVAILABLE);
  EXPECT_FALSE(exe);
  EXPECT_EQ(createExecutable(splitMetadata(), kPtx, exe, error),
            ATTN_ERROR_UNAVAILABLE);
  EXPECT_FALSE(exe);
}

TEST(CudaDriver, AotArtifactWithoutDriver) {
  TempDir dir;
  dir.write("k.ptx", kPtx);
  std::string path = dir.write("k.json", writeMetadata(sampleMetadata()));

  EXPECT_EQ(attn_cuda_load_artifact(nullptr, nullptr),
            ATTN_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(attn_last_error()).find("metadata_path is NULL"),
            std::string::npos);

  attn_spec spec;
  ASSERT_EQ(attn_cuda_load_artifact(path.c_str(), &spec), ATTN_OK)
      << attn_last_error();
  EXPECT_EQ(spec.seq_q, 200);
  EXPECT_EQ(spec.heads_kv, 2);

  attn_context *ctx;
  ASSERT_EQ(attn_context_create(&ctx), ATTN_OK);
  EXPECT_EQ(attn_target_available(ctx, ATTN_TARGET_CUDA), ATTN_ERROR_UNAVAILABLE);
  EXPECT_NE(std::string(attn_last_error()).find("cannot load the CUDA driver"),
            std::string::npos)
      << attn_last_error();
  attn_kernel *kernel = nullptr;
  EXPECT_EQ(attn_compile(ctx, &spec, ATTN_TARGET_CUDA, &kernel),
            ATTN_ERROR_UNAVAILABLE);
  EXPECT_NE(std::string(attn_last_error()).find("cannot load the CUDA driver"),
            std::string::npos)
      << attn_last_error();

  // A spec no artifact was loaded for is unsupported, not unavailable.
  spec.seq_q = 100;
  EXPECT_EQ(attn_compile(ctx, &spec, ATTN_TARGET_CUDA, &kernel),
            ATTN_ERROR_UNSUPPORTED);
  EXPECT_NE(std::string(attn_last_error()).find("no loaded artifact matches"),
            std::string::npos)
      << attn_last_error();
  attn_context_destroy(ctx);
}

} // namespace

int main(int argc, char **argv) {
  setenv("ATTN_CUDA_DRIVER", "/nonexistent/libcuda.so.1", 1);
  ::testing::InitGoogleTest(&argc, argv);
  return RUN_ALL_TESTS();
}
