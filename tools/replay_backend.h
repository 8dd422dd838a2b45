/*
 * replay_backend.h — the backends relo-replay can replay on: sim (no bytes,
 * any size), host (real bytes, checked), and OpenCL and Vulkan where they
 * were built.
 */
#ifndef RELO_TOOLS_REPLAY_BACKEND_H
#define RELO_TOOLS_REPLAY_BACKEND_H

#include <stddef.h>
#include <stdint.h>

#include "relo_backend.h"

typedef enum replay_backend_kind {
    REPLAY_BACKEND_SIM = 0,
    REPLAY_BACKEND_HOST,
    REPLAY_BACKEND_OPENCL,
    REPLAY_BACKEND_VULKAN,
    REPLAY_BACKEND_KIND_COUNT
} replay_backend_kind;

/** "sim", "host", "opencl", "vulkan". */
const char *replay_backend_name(replay_backend_kind kind);

/** Whether kind holds real bytes (host, OpenCL, Vulkan): replays check them. */
int replay_backend_has_bytes(replay_backend_kind kind);

/** Whether this build can create kind (OpenCL and Vulkan only where they
 *  were built). */
int replay_backend_available(replay_backend_kind kind);

/**
 * The largest page (relo_host_desc.max_page_size) a replay whose largest
 * request is max_alloc bytes asks of its backend: 0 (the backend's 1 GiB
 * default) while that suffices, else the request plus 2 MiB rounded down to
 * 1 MiB, saturating at the largest multiple of 1 MiB below 2^64 instead of
 * wrapping.
 */
uint64_t replay_backend_max_page(uint64_t max_alloc);

/**
 * Creates a backend of kind that lends at most capacity bytes (0 =
 * unlimited; an OpenCL or Vulkan device keeps its own size), charging each
 * buffer its size rounded up to granule (sim and host; 0 = the backend's
 * default), and takes pages of at least max_alloc bytes. On failure returns
 * the status and writes a
 * sentence to msg.
 */
relo_status replay_backend_create(replay_backend_kind kind, uint64_t capacity, uint64_t granule,
                                  uint64_t max_alloc, relo_backend **out, char *msg, size_t msg_cap);

#endif /* RELO_TOOLS_REPLAY_BACKEND_H */
