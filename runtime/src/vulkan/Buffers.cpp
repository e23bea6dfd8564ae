//===- Buffers.cpp - attn_vulkan.h: device buffers and asynchronous launches -===//
#include "Buffers.h"

#include "attn/runtime/attn_vulkan.h"

#include "../Internal.h"

#include <algorithm>
#include <atomic>
#include <exception>
#include <mutex>
#include <new>
#include <unordered_map>

using namespace attn;
using namespace attn::vulkan;

namespace {

constexpr uint64_t kTag = 0xAull << 60;
constexpr uint64_t kTagMask = 0xFull << 60;
constexpr int kIdShift = 36;
constexpr uint64_t kIdMask = (uint64_t(1) << 24) - 1;
constexpr uint64_t kOffsetMask = kMaxDeviceBufferBytes - 1;

struct Entry {
  std::shared_ptr<DeviceBuffer> buffer;
  uint64_t context = 0;
  uint64_t bytes = 0;
};

struct Registry {
  std::mutex mutex;
  std::unordered_map<uint64_t, Entry> live;
  uint64_t nextId = 1;
};
Registry &registry() {
  static Registry r;
  return r;
}

uint64_t idOf(const void *p) {
  return (reinterpret_cast<uintptr_t>(p) >> kIdShift) & kIdMask;
}

/// The live entry of a handle, or null with the thread's error set.
bool lookup(const void *handle, const char *call, Entry &out) {
  if (!handle) {
    setLastError(std::string(call) + ": buffer is NULL");
    return false;
  }
  if (!isDeviceAddress(handle) ||
      (reinterpret_cast<uintptr_t>(handle) & kOffsetMask)) {
    setLastError(std::string(call) +
                 ": not a vulkan device buffer handle (an address inside a "
                 "buffer is not one)");
    return false;
  }
  Registry &r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  auto it = r.live.find(idOf(handle));
  if (it == r.live.end()) {
    setLastError(std::string(call) + ": the buffer was destroyed");
    return false;
  }
  out = it->second;
  return true;
}

attn_status fail(attn_status s, const std::string &message) {
  setLastError(message);
  return s;
}

/// Exceptions (std::bad_alloc) never cross the C API.
template <typename F> attn_status guarded(const char *call, F &&f) {
  try {
    return f();
  } catch (const std::bad_alloc &) {
    return fail(ATTN_ERROR_OUT_OF_MEMORY, std::string(call) + ": out of host memory");
  } catch (const std::exception &e) {
    return fail(ATTN_ERROR_BACKEND, std::string(call) + ": " + e.what());
  } catch (...) {
    return fail(ATTN_ERROR_BACKEND, std::string(call) + ": unknown exception");
  }
}

} // namespace

/// The Submission serializes its own wait; `waited` says whether one
/// finished (any thread's), for attn_vulkan_event_kernel_ms.
struct attn_vulkan_event {
  std::shared_ptr<Submission> submission;
  std::atomic<bool> waited{false};
};

bool attn::vulkan::isDeviceAddress(const void *p) {
  static_assert(sizeof(void *) == 8, "device addresses need 64-bit pointers");
  return (reinterpret_cast<uintptr_t>(p) & kTagMask) == kTag;
}

attn_status attn::vulkan::resolveDeviceAddress(
    const void *p, uint64_t context, const char *what,
    std::shared_ptr<DeviceBuffer> &buffer, uint64_t &offset,
    std::string &error) {
  Entry e;
  {
    Registry &r = registry();
    std::lock_guard<std::mutex> lock(r.mutex);
    auto it = r.live.find(idOf(p));
    if (it == r.live.end()) {
      error = std::string("vulkan: ") + what +
              " is the address of a destroyed device buffer";
      return ATTN_ERROR_INVALID_ARGUMENT;
    }
    e = it->second;
  }
  if (e.context != context) {
    error = std::string("vulkan: ") + what +
            " is in a device buffer of another context than the "
            "kernel's";
    return ATTN_ERROR_INVALID_ARGUMENT;
  }
  offset = reinterpret_cast<uintptr_t>(p) & kOffsetMask;
  if (offset >= e.bytes) {
    error = std::string("vulkan: ") + what + " is offset " +
            std::to_string(offset) + " into a device buffer of " +
            std::to_string(e.bytes) + " bytes";
    return ATTN_ERROR_INVALID_ARGUMENT;
  }
  buffer = e.buffer;
  return ATTN_OK;
}

extern "C" {

attn_status attn_vulkan_buffer_create(attn_context *ctx, uint64_t bytes,
                                      attn_vulkan_buffer **out) {
  const char *call = "attn_vulkan_buffer_create";
  return guarded(call, [&] {
    if (!ctx || !out)
      return fail(ATTN_ERROR_INVALID_ARGUMENT,
                  std::string(call) + ": " + (!ctx ? "ctx" : "buffer") +
                      " is NULL");
    if (bytes == 0 || bytes > kMaxDeviceBufferBytes)
      return fail(ATTN_ERROR_INVALID_ARGUMENT,
                  std::string(call) + ": bytes is " + std::to_string(bytes) +
                      "; it must be in [1, 2^36]");
    std::shared_ptr<DeviceBuffer> buffer;
    std::string error;
    if (attn_status s = createDeviceBuffer(bytes, buffer, error))
      return fail(s, std::string(call) + ": " + error);
    Registry &r = registry();
    std::lock_guard<std::mutex> lock(r.mutex);
    if (r.nextId > kIdMask)
      return fail(ATTN_ERROR_OUT_OF_MEMORY,
                  std::string(call) + ": this process has created 2^24 - 1 "
                                      "device buffers, all the ids there are");
    const uint64_t id = r.nextId++;
    r.live[id] = {std::move(buffer), ctx->id, bytes};
    *out = reinterpret_cast<attn_vulkan_buffer *>(
        static_cast<uintptr_t>(kTag | (id << kIdShift)));
    setLastError("");
    return ATTN_OK;
  });
}

attn_status attn_vulkan_buffer_destroy(attn_vulkan_buffer *buffer) {
  if (!buffer)
    return ATTN_OK;
  const char *call = "attn_vulkan_buffer_destroy";
  Entry e;
  if (!lookup(buffer, call, e))
    return ATTN_ERROR_INVALID_ARGUMENT;
  std::shared_ptr<DeviceBuffer> last;
  {
    Registry &r = registry();
    std::lock_guard<std::mutex> lock(r.mutex);
    auto it = r.live.find(idOf(buffer));
    if (it != r.live.end()) {
      last = std::move(it->second.buffer);
      r.live.erase(it);
    }
  }
  // Freed here (outside the lock) unless a launch in flight holds it.
  last.reset();
  setLastError("");
  return ATTN_OK;
}

void *attn_vulkan_buffer_pointer(attn_vulkan_buffer *buffer) {
  Entry e;
  if (!lookup(buffer, "attn_vulkan_buffer_pointer", e))
    return nullptr;
  return buffer;
}

uint64_t attn_vulkan_buffer_size(const attn_vulkan_buffer *buffer) {
  Entry e;
  if (!lookup(buffer, "attn_vulkan_buffer_size", e))
    return 0;
  return e.bytes;
}

attn_status attn_vulkan_buffer_alignment(uint64_t *alignment) {
  const char *call = "attn_vulkan_buffer_alignment";
  return guarded(call, [&] {
    if (!alignment)
      return fail(ATTN_ERROR_INVALID_ARGUMENT,
                  std::string(call) + ": alignment is NULL");
    DeviceInfo info;
    std::string error;
    if (attn_status s = deviceInfo(info, error))
      return fail(s, std::string(call) + ": " + error);
    *alignment = std::max<uint64_t>(info.minStorageBufferOffsetAlignment, 1);
    setLastError("");
    return ATTN_OK;
  });
}

static attn_status copy(attn_vulkan_buffer *buffer, uint64_t offset,
                        void *host, uint64_t bytes, bool toDevice) {
  const char *call =
      toDevice ? "attn_vulkan_buffer_upload" : "attn_vulkan_buffer_download";
  return guarded(call, [&] {
    Entry e;
    if (!lookup(buffer, call, e))
      return ATTN_ERROR_INVALID_ARGUMENT;
    if (!host && bytes)
      return fail(ATTN_ERROR_INVALID_ARGUMENT,
                  std::string(call) + ": " + (toDevice ? "src" : "dst") +
                      " is NULL");
    if (offset > e.bytes || bytes > e.bytes - offset)
      return fail(ATTN_ERROR_INVALID_ARGUMENT,
                  std::string(call) + ": [" + std::to_string(offset) + ", " +
                      std::to_string(offset) + " + " + std::to_string(bytes) +
                      ") is outside the buffer's " + std::to_string(e.bytes) +
                      " bytes");
    std::string error;
    attn_status s =
        toDevice ? uploadToDevice(*e.buffer, offset, host, bytes, error)
                 : downloadFromDevice(*e.buffer, offset, host, bytes, error);
    if (s != ATTN_OK)
      return fail(s, std::string(call) + ": " + error);
    setLastError("");
    return ATTN_OK;
  });
}

attn_status attn_vulkan_buffer_upload(attn_vulkan_buffer *buffer,
                                      uint64_t offset, const void *src,
                                      uint64_t bytes) {
  return copy(buffer, offset, const_cast<void *>(src), bytes, true);
}

attn_status attn_vulkan_buffer_download(attn_vulkan_buffer *buffer,
                                        uint64_t offset, void *dst,
                                        uint64_t bytes) {
  return copy(buffer, offset, dst, bytes, false);
}

attn_status attn_vulkan_launch_async(attn_kernel *kernel,
                                     const attn_launch_args *args,
                                     attn_vulkan_event **event) {
  const char *call = "attn_vulkan_launch_async";
  return guarded(call, [&] {
    if (!kernel || !args || !event)
      return fail(ATTN_ERROR_INVALID_ARGUMENT,
                  std::string(call) + ": " +
                      (!kernel ? "kernel" : !args ? "args" : "event") +
                      " is NULL");
    if (kernel->target != ATTN_TARGET_VULKAN)
      return fail(ATTN_ERROR_INVALID_ARGUMENT,
                  std::string(call) + ": the kernel is for the " +
                      attn_target_name(kernel->target) +
                      " target, not vulkan");
    KernelArgs resolved;
    std::string error;
    if (!detail::validateLaunch(kernel->spec, kernel->target, *args, resolved,
                                error))
      return fail(ATTN_ERROR_INVALID_ARGUMENT, std::string(call) + ": " + error);
    resolved.context = kernel->context;
    auto e = std::make_unique<attn_vulkan_event>();
    if (attn_status s = kernel->executable->submit(resolved, /*wait=*/false,
                                                   e->submission, error))
      return fail(s, std::string(call) + ": " + error);
    *event = e.release();
    setLastError("");
    return ATTN_OK;
  });
}

attn_status attn_vulkan_event_wait(attn_vulkan_event *event) {
  const char *call = "attn_vulkan_event_wait";
  return guarded(call, [&] {
    if (!event)
      return fail(ATTN_ERROR_INVALID_ARGUMENT,
                  std::string(call) + ": event is NULL");
    std::string error;
    attn_status s = event->submission->wait(error);
    event->waited.store(true);
    if (s != ATTN_OK)
      return fail(s, std::string(call) + ": " + error);
    setLastError("");
    return ATTN_OK;
  });
}

attn_status attn_vulkan_event_query(attn_vulkan_event *event, int *complete) {
  const char *call = "attn_vulkan_event_query";
  return guarded(call, [&] {
    if (!event || !complete)
      return fail(ATTN_ERROR_INVALID_ARGUMENT,
                  std::string(call) + ": " + (!event ? "event" : "complete") +
                      " is NULL");
    *complete = event->submission->ready() ? 1 : 0;
    setLastError("");
    return ATTN_OK;
  });
}

attn_status attn_vulkan_event_kernel_ms(attn_vulkan_event *event, double *ms) {
  const char *call = "attn_vulkan_event_kernel_ms";
  return guarded(call, [&] {
    if (!event || !ms)
      return fail(ATTN_ERROR_INVALID_ARGUMENT,
                  std::string(call) + ": " + (!event ? "event" : "ms") +
                      " is NULL");
    if (!event->waited.load())
      return fail(ATTN_ERROR_INVALID_ARGUMENT,
                  std::string(call) + ": the event was not waited on");
    std::string error;
    if (event->submission->wait(error) != ATTN_OK) // done: its status
      return fail(ATTN_ERROR_INVALID_ARGUMENT,
                  std::string(call) + ": the launch failed: " + error);
    double t = event->submission->kernelMs();
    if (t < 0)
      return fail(ATTN_ERROR_UNSUPPORTED,
                  std::string(call) + ": the device's compute queue has no "
                                      "timestamps");
    *ms = t;
    setLastError("");
    return ATTN_OK;
  });
}

void attn_vulkan_event_destroy(attn_vulkan_event *event) {
  // The submission's destructor waits for the device first.
  delete event;
}

} // extern "C"
