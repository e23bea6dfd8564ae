//===- Buffers.h - device addresses of the vulkan target's device buffers -===//
//
// attn_vulkan_buffer_pointer hands out opaque 64-bit addresses that go into
// attn_tensor.data: a tag no host pointer has (bits 60-63, non-canonical on
// every 64-bit host), the buffer's id (bits 36-59, never reused while ids
// last: a destroyed buffer's addresses stay recognizable) and a byte offset
// (bits 0-35: buffers up to 64 GiB). A buffer handle is its address at
// offset 0.
//
//===----------------------------------------------------------------------===//
#ifndef ATTN_RUNTIME_SRC_VULKAN_BUFFERS_H
#define ATTN_RUNTIME_SRC_VULKAN_BUFFERS_H

#include "attn/runtime/Vulkan.h"

#include <cstdint>
#include <memory>
#include <string>

namespace attn::vulkan {

/// The largest device buffer (the offset bits of an address).
constexpr uint64_t kMaxDeviceBufferBytes = uint64_t(1) << 36;

/// Whether `p` is a device-buffer address (of a live buffer or not).
bool isDeviceAddress(const void *p);

/// The buffer and byte offset of device address `p`, for a kernel of
/// context `context`; ATTN_ERROR_INVALID_ARGUMENT (with `error` naming
/// `what`, the pointer: "q.data", "args.x") for a destroyed buffer,
/// another context's, or an offset past its end.
attn_status resolveDeviceAddress(const void *p, uint64_t context,
                                 const char *what,
                                 std::shared_ptr<DeviceBuffer> &buffer,
                                 uint64_t &offset, std::string &error);

} // namespace attn::vulkan

#endif // ATTN_RUNTIME_SRC_VULKAN_BUFFERS_H
