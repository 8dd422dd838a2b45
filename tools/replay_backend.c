/*
 * replay_backend.c — creating the replay's backend.
 *
 * The OpenCL path picks the first GPU of the first platform that has one
 * (else the first device of any type) and gives relo a queue of its own;
 * the Vulkan one is in replay_vulkan.c.
 */
#include "replay_backend.h"

#include <stdio.h>
#include <string.h>

#ifdef RELO_HAVE_OPENCL
#include "relo_opencl.h"
#endif
#ifdef RELO_HAVE_VULKAN
#include "replay_vulkan.h"
#endif

const char *replay_backend_name(replay_backend_kind kind)
{
    switch (kind) {
    case REPLAY_BACKEND_SIM: return "sim";
    case REPLAY_BACKEND_HOST: return "host";
    case REPLAY_BACKEND_OPENCL: return "opencl";
    case REPLAY_BACKEND_VULKAN: return "vulkan";
    case REPLAY_BACKEND_KIND_COUNT: break;
    }
    return "?";
}

int replay_backend_has_bytes(replay_backend_kind kind)
{
    return kind == REPLAY_BACKEND_HOST || kind == REPLAY_BACKEND_OPENCL || kind == REPLAY_BACKEND_VULKAN;
}

int replay_backend_available(replay_backend_kind kind)
{
    switch (kind) {
    case REPLAY_BACKEND_SIM:
    case REPLAY_BACKEND_HOST: return 1;
    case REPLAY_BACKEND_OPENCL:
#ifdef RELO_HAVE_OPENCL
        return 1;
#else
        return 0;
#endif
    case REPLAY_BACKEND_VULKAN:
#ifdef RELO_HAVE_VULKAN
        return 1;
#else
        return 0;
#endif
    case REPLAY_BACKEND_KIND_COUNT: break;
    }
    return 0;
}

#ifdef RELO_HAVE_OPENCL
static relo_status opencl_create(relo_backend **out, char *msg, size_t msg_cap)
{
    cl_platform_id platforms[16];
    cl_uint np = 0;
    if (clGetPlatformIDs(16, platforms, &np) != CL_SUCCESS || np == 0) {
        snprintf(msg, msg_cap, "no OpenCL platform found");
        return RELO_ERR_UNSUPPORTED;
    }
    if (np > 16) np = 16;
    cl_device_id device = NULL;
    for (int pass = 0; pass < 2 && !device; pass++) {
        cl_device_type type = pass == 0 ? CL_DEVICE_TYPE_GPU : CL_DEVICE_TYPE_ALL;
        for (cl_uint i = 0; i < np && !device; i++) {
            cl_uint nd = 0;
            if (clGetDeviceIDs(platforms[i], type, 1, &device, &nd) != CL_SUCCESS || nd == 0) device = NULL;
        }
    }
    if (!device) {
        snprintf(msg, msg_cap, "no OpenCL device found");
        return RELO_ERR_UNSUPPORTED;
    }
    cl_int err = CL_SUCCESS;
    cl_context context = clCreateContext(NULL, 1, &device, NULL, NULL, &err);
    if (!context) {
        snprintf(msg, msg_cap, "clCreateContext failed (%d)", (int)err);
        return RELO_ERR_BACKEND;
    }
    cl_command_queue queue = clCreateCommandQueue(context, device, 0, &err);
    if (!queue) {
        clReleaseContext(context);
        snprintf(msg, msg_cap, "clCreateCommandQueue failed (%d)", (int)err);
        return RELO_ERR_BACKEND;
    }
    relo_status st = relo_backend_opencl_create(context, device, queue, out);
    /* The backend retains both; the replay keeps no reference of its own. */
    clReleaseCommandQueue(queue);
    clReleaseContext(context);
    if (st != RELO_OK) snprintf(msg, msg_cap, "relo_backend_opencl_create: %s", relo_status_string(st));
    return st;
}
#endif

uint64_t replay_backend_max_page(uint64_t max_alloc)
{
    /* The default 1 GiB page is kept unless the trace needs more: the
     * arena's page is the request plus 1 MiB, rounded up to 1 MiB. A size
     * near 2^64 would wrap that sum, so it saturates at the largest whole
     * number of MiB: the request then fails on its own event. */
    const uint64_t gib = 1ull << 30, mib = 1ull << 20;
    if (max_alloc <= gib - 2 * mib) return 0;
    uint64_t mibs = max_alloc / mib + 2;
    if (mibs > UINT64_MAX / mib) return UINT64_MAX / mib * mib;
    return mibs * mib;
}

relo_status replay_backend_create(replay_backend_kind kind, uint64_t capacity, uint64_t granule,
                                  uint64_t max_alloc, relo_backend **out, char *msg, size_t msg_cap)
{
    relo_host_desc desc;
    memset(&desc, 0, sizeof desc);
    desc.capacity = capacity;
    desc.granule = granule;
    desc.max_page_size = replay_backend_max_page(max_alloc);
    relo_status st;
    switch (kind) {
    case REPLAY_BACKEND_SIM: st = relo_backend_sim_create(&desc, out); break;
    case REPLAY_BACKEND_HOST: st = relo_backend_host_create(&desc, out); break;
    case REPLAY_BACKEND_OPENCL:
#ifdef RELO_HAVE_OPENCL
        return opencl_create(out, msg, msg_cap);
#else
        snprintf(msg, msg_cap,
                 "this relo-replay was built without OpenCL (no OpenCL headers and loader found)");
        return RELO_ERR_UNSUPPORTED;
#endif
    case REPLAY_BACKEND_VULKAN:
#ifdef RELO_HAVE_VULKAN
        return replay_vulkan_create(out, msg, msg_cap);
#else
        snprintf(msg, msg_cap,
                 "this relo-replay was built without Vulkan (no Vulkan headers and loader found)");
        return RELO_ERR_UNSUPPORTED;
#endif
    default: snprintf(msg, msg_cap, "unknown backend"); return RELO_ERR_INVALID_ARGUMENT;
    }
    if (st != RELO_OK)
        snprintf(msg, msg_cap, "creating the %s backend: %s", replay_backend_name(kind),
                 relo_status_string(st));
    return st;
}
