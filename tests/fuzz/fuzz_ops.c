/*
 * fuzz_ops.c — a libFuzzer harness that drives relo's public API over two
 * streams of one host-backend device and checks it against a shadow model.
 *
 * Input layout: four configuration bytes (max page size 1-32 MiB, capacity
 * unknown or 16-127 MiB,
 * alignment, device flags), then a sequence of operations, each one opcode
 * byte followed by the argument bytes that operation reads. A short input
 * simply ends the sequence (missing bytes read as zero).
 *
 * After every call the harness runs relo_device_check, reads back the
 * pattern of every live allocation, checks that released handles stay
 * stale, and that stats agree with the model. At the end it tears the
 * device down completely, so LeakSanitizer sees anything relo leaked.
 *
 * Any broken expectation prints what happened and aborts, which libFuzzer
 * records as a crash with the input that caused it.
 */
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "relo.h"
#include "relo_backend.h"
#include "testing/testing.h"

#define MIB (UINT64_C(1) << 20)
#define KIB (UINT64_C(1) << 10)

enum { STREAMS = 2, MAX_LIVE = 64, MAX_STALE = 32, MAX_GRAPHS = 8, MAX_MODES = 64 };

/* Bytes the backend may hold when the device was told nothing about its
 * capacity: reservations beyond are skipped so a run stays small. */
#define UNKNOWN_CAPACITY_BUDGET (128 * MIB)

typedef struct live {
    relo_handle handle;
    uint64_t size;
    uint32_t refs;
    int stream;         /* the stream it was reserved on */
    uint8_t seed;       /* pattern seed */
    bool patterned;     /* the pattern was written */
} live;

typedef enum cap_state { CAP_IDLE, CAP_PREPARED, CAP_RECORDING } cap_state;

typedef struct model {
    relo_device *device;
    relo_backend *backend;      /* owned by device; kept for counts/faults */
    relo_stream *streams[STREAMS];
    cap_state cap[STREAMS];
    bool doomed[STREAMS];
    int modes[STREAMS];         /* open mode windows */
    relo_mode mode_stack[STREAMS][MAX_MODES];
    live lives[MAX_LIVE];
    int nlive;
    relo_handle stale[MAX_STALE];
    int nstale, stale_next;
    relo_graph *graphs[MAX_GRAPHS];
    int ngraphs;
    uint64_t alignment, max_page, capacity;
    relo_host_desc faults;
    bool dense;                 /* RELO_POLICY_DENSE */
    uint64_t op_index;
    const char *op_name;
} model;

typedef struct cursor {
    const uint8_t *p;
    size_t n;
} cursor;

static uint8_t take8(cursor *c)
{
    if (!c->n) return 0;
    c->n--;
    return *c->p++;
}

static uint64_t take_n(cursor *c, int bytes)
{
    uint64_t v = 0;
    for (int i = 0; i < bytes; i++) v |= (uint64_t)take8(c) << (8 * i);
    return v;
}

static model M;

/* The last log lines of relo, printed when the harness dies (relo_device_check
 * logs the invariant it found broken). FUZZ_OPS_TRACE=1 also prints every
 * operation and log line as it happens. */
enum { LOG_LINES = 16 };
static char log_ring[LOG_LINES][256];
static unsigned log_next;
static int trace_ops = -1;
/* FUZZ_OPS_SKIP_KNOWN=1 steers around bugs already reported, so a long run
 * can find the next one. */
static int skip_known = -1;

static void on_log(void *user, relo_log_level level, const char *message)
{
    (void)user;
    snprintf(log_ring[log_next % LOG_LINES], sizeof log_ring[0], "[%d] %s", (int)level, message);
    log_next++;
    if (trace_ops > 0) fprintf(stderr, "  relo log [%d]: %s\n", (int)level, message);
}

static void die(const char *fmt, ...)
{
    va_list ap;
    unsigned first = log_next > LOG_LINES ? log_next - LOG_LINES : 0;
    for (unsigned i = first; i < log_next; i++) fprintf(stderr, "relo log: %s\n", log_ring[i % LOG_LINES]);
    fprintf(stderr, "\nfuzz_ops: op #%llu (%s): ", (unsigned long long)M.op_index,
            M.op_name ? M.op_name : "setup");
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    abort();
}

static const char *sn(relo_status s) { return relo_status_name(s); }

static bool any_recording(void)
{
    for (int i = 0; i < STREAMS; i++)
        if (M.cap[i] == CAP_RECORDING) return true;
    return false;
}

/* ---- patterns ---------------------------------------------------------- */

static uint8_t pattern_byte(uint8_t seed, uint64_t offset)
{
    uint64_t x = (offset + 1) * UINT64_C(0x9E3779B97F4A7C15) + seed;
    return (uint8_t)((x >> 56) ^ seed);
}

/* The windows of an allocation that carry its pattern: the whole of a small
 * one, else the head, the middle and the tail. */
static int windows(uint64_t size, uint64_t off[3], uint64_t len[3])
{
    if (size == 0) return 0;
    if (size <= 4096) {
        off[0] = 0;
        len[0] = size;
        return 1;
    }
    off[0] = 0;
    off[1] = size / 2 - 128;
    off[2] = size - 256;
    len[0] = len[1] = len[2] = 256;
    return 3;
}

static void write_pattern(live *l)
{
    uint8_t buf[4096];
    uint64_t off[3], len[3];
    int n = windows(l->size, off, len);
    if (trace_ops)
        fprintf(stderr, "  handle %#llx: %llu B, stream %d, seed %u\n", (unsigned long long)l->handle.id,
                (unsigned long long)l->size, l->stream, l->seed);
    for (int w = 0; w < n; w++) {
        for (uint64_t i = 0; i < len[w]; i++) buf[i] = pattern_byte(l->seed, off[w] + i);
        relo_status s = relo_write(M.device, l->handle, off[w], buf, len[w]);
        if (s != RELO_OK) die("relo_write of a live allocation gave %s", sn(s));
    }
    l->patterned = true;
}

static void verify_pattern(const live *l)
{
    uint8_t buf[4096];
    uint64_t off[3], len[3];
    if (!l->patterned) return;
    int n = windows(l->size, off, len);
    for (int w = 0; w < n; w++) {
        relo_status s = relo_read(M.device, l->handle, off[w], buf, len[w]);
        if (s != RELO_OK) die("relo_read of live handle %#llx gave %s",
                              (unsigned long long)l->handle.id, sn(s));
        for (uint64_t i = 0; i < len[w]; i++)
            if (buf[i] != pattern_byte(l->seed, off[w] + i))
                die("handle %#llx (size %llu): byte %llu is %#x, expected %#x",
                    (unsigned long long)l->handle.id, (unsigned long long)l->size,
                    (unsigned long long)(off[w] + i), buf[i],
                    pattern_byte(l->seed, off[w] + i));
    }
}

/* ---- invariants -------------------------------------------------------- */

static void check_stale(relo_handle h, int stream)
{
    relo_binding b;
    uint8_t byte = 0;
    relo_status s = relo_resolve(M.streams[stream], h, &b);
    if (s != RELO_ERR_NOT_FOUND) die("stale handle %#llx resolved: %s", (unsigned long long)h.id, sn(s));
    s = relo_read(M.device, h, 0, &byte, 0);
    if (s != RELO_ERR_NOT_FOUND) die("relo_read of stale handle %#llx gave %s", (unsigned long long)h.id, sn(s));
}

static int quiet_stream(void)
{
    for (int i = 0; i < STREAMS; i++)
        if (M.cap[i] != CAP_RECORDING) return i;
    return -1;
}

static void check_all(void)
{
    relo_status s = relo_device_check(M.device);
    if (s != RELO_OK) die("relo_device_check gave %s", sn(s));

    uint64_t in_use = 0;
    for (int i = 0; i < M.nlive; i++) {
        verify_pattern(&M.lives[i]);
        in_use += M.lives[i].size;
    }

    /* Resolve every live allocation on a stream that does not record (a
     * resolve there would mark pages touched) and check that no two live
     * ranges overlap and that every offset is aligned. */
    int q = quiet_stream();
    if (q >= 0) {
        relo_binding bind[MAX_LIVE];
        for (int i = 0; i < M.nlive; i++) {
            s = relo_resolve(M.streams[q], M.lives[i].handle, &bind[i]);
            if (s != RELO_OK) die("live handle %#llx does not resolve: %s",
                                  (unsigned long long)M.lives[i].handle.id, sn(s));
            if (bind[i].size != M.lives[i].size)
                die("binding size %llu, reserved %llu", (unsigned long long)bind[i].size,
                    (unsigned long long)M.lives[i].size);
            if (M.lives[i].size && !bind[i].buffer) die("binding without a buffer");
            if (M.lives[i].size && bind[i].offset % M.alignment)
                die("offset %llu not a multiple of the alignment %llu",
                    (unsigned long long)bind[i].offset, (unsigned long long)M.alignment);
            for (int j = 0; j < i; j++) {
                if (!bind[i].size || !bind[j].size || bind[i].buffer != bind[j].buffer) continue;
                if (bind[i].offset < bind[j].offset + bind[j].size &&
                    bind[j].offset < bind[i].offset + bind[i].size)
                    die("live handles %#llx [%llu,+%llu) and %#llx [%llu,+%llu) overlap",
                        (unsigned long long)M.lives[i].handle.id, (unsigned long long)bind[i].offset,
                        (unsigned long long)bind[i].size, (unsigned long long)M.lives[j].handle.id,
                        (unsigned long long)bind[j].offset, (unsigned long long)bind[j].size);
            }
        }
        for (int i = 0; i < M.nstale; i++) check_stale(M.stale[i], q);
    }

    relo_stats dev, st, sum;
    memset(&sum, 0, sizeof sum);
    if ((s = relo_device_stats(M.device, &dev)) != RELO_OK) die("relo_device_stats: %s", sn(s));
    if (dev.size != sizeof dev || dev.version != RELO_STATS_VERSION) die("stats size/version not filled");
    if (dev.allocations != (uint64_t)M.nlive)
        die("stats: %llu allocations, model has %d", (unsigned long long)dev.allocations, M.nlive);
    if (dev.bytes_in_use != in_use)
        die("stats: %llu bytes in use, model has %llu", (unsigned long long)dev.bytes_in_use,
            (unsigned long long)in_use);
    for (int i = 0; i < STREAMS; i++) {
        if ((s = relo_stream_stats(M.streams[i], &st)) != RELO_OK) die("relo_stream_stats: %s", sn(s));
        sum.allocations += st.allocations;
        sum.bytes_in_use += st.bytes_in_use;
        sum.bytes_reserved += st.bytes_reserved;
        sum.pages += st.pages;
    }
    if (sum.allocations != dev.allocations || sum.bytes_in_use != dev.bytes_in_use ||
        sum.bytes_reserved != dev.bytes_reserved || sum.pages != dev.pages)
        die("stream stats do not add up to the device's: alloc %llu/%llu in_use %llu/%llu "
            "reserved %llu/%llu pages %llu/%llu",
            (unsigned long long)sum.allocations, (unsigned long long)dev.allocations,
            (unsigned long long)sum.bytes_in_use, (unsigned long long)dev.bytes_in_use,
            (unsigned long long)sum.bytes_reserved, (unsigned long long)dev.bytes_reserved,
            (unsigned long long)sum.pages, (unsigned long long)dev.pages);
    if (M.capacity && dev.bytes_reserved > M.capacity)
        die("device holds %llu bytes, capacity %llu", (unsigned long long)dev.bytes_reserved,
            (unsigned long long)M.capacity);
}

/* ---- model bookkeeping ------------------------------------------------- */

static int find_live(uint64_t id)
{
    for (int i = 0; i < M.nlive; i++)
        if (M.lives[i].handle.id == id) return i;
    return -1;
}

static void make_stale(int i)
{
    M.stale[M.stale_next] = M.lives[i].handle;
    M.stale_next = (M.stale_next + 1) % MAX_STALE;
    if (M.nstale < MAX_STALE) M.nstale++;
    M.lives[i] = M.lives[--M.nlive];
}

static bool is_stale(uint64_t id)
{
    for (int i = 0; i < M.nstale; i++)
        if (M.stale[i].id == id) return true;
    return false;
}

/* A size biased toward the edges the allocator cares about. */
static uint64_t pick_size(cursor *c)
{
    uint8_t k = take8(c);
    uint64_t r = take_n(c, 2);
    switch (k % 24) {
    case 0: return 0;
    case 1: return 1 + r % 64;                          /* tiny */
    case 2: return 64 * KIB - 64 + r % 128;             /* around the small pool's limit */
    case 3: return 4 * KIB - 2 + r % 4;                 /* around a host page */
    case 4: return 2 * MIB - 64 + r % 128;              /* around the arena floor */
    case 5: return MIB * (1 + r % 12) + r % 97;         /* grows through page sizes */
    case 6: return 8 * MIB - 32 + r % 64;               /* the small pool's page */
    case 7: return M.max_page - 32 + r % 64;            /* around the max page */
    case 8: return M.max_page + 1 + r;                  /* too big */
    case 9: return UINT64_MAX - r;                      /* near 2^64 */
    case 10: return (UINT64_C(1) << 50) + r;            /* huge */
    case 11: return (UINT64_C(1) << 63) + r;
    case 12: return r % (64 * KIB);                     /* small */
    case 13: return r * 16;                             /* up to 1 MiB */
    case 14: return 3 * MIB + 2 * MIB * (r % 8);        /* acceptance 19's ladder */
    case 15: return M.max_page - M.alignment * (r % 4);
    case 16: return 7 * MIB + r % 1024;                 /* near the small page, arena side */
    case 17: return 32 + r % 32;
    default: return r % (2 * MIB) + (uint64_t)(k & 3) * MIB;
    }
}

static uint64_t backend_held(void)
{
    relo_host_counts counts;
    if (relo_backend_host_counts(M.backend, &counts) != RELO_OK) die("relo_backend_host_counts failed");
    return counts.bytes_held;
}

/* ---- operations -------------------------------------------------------- */

static void op_reserve(cursor *c)
{
    int si = take8(c) % STREAMS;
    uint64_t size = pick_size(c);
    uint8_t seed = take8(c);
    relo_handle h = {0};
    if (!M.capacity && size <= M.max_page && backend_held() + size + 8 * MIB > UNKNOWN_CAPACITY_BUDGET)
        return;
    if (M.nlive == MAX_LIVE) return;
    /* Steer around reported, unfixed bugs here when FUZZ_OPS_SKIP_KNOWN is
     * set, e.g. (bug fixed since, regressions/fuzz_ops-dense-size0-divzero):
     * if (skip_known && size == 0 && M.dense) return; */
    (void)skip_known;
    relo_status s = relo_reserve(M.streams[si], size, &h);
    switch (s) {
    case RELO_OK:
        if (size > M.max_page) die("reserve(%llu) succeeded above the max page %llu",
                                   (unsigned long long)size, (unsigned long long)M.max_page);
        if (h.id == 0) die("reserve returned handle 0");
        if (find_live(h.id) >= 0) die("reserve returned a live handle again: %#llx", (unsigned long long)h.id);
        if (is_stale(h.id)) die("reserve returned a released handle value: %#llx", (unsigned long long)h.id);
        break;
    case RELO_ERR_BUFFER_TOO_BIG:
        if (size <= M.max_page - M.alignment)
            die("reserve(%llu) too big with max page %llu", (unsigned long long)size,
                (unsigned long long)M.max_page);
        return;
    case RELO_ERR_PAGE_UPDATE_FORBIDDEN:
        if (M.cap[si] != CAP_RECORDING) die("PAGE_UPDATE_FORBIDDEN on a stream that does not record");
        M.doomed[si] = true;
        return;
    case RELO_ERR_OUT_OF_MEMORY:
    case RELO_ERR_PAGE_SIZES_EXHAUSTED:
        if (size > M.max_page) die("reserve(%llu) above the max page gave %s", (unsigned long long)size, sn(s));
        return;
    default:
        die("reserve(%llu) on stream %d gave %s", (unsigned long long)size, si, sn(s));
    }
    live *l = &M.lives[M.nlive++];
    l->handle = h;
    l->size = size;
    l->refs = 1;
    l->stream = si;
    l->seed = seed;
    l->patterned = false;
    write_pattern(l);
}

static void op_release(cursor *c)
{
    uint8_t k = take8(c);
    if (!M.nlive) return;
    int i = k % M.nlive;
    relo_status s = relo_release(M.device, M.lives[i].handle);
    if (s != RELO_OK) die("release of a live handle gave %s", sn(s));
    if (--M.lives[i].refs == 0) make_stale(i);
}

static void op_retain(cursor *c)
{
    uint8_t k = take8(c);
    if (!M.nlive) return;
    int i = k % M.nlive;
    relo_status s = relo_retain(M.device, M.lives[i].handle);
    if (s != RELO_OK) die("retain of a live handle gave %s", sn(s));
    M.lives[i].refs++;
}

static void op_write(cursor *c)
{
    uint8_t k = take8(c), seed = take8(c);
    if (!M.nlive) return;
    live *l = &M.lives[k % M.nlive];
    l->seed = seed;
    write_pattern(l);
    /* A write past the end is refused and changes nothing. */
    uint8_t junk[16];
    memset(junk, 0xEE, sizeof junk);
    uint64_t off = l->size - (l->size >= 8 ? 8 : l->size);
    relo_status s = relo_write(M.device, l->handle, off, junk, 16);
    if (s != RELO_ERR_OUT_OF_RANGE) die("write past the end gave %s", sn(s));
    s = relo_write(M.device, l->handle, UINT64_MAX - 4, junk, 8);
    if (s != RELO_ERR_OUT_OF_RANGE) die("write at offset 2^64-5 gave %s", sn(s));
}

static void op_resolve(cursor *c)
{
    int si = take8(c) % STREAMS;
    uint8_t k = take8(c);
    if (!M.nlive) return;
    live *l = &M.lives[k % M.nlive];
    relo_binding b;
    relo_status s = relo_resolve(M.streams[si], l->handle, &b);
    if (s != RELO_OK) die("resolve of a live handle gave %s", sn(s));
    if (b.size != l->size) die("resolved size %llu, reserved %llu", (unsigned long long)b.size,
                               (unsigned long long)l->size);
}

static void op_reclaim(cursor *c)
{
    int si = take8(c) % STREAMS;
    relo_status s = relo_reclaim(M.streams[si]);
    if (any_recording()) {
        if (s != RELO_ERR_RECORDING) die("reclaim while recording gave %s", sn(s));
    } else if (s != RELO_OK) {
        die("reclaim gave %s", sn(s));
    }
}

static void op_mode_push(cursor *c)
{
    int si = take8(c) % STREAMS;
    uint8_t m = take8(c);
    relo_mode mode = (m & 1) ? RELO_MODE_DEDICATED : RELO_MODE_PERSISTENT;
    if (m >= 250) mode = RELO_MODE_AUTO;
    relo_status s = relo_mode_push(M.streams[si], mode);
    if (M.modes[si] >= MAX_MODES) {
        if (s != RELO_ERR_INVALID_ARGUMENT) die("mode push past 64 windows gave %s", sn(s));
    } else if (s == RELO_OK) {
        M.mode_stack[si][M.modes[si]++] = mode;
    } else if (!(mode == RELO_MODE_AUTO && s == RELO_ERR_INVALID_ARGUMENT)) {
        die("mode push gave %s", sn(s));
    }
}

static void op_mode_pop(cursor *c)
{
    int si = take8(c) % STREAMS;
    relo_status s = relo_mode_pop(M.streams[si]);
    if (M.modes[si] == 0) {
        if (s != RELO_ERR_INVALID_ARGUMENT) die("mode pop with none open gave %s", sn(s));
    } else {
        if (s != RELO_OK) die("mode pop gave %s", sn(s));
        M.modes[si]--;
    }
}

static void op_prepare(cursor *c)
{
    int si = take8(c) % STREAMS;
    relo_status s = relo_capture_prepare(M.streams[si]);
    bool other = M.cap[1 - si] == CAP_RECORDING;
    if (M.cap[si] != CAP_IDLE) {
        if (s != RELO_ERR_CAPTURE_STATE && !(other && s == RELO_ERR_RECORDING))
            die("prepare in state %d gave %s", M.cap[si], sn(s));
    } else if (other) {
        if (s != RELO_ERR_RECORDING) die("prepare while the other stream records gave %s", sn(s));
    } else if (s == RELO_OK) {
        M.cap[si] = CAP_PREPARED;
    } else {
        die("prepare gave %s", sn(s));
    }
}

static void op_begin(cursor *c)
{
    int si = take8(c) % STREAMS;
    relo_status s = relo_capture_begin(M.streams[si]);
    if (M.cap[si] != CAP_PREPARED) {
        if (s != RELO_ERR_CAPTURE_STATE) die("begin in state %d gave %s", M.cap[si], sn(s));
    } else if (s == RELO_OK) {
        M.cap[si] = CAP_RECORDING;
        M.doomed[si] = false;
    } else if (s != RELO_ERR_RECORDING) {
        die("begin gave %s", sn(s));
    }
}

static void end_capture(int si)
{
    relo_graph *g = (relo_graph *)&M; /* must be overwritten */
    relo_status s = relo_capture_end(M.streams[si], &g);
    if (M.cap[si] != CAP_RECORDING) {
        if (s != RELO_ERR_CAPTURE_STATE) die("end in state %d gave %s", M.cap[si], sn(s));
        return;
    }
    if (M.doomed[si]) {
        if (s != RELO_ERR_PAGE_UPDATE_FORBIDDEN) die("end of a doomed recording gave %s", sn(s));
        if (g) die("end of a doomed recording returned a graph");
    } else {
        if (s != RELO_OK) die("end gave %s", sn(s));
        if (!g) die("end returned no graph");
        if (M.ngraphs == MAX_GRAPHS) {
            relo_graph_destroy(M.graphs[0]);
            M.graphs[0] = M.graphs[--M.ngraphs];
        }
        M.graphs[M.ngraphs++] = g;
    }
    M.cap[si] = CAP_IDLE;
    M.doomed[si] = false;
}

static void op_end(cursor *c) { end_capture(take8(c) % STREAMS); }

static void op_graph_destroy(cursor *c)
{
    uint8_t k = take8(c);
    if (!M.ngraphs) {
        relo_graph_destroy(NULL);
        return;
    }
    int i = k % M.ngraphs;
    relo_graph_destroy(M.graphs[i]);
    M.graphs[i] = M.graphs[--M.ngraphs];
}

static void op_faults(cursor *c)
{
    static const uint64_t above[] = {0, 0, MIB, 2 * MIB, 8 * MIB, 12 * MIB, 64 * KIB};
    uint8_t bits = take8(c);
    uint8_t a = take8(c);
    relo_host_counts counts;
    if (relo_backend_host_counts(M.backend, &counts) != RELO_OK) die("counts failed");
    memset(&M.faults, 0, sizeof M.faults);
    M.faults.refuse_copies = bits & 1;
    M.faults.fail_wait_copies = (bits >> 1) & 1;
    M.faults.fail_wait_device = (bits >> 2) & 1;
    M.faults.refuse_alloc_above = above[a % 7];
    if (bits & 8) M.faults.refuse_alloc_after = counts.allocs + 1 + (a >> 4);
    if (bits & 16) M.faults.refuse_copy_after = counts.copies + 1 + (a >> 4);
    if ((bits & 0xE0) == 0xE0) memset(&M.faults, 0, sizeof M.faults);
    relo_status s = relo_backend_host_set_faults(M.backend, &M.faults);
    if (s != RELO_OK) die("set_faults gave %s", sn(s));
}

static void op_bad_handle(cursor *c)
{
    relo_handle h = {take_n(c, 8)};
    uint8_t flag = take8(c), k = take8(c);
    if ((flag & 1) && M.nstale) h = M.stale[k % M.nstale];
    if (find_live(h.id) >= 0) return;
    relo_status s = relo_retain(M.device, h);
    if (s != RELO_ERR_NOT_FOUND && s != RELO_ERR_INVALID_ARGUMENT)
        die("retain of bad handle %#llx gave %s", (unsigned long long)h.id, sn(s));
    s = relo_release(M.device, h);
    if (s != RELO_ERR_NOT_FOUND && s != RELO_ERR_INVALID_ARGUMENT)
        die("release of bad handle %#llx gave %s", (unsigned long long)h.id, sn(s));
    uint8_t byte = 1;
    s = relo_write(M.device, h, 0, &byte, 1);
    if (s != RELO_ERR_NOT_FOUND && s != RELO_ERR_INVALID_ARGUMENT)
        die("write through bad handle %#llx gave %s", (unsigned long long)h.id, sn(s));
    int q = quiet_stream();
    if (q >= 0) {
        relo_binding b;
        s = relo_resolve(M.streams[q], h, &b);
        if (s != RELO_ERR_NOT_FOUND && s != RELO_ERR_INVALID_ARGUMENT)
            die("resolve of bad handle %#llx gave %s", (unsigned long long)h.id, sn(s));
    }
}

static void op_relocate(cursor *c)
{
    static const relo_reason reasons[] = {RELO_REASON_EXPLICIT, RELO_REASON_MEMORY_PRESSURE,
                                          RELO_REASON_ARENA_FULL, RELO_REASON_CAPTURE};
    int si = take8(c) % STREAMS;
    relo_status s = relo__testing_relocate(M.streams[si], reasons[take8(c) % 4]);
    if (s != RELO_OK && s != RELO_ERR_RECORDING && s != RELO_ERR_OUT_OF_MEMORY)
        die("testing_relocate gave %s", sn(s));
    if (s == RELO_ERR_RECORDING && !any_recording()) die("testing_relocate: RECORDING with none recording");
}

static void op_stream_cycle(cursor *c)
{
    int si = take8(c) % STREAMS;
    bool owns = false;
    for (int i = 0; i < M.nlive; i++)
        if (M.lives[i].stream == si) owns = true;
    relo_stats st;
    if (relo_stream_stats(M.streams[si], &st) != RELO_OK) die("stream stats failed");
    relo_status s = relo_stream_destroy(M.streams[si]);
    if (owns || M.cap[si] != CAP_IDLE) {
        if (s != RELO_ERR_BUSY) die("destroy of a busy stream gave %s", sn(s));
        return;
    }
    /* A graph may guard one of its pages; a leak keeps pages; a recording
     * elsewhere forbids releasing pages. */
    if (s == RELO_ERR_BUSY && (M.ngraphs || st.bytes_leaked)) return;
    if ((s == RELO_ERR_BUSY || s == RELO_ERR_RECORDING) && any_recording()) return;
    if (s != RELO_OK) die("destroy of an idle empty stream gave %s", sn(s));
    M.streams[si] = NULL;
    s = relo_stream_create(M.device, NULL, &M.streams[si]);
    if (s != RELO_OK) die("stream re-create gave %s", sn(s));
    M.modes[si] = 0;
}

static void op_many(cursor *c)
{
    /* A burst of same-class reservations, to fill pages and grow. */
    uint8_t n = take8(c) % 8 + 1;
    cursor saved = *c;
    for (uint8_t i = 0; i < n; i++) {
        cursor again = saved;
        op_reserve(&again);
        if (i + 1 == n) *c = again;
    }
}

typedef struct op {
    const char *name;
    void (*fn)(cursor *);
} op;

static const op OPS[] = {
    {"reserve", op_reserve},       {"reserve", op_reserve},     {"release", op_release},
    {"release", op_release},       {"retain", op_retain},       {"write", op_write},
    {"resolve", op_resolve},       {"reclaim", op_reclaim},     {"mode_push", op_mode_push},
    {"mode_pop", op_mode_pop},     {"prepare", op_prepare},     {"begin", op_begin},
    {"end", op_end},               {"graph_destroy", op_graph_destroy},
    {"faults", op_faults},         {"bad_handle", op_bad_handle},
    {"relocate", op_relocate},     {"stream_cycle", op_stream_cycle},
    {"many", op_many},
};
enum { NOPS = (int)(sizeof OPS / sizeof OPS[0]) };

/* ---- setup and teardown ------------------------------------------------ */

static bool setup(cursor *c)
{
    static const uint64_t pages[] = {8 * MIB, 16 * MIB, 32 * MIB, 2 * MIB, 3 * MIB + 1000, 12 * MIB,
                                     4 * MIB, MIB};
    static const uint64_t aligns[] = {0, 32, 1, 8, 50, 256, 4096, 10};
    uint8_t b0 = take8(c), b1 = take8(c), b2 = take8(c), b3 = take8(c);
    relo_host_desc hd;
    memset(&M, 0, sizeof M);
    memset(&hd, 0, sizeof hd);
    hd.max_page_size = pages[b0 % 8];
    hd.alignment = aligns[b2 % 8];
    if (hd.alignment > hd.max_page_size) hd.alignment = 0;
    hd.capacity = (b1 < 16) ? 0 : (16 + (uint64_t)(b1 - 16) % 112) * MIB; /* 16..127 MiB */
    relo_backend *be = NULL;
    relo_status s = relo_backend_host_create(&hd, &be);
    if (s != RELO_OK) die("host backend create gave %s", sn(s));
    relo_backend_props props;
    if (relo_backend_props_get(be, &props) != RELO_OK) die("props_get failed");
    M.alignment = props.alignment;
    M.max_page = props.max_page_size / props.alignment * props.alignment;
    M.capacity = hd.capacity;

    relo_device_desc dd;
    memset(&dd, 0, sizeof dd);
    dd.layout = (b3 & 1) ? RELO_LAYOUT_EXCLUSIVE : RELO_LAYOUT_ADAPTIVE;
    dd.relocation = (b3 & 2) ? RELO_RELOCATION_OFF : RELO_RELOCATION_AUTO;
    dd.policy = (b3 & 4) ? RELO_POLICY_DENSE : RELO_POLICY_SEED;
    dd.pass_max_bytes = (b3 & 8) ? 4 * MIB : 0;
    M.dense = dd.policy == RELO_POLICY_DENSE;
    dd.log = on_log;
    if (trace_ops < 0) trace_ops = getenv("FUZZ_OPS_TRACE") != NULL;
    if (skip_known < 0) skip_known = getenv("FUZZ_OPS_SKIP_KNOWN") != NULL;
    if (trace_ops)
        fprintf(stderr, "setup: max page %llu, alignment %llu, capacity %llu, layout %d, relocation %d, "
                "policy %d, pass_max_bytes %llu\n", (unsigned long long)M.max_page,
                (unsigned long long)M.alignment, (unsigned long long)M.capacity, (int)dd.layout,
                (int)dd.relocation, (int)dd.policy, (unsigned long long)dd.pass_max_bytes);
    s = relo_device_create(&dd, be, &M.device);
    if (s != RELO_OK) {
        relo_backend_destroy(be);
        die("device create gave %s", sn(s));
    }
    M.backend = be;
    for (int i = 0; i < STREAMS; i++) {
        s = relo_stream_create(M.device, NULL, &M.streams[i]);
        if (s != RELO_OK) die("stream create gave %s", sn(s));
    }
    return true;
}

static void teardown(void)
{
    M.op_name = "teardown";
    relo_host_desc none;
    memset(&none, 0, sizeof none);
    if (relo_backend_host_set_faults(M.backend, &none) != RELO_OK) die("clearing faults failed");
    for (int si = 0; si < STREAMS; si++)
        if (M.cap[si] == CAP_RECORDING) end_capture(si);
    for (int si = 0; si < STREAMS; si++) {
        if (M.cap[si] == CAP_PREPARED) {
            relo_status s = relo_capture_begin(M.streams[si]);
            if (s != RELO_OK) die("teardown begin gave %s", sn(s));
            M.cap[si] = CAP_RECORDING;
            end_capture(si);
        }
    }
    while (M.nlive) {
        live *l = &M.lives[M.nlive - 1];
        verify_pattern(l);
        while (l->refs) {
            relo_status s = relo_release(M.device, l->handle);
            if (s != RELO_OK) die("teardown release gave %s", sn(s));
            l->refs--;
        }
        make_stale(M.nlive - 1);
    }
    while (M.ngraphs) relo_graph_destroy(M.graphs[--M.ngraphs]);
    check_all();
    for (int si = 0; si < STREAMS; si++) {
        relo_status s = relo_stream_destroy(M.streams[si]);
        if (s != RELO_OK) die("teardown stream destroy gave %s", sn(s));
    }
    relo_status s = relo_device_destroy(M.device);
    if (s != RELO_OK) die("device destroy with nothing live gave %s", sn(s));
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    cursor c = {data, size};
    setup(&c);
    check_all();
    while (c.n) {
        const op *o = &OPS[take8(&c) % NOPS];
        M.op_index++;
        M.op_name = o->name;
        if (trace_ops) {
            fprintf(stderr, "op #%llu %s:", (unsigned long long)M.op_index, o->name);
            for (size_t i = 0; i < c.n && i < 10; i++) fprintf(stderr, " %02x", c.p[i]);
            fprintf(stderr, " (live %d)\n", M.nlive);
        }
        o->fn(&c);
        check_all();
    }
    teardown();
    return 0;
}
