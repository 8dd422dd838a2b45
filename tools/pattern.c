/*
 * pattern.c — writes and checks the id-derived byte pattern (see pattern.h).
 */
#include "pattern.h"

#include <string.h>

enum { EDGE = 4096, STEP = 1 << 20, PROBE = 64, CHUNK = 1 << 16 };

/* The pattern byte at offset: one 64-bit hash per 8-byte word. */
static uint8_t pattern_byte(uint64_t id, uint64_t offset)
{
    uint64_t x = id * 0x9e3779b97f4a7c15ull + (offset >> 3);
    x ^= x >> 30;
    x *= 0xbf58476d1ce4e5b9ull;
    x ^= x >> 27;
    x *= 0x94d049bb133111ebull;
    x ^= x >> 31;
    return (uint8_t)(x >> ((offset & 7) * 8));
}

static void fill(uint8_t *buf, uint64_t id, uint64_t offset, uint64_t n)
{
    for (uint64_t i = 0; i < n; i++) buf[i] = pattern_byte(id, offset + i);
}

/* Calls fn on each window [offset, offset + n) the mode covers. */
typedef relo_status (*window_fn)(relo_device *, relo_handle, uint64_t id, uint64_t offset, uint64_t n,
                                 uint64_t *bad);

static relo_status each_window(relo_device *d, relo_handle h, uint64_t id, uint64_t size, bool full,
                               window_fn fn, uint64_t *bad)
{
    relo_status st;
    if (full || size <= 2 * EDGE) {
        for (uint64_t o = 0; o < size; o += CHUNK) {
            st = fn(d, h, id, o, size - o < CHUNK ? size - o : CHUNK, bad);
            if (st != RELO_OK) return st;
        }
        return RELO_OK;
    }
    st = fn(d, h, id, 0, EDGE, bad);
    if (st == RELO_OK) st = fn(d, h, id, size - EDGE, EDGE, bad);
    for (uint64_t o = STEP; st == RELO_OK && o + PROBE <= size - EDGE; o += STEP)
        st = fn(d, h, id, o, PROBE, bad);
    return st;
}

static relo_status write_window(relo_device *d, relo_handle h, uint64_t id, uint64_t offset, uint64_t n,
                                uint64_t *bad)
{
    (void)bad;
    uint8_t buf[CHUNK];
    fill(buf, id, offset, n);
    return relo_write(d, h, offset, buf, n);
}

static relo_status check_window(relo_device *d, relo_handle h, uint64_t id, uint64_t offset, uint64_t n,
                                uint64_t *bad)
{
    uint8_t got[CHUNK], want[CHUNK];
    relo_status st = relo_read(d, h, offset, got, n);
    if (st != RELO_OK) return st;
    fill(want, id, offset, n);
    if (memcmp(got, want, (size_t)n) == 0) return RELO_OK;
    for (uint64_t i = 0; i < n; i++) {
        if (got[i] != want[i]) {
            *bad = offset + i;
            break;
        }
    }
    return RELO_ERR_CORRUPT;
}

relo_status pattern_write(relo_device *device, relo_handle handle, uint64_t id, uint64_t size, bool full)
{
    uint64_t unused = 0;
    return each_window(device, handle, id, size, full, write_window, &unused);
}

relo_status pattern_check(relo_device *device, relo_handle handle, uint64_t id, uint64_t size, bool full,
                          uint64_t *bad_offset)
{
    return each_window(device, handle, id, size, full, check_window, bad_offset);
}
