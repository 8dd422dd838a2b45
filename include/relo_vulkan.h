/*
 * relo_vulkan.h — the Vulkan backend: relo's pages are VkBuffers, each
 * bound to a VkDeviceMemory of its own, on a VkDevice the runtime owns.
 *
 * A binding's buffer points to the page's relo_vulkan_page (its VkBuffer
 * and VkDeviceMemory; relo_vulkan_buffer(binding) reads the buffer), its
 * offset is the allocation's byte offset in that buffer, and its address
 * the buffer's device address plus that offset where the runtime enabled
 * bufferDeviceAddress (else 0). The offset is a multiple
 * of minStorageBufferOffsetAlignment, so a storage-buffer descriptor may
 * point at (buffer, offset, size) directly.
 *
 * Queues. Vulkan queues are externally synchronized: two threads must never
 * submit to one queue at once. relo submits its own copies (and the staging
 * transfers of relo_read and relo_write, where pages are not host-visible)
 * either on a queue the runtime hands over for relo alone (desc.queue), or
 * through a submit callback (desc.submit) that submits on one of the
 * runtime's queues under the runtime's own queue lock. relo never calls
 * vkDeviceWaitIdle or vkQueueWaitIdle, which would need every queue's lock.
 *
 * Streams. A relo stream is registered with a relo_vulkan_stream (a timeline
 * semaphore the runtime signals with its submissions):
 *
 *     relo_vulkan_stream vs = {.semaphore = timeline};
 *     relo_stream_create(device, &vs, &stream);     // vs must outlive stream
 *     ... vkQueueSubmit(..., signal timeline = ++value ...);
 *     relo_backend_vulkan_stream_submitted(backend, &vs, value);
 *
 * Before a relocation copies a byte, the backend waits (one vkWaitSemaphores
 * over every registered semaphore) until each has reached the last value
 * the runtime announced, and for relo's own earlier submissions. The cost
 * is exactly the runtime's submitted work: unrelated queues are not
 * drained. Announce a value after the submission that signals it and
 * before the binding it used may move (before relo_unpin, or before the
 * next call that may move memory); announcing it earlier is harmless, the
 * wait then lasts until the signal. A stream created with NULL has nothing
 * for the backend to wait on: give it a finish (relo_stream_set_finish)
 * that waits for its work, or relo may copy bytes its kernels still use.
 *
 * Memory. At creation the backend picks one memory type for every page: one
 * the device allows for storage and transfer buffers, in the largest
 * device-local heap, host-visible and coherent where that heap offers it
 * (integrated GPUs, lavapipe, resizable BAR) so relo_read and relo_write
 * map the page; otherwise they go through a host-visible staging buffer and
 * a copy on relo's queue. Capacity is that heap's budget where the device
 * has VK_EXT_memory_budget (read once, at creation), else the heap's size.
 *
 * Errors: VK_ERROR_OUT_OF_DEVICE_MEMORY from an allocation is
 * RELO_ERR_OUT_OF_MEMORY, VK_ERROR_OUT_OF_HOST_MEMORY is
 * RELO_ERR_HOST_MEMORY, every other failure is RELO_ERR_BACKEND;
 * relo_backend_vulkan_last_error tells the raw VkResult.
 *
 * Needs Vulkan 1.2 (timeline semaphores, vkWaitSemaphores); the runtime's
 * device must have the timelineSemaphore feature enabled to use streams.
 * Compiled in when CMake finds Vulkan (RELO_WITH_VULKAN); a program links
 * librelo_vulkan (relo-vulkan.pc, or relo::relo_vulkan from
 * find_package(relo COMPONENTS vulkan)).
 */
#ifndef RELO_VULKAN_H
#define RELO_VULKAN_H

#include <vulkan/vulkan.h>

#include "relo_backend.h"

#ifdef __cplusplus
extern "C" {
#endif

/**
 * Submits one batch of relo's work on the runtime's queue, as vkQueueSubmit
 * would, under the runtime's queue lock, and returns vkQueueSubmit's
 * result. fence is relo's and must be passed on unchanged. Called from any
 * thread relo runs on (the relocating thread, threads in relo_read or
 * relo_write), possibly several at once; never with relo's device lock
 * held, so it may block on the runtime's lock.
 */
typedef VkResult (*relo_vulkan_submit_fn)(void *user, const VkSubmitInfo *submit, VkFence fence);

/** One page: what a binding's buffer points to. relo owns it; it stays
 *  valid as long as the binding does. */
typedef struct relo_vulkan_page {
    VkBuffer buffer;       /**< the page's buffer, usable as storage and transfer source/target */
    VkDeviceMemory memory; /**< the memory bound to it at offset 0 */
} relo_vulkan_page;

/** The VkBuffer of a binding from relo_resolve or relo_pin on a Vulkan
 *  device (VK_NULL_HANDLE for a binding without a buffer). */
static inline VkBuffer relo_vulkan_buffer(relo_binding binding)
{
    const relo_vulkan_page *page = (const relo_vulkan_page *)binding.buffer;
    return page ? page->buffer : VK_NULL_HANDLE;
}

/** Where the backend's pages and submissions live; zero = default. */
typedef struct relo_vulkan_desc {
    VkPhysicalDevice physical_device; /**< the device's physical device; required */
    VkDevice device;                  /**< the runtime's device (Vulkan 1.2); required */
    uint32_t queue_family;            /**< family of the queue relo's work goes to */
    /** A queue of queue_family for relo's submissions alone (the runtime
     *  submits nothing to it), or VK_NULL_HANDLE when submit is given.
     *  relo serializes its own submissions with a lock of its own. */
    VkQueue queue;
    /** Submits on the runtime's queue under its lock; used instead of
     *  queue when non-NULL. */
    relo_vulkan_submit_fn submit;
    void *submit_user; /**< passed to submit */
    /** The device was created with the bufferDeviceAddress feature: pages
     *  get device addresses and bindings carry them. */
    bool buffer_device_address;
    /** Never map pages: relo_read and relo_write go through staging
     *  buffers even where pages are host-visible (the path of a discrete
     *  GPU, for tests on devices without one). */
    bool staging;
    /** Called once, last, when the backend is destroyed (by
     *  relo_device_destroy or relo_backend_destroy), after it freed its
     *  own Vulkan objects, so a runtime that ties the device's life to
     *  relo's may destroy the device there. May be NULL. Also called when
     *  relo_backend_vulkan_create fails after checking its arguments. */
    void (*release)(void *user);
    void *release_user; /**< passed to release */
} relo_vulkan_desc;

/**
 * A runtime's timeline semaphore registered as a relo stream: pass its
 * address as relo_stream_create's backend_stream. The runtime owns it and
 * keeps it (and the semaphore) alive until relo_stream_destroy.
 */
typedef struct relo_vulkan_stream {
    VkSemaphore semaphore; /**< a VK_SEMAPHORE_TYPE_TIMELINE semaphore of the device */
} relo_vulkan_stream;

/**
 * Creates a backend over a Vulkan device.
 *
 * desc  see relo_vulkan_desc. The backend creates a command pool of
 *       queue_family and a fence, and uses the device until it is
 *       destroyed; it takes no ownership of the device or the queue.
 * out   receives the backend; untouched on failure.
 *
 * Properties: alignment = minStorageBufferOffsetAlignment (at least 4);
 * max page = the smaller of maxMemoryAllocationSize and the chosen heap;
 * capacity = the heap's budget or size (see above).
 *
 * Returns RELO_OK; RELO_ERR_INVALID_ARGUMENT (NULL desc, out, physical
 * device or device; neither queue nor submit; a queue family the physical
 * device lacks; a device older than Vulkan 1.2); RELO_ERR_HOST_MEMORY;
 * RELO_ERR_BACKEND (no memory type fits storage buffers, or a Vulkan call
 * failed). On every failure after the argument checks (host memory,
 * backend) desc->release is called before it returns.
 * Thread-safe: it touches only the objects given.
 */
RELO_API relo_status relo_backend_vulkan_create(const relo_vulkan_desc *desc, relo_backend **out);

/**
 * Tells the backend that the runtime submitted work that signals the
 * stream's semaphore to value: the next relocation waits until the
 * semaphore reaches it. Values only go up: a smaller one than announced
 * before is ignored.
 *
 * Returns RELO_OK; RELO_ERR_INVALID_ARGUMENT (NULLs, a backend of another
 * kind); RELO_ERR_NOT_FOUND (vs is not registered with this backend).
 * Thread-safe: any thread, any time, without relo's device lock.
 */
RELO_API relo_status relo_backend_vulkan_stream_submitted(relo_backend *backend, const relo_vulkan_stream *vs,
                                                          uint64_t value);

/**
 * Writes to *out the VkResult of the last call of this backend that failed
 * (VK_SUCCESS when none has), for a log line that says more than
 * RELO_ERR_BACKEND. Returns RELO_ERR_INVALID_ARGUMENT for NULLs or a
 * backend of another kind. Thread-safe.
 */
RELO_API relo_status relo_backend_vulkan_last_error(const relo_backend *backend, VkResult *out);

#ifdef __cplusplus
}
#endif

#endif /* RELO_VULKAN_H */
