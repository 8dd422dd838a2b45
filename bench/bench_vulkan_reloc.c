/*
 * bench_vulkan_reloc.c — relocation bandwidth on the Vulkan backend, as a
 * ratio to a plain vkCmdCopyBuffer of the same bytes on the same device and
 * queue, measured in the same run (target ≥ 0.8 for 8 MiB and larger).
 *
 * One relocation run: a fresh device holds an allocation of S bytes that
 * relo_reclaim moves, and room for it on a page the device keeps; under
 * the default (packed) placement first, then the adaptive placement,
 * interleaved:
 *   packed    a 2S block, released, leaves a page in which the allocation
 *             is then alone, half full; a 2S + S/8 block, released, leaves
 *             a page where an allocation of S + S/8 stands with S free:
 *             the reclaim packs the first into it and gives the 2S page
 *             back;
 *   adaptive  the allocation on the arena's first page, then a larger
 *             block grows the arena and is released: the first page is
 *             outdated.
 * The timed part is relo_reclaim, which waits for the streams, records and
 * submits one vkCmdCopyBuffer, waits for its fence, commits and gives the
 * old page back (vkFreeMemory, part of the cost); the backend is wrapped
 * (bench_backend.h) to count each reclaim's device waits. S starts at
 * 2 MiB: the packed placement keeps allocations of 1 MiB and less in pages
 * of at most 2 MiB. Every buffer is written in full before the clock starts.
 *
 * The baseline records, submits and waits for one vkCmdCopyBuffer of S
 * bytes between two buffers of the same memory type (made by the same
 * backend); a second baseline adds the vkFreeMemory of a written buffer as
 * large as the page relocation gives back, so the ratio to it shows relo's
 * own overhead. Runs of the three kinds alternate after a warm-up; medians
 * and spreads are printed. No validation layer is loaded.
 *
 * Usage: bench_vulkan_reloc [runs]   (default 15). Exits 77 without a
 * Vulkan 1.2 device, 1 when a size of 8 MiB or more misses the target.
 */
#include <stdlib.h>
#include <string.h>

#include "backend/backend.h"
#include "bench.h"
#include "bench_backend.h"
#include "relo.h"
#include "relo_vulkan.h"

#define MiB (UINT64_C(1) << 20)
#define MAX_RUNS 101

typedef struct env {
    VkInstance instance;
    VkPhysicalDevice pd;
    VkDevice device;
    uint32_t family;
    VkQueue queue;
    VkCommandPool pool; /* the baseline's */
    VkCommandBuffer cmd;
    VkFence fence;
    char name[VK_MAX_PHYSICAL_DEVICE_NAME_SIZE];
} env;

static int env_open(env *e)
{
    memset(e, 0, sizeof *e);
    VkApplicationInfo app = {.sType = VK_STRUCTURE_TYPE_APPLICATION_INFO,
                             .pApplicationName = "bench_vulkan_reloc",
                             .apiVersion = VK_API_VERSION_1_2};
    VkInstanceCreateInfo ii = {.sType = VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO, .pApplicationInfo = &app};
    if (vkCreateInstance(&ii, NULL, &e->instance) != VK_SUCCESS) return 0;
    VkPhysicalDevice pds[8];
    uint32_t n = 8;
    if (vkEnumeratePhysicalDevices(e->instance, &n, pds) < 0) return 0;
    for (uint32_t i = 0; i < n && !e->pd; i++) {
        VkPhysicalDeviceProperties p;
        vkGetPhysicalDeviceProperties(pds[i], &p);
        if (p.apiVersion < VK_API_VERSION_1_2) continue;
        VkQueueFamilyProperties fams[16];
        uint32_t nf = 16;
        vkGetPhysicalDeviceQueueFamilyProperties(pds[i], &nf, fams);
        for (uint32_t f = 0; f < nf && !e->pd; f++) {
            if (!(fams[f].queueFlags & VK_QUEUE_COMPUTE_BIT)) continue;
            e->pd = pds[i];
            e->family = f;
            memcpy(e->name, p.deviceName, sizeof e->name);
        }
    }
    if (!e->pd) return 0;
    float prio = 1.0f;
    VkDeviceQueueCreateInfo qi = {.sType = VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO,
                                  .queueFamilyIndex = e->family,
                                  .queueCount = 1,
                                  .pQueuePriorities = &prio};
    VkDeviceCreateInfo di = {.sType = VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO,
                             .queueCreateInfoCount = 1,
                             .pQueueCreateInfos = &qi};
    if (vkCreateDevice(e->pd, &di, NULL, &e->device) != VK_SUCCESS) return 0;
    vkGetDeviceQueue(e->device, e->family, 0, &e->queue);
    VkCommandPoolCreateInfo pi = {.sType = VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO,
                                  .flags = VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT,
                                  .queueFamilyIndex = e->family};
    VkCommandBufferAllocateInfo ai = {.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO,
                                      .level = VK_COMMAND_BUFFER_LEVEL_PRIMARY,
                                      .commandBufferCount = 1};
    VkFenceCreateInfo fi = {.sType = VK_STRUCTURE_TYPE_FENCE_CREATE_INFO};
    if (vkCreateCommandPool(e->device, &pi, NULL, &e->pool) != VK_SUCCESS) return 0;
    ai.commandPool = e->pool;
    if (vkAllocateCommandBuffers(e->device, &ai, &e->cmd) != VK_SUCCESS) return 0;
    return vkCreateFence(e->device, &fi, NULL, &e->fence) == VK_SUCCESS;
}

static void env_close(env *e)
{
    if (e->device) {
        if (e->fence) vkDestroyFence(e->device, e->fence, NULL);
        if (e->pool) vkDestroyCommandPool(e->device, e->pool, NULL);
        vkDestroyDevice(e->device, NULL);
    }
    if (e->instance) vkDestroyInstance(e->instance, NULL);
}

static relo_backend *make_backend(env *e)
{
    relo_vulkan_desc desc;
    memset(&desc, 0, sizeof desc);
    desc.physical_device = e->pd;
    desc.device = e->device;
    desc.queue_family = e->family;
    desc.queue = e->queue;
    relo_backend *b = NULL;
    return relo_backend_vulkan_create(&desc, &b) == RELO_OK ? b : NULL;
}

/* What one timed relocation did. */
typedef struct reloc_run {
    double seconds;     /* < 0: the run failed or moved other than `size` bytes */
    uint64_t waits;     /* device waits of the reclaim */
    uint64_t page_back; /* bytes of pages the reclaim gave back */
} reloc_run;

/* Reserves n bytes and writes every one of them (fill holds size bytes). */
static int reserve_written(relo_device *d, relo_stream *s, uint64_t n, uint64_t size,
                           const unsigned char *fill, relo_handle *h)
{
    if (relo_reserve(s, n, h) != RELO_OK) return 0;
    for (uint64_t off = 0; off < n; off += size) {
        uint64_t k = n - off < size ? n - off : size;
        if (relo_write(d, *h, off, fill, k) != RELO_OK) return 0;
    }
    return 1;
}

/* The placement's scene (the opening comment): *h moves at reclaim, *stay
 * (packed only) does not. Returns 0 on error. */
static int scene(relo_placement placement, relo_device *d, relo_stream *s, uint64_t size,
                 const unsigned char *fill, relo_handle *h, relo_handle *stay)
{
    relo_handle w1 = {0}, w2 = {0};
    if (placement != RELO_PLACEMENT_ADAPTIVE)
        return reserve_written(d, s, 2 * size, size, fill, &w1) &&
               reserve_written(d, s, 2 * size + size / 8, size, fill, &w2) &&
               relo_release(d, w1) == RELO_OK && reserve_written(d, s, size, size, fill, h) &&
               relo_release(d, w2) == RELO_OK && relo_reserve(s, size + size / 8, stay) == RELO_OK;
    if (!reserve_written(d, s, size, size, fill, h)) return 0;
    relo_stats st;
    relo_device_stats(d, &st);
    if (!reserve_written(d, s, st.bytes_reserved + MiB, size, fill, &w1)) return 0;
    return relo_release(d, w1) == RELO_OK;
}

/* One timed relocation of `size` bytes under the placement. */
static reloc_run reloc_once(env *e, relo_placement placement, uint64_t size, const unsigned char *fill)
{
    reloc_run run = {-1, 0, 0};
    relo_backend *vk = make_backend(e), *b = NULL;
    relo_device *d = NULL;
    relo_stream *s = NULL;
    relo_handle h = {0}, stay = {0};
    static bench_wrap wrap;
    if (!vk) return run;
    if (bench_wrap_create(&wrap, vk, 0, 0, &b) != RELO_OK) {
        relo_backend_destroy(vk);
        return run;
    }
    const relo_device_desc desc = {.placement = placement};
    if (relo_device_create(&desc, b, &d) != RELO_OK) {
        relo_backend_destroy(b);
        return run;
    }
    if (relo_stream_create(d, NULL, &s) == RELO_OK && scene(placement, d, s, size, fill, &h, &stay)) {
        relo_stats st, after;
        relo_device_stats(d, &st);
        uint64_t waits = bench_wrap_waits(&wrap);
        uint64_t t0 = bench_now_ns();
        relo_status rs = relo_reclaim(s);
        uint64_t t1 = bench_now_ns();
        relo_device_stats(d, &after);
        run.waits = bench_wrap_waits(&wrap) - waits;
        run.page_back = st.bytes_reserved > after.bytes_reserved ? st.bytes_reserved - after.bytes_reserved
                                                                 : 0;
        if (rs == RELO_OK && after.bytes_moved - st.bytes_moved == size)
            run.seconds = (double)(t1 - t0) * 1e-9;
    }
    if (h.id) relo_release(d, h);
    if (stay.id) relo_release(d, stay);
    if (s) relo_stream_destroy(s);
    relo_device_destroy(d);
    return run;
}

/* Records, submits and waits for one copy of size bytes. */
static VkResult plain_copy(env *e, VkBuffer src, VkBuffer dst, uint64_t size)
{
    VkCommandBufferBeginInfo bi = {.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO,
                                   .flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT};
    VkResult r = vkBeginCommandBuffer(e->cmd, &bi);
    if (r != VK_SUCCESS) return r;
    VkBufferCopy region = {.size = size};
    vkCmdCopyBuffer(e->cmd, src, dst, 1, &region);
    r = vkEndCommandBuffer(e->cmd);
    VkSubmitInfo si = {.sType = VK_STRUCTURE_TYPE_SUBMIT_INFO,
                       .commandBufferCount = 1,
                       .pCommandBuffers = &e->cmd};
    if (r == VK_SUCCESS) r = vkQueueSubmit(e->queue, 1, &si, e->fence);
    if (r == VK_SUCCESS) r = vkWaitForFences(e->device, 1, &e->fence, VK_TRUE, UINT64_MAX);
    if (r == VK_SUCCESS) r = vkResetFences(e->device, 1, &e->fence);
    return r;
}

static double copy_once(env *e, VkBuffer src, VkBuffer dst, uint64_t size)
{
    uint64_t t0 = bench_now_ns();
    VkResult r = plain_copy(e, src, dst, size);
    uint64_t t1 = bench_now_ns();
    return r == VK_SUCCESS ? (double)(t1 - t0) * 1e-9 : -1;
}

/* The plain copy plus giving back a written buffer of the page's size. */
static double copy_release_once(env *e, relo_backend *bb, VkBuffer src, VkBuffer dst, uint64_t size,
                                uint64_t page, const unsigned char *fill)
{
    void *old = NULL;
    uint64_t addr = 0;
    if (bb->ops.alloc(bb->ctx, page, &old, &addr) != RELO_OK) return -1;
    for (uint64_t off = 0; off < page; off += size) {
        uint64_t n = page - off < size ? page - off : size;
        if (bb->ops.write(bb->ctx, old, off, fill, n) != RELO_OK) {
            bb->ops.free(bb->ctx, old, page);
            return -1;
        }
    }
    uint64_t t0 = bench_now_ns();
    VkResult r = plain_copy(e, src, dst, size);
    bb->ops.free(bb->ctx, old, page);
    uint64_t t1 = bench_now_ns();
    return r == VK_SUCCESS ? (double)(t1 - t0) * 1e-9 : -1;
}

int main(int argc, char **argv)
{
    int runs = argc > 1 ? atoi(argv[1]) : 15;
    if (runs < 3) runs = 3;
    if (runs > MAX_RUNS) runs = MAX_RUNS;
    env e;
    if (!env_open(&e)) {
        env_close(&e);
        printf("SKIP: no Vulkan 1.2 device\n");
        return 77;
    }
    /* The baseline's buffers come from a backend of their own, so they
     * have the memory type relocation copies between. */
    relo_backend *bb = make_backend(&e);
    if (!bb) {
        env_close(&e);
        printf("SKIP: the Vulkan backend cannot be created on %s\n", e.name);
        return 77;
    }
    printf("bench_vulkan_reloc: %s, %d runs per size\n", e.name, runs);

    static const uint64_t sizes[] = {2 * MiB, 8 * MiB, 64 * MiB, 256 * MiB};
    static const relo_placement placements[2] = {RELO_PLACEMENT_PACKED, RELO_PLACEMENT_ADAPTIVE};
    int below_target = 0;
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
        uint64_t size = sizes[i];
        if (2 * size + size / 8 > bb->props.max_page_size || 9 * size + 32 * MiB > bb->props.capacity)
            continue;
        unsigned char *fill = malloc((size_t)size);
        if (!fill) break;
        for (uint64_t j = 0; j < size; j++) fill[j] = (unsigned char)(j * 31);
        void *src = NULL, *dst = NULL;
        uint64_t addr = 0;
        if (bb->ops.alloc(bb->ctx, size, &src, &addr) != RELO_OK ||
            bb->ops.alloc(bb->ctx, size, &dst, &addr) != RELO_OK ||
            bb->ops.write(bb->ctx, src, 0, fill, size) != RELO_OK ||
            bb->ops.write(bb->ctx, dst, 0, fill, size) != RELO_OK) {
            free(fill);
            printf("  %llu MiB: cannot make the baseline's buffers\n", (unsigned long long)(size / MiB));
            below_target++;
            break;
        }
        VkBuffer vs = ((relo_vulkan_page *)src)->buffer, vd = ((relo_vulkan_page *)dst)->buffer;

        /* Warm-up, which also tells each placement's second baseline how
         * large a page its reclaim gives back. */
        uint64_t page_back[2];
        (void)copy_once(&e, vs, vd, size);
        for (int p = 0; p < 2; p++) {
            reloc_run w = reloc_once(&e, placements[p], size, fill);
            page_back[p] = w.page_back ? w.page_back : size;
        }
        double rel[2][MAX_RUNS], base[MAX_RUNS], base2[2][MAX_RUNS], waits[2][MAX_RUNS];
        int nr[2] = {0, 0}, nb = 0, nb2[2] = {0, 0};
        for (int r = 0; r < runs; r++) {
            double tb = copy_once(&e, vs, vd, size);
            if (tb > 0) base[nb++] = (double)size / tb / 1e9;
            for (int p = 0; p < 2; p++) {
                double tb2 = copy_release_once(&e, bb, vs, vd, size, page_back[p], fill);
                reloc_run tr = reloc_once(&e, placements[p], size, fill);
                if (tb2 > 0) base2[p][nb2[p]++] = (double)size / tb2 / 1e9;
                if (tr.seconds > 0) {
                    waits[p][nr[p]] = (double)tr.waits;
                    rel[p][nr[p]++] = (double)size / tr.seconds / 1e9;
                }
            }
        }
        bb->ops.free(bb->ctx, src, size);
        bb->ops.free(bb->ctx, dst, size);
        free(fill);
        if (nb == 0) {
            printf("  %llu MiB: the baseline copy failed\n", (unsigned long long)(size / MiB));
            below_target++;
            continue;
        }
        char what[96];
        bench_summary sb = bench_summarize(base, nb);
        snprintf(what, sizeof what, "%4llu MiB vkCmdCopyBuffer (baseline)", (unsigned long long)(size / MiB));
        bench_print(what, "GB/s", sb);
        for (int p = 0; p < 2; p++) {
            printf("  %4llu MiB, %s%s:\n", (unsigned long long)(size / MiB),
                   relo_placement_name(placements[p]), p == 0 ? " (the default)" : "");
            if (nr[p] == 0 || nb2[p] == 0) {
                printf("    a run failed\n");
                below_target++;
                continue;
            }
            bench_summary sr = bench_summarize(rel[p], nr[p]);
            bench_print("relocation (relo_reclaim)", "GB/s", sr);
            bench_print("device waits per reclaim", "", bench_summarize(waits[p], nr[p]));
            bench_summary sb2 = bench_summarize(base2[p], nb2[p]);
            snprintf(what, sizeof what, "copy + vkFreeMemory(%llu MiB page)",
                     (unsigned long long)(page_back[p] / MiB));
            bench_print(what, "GB/s", sb2);
            double ratio = sr.median / sb.median;
            bench_ratio("ratio to plain copy", ratio, size >= 8 * MiB ? ">= 0.8" : "(no target below 8 MiB)");
            bench_ratio("ratio to copy + release", sr.median / sb2.median, "~1: relo's own overhead");
            if (size >= 8 * MiB && ratio < 0.8) below_target++;
        }
    }
    relo_backend_destroy(bb);
    env_close(&e);
    return below_target ? 1 : 0;
}
