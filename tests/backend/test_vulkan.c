/*
 * test_vulkan.c — the Vulkan backend on the first Vulkan 1.2 device found
 * (Mesa's lavapipe in CI), with the Khronos validation layer on, its
 * synchronization validation included: every case fails on any warning or
 * error the layer reports. First the backend's ops (properties, transfers
 * mapped and staged, device addresses, stream registration), then the
 * relocation and capture cases that move bytes (device_cases.h)
 * through the public API, a compute shader that adds 1 through a binding
 * before and after a relocation, and two timeline semaphores as two relo
 * streams whose work relocation must wait for.
 *
 * Cases SKIP (exit 77, reason printed) without a Vulkan loader, driver or
 * device, without the validation layer, or (shader cases) where the build
 * found no glslangValidator.
 *
 * The relocation behaviours and the shader case are written once for every
 * real device in device_cases.h; this file gives them the Vulkan
 * environment. Vulkan has no fault injection, so the cases of a refused
 * copy, a failed wait, the count of waits and two streams wrap the Vulkan backend's ops (wrap_backend.h).
 */
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "backend/backend.h"
#include "check.h"
#include "device_cases.h"
#include "fixture.h"
#include "relo.h"
#include "relo_vulkan.h"
#include "round_trip.h"
#include "testing/testing.h"
#include "wrap_backend.h"

#ifdef RELO_TEST_HAVE_SPIRV
#include "add1.spv.h"
#endif

#if defined(__SANITIZE_ADDRESS__)
#define RELO_TEST_UNDER_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define RELO_TEST_UNDER_ASAN 1
#endif
#endif
#ifndef RELO_TEST_UNDER_ASAN
#define RELO_TEST_UNDER_ASAN 0
#endif

/* ------------------------------------------------------------------------ */
/* Vulkan environment                                                       */
/* ------------------------------------------------------------------------ */

/* Messages of the validation layer (warnings and errors) so far. */
static int vk_messages;

static VKAPI_ATTR VkBool32 VKAPI_CALL on_message(VkDebugUtilsMessageSeverityFlagBitsEXT severity,
                                                 VkDebugUtilsMessageTypeFlagsEXT type,
                                                 const VkDebugUtilsMessengerCallbackDataEXT *data, void *user)
{
    (void)type;
    (void)user;
    vk_messages++;
    fprintf(stderr, "validation [%d]: %s\n", (int)severity, data->pMessage);
    return VK_FALSE;
}

typedef struct vk_env {
    VkInstance instance;
    VkDebugUtilsMessengerEXT messenger;
    VkPhysicalDevice pd;
    VkDevice device;
    uint32_t family;
    uint32_t queue_count; /* 1 or 2 */
    VkQueue queues[2];
    pthread_mutex_t queue_lock[2]; /* the runtime's, one per queue */
    bool bda;                      /* bufferDeviceAddress enabled */
    relo_vulkan_stream vs[2];      /* two streams' timeline semaphores */
    uint64_t value[2];             /* the last value submitted on each */
    relo_backend *backend;         /* the Vulkan backend in use, for announcements */
    /* The add1 pipeline, where built. */
    VkShaderModule module;
    VkDescriptorSetLayout set_layout;
    VkPipelineLayout layout;
    VkPipeline pipeline;
    VkDescriptorPool descriptors;
    VkCommandPool cmd_pool;
} vk_env;

/* Whether the instance offers the layer. */
static bool has_layer(const char *name)
{
    uint32_t n = 0;
    if (vkEnumerateInstanceLayerProperties(&n, NULL) != VK_SUCCESS || n == 0) return false;
    VkLayerProperties *p = calloc(n, sizeof *p);
    bool found = false;
    if (p && vkEnumerateInstanceLayerProperties(&n, p) == VK_SUCCESS)
        for (uint32_t i = 0; i < n && !found; i++) found = strcmp(p[i].layerName, name) == 0;
    free(p);
    return found;
}

static VkSemaphore make_timeline(VkDevice dev, uint64_t initial)
{
    VkSemaphoreTypeCreateInfo ti = {
        .sType = VK_STRUCTURE_TYPE_SEMAPHORE_TYPE_CREATE_INFO,
        .semaphoreType = VK_SEMAPHORE_TYPE_TIMELINE,
        .initialValue = initial,
    };
    VkSemaphoreCreateInfo si = {.sType = VK_STRUCTURE_TYPE_SEMAPHORE_CREATE_INFO, .pNext = &ti};
    VkSemaphore s = VK_NULL_HANDLE;
    if (vkCreateSemaphore(dev, &si, NULL, &s) != VK_SUCCESS) return VK_NULL_HANDLE;
    return s;
}

/* Opens the first Vulkan 1.2 device with a compute queue, with validation
 * on, or ends the case as skipped. */
static void env_open(vk_env *e)
{
    memset(e, 0, sizeof *e);
    vk_messages = 0;
    const char *layer = "VK_LAYER_KHRONOS_validation";
    if (!has_layer(layer)) check_skip("no Vulkan loader or no validation layer (vulkan-validationlayers)");
    VkDebugUtilsMessengerCreateInfoEXT mi = {
        .sType = VK_STRUCTURE_TYPE_DEBUG_UTILS_MESSENGER_CREATE_INFO_EXT,
        .messageSeverity = VK_DEBUG_UTILS_MESSAGE_SEVERITY_WARNING_BIT_EXT |
                           VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT,
        .messageType = VK_DEBUG_UTILS_MESSAGE_TYPE_GENERAL_BIT_EXT |
                       VK_DEBUG_UTILS_MESSAGE_TYPE_VALIDATION_BIT_EXT |
                       VK_DEBUG_UTILS_MESSAGE_TYPE_PERFORMANCE_BIT_EXT,
        .pfnUserCallback = on_message,
    };
    /* Synchronization validation too: it reports copies or kernels that
     * race for lack of a barrier. Not under AddressSanitizer: the layer's
     * synchronization state leaks a few objects at every device teardown
     * (Debian 12's 1.3.239 layer), which LeakSanitizer would fail; the
     * plain build runs it. */
    VkValidationFeatureEnableEXT enables[] = {VK_VALIDATION_FEATURE_ENABLE_SYNCHRONIZATION_VALIDATION_EXT};
    VkValidationFeaturesEXT vf = {
        .sType = VK_STRUCTURE_TYPE_VALIDATION_FEATURES_EXT,
        .pNext = &mi,
        .enabledValidationFeatureCount = RELO_TEST_UNDER_ASAN ? 0 : 1,
        .pEnabledValidationFeatures = enables,
    };
    VkApplicationInfo app = {
        .sType = VK_STRUCTURE_TYPE_APPLICATION_INFO,
        .pApplicationName = "relo test_vulkan",
        .apiVersion = VK_API_VERSION_1_2,
    };
    const char *exts[] = {VK_EXT_DEBUG_UTILS_EXTENSION_NAME};
    VkInstanceCreateInfo ii = {
        .sType = VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO,
        .pNext = &vf,
        .pApplicationInfo = &app,
        .enabledLayerCount = 1,
        .ppEnabledLayerNames = &layer,
        .enabledExtensionCount = 1,
        .ppEnabledExtensionNames = exts,
    };
    if (vkCreateInstance(&ii, NULL, &e->instance) != VK_SUCCESS)
        check_skip("no Vulkan 1.2 driver (vkCreateInstance failed)");
    PFN_vkCreateDebugUtilsMessengerEXT create_messenger = (PFN_vkCreateDebugUtilsMessengerEXT)
        vkGetInstanceProcAddr(e->instance, "vkCreateDebugUtilsMessengerEXT");
    if (!create_messenger || create_messenger(e->instance, &mi, NULL, &e->messenger) != VK_SUCCESS)
        check_skip("no debug messenger (VK_EXT_debug_utils)");

    uint32_t n = 0;
    vkEnumeratePhysicalDevices(e->instance, &n, NULL);
    VkPhysicalDevice pds[8];
    if (n > 8) n = 8;
    if (n == 0 || vkEnumeratePhysicalDevices(e->instance, &n, pds) < 0) check_skip("no Vulkan device");
    for (uint32_t i = 0; i < n && !e->pd; i++) {
        VkPhysicalDeviceProperties p;
        vkGetPhysicalDeviceProperties(pds[i], &p);
        if (p.apiVersion < VK_API_VERSION_1_2) continue;
        uint32_t nf = 0;
        vkGetPhysicalDeviceQueueFamilyProperties(pds[i], &nf, NULL);
        VkQueueFamilyProperties fams[16];
        if (nf > 16) nf = 16;
        vkGetPhysicalDeviceQueueFamilyProperties(pds[i], &nf, fams);
        for (uint32_t f = 0; f < nf; f++) {
            if (!(fams[f].queueFlags & VK_QUEUE_COMPUTE_BIT)) continue;
            e->pd = pds[i];
            e->family = f;
            e->queue_count = fams[f].queueCount >= 2 ? 2 : 1;
            break;
        }
    }
    if (!e->pd) check_skip("no Vulkan 1.2 device with a compute queue");

    VkPhysicalDeviceVulkan12Features have = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES};
    VkPhysicalDeviceFeatures2 f2 = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2, .pNext = &have};
    vkGetPhysicalDeviceFeatures2(e->pd, &f2);
    if (!have.timelineSemaphore) check_skip("the device has no timeline semaphores");
    e->bda = have.bufferDeviceAddress;
    VkPhysicalDeviceVulkan12Features want = {
        .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES,
        .timelineSemaphore = VK_TRUE,
        .bufferDeviceAddress = e->bda ? VK_TRUE : VK_FALSE,
    };
    float prio[2] = {1.0f, 1.0f};
    VkDeviceQueueCreateInfo qi = {
        .sType = VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO,
        .queueFamilyIndex = e->family,
        .queueCount = e->queue_count,
        .pQueuePriorities = prio,
    };
    const char *budget = VK_EXT_MEMORY_BUDGET_EXTENSION_NAME;
    uint32_t next = 0;
    vkEnumerateDeviceExtensionProperties(e->pd, NULL, &next, NULL);
    VkExtensionProperties *ext = calloc(next ? next : 1, sizeof *ext);
    bool has_budget = false;
    if (ext && vkEnumerateDeviceExtensionProperties(e->pd, NULL, &next, ext) == VK_SUCCESS)
        for (uint32_t i = 0; i < next; i++) has_budget |= strcmp(ext[i].extensionName, budget) == 0;
    free(ext);
    VkDeviceCreateInfo di = {
        .sType = VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO,
        .pNext = &want,
        .queueCreateInfoCount = 1,
        .pQueueCreateInfos = &qi,
        .enabledExtensionCount = has_budget ? 1 : 0,
        .ppEnabledExtensionNames = &budget,
    };
    if (vkCreateDevice(e->pd, &di, NULL, &e->device) != VK_SUCCESS)
        check_skip("cannot create a Vulkan device");
    for (uint32_t i = 0; i < e->queue_count; i++) {
        vkGetDeviceQueue(e->device, e->family, i, &e->queues[i]);
        pthread_mutex_init(&e->queue_lock[i], NULL);
    }
    for (int i = 0; i < 2; i++) {
        e->vs[i].semaphore = make_timeline(e->device, 0);
        if (!e->vs[i].semaphore) check_skip("cannot create a timeline semaphore");
    }
}

static void pipeline_close(vk_env *e);

/* Destroys everything env_open made and fails the case on any message of
 * the validation layer. env is a vk_env (void *, as dc_env calls it). */
static void env_close(void *env)
{
    vk_env *e = env;
    if (e->device) {
        vkDeviceWaitIdle(e->device);
        pipeline_close(e);
        for (int i = 0; i < 2; i++)
            if (e->vs[i].semaphore) vkDestroySemaphore(e->device, e->vs[i].semaphore, NULL);
        vkDestroyDevice(e->device, NULL);
        for (uint32_t i = 0; i < e->queue_count; i++) pthread_mutex_destroy(&e->queue_lock[i]);
    }
    if (e->messenger) {
        PFN_vkDestroyDebugUtilsMessengerEXT destroy = (PFN_vkDestroyDebugUtilsMessengerEXT)
            vkGetInstanceProcAddr(e->instance, "vkDestroyDebugUtilsMessengerEXT");
        if (destroy) destroy(e->instance, e->messenger, NULL);
    }
    if (e->instance) vkDestroyInstance(e->instance, NULL);
    expect_eq(vk_messages, 0);
}

/* The runtime's submit callback: relo's batches go to queue 0 under the
 * runtime's lock of that queue. */
static VkResult runtime_submit(void *user, const VkSubmitInfo *si, VkFence fence)
{
    vk_env *e = user;
    pthread_mutex_lock(&e->queue_lock[0]);
    VkResult r = vkQueueSubmit(e->queues[0], 1, si, fence);
    pthread_mutex_unlock(&e->queue_lock[0]);
    return r;
}

/* The desc a runtime gives: a queue of relo's own where the family has two
 * (the runtime keeps queue 0), else the callback onto queue 0. */
static relo_vulkan_desc desc_of(vk_env *e)
{
    relo_vulkan_desc d;
    memset(&d, 0, sizeof d);
    d.physical_device = e->pd;
    d.device = e->device;
    d.queue_family = e->family;
    if (e->queue_count == 2) {
        d.queue = e->queues[1];
    } else {
        d.submit = runtime_submit;
        d.submit_user = e;
    }
    d.buffer_device_address = e->bda;
    return d;
}

/* A Vulkan backend on env (a vk_env, void * as dc_env calls it), kept in
 * env->backend for stream announcements; NULL where creation fails. */
static relo_backend *make_backend(void *env)
{
    vk_env *e = env;
    relo_vulkan_desc d = desc_of(e);
    relo_backend *b = NULL;
    if (relo_backend_vulkan_create(&d, &b) != RELO_OK) return NULL;
    e->backend = b;
    return b;
}

/* ------------------------------------------------------------------------ */
/* The environment as the shared cases see it (device_cases.h)              */
/* ------------------------------------------------------------------------ */

static void *cases_stream(void *env, int i)
{
    vk_env *e = env;
    return &e->vs[i];
}

/* Where the device has buffer device addresses, a moved allocation's
 * address follows it: the new buffer's plus the offset. */
static void cases_check_moved(void *env, relo_binding moved)
{
    vk_env *e = env;
    if (!e->bda) return;
    VkBufferDeviceAddressInfo ai = {.sType = VK_STRUCTURE_TYPE_BUFFER_DEVICE_ADDRESS_INFO,
                                    .buffer = relo_vulkan_buffer(moved)};
    expect_eq(moved.address, vkGetBufferDeviceAddress(e->device, &ai) + moved.offset);
}

/* What wait_device promises (wrap_backend.h's work_done): each stream's
 * semaphore has reached the last value submitted on it. */
static bool streams_reached(void *env)
{
    vk_env *e = env;
    bool done = true;
    for (int i = 0; i < 2; i++) {
        uint64_t now = 0;
        vkGetSemaphoreCounterValue(e->device, e->vs[i].semaphore, &now);
        if (now < e->value[i]) done = false;
    }
    return done;
}

static VkResult launch_add1(vk_env *e, int i, relo_binding bd, VkSemaphore gate);
static VkResult finish_stream(vk_env *e, int i);

static int cases_launch_add1(void *env, int i, relo_binding bd)
{
    return launch_add1(env, i, bd, VK_NULL_HANDLE);
}

static int cases_finish(void *env, int i)
{
    return finish_stream(env, i);
}

/* Opens the environment (or ends the case as skipped) and describes it to
 * the shared cases. */
static dc_env open_cases(vk_env *e)
{
    env_open(e);
    dc_env c = {
        .env = e,
        .make_backend = make_backend,
        .stream = cases_stream,
        .close = env_close,
        .check_moved = cases_check_moved,
        .launch_add1 = cases_launch_add1,
        .finish = cases_finish,
        .add1_width = 4,
    };
    return c;
}

/* ------------------------------------------------------------------------ */
/* The backend's ops                                                        */
/* ------------------------------------------------------------------------ */

CHECK_TEST(props_come_from_the_device)
{
    vk_env e;
    env_open(&e);
    relo_backend *b = make_backend(&e);
    require_true(b != NULL);
    VkPhysicalDeviceProperties p;
    vkGetPhysicalDeviceProperties(e.pd, &p);
    VkPhysicalDeviceMemoryProperties mp;
    vkGetPhysicalDeviceMemoryProperties(e.pd, &mp);
    relo_backend_props props;
    require_ok(relo_backend_props_get(b, &props));
    uint64_t align = p.limits.minStorageBufferOffsetAlignment;
    expect_eq(props.alignment, align < 4 ? 4 : align);
    expect_eq(props.granule, 0); /* each buffer takes its own memory object */
    /* Capacity is a heap's budget or size: positive, at most the largest
     * heap; a page fits in it. */
    uint64_t largest = 0;
    for (uint32_t i = 0; i < mp.memoryHeapCount; i++)
        if (mp.memoryHeaps[i].size > largest) largest = mp.memoryHeaps[i].size;
    expect_gt(props.capacity, 0);
    expect_le(props.capacity, largest);
    expect_le(props.max_page_size, largest);
    expect_ge(props.max_page_size, 64 * MiB);
    relo_backend_destroy(b);
    env_close(&e);
}

CHECK_TEST(create_checks_its_arguments)
{
    vk_env e;
    env_open(&e);
    relo_backend *b = NULL;
    relo_vulkan_desc d = desc_of(&e);
    expect_status(relo_backend_vulkan_create(NULL, &b), RELO_ERR_INVALID_ARGUMENT);
    expect_status(relo_backend_vulkan_create(&d, NULL), RELO_ERR_INVALID_ARGUMENT);
    relo_vulkan_desc bad = d;
    bad.device = VK_NULL_HANDLE;
    expect_status(relo_backend_vulkan_create(&bad, &b), RELO_ERR_INVALID_ARGUMENT);
    bad = d;
    bad.queue = VK_NULL_HANDLE;
    bad.submit = NULL;
    expect_status(relo_backend_vulkan_create(&bad, &b), RELO_ERR_INVALID_ARGUMENT);
    bad = d;
    bad.queue_family = 1000;
    expect_status(relo_backend_vulkan_create(&bad, &b), RELO_ERR_INVALID_ARGUMENT);
    expect_true(b == NULL);

    /* A stream struct without a semaphore is refused; NULL is accepted. */
    b = make_backend(&e);
    require_true(b != NULL);
    relo_vulkan_stream none = {VK_NULL_HANDLE};
    expect_status(b->ops.stream_add(b->ctx, &none), RELO_ERR_BACKEND);
    expect_ok(b->ops.stream_add(b->ctx, NULL));
    /* Announcing a value needs a registered stream. */
    expect_status(relo_backend_vulkan_stream_submitted(b, &e.vs[0], 1), RELO_ERR_NOT_FOUND);
    relo_backend_destroy(b);

    /* The Vulkan calls refuse backends of another kind. */
    relo_backend *h = NULL;
    require_ok(relo_backend_host_create(NULL, &h));
    VkResult code = VK_SUCCESS;
    expect_status(relo_backend_vulkan_last_error(h, &code), RELO_ERR_INVALID_ARGUMENT);
    expect_status(relo_backend_vulkan_stream_submitted(h, &e.vs[0], 1), RELO_ERR_INVALID_ARGUMENT);
    relo_backend_destroy(h);
    env_close(&e);
}

static void count_release(void *user)
{
    (*(int *)user)++;
}

CHECK_TEST(release_runs_once_when_the_backend_goes)
{
    vk_env e;
    dc_env c = open_cases(&e);
    int released = 0;
    relo_vulkan_desc d = desc_of(&e);
    d.release = count_release;
    d.release_user = &released;
    relo_backend *b = NULL;
    require_ok(relo_backend_vulkan_create(&d, &b));
    fx f;
    require_true(dc_open(&f, &c, b, 1));
    expect_eq(released, 0);
    fx_close(&f); /* relo_device_destroy destroys the backend */
    expect_eq(released, 1);
    /* A refused argument is not a failure after the checks: no release. */
    d.queue_family = 1000;
    expect_status(relo_backend_vulkan_create(&d, &b), RELO_ERR_INVALID_ARGUMENT);
    expect_eq(released, 1);
    env_close(&e);
}

/* write, copy, read through the ops, on a backend made from d. */
static void ops_round_trip(vk_env *e, relo_vulkan_desc d)
{
    relo_backend *b = NULL;
    require_ok(relo_backend_vulkan_create(&d, &b));
    void *x = NULL, *y = NULL;
    uint64_t ax = 1, ay = 1;
    require_ok(b->ops.alloc(b->ctx, 4096, &x, &ax));
    require_ok(b->ops.alloc(b->ctx, 4096, &y, &ay));
    expect_true(x != NULL && y != NULL && x != y);
    const relo_vulkan_page *px = x;
    expect_true(px->buffer != VK_NULL_HANDLE && px->memory != VK_NULL_HANDLE);
    if (e->bda) {
        VkBufferDeviceAddressInfo ai = {.sType = VK_STRUCTURE_TYPE_BUFFER_DEVICE_ADDRESS_INFO,
                                        .buffer = px->buffer};
        expect_ne(ax, 0);
        expect_eq(ax, vkGetBufferDeviceAddress(e->device, &ai));
    } else {
        expect_eq(ax, 0);
    }

    round_trip_ops(b, x, y);
    expect_ok(b->ops.write(b->ctx, x, 0, "", 0)); /* zero bytes: nothing to do */
    expect_ok(b->ops.wait_copies(b->ctx));        /* no copies: nothing to wait for */
    expect_ok(b->ops.wait_device(b->ctx));
    VkResult code = VK_ERROR_UNKNOWN;
    require_ok(relo_backend_vulkan_last_error(b, &code));
    expect_eq(code, VK_SUCCESS);

    b->ops.free(b->ctx, x, 4096);
    b->ops.free(b->ctx, y, 4096);
    relo_backend_destroy(b);
}

CHECK_TEST(ops_write_copy_read)
{
    vk_env e;
    env_open(&e);
    /* relo's own queue: the runtime submits nothing in this case. */
    relo_vulkan_desc d = desc_of(&e);
    d.submit = NULL;
    d.queue = e.queues[0];
    ops_round_trip(&e, d);
    /* Through the runtime's submit callback. */
    d = desc_of(&e);
    d.queue = VK_NULL_HANDLE;
    d.submit = runtime_submit;
    d.submit_user = &e;
    ops_round_trip(&e, d);
    env_close(&e);
}

CHECK_TEST(ops_staged_transfers)
{
    vk_env e;
    env_open(&e);
    /* Pages never mapped: relo_write and relo_read copy through staging
     * buffers, as on a GPU whose device memory the host cannot see. */
    relo_vulkan_desc d = desc_of(&e);
    d.staging = true;
    ops_round_trip(&e, d);
    env_close(&e);
}

CHECK_TEST(copies_that_overlap_stay_in_order)
{
    vk_env e;
    env_open(&e);
    relo_backend *b = make_backend(&e);
    require_true(b != NULL);
    void *x = NULL;
    uint64_t a = 0;
    require_ok(b->ops.alloc(b->ctx, 3 * 4096, &x, &a));
    unsigned char one[4096], two[4096], back[4096];
    memset(one, 1, sizeof one);
    memset(two, 2, sizeof two);
    require_ok(b->ops.write(b->ctx, x, 0, one, sizeof one));
    require_ok(b->ops.write(b->ctx, x, 4096, two, sizeof two));
    /* One pass: [4096, 8192) moves to [8192, 12288), then [0, 4096) into
     * the room it left. The second copy must not start before the first
     * read its source. */
    require_ok(b->ops.copy(b->ctx, x, 4096, x, 8192, 4096));
    require_ok(b->ops.copy(b->ctx, x, 0, x, 4096, 4096));
    require_ok(b->ops.wait_copies(b->ctx));
    require_ok(b->ops.read(b->ctx, x, 8192, back, sizeof back));
    expect_eq(memcmp(back, two, sizeof back), 0);
    require_ok(b->ops.read(b->ctx, x, 4096, back, sizeof back));
    expect_eq(memcmp(back, one, sizeof back), 0);
    b->ops.free(b->ctx, x, 3 * 4096);
    relo_backend_destroy(b);
    env_close(&e);
}

CHECK_TEST(streams_register_semaphores)
{
    vk_env e;
    dc_env c = open_cases(&e);
    fx f;
    require_true(dc_open(&f, &c, make_backend(&e), 2));
    /* Two streams may share a semaphore. */
    relo_stream *s2 = NULL;
    require_ok(relo_stream_create(f.dev, &e.vs[1], &s2));
    expect_ok(relo_backend_vulkan_stream_submitted(f.backend, &e.vs[1], 0));
    require_ok(relo_stream_destroy(s2));
    expect_ok(relo_backend_vulkan_stream_submitted(f.backend, &e.vs[1], 0));
    require_ok(relo_stream_destroy(f.s2));
    f.s2 = NULL;
    expect_status(relo_backend_vulkan_stream_submitted(f.backend, &e.vs[1], 0), RELO_ERR_NOT_FOUND);
    dc_close(&f, &c);
}

/* ------------------------------------------------------------------------ */
/* Relocation and capture cases (device_cases.h)                            */
/* ------------------------------------------------------------------------ */

CHECK_TEST(a25_reclaim_moves_and_keeps_bytes)
{
    vk_env e;
    dc_a25_reclaim_moves_and_keeps_bytes(open_cases(&e));
}

CHECK_TEST(a26_refused_copies_abandon)
{
    vk_env e;
    dc_failed_copy_keeps_bytes(open_cases(&e), true);
}

CHECK_TEST(a27_failed_copy_wait_leaks_both_sides)
{
    vk_env e;
    dc_failed_copy_keeps_bytes(open_cases(&e), false);
}

CHECK_TEST(a36_recording_stream_blocks_relocation)
{
    vk_env e;
    dc_a36_recording_stream_blocks_relocation(open_cases(&e));
}

CHECK_TEST(a37_one_wait_before_copies_one_after)
{
    vk_env e;
    dc_a37_one_wait_before_copies_one_after(open_cases(&e));
}

CHECK_TEST(a38_capture_state_errors)
{
    vk_env e;
    dc_a38_capture_state_errors(open_cases(&e));
}

CHECK_TEST(a39_prepare_relocates_every_stream_first)
{
    vk_env e;
    dc_a39_prepare_relocates_every_stream_first(open_cases(&e));
}

CHECK_TEST(a40_new_page_while_recording_dooms_it)
{
    vk_env e;
    dc_a40_new_page_while_recording_dooms_it(open_cases(&e));
}

CHECK_TEST(a41_guarded_page_serves_nothing_new)
{
    vk_env e;
    dc_a41_guarded_page_serves_nothing_new(open_cases(&e));
}

CHECK_TEST(a42_a43_guarded_page_stays_until_graph_destroyed)
{
    vk_env e;
    dc_a42_a43_guarded_page_stays_until_graph_destroyed(open_cases(&e));
}

/* ------------------------------------------------------------------------ */
/* A compute shader through bindings                                        */
/* ------------------------------------------------------------------------ */

static void pipeline_close(vk_env *e)
{
    VkDevice dev = e->device;
    if (e->cmd_pool) vkDestroyCommandPool(dev, e->cmd_pool, NULL);
    if (e->descriptors) vkDestroyDescriptorPool(dev, e->descriptors, NULL);
    if (e->pipeline) vkDestroyPipeline(dev, e->pipeline, NULL);
    if (e->layout) vkDestroyPipelineLayout(dev, e->layout, NULL);
    if (e->set_layout) vkDestroyDescriptorSetLayout(dev, e->set_layout, NULL);
    if (e->module) vkDestroyShaderModule(dev, e->module, NULL);
}

/* Builds the add1 pipeline, or ends the case as skipped without SPIR-V. */
static void pipeline_open(vk_env *e)
{
#ifndef RELO_TEST_HAVE_SPIRV
    (void)e;
    env_close(e);
    check_skip("built without glslangValidator: no SPIR-V for the add1 shader");
#else
    VkDevice dev = e->device;
    VkShaderModuleCreateInfo mi = {
        .sType = VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO,
        .codeSize = sizeof relo_add1_spv,
        .pCode = relo_add1_spv,
    };
    VkDescriptorSetLayoutBinding lb = {
        .binding = 0,
        .descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER,
        .descriptorCount = 1,
        .stageFlags = VK_SHADER_STAGE_COMPUTE_BIT,
    };
    VkDescriptorSetLayoutCreateInfo li = {
        .sType = VK_STRUCTURE_TYPE_DESCRIPTOR_SET_LAYOUT_CREATE_INFO,
        .bindingCount = 1,
        .pBindings = &lb,
    };
    VkPushConstantRange pc = {.stageFlags = VK_SHADER_STAGE_COMPUTE_BIT, .size = 4};
    bool ok = vkCreateShaderModule(dev, &mi, NULL, &e->module) == VK_SUCCESS &&
              vkCreateDescriptorSetLayout(dev, &li, NULL, &e->set_layout) == VK_SUCCESS;
    if (ok) {
        VkPipelineLayoutCreateInfo pli = {
            .sType = VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO,
            .setLayoutCount = 1,
            .pSetLayouts = &e->set_layout,
            .pushConstantRangeCount = 1,
            .pPushConstantRanges = &pc,
        };
        ok = vkCreatePipelineLayout(dev, &pli, NULL, &e->layout) == VK_SUCCESS;
    }
    if (ok) {
        VkComputePipelineCreateInfo ci = {
            .sType = VK_STRUCTURE_TYPE_COMPUTE_PIPELINE_CREATE_INFO,
            .stage = {.sType = VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO,
                      .stage = VK_SHADER_STAGE_COMPUTE_BIT,
                      .module = e->module,
                      .pName = "main"},
            .layout = e->layout,
        };
        ok = vkCreateComputePipelines(dev, VK_NULL_HANDLE, 1, &ci, NULL, &e->pipeline) == VK_SUCCESS;
    }
    if (ok) {
        VkDescriptorPoolSize ps = {.type = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, .descriptorCount = 64};
        VkDescriptorPoolCreateInfo pi = {
            .sType = VK_STRUCTURE_TYPE_DESCRIPTOR_POOL_CREATE_INFO,
            .maxSets = 64,
            .poolSizeCount = 1,
            .pPoolSizes = &ps,
        };
        ok = vkCreateDescriptorPool(dev, &pi, NULL, &e->descriptors) == VK_SUCCESS;
    }
    if (ok) {
        VkCommandPoolCreateInfo ci = {.sType = VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO,
                                      .queueFamilyIndex = e->family};
        ok = vkCreateCommandPool(dev, &ci, NULL, &e->cmd_pool) == VK_SUCCESS;
    }
    require_true(ok);
#endif
}

/* Submits add1 over the binding's words on the runtime's queue 0, as
 * stream i: it waits for gate to reach 1 when gate is given, signals the
 * stream's semaphore to its next value, and announces that value to relo. */
static VkResult launch_add1(vk_env *e, int i, relo_binding bd, VkSemaphore gate)
{
    VkDevice dev = e->device;
    VkDescriptorSetAllocateInfo ai = {
        .sType = VK_STRUCTURE_TYPE_DESCRIPTOR_SET_ALLOCATE_INFO,
        .descriptorPool = e->descriptors,
        .descriptorSetCount = 1,
        .pSetLayouts = &e->set_layout,
    };
    VkDescriptorSet set = VK_NULL_HANDLE;
    VkResult r = vkAllocateDescriptorSets(dev, &ai, &set);
    if (r != VK_SUCCESS) return r;
    VkDescriptorBufferInfo buf = {
        .buffer = relo_vulkan_buffer(bd),
        .offset = bd.offset,
        .range = bd.size,
    };
    VkWriteDescriptorSet wr = {
        .sType = VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET,
        .dstSet = set,
        .descriptorCount = 1,
        .descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER,
        .pBufferInfo = &buf,
    };
    vkUpdateDescriptorSets(dev, 1, &wr, 0, NULL);

    VkCommandBufferAllocateInfo ci = {
        .sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO,
        .commandPool = e->cmd_pool,
        .level = VK_COMMAND_BUFFER_LEVEL_PRIMARY,
        .commandBufferCount = 1,
    };
    VkCommandBuffer cmd = VK_NULL_HANDLE;
    r = vkAllocateCommandBuffers(dev, &ci, &cmd);
    if (r != VK_SUCCESS) return r;
    VkCommandBufferBeginInfo bi = {.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO,
                                   .flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT};
    r = vkBeginCommandBuffer(cmd, &bi);
    if (r != VK_SUCCESS) return r;
    uint32_t words = (uint32_t)(bd.size / 4);
    vkCmdBindPipeline(cmd, VK_PIPELINE_BIND_POINT_COMPUTE, e->pipeline);
    vkCmdBindDescriptorSets(cmd, VK_PIPELINE_BIND_POINT_COMPUTE, e->layout, 0, 1, &set, 0, NULL);
    vkCmdPushConstants(cmd, e->layout, VK_SHADER_STAGE_COMPUTE_BIT, 0, 4, &words);
    vkCmdDispatch(cmd, (words + 63) / 64, 1, 1);
    /* The shader's writes are visible to what comes after (relo's copies,
     * the host). */
    VkMemoryBarrier mb = {
        .sType = VK_STRUCTURE_TYPE_MEMORY_BARRIER,
        .srcAccessMask = VK_ACCESS_SHADER_WRITE_BIT,
        .dstAccessMask = VK_ACCESS_HOST_READ_BIT | VK_ACCESS_MEMORY_READ_BIT | VK_ACCESS_MEMORY_WRITE_BIT,
    };
    vkCmdPipelineBarrier(cmd, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT,
                         VK_PIPELINE_STAGE_HOST_BIT | VK_PIPELINE_STAGE_ALL_COMMANDS_BIT, 0, 1, &mb, 0, NULL,
                         0, NULL);
    r = vkEndCommandBuffer(cmd);
    if (r != VK_SUCCESS) return r;

    uint64_t value = e->value[i] + 1, gate_value = 1;
    VkPipelineStageFlags stage = VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT;
    VkTimelineSemaphoreSubmitInfo ti = {
        .sType = VK_STRUCTURE_TYPE_TIMELINE_SEMAPHORE_SUBMIT_INFO,
        .waitSemaphoreValueCount = gate ? 1 : 0,
        .pWaitSemaphoreValues = &gate_value,
        .signalSemaphoreValueCount = 1,
        .pSignalSemaphoreValues = &value,
    };
    VkSubmitInfo si = {
        .sType = VK_STRUCTURE_TYPE_SUBMIT_INFO,
        .pNext = &ti,
        .waitSemaphoreCount = gate ? 1 : 0,
        .pWaitSemaphores = &gate,
        .pWaitDstStageMask = &stage,
        .commandBufferCount = 1,
        .pCommandBuffers = &cmd,
        .signalSemaphoreCount = 1,
        .pSignalSemaphores = &e->vs[i].semaphore,
    };
    pthread_mutex_lock(&e->queue_lock[0]);
    r = vkQueueSubmit(e->queues[0], 1, &si, VK_NULL_HANDLE);
    pthread_mutex_unlock(&e->queue_lock[0]);
    if (r != VK_SUCCESS) return r;
    e->value[i] = value;
    if (relo_backend_vulkan_stream_submitted(e->backend, &e->vs[i], value) != RELO_OK)
        return VK_ERROR_UNKNOWN;
    return VK_SUCCESS;
}

/* Blocks until stream i's last submission is done (what the runtime would
 * do before reading results). */
static VkResult finish_stream(vk_env *e, int i)
{
    VkSemaphoreWaitInfo wi = {
        .sType = VK_STRUCTURE_TYPE_SEMAPHORE_WAIT_INFO,
        .semaphoreCount = 1,
        .pSemaphores = &e->vs[i].semaphore,
        .pValues = &e->value[i],
    };
    return vkWaitSemaphores(e->device, &wi, UINT64_MAX);
}

CHECK_TEST(shader_through_binding_across_relocation)
{
    vk_env e;
    dc_env c = open_cases(&e);
    pipeline_open(&e);
    dc_kernel_through_binding_across_relocation(c);
}

typedef struct gate_opener {
    VkDevice device;
    VkSemaphore gate;
} gate_opener;

/* Opens the gate after 200 ms, long after a relocation that did not wait
 * would have copied. */
static void *open_gate_later(void *arg)
{
    gate_opener *g = arg;
    struct timespec ts = {0, 200 * 1000 * 1000};
    nanosleep(&ts, NULL);
    VkSemaphoreSignalInfo si = {.sType = VK_STRUCTURE_TYPE_SEMAPHORE_SIGNAL_INFO,
                                .semaphore = g->gate,
                                .value = 1};
    vkSignalSemaphore(g->device, &si);
    return NULL;
}

CHECK_TEST(two_semaphores_two_streams)
{
    vk_env e;
    dc_env c = open_cases(&e);
    pipeline_open(&e);
    wrap *w = NULL;
    relo_backend *b = dc_wrapped(&c, &w);
    fx f;
    require_true(dc_open(&f, &c, b, 2));
    w->work_done = streams_reached;
    w->work_done_user = &e;
    relo_handle h[4]; /* a, b, bigA, bigB */
    require_ok(dc_two_streams_setup(&c, &f, h));

    /* Both streams' shaders wait behind a gate the host opens 200 ms from
     * now. The device-wide reclaim moves both allocations: it must wait
     * for both semaphores before it copies a byte. */
    VkSemaphore gate = make_timeline(e.device, 0);
    require_true(gate != VK_NULL_HANDLE);
    require_eq(launch_add1(&e, 0, fx_bind(f.s, h[0]), gate), VK_SUCCESS);
    require_eq(launch_add1(&e, 1, fx_bind(f.s2, h[1]), gate), VK_SUCCESS);
    gate_opener go = {e.device, gate};
    pthread_t opener;
    require_eq(pthread_create(&opener, NULL, open_gate_later, &go), 0);
    require_ok(relo_reclaim_device(f.dev));
    pthread_join(opener, NULL);
    expect_true(w->streams_done);
    dc_two_streams_moved(&c, &f, h);

    /* And again through the new bindings, without a gate. */
    for (int i = 0; i < 2; i++)
        require_eq(launch_add1(&e, i, fx_bind(i ? f.s2 : f.s, h[i]), VK_NULL_HANDLE), VK_SUCCESS);
    for (int i = 0; i < 2; i++) require_eq(finish_stream(&e, i), VK_SUCCESS);
    for (int i = 0; i < 2; i++) expect_true(dc_reads_count(f.dev, h[i], MiB, 2, c.add1_width));

    dc_release(f.dev, h, 4);
    fx_close(&f);
    vkDestroySemaphore(e.device, gate, NULL);
    env_close(&e);
}

CHECK_MAIN()
