//===- WorkspacePool.cpp - an executable's stream-ordered memory pool -----===//
#include "WorkspacePool.h"

using namespace attn;
using namespace attn::cuda;

attn_status WorkspacePool::get(CUmemoryPool &out, std::string &error) {
  out = pool.load(std::memory_order_acquire);
  if (out)
    return ATTN_OK;
  std::lock_guard<std::mutex> lock(mutex);
  out = pool.load(std::memory_order_relaxed);
  if (out)
    return ATTN_OK;
  std::string where =
      " (the " + what + " pool of device " + std::to_string(device) + ")";
  int supported = 0;
  if (CUresult r = d.cuDeviceGetAttribute(
          &supported, CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED, device)) {
    error = "cuda: " + describe(d, "cuDeviceGetAttribute", r) +
            " asking for CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED" + where;
    return ATTN_ERROR_BACKEND;
  }
  if (!supported) {
    error = "cuda: device " + std::to_string(device) +
            " does not support stream-ordered memory pools "
            "(CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED is 0), which " +
            what + "s come from; " + remedy;
    return ATTN_ERROR_UNSUPPORTED;
  }
  CUmemPoolProps props{};
  props.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
  props.handleTypes = CU_MEM_HANDLE_TYPE_NONE;
  props.location = {CU_MEM_LOCATION_TYPE_DEVICE, device};
  CUmemoryPool created = nullptr;
  if (CUresult r = d.cuMemPoolCreate(&created, &props)) {
    error = "cuda: " + describe(d, "cuMemPoolCreate", r) + where;
    return r == CUDA_ERROR_NOT_SUPPORTED ? ATTN_ERROR_UNSUPPORTED
                                         : ATTN_ERROR_BACKEND;
  }
  uint64_t keepEverything = UINT64_MAX;
  if (CUresult r = d.cuMemPoolSetAttribute(
          created, CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, &keepEverything)) {
    error = "cuda: " + describe(d, "cuMemPoolSetAttribute", r) +
            " setting CU_MEMPOOL_ATTR_RELEASE_THRESHOLD" + where;
    d.cuMemPoolDestroy(created); // nothing was allocated from it
    return ATTN_ERROR_BACKEND;
  }
  pool.store(created, std::memory_order_release);
  out = created;
  return ATTN_OK;
}

void WorkspacePool::destroy() {
  if (CUmemoryPool p = pool.exchange(nullptr, std::memory_order_acq_rel))
    d.cuMemPoolDestroy(p);
}

std::string WorkspacePool::missingEntryPoints() const {
  std::string names;
  auto add = [&](bool present, const char *name) {
    if (!present)
      names += (names.empty() ? "" : ", ") + std::string(name);
  };
  add(d.cuMemPoolCreate, "cuMemPoolCreate");
  add(d.cuMemPoolDestroy, "cuMemPoolDestroy");
  add(d.cuMemPoolSetAttribute, "cuMemPoolSetAttribute");
  add(d.cuMemAllocFromPoolAsync, "cuMemAllocFromPoolAsync");
  add(d.cuMemFreeAsync, "cuMemFreeAsync");
  return names;
}
