/*
 * replay_vulkan.c — relo-replay's Vulkan device. The Vulkan backend uses a
 * device the runtime owns and destroys nothing of it, so the replay, being
 * the runtime here, makes the instance and device and destroys them in the
 * backend's release callback, once the backend is gone.
 */
#include "replay_vulkan.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "relo_vulkan.h"

typedef struct vk_owner {
    VkInstance instance;
    VkDevice device;
} vk_owner;

/* The backend's release: it is gone, its device and instance may go. */
static void own_release(void *user)
{
    vk_owner *o = user;
    if (o->device) vkDestroyDevice(o->device, NULL);
    if (o->instance) vkDestroyInstance(o->instance, NULL);
    free(o);
}

/* The first device of the wanted kind (GPU on pass 0, any on pass 1) with
 * Vulkan 1.2 and a compute queue family. */
static VkPhysicalDevice pick(VkInstance inst, uint32_t *family)
{
    VkPhysicalDevice pds[16];
    uint32_t n = 16;
    if (vkEnumeratePhysicalDevices(inst, &n, pds) < 0) return VK_NULL_HANDLE;
    for (int pass = 0; pass < 2; pass++) {
        for (uint32_t i = 0; i < n; i++) {
            VkPhysicalDeviceProperties p;
            vkGetPhysicalDeviceProperties(pds[i], &p);
            bool gpu = p.deviceType == VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU ||
                       p.deviceType == VK_PHYSICAL_DEVICE_TYPE_INTEGRATED_GPU;
            if (p.apiVersion < VK_API_VERSION_1_2 || (pass == 0 && !gpu)) continue;
            VkQueueFamilyProperties fams[16];
            uint32_t nf = 16;
            vkGetPhysicalDeviceQueueFamilyProperties(pds[i], &nf, fams);
            for (uint32_t f = 0; f < nf; f++) {
                if (fams[f].queueFlags & (VK_QUEUE_COMPUTE_BIT | VK_QUEUE_TRANSFER_BIT)) {
                    *family = f;
                    return pds[i];
                }
            }
        }
    }
    return VK_NULL_HANDLE;
}

relo_status replay_vulkan_create(relo_backend **out, char *msg, size_t msg_cap)
{
    vk_owner *o = calloc(1, sizeof *o);
    if (!o) return RELO_ERR_HOST_MEMORY;
    VkApplicationInfo app = {
        .sType = VK_STRUCTURE_TYPE_APPLICATION_INFO,
        .pApplicationName = "relo-replay",
        .apiVersion = VK_API_VERSION_1_2,
    };
    VkInstanceCreateInfo ii = {.sType = VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO, .pApplicationInfo = &app};
    if (vkCreateInstance(&ii, NULL, &o->instance) != VK_SUCCESS) {
        free(o);
        snprintf(msg, msg_cap, "no Vulkan 1.2 driver found (vkCreateInstance failed)");
        return RELO_ERR_UNSUPPORTED;
    }
    uint32_t family = 0;
    VkPhysicalDevice pd = pick(o->instance, &family);
    if (!pd) {
        own_release(o);
        snprintf(msg, msg_cap, "no Vulkan 1.2 device found");
        return RELO_ERR_UNSUPPORTED;
    }
    float prio = 1.0f;
    VkDeviceQueueCreateInfo qi = {
        .sType = VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO,
        .queueFamilyIndex = family,
        .queueCount = 1,
        .pQueuePriorities = &prio,
    };
    VkDeviceCreateInfo di = {
        .sType = VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO,
        .queueCreateInfoCount = 1,
        .pQueueCreateInfos = &qi,
    };
    VkResult r = vkCreateDevice(pd, &di, NULL, &o->device);
    if (r != VK_SUCCESS) {
        o->device = VK_NULL_HANDLE;
        own_release(o);
        snprintf(msg, msg_cap, "vkCreateDevice failed (%d)", (int)r);
        return RELO_ERR_BACKEND;
    }
    relo_vulkan_desc desc;
    memset(&desc, 0, sizeof desc);
    desc.physical_device = pd;
    desc.device = o->device;
    desc.queue_family = family;
    vkGetDeviceQueue(o->device, family, 0, &desc.queue);
    desc.release = own_release;
    desc.release_user = o;
    /* From here on the backend's release destroys o, on failure too. */
    relo_status st = relo_backend_vulkan_create(&desc, out);
    if (st != RELO_OK) snprintf(msg, msg_cap, "relo_backend_vulkan_create: %s", relo_status_string(st));
    return st;
}
