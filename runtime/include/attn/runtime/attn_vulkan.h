/*===- attn_vulkan.h - the vulkan target: AOT kernels, device memory, async -===*
 *
 * Three things libattn_runtime.so offers for ATTN_TARGET_VULKAN, without MLIR:
 *
 *  - Kernels that attn-translate --attn-to-spirv compiled earlier (.spv plus
 *    its .spv.json metadata): load the metadata once; attn_compile(ctx,
 *    spec, ATTN_TARGET_VULKAN, ...) then returns that kernel for its spec.
 *
 *  - Device buffers: memory on the Vulkan device that launches read and
 *    write in place, so that repeated launches copy nothing. A buffer's
 *    pointer (attn_vulkan_buffer_pointer), plus a byte offset, goes into
 *    attn_tensor.data like a CUDA device pointer; it is an opaque address
 *    that the host must not dereference. Tensors in device buffers must be
 *    densely packed in their logical shape ([B, H, S, D] row-major; lse
 *    [B, Hq, Sq]; a mask at its full extent, no broadcast) and start at an
 *    offset that is a multiple of the device's minStorageBufferOffsetAlignment
 *    (attn_vulkan_buffer_alignment). A launch takes either only host memory
 *    (staged through copies, as before) or only device buffers.
 *
 *  - Asynchronous launches: attn_vulkan_launch_async submits and returns an
 *    event to wait on. Launches, uploads and downloads run in the order they
 *    were issued, each after the writes of those before it, so an upload
 *    after a launch never overwrites what the launch still reads, and a
 *    download after it sees its output without a wait in between.
 *
 * Every call returns an attn_status (attn_last_error() has the message).
 *===----------------------------------------------------------------------===*/
#ifndef ATTN_RUNTIME_ATTN_VULKAN_H
#define ATTN_RUNTIME_ATTN_VULKAN_H

#include "attn/runtime/attn.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Reads and validates `metadata_path` (format "attn-vulkan-kernel",
 * version 1) and the .spv it names, and makes the kernel available to
 * attn_compile for the vulkan target under the spec in the metadata, which
 * `spec` receives (may be NULL). Nothing is loaded on error. The program is
 * created on the device at attn_compile time. */
attn_status attn_vulkan_load_artifact(const char *metadata_path,
                                      attn_spec *spec);

/* --- Device buffers --------------------------------------------------- */

typedef struct attn_vulkan_buffer attn_vulkan_buffer;

/* Allocates `bytes` (> 0) of device-local memory for kernels of `ctx`
 * (kernels of another context refuse it). Its contents are undefined until
 * written. ATTN_ERROR_OUT_OF_MEMORY when the device has no room. */
attn_status attn_vulkan_buffer_create(attn_context *ctx, uint64_t bytes,
                                      attn_vulkan_buffer **buffer);

/* Releases the buffer. Launches already submitted that use it still
 * complete (their events hold the memory until they are waited on or
 * destroyed). Using the handle or its pointers afterwards is an error the
 * runtime reports (ATTN_ERROR_INVALID_ARGUMENT), not undefined behaviour.
 * NULL is a no-op. */
attn_status attn_vulkan_buffer_destroy(attn_vulkan_buffer *buffer);

/* The buffer's device address for attn_tensor.data: add byte offsets to
 * place tensors in it. NULL (with a message) for a destroyed buffer. */
void *attn_vulkan_buffer_pointer(attn_vulkan_buffer *buffer);

/* The size the buffer was created with, or 0 for a destroyed buffer. */
uint64_t attn_vulkan_buffer_size(const attn_vulkan_buffer *buffer);

/* The alignment, in bytes, of tensor offsets in device buffers on the
 * vulkan device (minStorageBufferOffsetAlignment). */
attn_status attn_vulkan_buffer_alignment(uint64_t *alignment);

/* Copies `bytes` between host memory and [offset, offset + bytes) of the
 * buffer, after every launch issued before, and returns when the copy is
 * done. The range must lie inside the buffer. */
attn_status attn_vulkan_buffer_upload(attn_vulkan_buffer *buffer,
                                      uint64_t offset, const void *src,
                                      uint64_t bytes);
attn_status attn_vulkan_buffer_download(attn_vulkan_buffer *buffer,
                                        uint64_t offset, void *dst,
                                        uint64_t bytes);

/* --- Asynchronous launches ------------------------------------------- */

typedef struct attn_vulkan_event attn_vulkan_event;

/* attn_launch without the wait: validates `args` (every error attn_launch
 * reports is reported here, and nothing runs), submits, and returns an
 * event. With host-memory tensors, the inputs are copied before it returns
 * and the outputs are written by attn_vulkan_event_wait; with device
 * buffers nothing is copied. */
attn_status attn_vulkan_launch_async(attn_kernel *kernel,
                                     const attn_launch_args *args,
                                     attn_vulkan_event **event);

/* Blocks until the launch finished; returns its status (the same on every
 * call). */
attn_status attn_vulkan_event_wait(attn_vulkan_event *event);

/* Sets *complete to 1 when the launch finished (a wait would not block),
 * else 0. */
attn_status attn_vulkan_event_query(attn_vulkan_event *event, int *complete);

/* The kernel's time on the device in ms, from timestamps around its
 * dispatches (without the submission, copies or waiting), after a
 * successful wait. ATTN_ERROR_UNSUPPORTED when the device's queue has no
 * timestamps; ATTN_ERROR_INVALID_ARGUMENT before the wait. */
attn_status attn_vulkan_event_kernel_ms(attn_vulkan_event *event, double *ms);

/* Waits if the launch is still running, then frees the event. NULL is a
 * no-op. */
void attn_vulkan_event_destroy(attn_vulkan_event *event);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* ATTN_RUNTIME_ATTN_VULKAN_H */
