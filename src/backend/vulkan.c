/*
 * backend/vulkan.c — the Vulkan backend: a page is a VkBuffer bound to a
 * VkDeviceMemory of its own, of one memory type chosen at creation;
 * relocation copies are vkCmdCopyBuffer recorded into one command buffer
 * relo owns, submitted and waited on once per pass (wait_copies); waiting
 * for the device waits, in one vkWaitSemaphores, for every registered
 * stream's timeline semaphore to reach the value the runtime announced.
 * Every VkResult is turned into a relo status here (vk_status) and
 * remembered for relo_backend_vulkan_last_error.
 *
 * Threads (relo_backend.h): copy, wait_copies and wait_device come from the
 * one thread running a pass, so the copy command buffer and its recording
 * state need no lock. Everything shared with the threads calling alloc,
 * free, stream_add, stream_remove, read and write (the stream list, the last
 * error) is under `lock`. Submissions go to a queue that only relo uses,
 * under `queue_lock`, or through the runtime's callback, which takes the
 * runtime's own lock. Staging transfers make a transient command pool per
 * call, since command pools are externally synchronized and reads and
 * writes may come from several threads at once.
 */
#include "relo_vulkan.h"

#include <pthread.h>
#include <string.h>

#include "backend/backend.h"
#include "base/hostmem.h"

/* A copy already recorded in this pass's command buffer, for the overlap
 * check that decides whether the next copy needs a barrier. */
typedef struct vk_range {
    VkBuffer buffer;
    uint64_t offset, size;
    bool written; /* the range is a copy's target */
} vk_range;

/* Past this many recorded copies without a barrier, one is recorded anyway
 * so the overlap check stays cheap. */
#define VK_RANGE_MAX 256

typedef struct vk_stream_entry {
    const relo_vulkan_stream *vs; /* the runtime's struct, identity only */
    VkSemaphore semaphore;
    uint64_t target; /* last value announced */
} vk_stream_entry;

typedef struct vk_ctx {
    relo_vulkan_desc desc;
    uint32_t memory_type;  /* every page's */
    uint32_t staging_type; /* host-visible, coherent; UINT32_MAX = none */
    bool mapped;           /* pages are mapped for read and write */
    VkBufferUsageFlags usage;

    /* The pass thread's own (relo_backend.h), so unlocked. */
    VkCommandPool copy_pool;
    VkCommandBuffer copy_cmd;
    VkFence copy_fence;
    bool recording;
    vk_range ranges[VK_RANGE_MAX];
    uint32_t range_count;

    pthread_mutex_t queue_lock; /* desc.queue, when relo submits itself */
    pthread_mutex_t lock;       /* the fields below */
    vk_stream_entry *streams;
    size_t stream_count, stream_cap;
    VkResult last_error;
} vk_ctx;

/* What a VkResult means to relo; device memory refusals only count as "out
 * of memory" where memory is asked for. */
static relo_status vk_status(vk_ctx *c, VkResult r, int allocating)
{
    if (r == VK_SUCCESS) return RELO_OK;
    pthread_mutex_lock(&c->lock);
    c->last_error = r;
    pthread_mutex_unlock(&c->lock);
    switch (r) {
    case VK_ERROR_OUT_OF_HOST_MEMORY: return RELO_ERR_HOST_MEMORY;
    case VK_ERROR_OUT_OF_DEVICE_MEMORY: return allocating ? RELO_ERR_OUT_OF_MEMORY : RELO_ERR_BACKEND;
    default: return RELO_ERR_BACKEND;
    }
}

/* Submits one batch on relo's queue or through the runtime's callback. */
static VkResult submit_batch(vk_ctx *c, const VkSubmitInfo *si, VkFence fence)
{
    if (c->desc.submit) return c->desc.submit(c->desc.submit_user, si, fence);
    pthread_mutex_lock(&c->queue_lock);
    VkResult r = vkQueueSubmit(c->desc.queue, 1, si, fence);
    pthread_mutex_unlock(&c->queue_lock);
    return r;
}

/* ------------------------------------------------------------------------ */
/* Buffers                                                                  */
/* ------------------------------------------------------------------------ */

/* A buffer of size bytes with memory of type `type` bound at 0, mapped when
 * map is set. */
static VkResult make_buffer(vk_ctx *c, uint64_t size, VkBufferUsageFlags usage, uint32_t type, bool map,
                            bool address, relo_vulkan_page *pg, void **mapped)
{
    VkDevice dev = c->desc.device;
    VkBufferCreateInfo bi = {
        .sType = VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO,
        .size = size,
        .usage = usage,
        .sharingMode = VK_SHARING_MODE_EXCLUSIVE,
    };
    VkResult r = vkCreateBuffer(dev, &bi, NULL, &pg->buffer);
    if (r != VK_SUCCESS) return r;
    VkMemoryRequirements req;
    vkGetBufferMemoryRequirements(dev, pg->buffer, &req);
    if (!(req.memoryTypeBits & (1u << type))) {
        vkDestroyBuffer(dev, pg->buffer, NULL);
        return VK_ERROR_FEATURE_NOT_PRESENT;
    }
    VkMemoryAllocateFlagsInfo flags = {
        .sType = VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_FLAGS_INFO,
        .flags = VK_MEMORY_ALLOCATE_DEVICE_ADDRESS_BIT,
    };
    VkMemoryAllocateInfo ai = {
        .sType = VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO,
        .pNext = address ? &flags : NULL,
        .allocationSize = req.size,
        .memoryTypeIndex = type,
    };
    r = vkAllocateMemory(dev, &ai, NULL, &pg->memory);
    if (r == VK_SUCCESS) r = vkBindBufferMemory(dev, pg->buffer, pg->memory, 0);
    if (r == VK_SUCCESS && map) r = vkMapMemory(dev, pg->memory, 0, VK_WHOLE_SIZE, 0, mapped);
    if (r != VK_SUCCESS) {
        vkDestroyBuffer(dev, pg->buffer, NULL);
        if (pg->memory) vkFreeMemory(dev, pg->memory, NULL);
        pg->memory = VK_NULL_HANDLE;
    }
    return r;
}

/* What relo holds per page: the public part first, so a binding's buffer
 * is a relo_vulkan_page *. */
typedef struct vk_page {
    relo_vulkan_page pub;
    void *mapped; /* NULL unless the backend maps pages */
} vk_page;

static relo_status vk_alloc(void *ctx, uint64_t size, void **buffer, uint64_t *address)
{
    vk_ctx *c = ctx;
    vk_page *pg = relo__calloc(sizeof *pg);
    if (!pg) return RELO_ERR_HOST_MEMORY;
    VkResult r = make_buffer(c, size, c->usage, c->memory_type, c->mapped, c->desc.buffer_device_address,
                             &pg->pub, &pg->mapped);
    if (r != VK_SUCCESS) {
        relo__free(pg);
        return vk_status(c, r, 1);
    }
    *address = 0;
    if (c->desc.buffer_device_address) {
        VkBufferDeviceAddressInfo ai = {
            .sType = VK_STRUCTURE_TYPE_BUFFER_DEVICE_ADDRESS_INFO,
            .buffer = pg->pub.buffer,
        };
        *address = vkGetBufferDeviceAddress(c->desc.device, &ai);
    }
    *buffer = pg;
    return RELO_OK;
}

static void vk_free(void *ctx, void *buffer, uint64_t size)
{
    vk_ctx *c = ctx;
    vk_page *pg = buffer;
    (void)size;
    /* Unmapping is implicit in vkFreeMemory; no device work uses the page
     * (the contract), so it goes at once. */
    vkDestroyBuffer(c->desc.device, pg->pub.buffer, NULL);
    vkFreeMemory(c->desc.device, pg->pub.memory, NULL);
    relo__free(pg);
}

/* ------------------------------------------------------------------------ */
/* Host transfers                                                           */
/* ------------------------------------------------------------------------ */

/* Copies n bytes between a page and a fresh staging buffer on relo's queue:
 * to_page from host src, else into host dst. Blocking. */
static relo_status staged(vk_ctx *c, vk_page *pg, uint64_t offset, const void *src, void *dst, uint64_t n)
{
    VkDevice dev = c->desc.device;
    if (c->staging_type == UINT32_MAX) return vk_status(c, VK_ERROR_FEATURE_NOT_PRESENT, 0);
    relo_vulkan_page st = {0};
    void *map = NULL;
    VkBufferUsageFlags usage = src ? VK_BUFFER_USAGE_TRANSFER_SRC_BIT : VK_BUFFER_USAGE_TRANSFER_DST_BIT;
    VkResult r = make_buffer(c, n, usage, c->staging_type, true, false, &st, &map);
    if (r != VK_SUCCESS) return vk_status(c, r, 0);
    if (src) memcpy(map, src, (size_t)n);

    VkCommandPool pool = VK_NULL_HANDLE;
    VkCommandBuffer cmd = VK_NULL_HANDLE;
    VkFence fence = VK_NULL_HANDLE;
    VkCommandPoolCreateInfo pi = {
        .sType = VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO,
        .flags = VK_COMMAND_POOL_CREATE_TRANSIENT_BIT,
        .queueFamilyIndex = c->desc.queue_family,
    };
    r = vkCreateCommandPool(dev, &pi, NULL, &pool);
    if (r == VK_SUCCESS) {
        VkCommandBufferAllocateInfo ai = {
            .sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO,
            .commandPool = pool,
            .level = VK_COMMAND_BUFFER_LEVEL_PRIMARY,
            .commandBufferCount = 1,
        };
        r = vkAllocateCommandBuffers(dev, &ai, &cmd);
    }
    if (r == VK_SUCCESS) {
        VkFenceCreateInfo fi = {.sType = VK_STRUCTURE_TYPE_FENCE_CREATE_INFO};
        r = vkCreateFence(dev, &fi, NULL, &fence);
    }
    if (r == VK_SUCCESS) {
        VkCommandBufferBeginInfo bi = {
            .sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO,
            .flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT,
        };
        r = vkBeginCommandBuffer(cmd, &bi);
    }
    if (r == VK_SUCCESS) {
        VkBufferCopy region = {
            .srcOffset = src ? 0 : offset,
            .dstOffset = src ? offset : 0,
            .size = n,
        };
        vkCmdCopyBuffer(cmd, src ? st.buffer : pg->pub.buffer, src ? pg->pub.buffer : st.buffer, 1, &region);
        /* A read's bytes must be visible to the host once the fence is. */
        VkMemoryBarrier mb = {
            .sType = VK_STRUCTURE_TYPE_MEMORY_BARRIER,
            .srcAccessMask = VK_ACCESS_TRANSFER_WRITE_BIT,
            .dstAccessMask = VK_ACCESS_HOST_READ_BIT | VK_ACCESS_MEMORY_READ_BIT | VK_ACCESS_MEMORY_WRITE_BIT,
        };
        vkCmdPipelineBarrier(cmd, VK_PIPELINE_STAGE_TRANSFER_BIT,
                             VK_PIPELINE_STAGE_HOST_BIT | VK_PIPELINE_STAGE_ALL_COMMANDS_BIT, 0, 1, &mb, 0,
                             NULL, 0, NULL);
        r = vkEndCommandBuffer(cmd);
    }
    if (r == VK_SUCCESS) {
        VkSubmitInfo si = {
            .sType = VK_STRUCTURE_TYPE_SUBMIT_INFO,
            .commandBufferCount = 1,
            .pCommandBuffers = &cmd,
        };
        r = submit_batch(c, &si, fence);
        if (r == VK_SUCCESS) r = vkWaitForFences(dev, 1, &fence, VK_TRUE, UINT64_MAX);
    }
    if (r == VK_SUCCESS && dst) memcpy(dst, map, (size_t)n);
    if (fence) vkDestroyFence(dev, fence, NULL);
    if (pool) vkDestroyCommandPool(dev, pool, NULL);
    vkDestroyBuffer(dev, st.buffer, NULL);
    vkFreeMemory(dev, st.memory, NULL);
    return vk_status(c, r, 0);
}

static relo_status vk_write(void *ctx, void *buffer, uint64_t offset, const void *src, uint64_t n)
{
    vk_ctx *c = ctx;
    vk_page *pg = buffer;
    if (n == 0) return RELO_OK;
    if (n > SIZE_MAX) return RELO_ERR_BACKEND;
    /* Coherent memory: a plain store is seen by later submissions. */
    if (pg->mapped) {
        memcpy((unsigned char *)pg->mapped + offset, src, (size_t)n);
        return RELO_OK;
    }
    return staged(c, pg, offset, src, NULL, n);
}

static relo_status vk_read(void *ctx, void *buffer, uint64_t offset, void *dst, uint64_t n)
{
    vk_ctx *c = ctx;
    vk_page *pg = buffer;
    if (n == 0) return RELO_OK;
    if (n > SIZE_MAX) return RELO_ERR_BACKEND;
    if (pg->mapped) {
        memcpy(dst, (const unsigned char *)pg->mapped + offset, (size_t)n);
        return RELO_OK;
    }
    return staged(c, pg, offset, NULL, dst, n);
}

/* ------------------------------------------------------------------------ */
/* Waiting and copying                                                      */
/* ------------------------------------------------------------------------ */

static relo_status vk_wait_device(void *ctx)
{
    vk_ctx *c = ctx;
    /* A snapshot, so streams may come and go while this waits (a stream
     * being waited on cannot go: relo_stream_destroy is refused while a
     * pass is open). */
    pthread_mutex_lock(&c->lock);
    size_t n = c->stream_count;
    VkSemaphore *sems = n ? relo__malloc(n * sizeof *sems) : NULL;
    uint64_t *values = n ? relo__malloc(n * sizeof *values) : NULL;
    uint32_t count = 0;
    if (sems && values) {
        for (size_t i = 0; i < n; i++) {
            if (c->streams[i].target == 0) continue; /* nothing submitted yet */
            sems[count] = c->streams[i].semaphore;
            values[count++] = c->streams[i].target;
        }
    }
    pthread_mutex_unlock(&c->lock);
    relo_status st = RELO_OK;
    if (n && (!sems || !values)) {
        st = RELO_ERR_HOST_MEMORY;
    } else if (count) {
        VkSemaphoreWaitInfo wi = {
            .sType = VK_STRUCTURE_TYPE_SEMAPHORE_WAIT_INFO,
            .semaphoreCount = count,
            .pSemaphores = sems,
            .pValues = values,
        };
        st = vk_status(c, vkWaitSemaphores(c->desc.device, &wi, UINT64_MAX), 0);
    }
    relo__free(sems);
    relo__free(values);
    /* relo's own submissions are all waited on where they are made
     * (wait_copies, staging), so nothing of relo's is still running. */
    return st;
}

static bool ranges_meet(const vk_range *a, VkBuffer buffer, uint64_t offset, uint64_t size)
{
    return a->buffer == buffer && offset < a->offset + a->size && a->offset < offset + size;
}

/* Whether a copy from (src, so) to (dst, dof) of n bytes touches what an
 * earlier copy of this batch writes, or writes what one reads or writes:
 * copies in one command buffer may run in any order unless a barrier
 * separates them. */
static bool needs_barrier(const vk_ctx *c, VkBuffer src, uint64_t so, VkBuffer dst, uint64_t dof, uint64_t n)
{
    if (c->range_count + 2 > VK_RANGE_MAX) return true;
    for (uint32_t i = 0; i < c->range_count; i++) {
        const vk_range *r = &c->ranges[i];
        if (ranges_meet(r, dst, dof, n)) return true;
        if (r->written && ranges_meet(r, src, so, n)) return true;
    }
    return false;
}

static relo_status vk_copy(void *ctx, void *src, uint64_t src_offset, void *dst, uint64_t dst_offset,
                           uint64_t n)
{
    vk_ctx *c = ctx;
    if (n == 0) return RELO_OK;
    VkBuffer sb = ((vk_page *)src)->pub.buffer, db = ((vk_page *)dst)->pub.buffer;
    if (!c->recording) {
        VkCommandBufferBeginInfo bi = {
            .sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO,
            .flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT,
        };
        /* The pool lets buffers reset one by one: begin resets it. */
        relo_status st = vk_status(c, vkBeginCommandBuffer(c->copy_cmd, &bi), 0);
        if (st != RELO_OK) return st;
        c->recording = true;
        c->range_count = 0;
    }
    if (needs_barrier(c, sb, src_offset, db, dst_offset, n)) {
        VkMemoryBarrier mb = {
            .sType = VK_STRUCTURE_TYPE_MEMORY_BARRIER,
            .srcAccessMask = VK_ACCESS_TRANSFER_WRITE_BIT | VK_ACCESS_TRANSFER_READ_BIT,
            .dstAccessMask = VK_ACCESS_TRANSFER_WRITE_BIT | VK_ACCESS_TRANSFER_READ_BIT,
        };
        vkCmdPipelineBarrier(c->copy_cmd, VK_PIPELINE_STAGE_TRANSFER_BIT, VK_PIPELINE_STAGE_TRANSFER_BIT, 0,
                             1, &mb, 0, NULL, 0, NULL);
        c->range_count = 0;
    }
    VkBufferCopy region = {.srcOffset = src_offset, .dstOffset = dst_offset, .size = n};
    vkCmdCopyBuffer(c->copy_cmd, sb, db, 1, &region);
    c->ranges[c->range_count++] = (vk_range){sb, src_offset, n, false};
    c->ranges[c->range_count++] = (vk_range){db, dst_offset, n, true};
    return RELO_OK;
}

static relo_status vk_wait_copies(void *ctx)
{
    vk_ctx *c = ctx;
    if (!c->recording) return RELO_OK;
    c->recording = false;
    VkDevice dev = c->desc.device;
    /* The copies' bytes must be visible to the runtime's later work and to
     * mapped reads once the fence signals. */
    VkMemoryBarrier mb = {
        .sType = VK_STRUCTURE_TYPE_MEMORY_BARRIER,
        .srcAccessMask = VK_ACCESS_TRANSFER_WRITE_BIT,
        .dstAccessMask = VK_ACCESS_HOST_READ_BIT | VK_ACCESS_MEMORY_READ_BIT | VK_ACCESS_MEMORY_WRITE_BIT,
    };
    vkCmdPipelineBarrier(c->copy_cmd, VK_PIPELINE_STAGE_TRANSFER_BIT,
                         VK_PIPELINE_STAGE_HOST_BIT | VK_PIPELINE_STAGE_ALL_COMMANDS_BIT, 0, 1, &mb, 0, NULL,
                         0, NULL);
    VkResult r = vkEndCommandBuffer(c->copy_cmd);
    if (r == VK_SUCCESS) {
        VkSubmitInfo si = {
            .sType = VK_STRUCTURE_TYPE_SUBMIT_INFO,
            .commandBufferCount = 1,
            .pCommandBuffers = &c->copy_cmd,
        };
        r = submit_batch(c, &si, c->copy_fence);
        if (r == VK_SUCCESS) {
            r = vkWaitForFences(dev, 1, &c->copy_fence, VK_TRUE, UINT64_MAX);
            VkResult rr = vkResetFences(dev, 1, &c->copy_fence);
            if (r == VK_SUCCESS) r = rr;
        }
    }
    return vk_status(c, r, 0);
}

/* ------------------------------------------------------------------------ */
/* Streams                                                                  */
/* ------------------------------------------------------------------------ */

static relo_status vk_stream_add(void *ctx, void *backend_stream)
{
    vk_ctx *c = ctx;
    /* A stream without a semaphore gives the backend nothing to wait on;
     * its finish must (relo_vulkan.h). */
    if (!backend_stream) return RELO_OK;
    const relo_vulkan_stream *vs = backend_stream;
    if (vs->semaphore == VK_NULL_HANDLE) return RELO_ERR_BACKEND;
    relo_status st = RELO_OK;
    pthread_mutex_lock(&c->lock);
    if (c->stream_count == c->stream_cap) {
        size_t cap = c->stream_cap ? 2 * c->stream_cap : 4;
        vk_stream_entry *grown = relo__realloc(c->streams, cap * sizeof *grown);
        if (grown) {
            c->streams = grown;
            c->stream_cap = cap;
        } else {
            st = RELO_ERR_HOST_MEMORY;
        }
    }
    if (st == RELO_OK) c->streams[c->stream_count++] = (vk_stream_entry){vs, vs->semaphore, 0};
    pthread_mutex_unlock(&c->lock);
    return st;
}

static void vk_stream_remove(void *ctx, void *backend_stream)
{
    vk_ctx *c = ctx;
    if (!backend_stream) return;
    /* Two relo streams may share one struct: one entry goes per removal. */
    pthread_mutex_lock(&c->lock);
    for (size_t i = 0; i < c->stream_count; i++) {
        if (c->streams[i].vs != backend_stream) continue;
        c->streams[i] = c->streams[--c->stream_count];
        break;
    }
    pthread_mutex_unlock(&c->lock);
}

static void vk_destroy(void *ctx)
{
    vk_ctx *c = ctx;
    VkDevice dev = c->desc.device;
    if (c->copy_fence) vkDestroyFence(dev, c->copy_fence, NULL);
    if (c->copy_pool) vkDestroyCommandPool(dev, c->copy_pool, NULL);
    relo__free(c->streams);
    pthread_mutex_destroy(&c->queue_lock);
    pthread_mutex_destroy(&c->lock);
    void (*release)(void *) = c->desc.release;
    void *user = c->desc.release_user;
    relo__free(c);
    if (release) release(user);
}

static const relo_backend_ops vulkan_ops = {
    .alloc = vk_alloc,
    .free = vk_free,
    /* vkFreeMemory gives memory back at once; there is no cache to trim. */
    .flush = NULL,
    .write = vk_write,
    .read = vk_read,
    .wait_device = vk_wait_device,
    .copy = vk_copy,
    .wait_copies = vk_wait_copies,
    .stream_add = vk_stream_add,
    .stream_remove = vk_stream_remove,
    .destroy = vk_destroy,
};

/* ------------------------------------------------------------------------ */
/* Creation                                                                 */
/* ------------------------------------------------------------------------ */

static bool has_extension(VkPhysicalDevice pd, const char *name)
{
    uint32_t n = 0;
    if (vkEnumerateDeviceExtensionProperties(pd, NULL, &n, NULL) != VK_SUCCESS || n == 0) return false;
    VkExtensionProperties *ext = relo__malloc(n * sizeof *ext);
    if (!ext) return false;
    bool found = false;
    if (vkEnumerateDeviceExtensionProperties(pd, NULL, &n, ext) == VK_SUCCESS)
        for (uint32_t i = 0; i < n && !found; i++) found = strcmp(ext[i].extensionName, name) == 0;
    relo__free(ext);
    return found;
}

/* The memory type bits the device allows for buffers of `usage` (the same
 * for every size, by the specification), read from a small probe buffer. */
static VkResult type_bits(VkDevice dev, VkBufferUsageFlags usage, uint32_t *bits)
{
    VkBufferCreateInfo bi = {
        .sType = VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO,
        .size = 4096,
        .usage = usage,
        .sharingMode = VK_SHARING_MODE_EXCLUSIVE,
    };
    VkBuffer probe = VK_NULL_HANDLE;
    VkResult r = vkCreateBuffer(dev, &bi, NULL, &probe);
    if (r != VK_SUCCESS) return r;
    VkMemoryRequirements req;
    vkGetBufferMemoryRequirements(dev, probe, &req);
    vkDestroyBuffer(dev, probe, NULL);
    *bits = req.memoryTypeBits;
    return VK_SUCCESS;
}

/* Picks the page memory type: allowed, in the largest device-local heap
 * (any heap where none is device-local), host-visible and coherent where
 * that heap offers it and mapping is wanted. */
static uint32_t pick_page_type(const VkPhysicalDeviceMemoryProperties *mp, uint32_t bits, bool want_mapped,
                               bool *mapped)
{
    const VkMemoryPropertyFlags hv = VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT |
                                     VK_MEMORY_PROPERTY_HOST_COHERENT_BIT;
    uint32_t best = UINT32_MAX;
    uint64_t best_score = 0;
    for (uint32_t i = 0; i < mp->memoryTypeCount; i++) {
        if (!(bits & (1u << i))) continue;
        VkMemoryPropertyFlags f = mp->memoryTypes[i].propertyFlags;
        /* Protected or lazily allocated memory cannot hold copied bytes. */
        if (f & (VK_MEMORY_PROPERTY_PROTECTED_BIT | VK_MEMORY_PROPERTY_LAZILY_ALLOCATED_BIT)) continue;
        uint32_t heap = mp->memoryTypes[i].heapIndex;
        /* Device-local first, then the heap's size (in MiB, so the flags
         * below break ties between types of one heap). */
        uint64_t score = (mp->memoryHeaps[heap].size >> 20) << 2;
        if (f & VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT) score |= UINT64_C(1) << 62;
        if (want_mapped && (f & hv) == hv) score |= 2;
        if (best == UINT32_MAX || score > best_score) {
            best = i;
            best_score = score;
        }
    }
    if (best != UINT32_MAX) *mapped = want_mapped && (mp->memoryTypes[best].propertyFlags & hv) == hv;
    return best;
}

/* A host-visible, coherent type for staging buffers, cached first (reads
 * come back through it). */
static uint32_t pick_staging_type(const VkPhysicalDeviceMemoryProperties *mp, uint32_t bits)
{
    const VkMemoryPropertyFlags hv = VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT |
                                     VK_MEMORY_PROPERTY_HOST_COHERENT_BIT;
    uint32_t best = UINT32_MAX;
    for (uint32_t i = 0; i < mp->memoryTypeCount; i++) {
        VkMemoryPropertyFlags f = mp->memoryTypes[i].propertyFlags;
        if (!(bits & (1u << i)) || (f & hv) != hv) continue;
        if (best == UINT32_MAX) best = i;
        if (f & VK_MEMORY_PROPERTY_HOST_CACHED_BIT) return i;
    }
    return best;
}

/* Fills props and the chosen types from the physical device. */
static relo_status query(vk_ctx *c, relo_backend_props *props)
{
    VkPhysicalDevice pd = c->desc.physical_device;
    VkPhysicalDeviceMaintenance3Properties m3 = {
        .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_MAINTENANCE_3_PROPERTIES,
    };
    VkPhysicalDeviceProperties2 p2 = {
        .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2,
        .pNext = &m3,
    };
    vkGetPhysicalDeviceProperties2(pd, &p2);

    bool budget = has_extension(pd, VK_EXT_MEMORY_BUDGET_EXTENSION_NAME);
    VkPhysicalDeviceMemoryBudgetPropertiesEXT mb = {
        .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_MEMORY_BUDGET_PROPERTIES_EXT,
    };
    VkPhysicalDeviceMemoryProperties2 mp2 = {
        .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_MEMORY_PROPERTIES_2,
        .pNext = budget ? &mb : NULL,
    };
    vkGetPhysicalDeviceMemoryProperties2(pd, &mp2);
    const VkPhysicalDeviceMemoryProperties *mp = &mp2.memoryProperties;

    uint32_t bits = 0, staging_bits = 0;
    VkResult r = type_bits(c->desc.device, c->usage, &bits);
    if (r == VK_SUCCESS)
        r = type_bits(c->desc.device, VK_BUFFER_USAGE_TRANSFER_SRC_BIT | VK_BUFFER_USAGE_TRANSFER_DST_BIT,
                      &staging_bits);
    if (r != VK_SUCCESS) return vk_status(c, r, 0);
    c->memory_type = pick_page_type(mp, bits, !c->desc.staging, &c->mapped);
    if (c->memory_type == UINT32_MAX) return RELO_ERR_BACKEND;
    c->staging_type = pick_staging_type(mp, staging_bits);
    if (!c->mapped && c->staging_type == UINT32_MAX) return RELO_ERR_BACKEND;

    uint32_t heap = mp->memoryTypes[c->memory_type].heapIndex;
    uint64_t heap_size = mp->memoryHeaps[heap].size;
    uint64_t capacity = heap_size;
    if (budget && mb.heapBudget[heap] > 0 && mb.heapBudget[heap] < heap_size) capacity = mb.heapBudget[heap];
    uint64_t alignment = p2.properties.limits.minStorageBufferOffsetAlignment;
    if (alignment < 4) alignment = 4;
    uint64_t max_page = m3.maxMemoryAllocationSize;
    if (max_page == 0 || max_page > heap_size) max_page = heap_size;
    if (max_page < alignment) return RELO_ERR_BACKEND;
    props->alignment = alignment;
    props->max_page_size = max_page;
    props->capacity = capacity;
    props->granule = 0; /* each buffer takes its own memory object's size */
    return RELO_OK;
}

/* Contract in relo_vulkan.h. */
relo_status relo_backend_vulkan_create(const relo_vulkan_desc *desc, relo_backend **out)
{
    if (!desc || !out || !desc->physical_device || !desc->device) return RELO_ERR_INVALID_ARGUMENT;
    if (!desc->queue && !desc->submit) return RELO_ERR_INVALID_ARGUMENT;
    VkPhysicalDeviceProperties pp;
    vkGetPhysicalDeviceProperties(desc->physical_device, &pp);
    if (pp.apiVersion < VK_API_VERSION_1_2) return RELO_ERR_INVALID_ARGUMENT;
    uint32_t families = 0;
    vkGetPhysicalDeviceQueueFamilyProperties(desc->physical_device, &families, NULL);
    if (desc->queue_family >= families) return RELO_ERR_INVALID_ARGUMENT;

    vk_ctx *c = relo__calloc(sizeof *c);
    if (!c) {
        if (desc->release) desc->release(desc->release_user);
        return RELO_ERR_HOST_MEMORY;
    }
    c->desc = *desc;
    c->last_error = VK_SUCCESS;
    c->usage = VK_BUFFER_USAGE_STORAGE_BUFFER_BIT | VK_BUFFER_USAGE_TRANSFER_SRC_BIT |
               VK_BUFFER_USAGE_TRANSFER_DST_BIT;
    if (desc->buffer_device_address) c->usage |= VK_BUFFER_USAGE_SHADER_DEVICE_ADDRESS_BIT;
    if (pthread_mutex_init(&c->lock, NULL) != 0) {
        relo__free(c);
        if (desc->release) desc->release(desc->release_user);
        return RELO_ERR_HOST_MEMORY;
    }
    if (pthread_mutex_init(&c->queue_lock, NULL) != 0) {
        pthread_mutex_destroy(&c->lock);
        relo__free(c);
        if (desc->release) desc->release(desc->release_user);
        return RELO_ERR_HOST_MEMORY;
    }

    relo_backend_props props;
    relo_status s = query(c, &props);
    VkDevice dev = desc->device;
    if (s == RELO_OK) {
        VkCommandPoolCreateInfo pi = {
            .sType = VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO,
            .flags = VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT,
            .queueFamilyIndex = desc->queue_family,
        };
        s = vk_status(c, vkCreateCommandPool(dev, &pi, NULL, &c->copy_pool), 0);
    }
    if (s == RELO_OK) {
        VkCommandBufferAllocateInfo ai = {
            .sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO,
            .commandPool = c->copy_pool,
            .level = VK_COMMAND_BUFFER_LEVEL_PRIMARY,
            .commandBufferCount = 1,
        };
        s = vk_status(c, vkAllocateCommandBuffers(dev, &ai, &c->copy_cmd), 0);
    }
    if (s == RELO_OK) {
        VkFenceCreateInfo fi = {.sType = VK_STRUCTURE_TYPE_FENCE_CREATE_INFO};
        s = vk_status(c, vkCreateFence(dev, &fi, NULL, &c->copy_fence), 0);
    }
    if (s == RELO_OK) s = relo_backend_create(&vulkan_ops, c, &props, out);
    if (s != RELO_OK) vk_destroy(c);
    return s;
}

/* The backend's context, or NULL for a backend of another kind. */
static vk_ctx *ctx_of(const relo_backend *backend)
{
    if (!backend || backend->ops.destroy != vk_destroy) return NULL;
    return backend->ctx;
}

/* Contract in relo_vulkan.h. */
relo_status relo_backend_vulkan_stream_submitted(relo_backend *backend, const relo_vulkan_stream *vs,
                                                 uint64_t value)
{
    vk_ctx *c = ctx_of(backend);
    if (!c || !vs) return RELO_ERR_INVALID_ARGUMENT;
    relo_status st = RELO_ERR_NOT_FOUND;
    pthread_mutex_lock(&c->lock);
    for (size_t i = 0; i < c->stream_count; i++) {
        if (c->streams[i].vs != vs) continue;
        if (value > c->streams[i].target) c->streams[i].target = value;
        st = RELO_OK;
    }
    pthread_mutex_unlock(&c->lock);
    return st;
}

/* Contract in relo_vulkan.h. */
relo_status relo_backend_vulkan_last_error(const relo_backend *backend, VkResult *out)
{
    vk_ctx *c = ctx_of(backend);
    if (!c || !out) return RELO_ERR_INVALID_ARGUMENT;
    pthread_mutex_lock(&c->lock);
    *out = c->last_error;
    pthread_mutex_unlock(&c->lock);
    return RELO_OK;
}
