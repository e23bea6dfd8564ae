//===- CPUCompiler.cpp - the runtime's cpu target: pipeline + ExecutionEngine -===//
#include "CPUAllocator.h"
#include "RuntimeLibraries.h"
#include "attn/Dialect/Attn/Transforms/Passes.h"
#include "attn/Dialect/Attn/Transforms/Transforms.h"
#include "attn/InitAll.h"
#include "attn/JIT/JIT.h"
#include "attn/Model/PerfModel.h"
#include "attn/Pipelines/Pipelines.h"
#include "attn/runtime/Checked.h"
#include "attn/runtime/KeyChunks.h"
#include "attn/runtime/PackedDecode.h"
#include "attn/runtime/Backend.h"

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/ExecutionEngine/ExecutionEngine.h"
#include "mlir/ExecutionEngine/OptUtils.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Target/LLVMIR/Dialect/All.h"

#include "llvm/ExecutionEngine/Orc/JITTargetMachineBuilder.h"
#include "llvm/Support/TargetSelect.h"
#include "llvm/TargetParser/Host.h"
#include "llvm/Support/raw_ostream.h"

#include <cstdlib>
#include <dlfcn.h>
#include <unistd.h>
#include <string>
#include <functional>
#include <map>
#include <memory>
#include <atomic>
#include <mutex>
#include <thread>
#include <vector>

using namespace mlir;

namespace {

/// The layout of a ranked memref descriptor as the LLVM lowering passes it.
template <int Rank>
struct MemRefDescriptor {
  void *allocated;
  void *aligned;
  int64_t offset;
  int64_t sizes[Rank];
  int64_t strides[Rank];
};

template <int Rank>
MemRefDescriptor<Rank> describe(const ::attn::TensorView &t) {
  MemRefDescriptor<Rank> d;
  d.allocated = d.aligned = t.data;
  d.offset = 0;
  for (int i = 0; i < Rank; ++i) {
    d.sizes[i] = t.shape[i];
    d.strides[i] = t.strides[i];
  }
  return d;
}

/// One JIT-compiled kernel: the engine that owns the code and its entry.
struct CompiledKernel {
  std::unique_ptr<ExecutionEngine> engine;
  void (*fn)(void **) = nullptr;
};

attn_status compileKernel(const attn_spec &spec, std::string &source,
                          CompiledKernel &kernel, std::string &error);

int64_t hostParallelism() {
  return static_cast<int64_t>(std::max(1u, std::thread::hardware_concurrency()));
}

/// Whether the host CPU has feature `name` (LLVM's spelling).
bool hostHas(llvm::StringRef name) {
  static const llvm::StringMap<bool> features =
      llvm::sys::getHostCPUFeatures();
  auto it = features.find(name);
  return it != features.end() && it->second;
}

/// f32 lanes of the host's widest vector registers, for the register tiles
/// of attn-cpu-vectorize-tiles (the code is generated for the host).
int64_t hostVectorLanes() {
  if (hostHas("avx512f"))
    return 16;
  if (hostHas("avx"))
    return 8;
  return 4;
}

/// The host's per-core L2 cache in bytes: ATTN_CPU_L2_BYTES where set (a
/// VM that misreports its caches, or tests), else sysconf's, else 256 KiB.
int64_t hostL2Bytes() {
  if (const char *env = std::getenv("ATTN_CPU_L2_BYTES")) {
    char *end = nullptr;
    long long v = std::strtoll(env, &end, 10);
    if (end != env && *end == '\0' && v > 0)
      return static_cast<int64_t>(v);
  }
  long v = sysconf(_SC_LEVEL2_CACHE_SIZE);
  return v > 0 ? static_cast<int64_t>(v) : int64_t{256} << 10;
}

/// The default block_q = block_kv of the cpu tiles for head dims `d`,
/// `dv`: the largest of 64, 32, 16 whose f32 working set of one key step
/// (the Q tile and accumulator, block x (d + dv); the K and V panels, the
/// same; the scores, block x block) fits half the per-core L2, so the
/// panels a key step streams stay cached while the tile is reused. 64 is
/// the cap: on the 2-core Zen 5 VM (1 MiB L2) 64 x 64 measured best of
/// 32-128 x 32-256 at D 64 and 128 (bench/results/cpu-blocks-2026-11-27),
/// the larger tiles 10-35% slower.
int64_t defaultCpuBlock(int64_t d, int64_t dv, int64_t l2Bytes) {
  for (int64_t block : {64, 32}) {
    const int64_t bytes = 4 * (2 * block * (d + dv) + block * block);
    if (2 * bytes <= l2Bytes)
      return block;
  }
  return 16;
}

/// The split count of a kernel whose spec leaves it automatic
/// (kv_splits 0), for a launch of these extents: the performance model's
/// pick for the host's workers (attn::model::cpuKvSplits), which also
/// splits where whole tiles would leave cores idle in the last round
/// (3 or 5 tiles on 2 cores measured 13-30% faster split in 2;
/// mlir::attn::chooseKvSplits splits only below one tile per worker).
int64_t autoCpuKvSplits(const attn_spec &spec, int64_t batch, int64_t hq,
                        int64_t hkv, int64_t sq, int64_t skv, int64_t blockQ,
                        int64_t blockKv) {
  namespace m = ::attn::model;
  m::Problem p;
  p.batch = batch;
  p.headsQ = hq;
  p.headsKv = hkv;
  p.seqQ = sq;
  p.seqKv = skv;
  p.headDim = spec.head_dim;
  p.valueDim = spec.value_dim;
  p.dtype = m::modelDType(spec.dtype);
  p.causal = spec.causal != 0;
  p.mask = m::modelMask(spec.mask);
  p.dropout = spec.dropout_p;
  p.lse = spec.return_lse != 0;
  if (batch < 1 || hq < 1 || hkv < 1 || sq < 1 || skv < 1)
    return 1;
  return std::max<int64_t>(
      1, m::cpuKvSplits(p, blockQ, blockKv, hostParallelism()));
}

/// Whether bf16 Q·Kᵀ tiles use AVX512-BF16 dot products: where the host
/// has them, unless ATTN_CPU_BF16_DOT=0 (the f32 FMA micro-kernel, for
/// comparing the two in one run).
bool hostBf16Dot() {
  const char *env = std::getenv("ATTN_CPU_BF16_DOT");
  if (env && std::string(env) == "0")
    return false;
  return hostVectorLanes() == 16 && hostHas("avx512bf16");
}

class CPUExecutable final : public ::attn::Executable {
public:
  CPUExecutable(CompiledKernel kernel, const attn_spec &spec)
      : kernel(std::move(kernel)), spec(spec), defaultBlock(blockFor(spec)) {
    const bool tiled = spec.variant == ATTN_VARIANT_DEFAULT;
    const bool dynamic =
        spec.batch == ATTN_DYNAMIC || spec.heads_q == ATTN_DYNAMIC ||
        spec.seq_q == ATTN_DYNAMIC || spec.seq_kv == ATTN_DYNAMIC;
    // With dynamic shapes the tiling pass cannot pick split-KV; when the
    // spec leaves it automatic, the same rule is applied here per launch
    // and a split variant is compiled on first use.
    autoSplit = spec.kv_splits == 0 && tiled && dynamic;
    // A given split count (> 1) with a dynamic key length is clamped per
    // launch to the key blocks there are: the kernel sizes its partials by
    // its split count, so 10^6 splits of 300 keys would allocate for 10^6.
    clampSplits = spec.kv_splits > 1 && tiled && spec.seq_kv == ATTN_DYNAMIC;
    boundedKernel = maxDynamicKvOf(spec) > 0;
    // A dynamic query length or head count can only pack a GQA decode
    // step's heads through a variant for the launch's heads
    // (decodeVariant).
    decodeCandidate = tiled && spec.mask == ATTN_MASK_NONE &&
                      (spec.seq_q == ATTN_DYNAMIC ||
                       spec.heads_q == ATTN_DYNAMIC ||
                       spec.heads_kv == ATTN_DYNAMIC);
  }

  /// The longest dynamic key length the kernel of `spec` is built for
  /// (attn-tile-sdpa's max-dynamic-kv): max(1, kv_splits) chunks of whole
  /// key blocks, so that its split count is static and just covers it
  /// (a count computed from the length at launch cost these kernels
  /// 3-15%). run() sends a longer launch to a variant that covers it. 0
  /// (unbounded) for a static key length and the math variant.
  static int64_t maxDynamicKvOf(const attn_spec &spec) {
    if (spec.variant != ATTN_VARIANT_DEFAULT || spec.seq_kv != ATTN_DYNAMIC)
      return 0;
    const int64_t bc = spec.block_kv > 0 ? spec.block_kv : blockFor(spec);
    const int64_t chunk = bc * std::max<int64_t>(1, ::attn::kMaxChunkKeys / bc);
    // A kv_splits so large that the product overflows: unbounded (the
    // kernel's count then follows the length at launch).
    int64_t bound = 0;
    if (!::attn::checkedMul(std::max<int64_t>(1, spec.kv_splits), chunk, bound))
      return 0;
    return bound;
  }

  attn_status run(const ::attn::KernelArgs &a, std::string &error) override {
    // A GQA decode step of a dynamic-shape kernel runs on a variant whose
    // tiles pack the group's heads (K/V read once per group).
    if (decodeCandidate &&
        ::attn::packsDecodeHeads(a.q.shape[1], a.q.shape[2],
                                     a.k.shape[1], /*masked=*/false,
                                     spec.causal != 0)) {
      CPUExecutable *variant = nullptr;
      if (attn_status st = decodeVariant(a.q.shape[1], a.k.shape[1],
                                         a.q.shape[2], variant, error))
        return st;
      attn_status st = variant->run(a, error);
      lastSplits.store(variant->lastSplits.load(std::memory_order_relaxed),
                       std::memory_order_relaxed);
      return st;
    }
    const int64_t blockQ = spec.block_q > 0 ? spec.block_q : defaultBlock;
    const int64_t blockKv = spec.block_kv > 0 ? spec.block_kv : defaultBlock;
    int64_t n = 0; // the split count of the variant to run; 0: the kernel
    if (autoSplit) {
      n = autoCpuKvSplits(spec, a.q.shape[0], a.q.shape[1], a.k.shape[1],
                          a.q.shape[2], a.k.shape[2], blockQ, blockKv);
      if (n <= 1)
        n = 0;
    } else if (clampSplits) {
      n = mlir::attn::jit::clampKvSplits(spec.kv_splits, a.k.shape[2],
                                         blockKv, /*powerOfTwo=*/true);
      if (n == spec.kv_splits)
        n = 0;
    }
    // Every kernel here covers its count's chunks of at most kMaxChunkKeys
    // keys (maxDynamicKvOf); a longer key length goes to the variant of
    // the next power of two that covers it (few variants over all
    // lengths), which is at least the key-chunk floor.
    if (boundedKernel) {
      const int64_t need = ::attn::minKvSplits(a.k.shape[2], blockKv);
      const int64_t have = n > 0 ? n : std::max<int64_t>(1, spec.kv_splits);
      // (A count the floor set, n == need, is rounded too: one variant per
      // power of two, not per length.)
      if (need > have || (need > 1 && n == need)) {
        int64_t p = 1;
        while (p < std::max(need, have))
          p *= 2;
        n = p == spec.kv_splits ? 0 : p;
      }
    }
    lastSplits.store(splitsRun(a, n, blockQ, blockKv),
                     std::memory_order_relaxed);
    if (n > 0) {
      const CompiledKernel *variant = nullptr;
      if (attn_status st = splitVariant(n, variant, error))
        return st;
      return invoke(*variant, a, error);
    }
    return invoke(kernel, a, error);
  }

  /// The block_q = block_kv a spec that leaves them 0 gets.
  static int64_t blockFor(const attn_spec &spec) {
    return defaultCpuBlock(spec.head_dim,
                           spec.value_dim > 0 ? spec.value_dim : spec.head_dim,
                           hostL2Bytes());
  }

  void kernelInfo(::attn::KernelInfo &info) const override {
    const bool tiled = spec.variant == ATTN_VARIANT_DEFAULT;
    info.variant = tiled ? "tiled" : "math";
    info.device = "host";
    if (tiled) {
      info.blockQ = spec.block_q > 0 ? spec.block_q : defaultBlock;
      info.blockKv = spec.block_kv > 0 ? spec.block_kv : defaultBlock;
    }
    info.kvSplits = lastSplits.load(std::memory_order_relaxed);
  }

private:
  /// The key chunks a launch runs: `n` where run() chose a variant, else
  /// what the kernel's own count comes to (attn-tile-sdpa's rule for a
  /// static shape with kv_splits 0, the clamped count, the key-chunk floor).
  int64_t splitsRun(const ::attn::KernelArgs &a, int64_t n, int64_t blockQ,
                    int64_t blockKv) const {
    if (spec.variant != ATTN_VARIANT_DEFAULT)
      return 1;
    if (n > 0)
      return n;
    const int64_t skv = a.k.shape[2];
    if (spec.kv_splits == 0)
      return autoSplit ? 1
                       : autoCpuKvSplits(spec, a.q.shape[0], a.q.shape[1],
                                         a.k.shape[1], a.q.shape[2], skv,
                                         blockQ, blockKv);
    int64_t given = spec.kv_splits;
    if (given > 1)
      given = mlir::attn::jit::clampKvSplits(given, skv, blockKv,
                                             /*powerOfTwo=*/false);
    return std::max(given, ::attn::minKvSplits(skv, blockKv));
  }


  /// The packed-decode variant of this dynamic-shape kernel for `hq` query
  /// and `hkv` K/V heads: its spec with the query length 1 and those heads
  /// static (so attn-tile-sdpa packs them), compiled on first use; it runs
  /// its own split-KV choice over the rest of the dynamic extents.
  attn_status decodeVariant(int64_t hq, int64_t hkv, int64_t sq,
                            CPUExecutable *&out, std::string &error) {
    std::lock_guard<std::mutex> lock(variantsMutex);
    auto it = decodeVariants.find({hq, hkv, sq});
    if (it == decodeVariants.end()) {
      attn_spec decode = spec;
      decode.seq_q = sq;
      decode.heads_q = hq;
      decode.heads_kv = hkv;
      std::string source;
      CompiledKernel k;
      if (attn_status st = compileKernel(decode, source, k, error))
        return st;
      it = decodeVariants
               .emplace(std::make_tuple(hq, hkv, sq),
                        std::make_unique<CPUExecutable>(std::move(k), decode))
               .first;
    }
    out = it->second.get();
    return ATTN_OK;
  }

  attn_status splitVariant(int64_t n, const CompiledKernel *&out,
                           std::string &error) {
    std::lock_guard<std::mutex> lock(variantsMutex);
    auto it = variants.find(n);
    if (it == variants.end()) {
      attn_spec split = spec;
      split.kv_splits = n;
      std::string source;
      CompiledKernel k;
      if (attn_status st = compileKernel(split, source, k, error))
        return st;
      it = variants.emplace(n, std::move(k)).first;
    }
    out = &it->second;
    return ATTN_OK;
  }

  attn_status invoke(const CompiledKernel &k, const ::attn::KernelArgs &a,
                     std::string &error) const {
    auto q = describe<4>(a.q), kk = describe<4>(a.k), v = describe<4>(a.v),
         mask = describe<4>(a.mask), out = describe<4>(a.out);
    auto lse = describe<3>(a.lse);
    void *qp = &q, *kp = &kk, *vp = &v, *mp = &mask, *op = &out, *lp = &lse;
    int64_t seed = static_cast<int64_t>(a.seed);
    // The packed calling convention: one pointer per argument of the
    // _mlir_ciface_ wrapper, which takes descriptors by pointer.
    std::vector<void *> args = {&qp, &kp, &vp};
    if (spec.mask != ATTN_MASK_NONE)
      args.push_back(&mp);
    args.push_back(&op);
    if (spec.return_lse)
      args.push_back(&lp);
    if (spec.dropout_p > 0.0)
      args.push_back(&seed);
    return mlir::attn::jit::runChecked(k.fn, args.data(), error);
  }

  CompiledKernel kernel;
  attn_spec spec;
  int64_t defaultBlock; // block_q = block_kv where the spec gives 0
  bool autoSplit = false, clampSplits = false, boundedKernel = false;
  bool decodeCandidate = false;
  std::atomic<int64_t> lastSplits{0};
  std::mutex variantsMutex;
  std::map<int64_t, CompiledKernel> variants;
  // (heads_q, heads_kv, seq_q) of a packed decode step -> its kernel.
  std::map<std::tuple<int64_t, int64_t, int64_t>,
           std::unique_ptr<CPUExecutable>>
      decodeVariants;
};

/// Compiles an entry function's source (an attention kernel's or a
/// layer's: the pipeline decomposes attn.mha first) with the cpu pipeline
/// into `kernel`.
attn_status compileSource(const std::string &source,
                          mlir::attn::AttnToCPUPipelineOptions &options,
                          CompiledKernel &kernel, std::string &error);

attn_status compileKernel(const attn_spec &spec, std::string &source,
                          CompiledKernel &kernel, std::string &error) {
  source = mlir::attn::jit::buildKernelSource(spec);
  mlir::attn::AttnToCPUPipelineOptions options;
  options.math = spec.variant == ATTN_VARIANT_MATH;
  const int64_t block = CPUExecutable::blockFor(spec);
  options.blockQ = spec.block_q > 0 ? spec.block_q : block;
  options.blockKv = spec.block_kv > 0 ? spec.block_kv : block;
  options.kvSplits = spec.kv_splits;
  // Static shapes with an automatic count: the model's pick, passed to
  // attn-tile-sdpa as given (dynamic ones: per launch, run()).
  if (spec.kv_splits == 0 && !options.math && spec.batch != ATTN_DYNAMIC &&
      spec.heads_q != ATTN_DYNAMIC && spec.heads_kv != ATTN_DYNAMIC &&
      spec.seq_q != ATTN_DYNAMIC && spec.seq_kv != ATTN_DYNAMIC)
    options.kvSplits =
        autoCpuKvSplits(spec, spec.batch, spec.heads_q, spec.heads_kv,
                        spec.seq_q, spec.seq_kv, options.blockQ,
                        options.blockKv);
  // A static key length bounds the split count here (dynamic ones at each
  // launch): never more chunks, or partials, than key blocks.
  if (spec.kv_splits > 1 && spec.seq_kv != ATTN_DYNAMIC && !options.math)
    options.kvSplits = mlir::attn::jit::clampKvSplits(
        spec.kv_splits, spec.seq_kv, options.blockKv, /*powerOfTwo=*/false);
  // A dynamic key length: the kernel covers max(1, kv_splits) chunks
  // (run() sends longer launches to a variant that covers them).
  options.maxDynamicKv = CPUExecutable::maxDynamicKvOf(spec);
  return compileSource(source, options, kernel, error);
}

attn_status compileSource(const std::string &source,
                          mlir::attn::AttnToCPUPipelineOptions &options,
                          CompiledKernel &kernel, std::string &error) {
  static std::once_flag initOnce;
  std::call_once(initOnce, [] {
    llvm::InitializeNativeTarget();
    llvm::InitializeNativeTargetAsmPrinter();
  });

  DialectRegistry registry;
  mlir::attn::registerAllDialects(registry);
  registerAllToLLVMIRTranslations(registry);
  MLIRContext context(registry, MLIRContext::Threading::DISABLED);
  context.loadAllAvailableDialects();

  std::string diagnostics;
  llvm::raw_string_ostream diagOS(diagnostics);
  ScopedDiagnosticHandler handler(&context, [&](Diagnostic &diag) {
    diagOS << diag.getLocation() << ": " << diag << "\n";
    for (Diagnostic &note : diag.getNotes())
      diagOS << "  note: " << note << "\n";
    return success();
  });

  OwningOpRef<ModuleOp> module = parseSourceString<ModuleOp>(source, &context);
  if (!module) {
    // The runtime validated the spec, so IR that does not parse or verify
    // means the spec and the op disagree: report it as invalid input.
    error = "cpu: the kernel source is invalid: " + diagnostics;
    return ATTN_ERROR_INVALID_ARGUMENT;
  }

  options.parallelism = hostParallelism();
  options.vectorLanes = hostVectorLanes();
  options.bf16Dot = hostBf16Dot();
  // Heap buffers through CPUAllocator.cpp: a failed one is an error status.
  options.checkedAlloc = true;
  PassManager pm(&context);
  // --mlir-print-ir-after-all and friends where the tool registered them.
  if (failed(mlir::attn::jit::configurePassManager(pm))) {
    error = "cpu: bad pass-manager options: " + diagnostics;
    return ATTN_ERROR_INVALID_ARGUMENT;
  }
  // (A layer's decomposition is the pipeline's first step.)
  mlir::attn::buildAttnToCPUPipeline(pm, options);
  LogicalResult ran = pm.run(*module);
  // A safety net: where bufferization still gives a tile temporary a
  // buffer whose deallocation depends on a guard's branch (what
  // attn-cpu-distinct-destinations removed for key loops that fold away),
  // attn-cpu-hoist-tile-buffers cannot move it out of the OpenMP team; the
  // kernel is compiled again with plain loops, and every other failure is
  // reported.
  if (failed(ran) && options.vectorLanes > 0 &&
      llvm::StringRef(diagnostics).contains("attn-cpu-hoist-tile-buffers")) {
    diagnostics.clear();
    module = parseSourceString<ModuleOp>(source, &context);
    if (!module) {
      error = "cpu: the kernel source is invalid: " + diagnostics;
      return ATTN_ERROR_INVALID_ARGUMENT;
    }
    options.vectorLanes = 0;
    PassManager scalar(&context);
    if (failed(mlir::attn::jit::configurePassManager(scalar))) {
      error = "cpu: bad pass-manager options: " + diagnostics;
      return ATTN_ERROR_INVALID_ARGUMENT;
    }
    mlir::attn::buildAttnToCPUPipeline(scalar, options);
    ran = scalar.run(*module);
  }
  if (failed(ran)) {
    error = "cpu: the pipeline failed: " +
            (diagnostics.empty() ? std::string("(a pass failed without a "
                                               "diagnostic)")
                                 : diagnostics);
    return ATTN_ERROR_COMPILE;
  }

  auto tmBuilder = llvm::orc::JITTargetMachineBuilder::detectHost();
  if (!tmBuilder) {
    error = "cpu: cannot describe the host: " +
            llvm::toString(tmBuilder.takeError());
    return ATTN_ERROR_BACKEND;
  }
  tmBuilder->setCodeGenOptLevel(llvm::CodeGenOptLevel::Aggressive);
  auto tm = tmBuilder->createTargetMachine();
  if (!tm) {
    error = "cpu: cannot create the host target machine: " +
            llvm::toString(tm.takeError());
    return ATTN_ERROR_BACKEND;
  }
  ExecutionEngineOptions engineOptions;
  // ExecutionEngineOptions::transformer is a function_ref: the function it
  // refers to must outlive ExecutionEngine::create, not only this statement.
  std::function<llvm::Error(llvm::Module *)> transformer =
      makeOptimizingTransformer(/*optLevel=*/3, /*sizeLevel=*/0, tm->get());
  engineOptions.transformer = transformer;
  engineOptions.jitCodeGenOptLevel = llvm::CodeGenOptLevel::Aggressive;
  // libomp and MLIR's C runner utilities, found where this libattn runs
  // (RuntimeLibraries.h).
  std::vector<std::string> libraryPaths;
  if (!mlir::attn::jit::findCPURuntimeLibraries(libraryPaths, error))
    return ATTN_ERROR_UNAVAILABLE;
  SmallVector<StringRef> sharedLibs(libraryPaths.begin(), libraryPaths.end());
  engineOptions.sharedLibPaths = sharedLibs;
  // The kernels' OpenMP calls (__kmpc_*, omp_*) bound to that libomp's
  // own definitions. Left to the process-wide lookup, a GNU libgomp loaded
  // globally first (PyTorch loads one) would answer omp_get_thread_num
  // with 0 in every libomp thread, and the threads would share one tile
  // buffer slab: wrong results, no error.
  std::vector<std::pair<std::string, void *>> openmpSymbols;
  {
    // Each library loaded here first, so that one that cannot load (a
    // dependency missing) is this error, not a symbol the kernel lacks
    // later. (The handles stay open: the kernels call into them for the
    // process's life, as the ExecutionEngine's own loads of them do.)
    void *libomp = nullptr;
    for (const std::string &path : libraryPaths) {
      void *handle = dlopen(path.c_str(), RTLD_NOW);
      if (!handle) {
        const char *why = dlerror();
        error = "cpu: cannot load " + path + ": " +
                (why ? why : "unknown error");
        return ATTN_ERROR_UNAVAILABLE;
      }
      if (!libomp)
        libomp = handle;
    }
    std::string missing;
    module->walk([&](LLVM::LLVMFuncOp fn) {
      StringRef name = fn.getSymName();
      if (!fn.isExternal() ||
          !(name.starts_with("__kmpc_") || name.starts_with("omp_")))
        return;
      if (void *addr = dlsym(libomp, name.str().c_str()))
        openmpSymbols.emplace_back(name.str(), addr);
      else
        missing = name.str();
    });
    if (!missing.empty()) {
      error = "cpu: " + libraryPaths.front() + " does not define " + missing +
              " (set ATTN_LIBOMP to LLVM's libomp)";
      return ATTN_ERROR_UNAVAILABLE;
    }
  }
  auto engine = ExecutionEngine::create(*module, engineOptions, std::move(*tm));
  if (!engine) {
    error = "cpu: LLVM code generation failed: " +
            llvm::toString(engine.takeError()) + diagnostics;
    return ATTN_ERROR_COMPILE;
  }
  std::string entry =
      std::string("_mlir_ciface_") + mlir::attn::jit::kEntryName;
  (*engine)->registerSymbols(mlir::attn::jit::checkedAllocSymbols);
  (*engine)->registerSymbols([&](llvm::orc::MangleAndInterner interner) {
    llvm::orc::SymbolMap map;
    for (const auto &[name, addr] : openmpSymbols)
      map[interner(name)] = {llvm::orc::ExecutorAddr::fromPtr(addr),
                             llvm::JITSymbolFlags::Exported};
    return map;
  });
  auto fn = (*engine)->lookupPacked(entry);
  if (!fn) {
    error = "cpu: entry point missing after code generation: " +
            llvm::toString(fn.takeError());
    return ATTN_ERROR_COMPILE;
  }
  kernel.engine = std::move(*engine);
  kernel.fn = *fn;
  return ATTN_OK;
}

/// A compiled attention layer: the entry takes dense descriptors of x,
/// [kv], the weights, [the biases] and y, in buildMhaKernelSource's order.
class CPULayerExecutable final : public ::attn::LayerExecutable {
public:
  CPULayerExecutable(CompiledKernel kernel, const attn_mha_spec &spec)
      : kernel(std::move(kernel)), spec(spec) {}

  attn_status run(const attn_mha_args &a, std::string &error) override {
    const attn_mha_spec &s = spec;
    // Descriptors of every rank live in one list; the packed call takes a
    // pointer to a pointer to each.
    std::vector<MemRefDescriptor<3>> d3;
    std::vector<MemRefDescriptor<2>> d2;
    std::vector<MemRefDescriptor<1>> d1;
    d3.reserve(3);
    d2.reserve(5);
    d1.reserve(5);
    std::vector<void *> ptrs;
    ptrs.reserve(16);
    auto dense = [](auto &d, const void *p, std::initializer_list<int64_t> shape) {
      d.allocated = d.aligned = const_cast<void *>(p);
      d.offset = 0;
      int i = 0;
      for (int64_t e : shape)
        d.sizes[i++] = e;
      int64_t stride = 1;
      for (int j = i - 1; j >= 0; --j) {
        d.strides[j] = stride;
        stride *= d.sizes[j];
      }
    };
    auto add3 = [&](const void *p, int64_t b, int64_t n, int64_t e) {
      d3.emplace_back();
      dense(d3.back(), p, {b, n, e});
      ptrs.push_back(&d3.back());
    };
    auto add2 = [&](const void *p, int64_t r, int64_t c) {
      d2.emplace_back();
      dense(d2.back(), p, {r, c});
      ptrs.push_back(&d2.back());
    };
    auto add1 = [&](const void *p, int64_t n) {
      d1.emplace_back();
      dense(d1.back(), p, {n});
      ptrs.push_back(&d1.back());
    };
    // The entry function's arguments in order, as the runtime lists them.
    for (const ::attn::LayerOperand &o : ::attn::layerOperands(s, a)) {
      if (o.rank == 3)
        add3(o.data, o.shape[0], o.shape[1], o.shape[2]);
      else if (o.rank == 2)
        add2(o.data, o.shape[0], o.shape[1]);
      else
        add1(o.data, o.shape[0]);
    }
    std::vector<void *> args;
    for (void *&p : ptrs)
      args.push_back(&p);
    return mlir::attn::jit::runChecked(kernel.fn, args.data(), error);
  }

private:
  CompiledKernel kernel;
  attn_mha_spec spec;
};

class CPUCompiler final : public ::attn::Compiler {
public:
  // The cpu target needs only its support libraries.
  attn_status available(std::string &error) override {
    std::vector<std::string> paths;
    return mlir::attn::jit::findCPURuntimeLibraries(paths, error)
               ? ATTN_OK
               : ATTN_ERROR_UNAVAILABLE;
  }

  attn_status compile(const attn_spec &spec, ::attn::CompileResult &result,
                      std::string &error) override {
    CompiledKernel kernel;
    if (attn_status st = compileKernel(spec, result.source, kernel, error))
      return st;
    result.executable =
        std::make_unique<CPUExecutable>(std::move(kernel), spec);
    return ATTN_OK;
  }

  attn_status compileMha(const attn_mha_spec &spec,
                         ::attn::LayerCompileResult &result,
                         std::string &error) override {
    result.source = mlir::attn::jit::buildMhaKernelSource(spec);
    // The attention inside uses the tiled path's defaults; the static
    // shapes let attn-tile-sdpa choose split-KV itself.
    mlir::attn::AttnToCPUPipelineOptions options;
    // (A normalized layer spec: head_dim and value_dim are set.)
    options.blockQ = options.blockKv =
        defaultCpuBlock(spec.head_dim, spec.value_dim, hostL2Bytes());
    options.kvSplits = 0;
    CompiledKernel kernel;
    if (attn_status st = compileSource(result.source, options, kernel, error))
      return st;
    result.executable =
        std::make_unique<CPULayerExecutable>(std::move(kernel), spec);
    return ATTN_OK;
  }
};

// Loading libattn registers the cpu compiler with the runtime.
const bool registered = [] {
  ::attn::registerCompiler(ATTN_TARGET_CPU, std::make_shared<CPUCompiler>());
  return true;
}();

} // namespace
