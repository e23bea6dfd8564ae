//===- RuntimeLibraries.cpp - finding the JIT's helpers at run time -------===//
#include "RuntimeLibraries.h"

#include "attn/Pipelines/Pipelines.h"

#include "mlir/ExecutionEngine/ExecutionEngine.h"

#include "llvm/Config/llvm-config.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Program.h"

#include <algorithm>
#include <cstdlib>
#include <dlfcn.h>
#include <link.h>

using namespace mlir::attn::jit;

namespace {

/// One library the cpu kernels need.
struct Library {
  const char *name; // for messages
  const char *role; // for messages
  const char *env;  // the override
  std::vector<std::string> names; // file names, the loader's soname first
};

/// The directory of the loaded object (shared library or executable) that
/// holds `address`, or "".
std::string directoryOf(const void *address) {
  Dl_info info;
  if (!dladdr(address, &info) || !info.dli_fname || !*info.dli_fname)
    return "";
  std::string file = info.dli_fname;
  // For the main program glibc answers argv[0], which may be a bare name
  // found on PATH: ask the kernel instead.
  if (file.find('/') == std::string::npos)
    file = llvm::sys::fs::getMainExecutable(info.dli_fname, nullptr);
  llvm::SmallString<256> path;
  if (llvm::sys::fs::real_path(file, path))
    path = file;
  return llvm::sys::path::parent_path(path).str();
}

/// Where libraries are looked for, in order, without duplicates.
std::vector<std::string> searchDirectories() {
  std::vector<std::string> dirs;
  auto add = [&](const std::string &dir) {
    if (!dir.empty() && std::find(dirs.begin(), dirs.end(), dir) == dirs.end())
      dirs.push_back(dir);
  };
  // This code's own object: libattn.so in <prefix>/lib, or a tool in
  // <prefix>/bin that links the JIT statically.
  std::string self = directoryOf(reinterpret_cast<const void *>(&searchDirectories));
  add(self);
  if (!self.empty())
    add(self + "/../lib");
  // The libMLIR.so this process loaded: its directory is the LLVM library
  // directory, wherever that LLVM is installed.
  add(directoryOf(reinterpret_cast<const void *>(&mlir::ExecutionEngine::create)));
  add(ATTN_LLVM_LIBRARY_DIR);
  return dirs;
}

/// The path of the library the dynamic loader finds for `name`, or "".
std::string loaderPath(const std::string &name) {
  void *handle = dlopen(name.c_str(), RTLD_LAZY | RTLD_LOCAL);
  if (!handle)
    return "";
  std::string path;
  struct link_map *map = nullptr;
  if (dlinfo(handle, RTLD_DI_LINKMAP, &map) == 0 && map && map->l_name &&
      *map->l_name)
    path = map->l_name;
  // The ExecutionEngine opens it again by path (a reference more, so it
  // stays loaded).
  dlclose(handle);
  return path.empty() ? name : path;
}

bool find(const Library &lib, std::string &path, std::string &error) {
  if (const char *env = std::getenv(lib.env); env && *env) {
    if (llvm::sys::fs::is_regular_file(env)) {
      path = env;
      return true;
    }
    error = std::string("cpu: ") + lib.env + "=" + env +
            " is not a file (it should name " + lib.name + ", " + lib.role +
            ")";
    return false;
  }
  std::string looked;
  for (const std::string &dir : searchDirectories())
    for (const std::string &name : lib.names) {
      std::string candidate = dir + "/" + name;
      if (llvm::sys::fs::is_regular_file(candidate)) {
        llvm::SmallString<256> real;
        path = llvm::sys::fs::real_path(candidate, real) ? candidate
                                                          : real.str().str();
        return true;
      }
      looked += " " + candidate;
    }
  for (const std::string &name : lib.names) {
    path = loaderPath(name);
    if (!path.empty())
      return true;
    looked += " " + name + " (dynamic loader)";
  }
  error = std::string("cpu: ") + lib.name + " (" + lib.role +
          ") not found; set " + lib.env + " to its path (looked for:" +
          looked + ")";
  return false;
}

} // namespace

bool mlir::attn::jit::findCPURuntimeLibraries(std::vector<std::string> &paths,
                                              std::string &error) {
  static const std::string llvmSuffix =
      "." + std::to_string(LLVM_VERSION_MAJOR) + "." +
      std::to_string(LLVM_VERSION_MINOR);
  // The parallel tiles call LLVM's OpenMP runtime (__kmpc_*); copies
  // between strided buffers that bufferization could not avoid call
  // memrefCopy from MLIR's C runner utilities.
  static const Library libraries[] = {
      {"libomp", "LLVM's OpenMP runtime", "ATTN_LIBOMP",
       {"libomp.so.5", "libomp.so"}},
      {"libmlir_c_runner_utils", "MLIR's C runner utilities",
       "ATTN_MLIR_RUNNER_UTILS",
       {"libmlir_c_runner_utils.so" + llvmSuffix,
        "libmlir_c_runner_utils.so"}},
  };
  paths.clear();
  for (const Library &lib : libraries) {
    std::string path;
    if (!find(lib, path, error))
      return false;
    paths.push_back(path);
  }
  return true;
}

bool mlir::attn::jit::findPtxas(std::string &path, std::string &error) {
  if (const char *env = std::getenv("ATTN_PTXAS"); env && *env) {
    if (llvm::sys::fs::can_execute(env) && !llvm::sys::fs::is_directory(env)) {
      path = env;
      return true;
    }
    error = std::string("ATTN_PTXAS=") + env + " is not an executable";
    return false;
  }
  if (auto found = llvm::sys::findProgramByName("ptxas")) {
    path = *found;
    return true;
  }
  std::string toolkit = mlir::attn::findCudaToolkit();
  for (const std::string &dir : {toolkit, std::string("/usr/local/cuda")})
    if (!dir.empty() && llvm::sys::fs::can_execute(dir + "/bin/ptxas")) {
      path = dir + "/bin/ptxas";
      return true;
    }
  error = "ptxas not found; set ATTN_PTXAS to its path (looked on PATH, in " +
          (toolkit.empty() ? std::string("") : toolkit + "/bin, ") +
          "/usr/local/cuda/bin; CUDA_HOME or CUDA_PATH name a toolkit)";
  return false;
}
