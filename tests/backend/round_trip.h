/*
 * round_trip.h — the transfer round trip every device backend test runs
 * through the backend's ops directly (test_cuda.c, test_opencl.c,
 * test_vulkan.c): 1000 counting bytes written into one buffer, copied on
 * the device into another at a different offset, waited for, and read
 * back unchanged.
 *
 * Include after check.h: it reports through expect_* and require_*.
 */
#ifndef RELO_TEST_ROUND_TRIP_H
#define RELO_TEST_ROUND_TRIP_H

#include <string.h>

#include "backend/backend.h"
#include "check.h"
#include "relo_backend.h"

/** Writes 1000 bytes (byte i is i * 7) at offset 100 of x, copies them to
 *  offset 3000 of y through b's copy op, waits for the copies, and expects
 *  them read back from y. x and y are buffers of b of at least 4000 bytes. */
static inline void round_trip_ops(relo_backend *b, void *x, void *y)
{
    unsigned char data[1000], back[1000];
    for (int i = 0; i < 1000; i++) data[i] = (unsigned char)(i * 7);
    require_ok(b->ops.write(b->ctx, x, 100, data, sizeof data));
    require_ok(b->ops.copy(b->ctx, x, 100, y, 3000, sizeof data));
    require_ok(b->ops.wait_copies(b->ctx));
    memset(back, 0, sizeof back);
    require_ok(b->ops.read(b->ctx, y, 3000, back, sizeof back));
    expect_eq(memcmp(data, back, sizeof data), 0);
}

#endif /* RELO_TEST_ROUND_TRIP_H */
