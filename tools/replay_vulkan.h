/*
 * replay_vulkan.h — the Vulkan device relo-replay replays on: an instance
 * and device of its own, made for the replay and destroyed with its
 * backend. Built only where the Vulkan backend is (RELO_HAVE_VULKAN).
 */
#ifndef RELO_TOOLS_REPLAY_VULKAN_H
#define RELO_TOOLS_REPLAY_VULKAN_H

#include <stddef.h>

#include "relo_backend.h"

/**
 * Creates a Vulkan instance and device on the first GPU (else any device,
 * such as lavapipe) with Vulkan 1.2 and a compute queue, and a backend
 * over it that owns them: relo_device_destroy (or relo_backend_destroy)
 * tears down the backend, then the device and the instance. relo gets the
 * device's first queue of that family for itself (the replay submits no
 * work of its own). On failure returns RELO_ERR_UNSUPPORTED (no loader,
 * driver or device) or the creation's status, with a sentence in msg.
 */
relo_status replay_vulkan_create(relo_backend **out, char *msg, size_t msg_cap);

#endif /* RELO_TOOLS_REPLAY_VULKAN_H */
