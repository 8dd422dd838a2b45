/*
 * fuzz_ops.c — a libFuzzer harness that drives relo's public API over two
 * streams of one device and checks it against a shadow model, with a
 * second thread the input drives in lockstep and relocation passes the
 * harness drives as a runtime would.
 *
 * Input layout: four configuration bytes (max page size 1-32 MiB, capacity
 * unknown or 16-127 MiB, alignment, device flags), then a sequence of
 * operations, each one opcode byte followed by the argument bytes that
 * operation reads. A short input simply ends the sequence (missing bytes
 * read as zero). The opcodes are the indexes of OPS[] below, modulo its
 * length; make_corpus.py writes seeds in this language.
 *
 * The device is the sparse backend (sparse_backend.h): real bytes, but only
 * where something was written, so a run costs what relo does and not what
 * clearing pages of tens of MiB costs; it also checks relo's side of the
 * backend contract on every call.
 *
 * Beyond reserve, release, retain, write, resolve, reclaim, modes, capture
 * and faults, the input opens runtime-driven passes (relo_pass_begin), reads
 * and skips their moves, copies them itself or through relo_pass_copy (on
 * either thread), and ends them with each outcome; it pins, unpins and reads;
 * and it hands one job at a time to the second thread: a read, write, pin,
 * unpin, release, resolve, relo_device_check or relo_pass_copy. A job may be
 * held at a gate of the backend (inside the read, the write, the device
 * wait, a copy or the copies' wait) while the main thread goes on, or wait
 * inside relo for the pass to end, as a pin or write of a source from
 * another thread does; the main thread opens the gates and joins the job
 * when the input says so, or when it must.
 *
 * relo_device_check runs after every operation, also while a pass is open,
 * and inside passes: in the backend's device wait and in the streams'
 * finishes, which run on the thread that copies while the pass waits for
 * the device (relo's own passes and relo_pass_copy), and on the second
 * thread while the main thread holds a pass open or waits inside one.
 * FUZZ_OPS_STATS=1 prints at exit how many checks ran in each of those
 * places, and how many passes, moves and jobs the run saw.
 *
 * After every operation the harness also reads back the pattern of every
 * live allocation (through the backend, for a source of the open pass, so
 * as not to veto its move), checks that released handles stay stale, that
 * pinned allocations stay put, that live ranges and pass targets do not
 * overlap, that each move's state is the one the model predicts, and that
 * stats agree with the model. At the end it tears the device down
 * completely, so LeakSanitizer sees anything relo leaked.
 *
 * Any broken expectation prints what happened and aborts, which libFuzzer
 * records as a crash with the input that caused it.
 */
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_ops.h"
#include "testing/testing.h"

model M;
totals T;

/* The last log lines of relo, printed when the harness dies (relo_device_check
 * logs the invariant it found broken). FUZZ_OPS_TRACE=1 also prints every
 * operation and log line as it happens. */
enum { LOG_LINES = 16 };
static char log_ring[LOG_LINES][256];
static _Atomic unsigned log_next;
int trace_ops = -1;
/* FUZZ_OPS_SKIP_KNOWN=1 steers around bugs already reported, so a long run
 * can find the next one. */
static int skip_known = -1;

static void on_log(void *user, relo_log_level level, const char *message)
{
    (void)user;
    unsigned i = atomic_fetch_add(&log_next, 1);
    snprintf(log_ring[i % LOG_LINES], sizeof log_ring[0], "[%d] %s", (int)level, message);
    if (trace_ops > 0) fprintf(stderr, "  relo log [%d]: %s\n", (int)level, message);
}

void die(const char *fmt, ...)
{
    va_list ap;
    unsigned next = atomic_load(&log_next);
    unsigned first = next > LOG_LINES ? next - LOG_LINES : 0;
    for (unsigned i = first; i < next; i++) fprintf(stderr, "relo log: %s\n", log_ring[i % LOG_LINES]);
    fprintf(stderr, "\nfuzz_ops: op #%llu (%s)%s: ", (unsigned long long)M.op_index,
            M.op_name ? M.op_name : "setup", M.P.pass ? ", a pass open" : "");
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    abort();
}

const char *sn(relo_status s)
{
    return relo_status_name(s);
}

bool any_recording(void)
{
    for (int i = 0; i < STREAMS; i++)
        if (M.cap[i] == CAP_RECORDING) return true;
    return false;
}

NO_COVERAGE bool same_place(relo_binding a, relo_binding b)
{
    return a.buffer == b.buffer && a.offset == b.offset && a.size == b.size;
}

/* ---- patterns ---------------------------------------------------------- */

NO_CHECKS static uint8_t pattern_byte(uint8_t seed, uint64_t offset)
{
    uint64_t x = (offset + 1) * UINT64_C(0x9E3779B97F4A7C15) + seed;
    return (uint8_t)((x >> 56) ^ seed);
}

/* The windows of an allocation that carry its pattern: the whole of a small
 * one, else the head, the middle and the tail. */
int windows(uint64_t size, uint64_t off[3], uint64_t len[3])
{
    if (size == 0) return 0;
    if (size <= WINDOW_MAX) {
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

NO_CHECKS void fill_pattern(uint8_t *buf, uint8_t seed, uint64_t off, uint64_t len)
{
    for (uint64_t i = 0; i < len; i++) buf[i] = pattern_byte(seed, off + i);
}

NO_CHECKS void expect_pattern(const uint8_t *buf, relo_handle h, uint8_t seed, uint64_t off, uint64_t len,
                              const char *how)
{
    for (uint64_t i = 0; i < len; i++)
        if (buf[i] != pattern_byte(seed, off + i))
            die("handle %#llx (%s): byte %llu is %#x, expected %#x", (unsigned long long)h.id, how,
                (unsigned long long)(off + i), buf[i], pattern_byte(seed, off + i));
}


/* ---- model bookkeeping ------------------------------------------------- */

NO_COVERAGE int find_live(uint64_t id)
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

NO_COVERAGE static bool is_stale(uint64_t id)
{
    for (int i = 0; i < M.nstale; i++)
        if (M.stale[i].id == id) return true;
    return false;
}

/* The model's side of a release that succeeded: at the last owner the
 * allocation goes (a source of the open pass stays until it closes). */
void released(int i)
{
    live *l = &M.lives[i];
    if (--l->refs) return;
    pmove *mv = move_of(l->handle);
    if (mv) {
        mv->state = RELO_MOVE_RELEASED;
        M.P.dropped++;
        M.P.dropped_bytes += l->size;
    }
    make_stale(i);
}

/* A live allocation chosen by k that no job of the second thread holds,
 * or NULL. */
static live *pick_free(uint8_t k)
{
    if (!M.nlive) return NULL;
    live *l = &M.lives[k % M.nlive];
    return l->job == J_NONE ? l : NULL;
}

int quiet_stream(void)
{
    for (int i = 0; i < STREAMS; i++)
        if (M.cap[i] != CAP_RECORDING) return i;
    return -1;
}


/* ---- invariants -------------------------------------------------------- */

static void check_stale(relo_handle h, int stream)
{
    relo_binding b;
    uint8_t byte = 0;
    relo_status s = relo_resolve(M.streams[stream], h, &b);
    if (s != RELO_ERR_NOT_FOUND) die("stale handle %#llx resolved: %s", (unsigned long long)h.id, sn(s));
    s = relo_read(M.device, h, 0, &byte, 0);
    if (s != RELO_ERR_NOT_FOUND)
        die("relo_read of stale handle %#llx gave %s", (unsigned long long)h.id, sn(s));
}

/* Reads the pattern windows of l back: through relo_read, or straight from
 * the backend at the source of its move while a pass moves it (a read from
 * this thread would veto the move). */
NO_COVERAGE static void verify_pattern(const live *l)
{
    uint8_t buf[WINDOW_MAX];
    uint64_t off[3], len[3];
    if (!l->patterned || l->job == J_WRITE) return;
    const pmove *mv = move_of(l->handle);
    int n = windows(l->size, off, len);
    for (int w = 0; w < n; w++) {
        if (mv && mv->state == RELO_MOVE_PENDING) {
            sparse_peek(M.sb, mv->from.buffer, mv->from.offset + off[w], buf, len[w]);
        } else {
            relo_status s = relo_read(M.device, l->handle, off[w], buf, len[w]);
            if (s != RELO_OK)
                die("relo_read of live handle %#llx gave %s", (unsigned long long)l->handle.id, sn(s));
        }
        expect_pattern(buf, l->handle, l->seed, off[w], len[w], mv ? "source of the open pass" : "relo_read");
    }
}

NO_COVERAGE static bool overlap(relo_binding a, relo_binding b)
{
    return a.size && b.size && a.buffer == b.buffer && a.offset < b.offset + b.size &&
           b.offset < a.offset + a.size;
}

/* The open pass: each move's state is the model's, no target overlaps a
 * live allocation or another target. */
NO_COVERAGE static void check_pass(const relo_binding *bind)
{
    for (uint32_t i = 0; i < M.P.count; i++) {
        pmove *mv = &M.P.moves[i];
        relo_pass_move got;
        relo_status s = relo_pass_move_get(M.P.pass, i, &got);
        if (s != RELO_OK) die("relo_pass_move_get(%u) gave %s", i, sn(s));
        if (got.state != mv->state)
            die("move %u of handle %#llx is %s, the model says %s", i, (unsigned long long)mv->handle.id,
                relo_move_state_name(got.state), relo_move_state_name(mv->state));
        if (got.handle.id != (mv->state == RELO_MOVE_RELEASED ? 0 : mv->handle.id))
            die("move %u names handle %#llx", i, (unsigned long long)got.handle.id);
        if (!same_place(got.from, mv->from) || !same_place(got.to, mv->to))
            die("move %u changed its places", i);
        if (mv->state == RELO_MOVE_RELEASED) continue;
        for (int k = 0; k < M.nlive; k++)
            if (overlap(mv->to, bind[k]))
                die("the target of move %u overlaps live handle %#llx", i,
                    (unsigned long long)M.lives[k].handle.id);
        for (uint32_t k = 0; k < i; k++)
            if (M.P.moves[k].state != RELO_MOVE_RELEASED && overlap(mv->to, M.P.moves[k].to))
                die("the targets of moves %u and %u overlap", k, i);
    }
}

/* After copies whose wait failed: relo keeps a slide's allocation at its
 * source with its bytes not promised (docs/design.md, "Slides"), so the
 * pattern of any allocation whose place, before the operation or now,
 * meets the target of such a copy is no longer checked (until rewritten).
 * The targets of other moves are leaked: nothing live meets them. */
static void forget_unpromised(void)
{
    sparse_range r[256];
    bool more = false;
    size_t n = sparse_take_unknown(M.sb, r, 256, &more);
    if (!n && !more) return;
    int q = quiet_stream();
    for (int i = 0; i < M.nlive; i++) {
        live *l = &M.lives[i];
        relo_binding now = l->bind;
        if (q >= 0 && !move_of(l->handle) && relo_resolve(M.streams[q], l->handle, &now) != RELO_OK)
            die("live handle %#llx does not resolve", (unsigned long long)l->handle.id);
        bool meets = more;
        for (size_t k = 0; k < n && !meets; k++) {
            relo_binding t = {r[k].buffer, r[k].offset, r[k].n, 0};
            meets = overlap(t, l->bind) || overlap(t, now);
        }
        if (meets && trace_ops)
            fprintf(stderr, "  handle %#llx: bytes not promised (a copy whose wait failed met its place)\n",
                    (unsigned long long)l->handle.id);
        if (meets) l->patterned = false;
    }
}

NO_COVERAGE static void check_all(void)
{
    forget_unpromised();
    relo_status s = relo_device_check(M.device);
    if (s != RELO_OK) die("relo_device_check gave %s", sn(s));
    if (M.P.pass) atomic_fetch_add(&T.checks_opener_in_pass, 1);

    uint64_t in_use = 0;
    for (int i = 0; i < M.nlive; i++) {
        verify_pattern(&M.lives[i]);
        in_use += M.lives[i].size;
    }

    /* Resolve every live allocation on a stream that does not record (a
     * resolve there would mark pages touched) and check that no two live
     * ranges overlap, that every offset is aligned and that pinned
     * allocations stayed. A source of the open pass is where its move says
     * (a resolve from this thread would veto the move). */
    int q = quiet_stream();
    if (q >= 0) {
        relo_binding bind[MAX_LIVE];
        for (int i = 0; i < M.nlive; i++) {
            live *l = &M.lives[i];
            const pmove *mv = move_of(l->handle);
            if (mv) {
                bind[i] = mv->from;
            } else if ((s = relo_resolve(M.streams[q], l->handle, &bind[i])) != RELO_OK) {
                die("live handle %#llx does not resolve: %s", (unsigned long long)l->handle.id, sn(s));
            }
            if (bind[i].size != l->size)
                die("binding size %llu, reserved %llu", (unsigned long long)bind[i].size,
                    (unsigned long long)l->size);
            if (l->size && !bind[i].buffer) die("binding without a buffer");
            if (l->size && bind[i].offset % M.alignment)
                die("offset %llu not a multiple of the alignment %llu", (unsigned long long)bind[i].offset,
                    (unsigned long long)M.alignment);
            if (l->pins && !same_place(bind[i], l->pinned_at))
                die("pinned handle %#llx moved", (unsigned long long)l->handle.id);
            l->bind = bind[i];
            for (int j = 0; j < i; j++)
                if (overlap(bind[i], bind[j]))
                    die("live handles %#llx [%llu,+%llu) and %#llx [%llu,+%llu) overlap",
                        (unsigned long long)l->handle.id, (unsigned long long)bind[i].offset,
                        (unsigned long long)bind[i].size, (unsigned long long)M.lives[j].handle.id,
                        (unsigned long long)bind[j].offset, (unsigned long long)bind[j].size);
        }
        for (int i = 0; i < M.nstale; i++) check_stale(M.stale[i], q);
        if (M.P.pass) check_pass(bind);
    }

    /* Sources released while the pass is open count until it closes. */
    uint64_t allocations = (uint64_t)M.nlive + M.P.dropped;
    in_use += M.P.dropped_bytes;
    relo_stats dev, st, sum;
    memset(&sum, 0, sizeof sum);
    if ((s = relo_device_stats(M.device, &dev)) != RELO_OK) die("relo_device_stats: %s", sn(s));
    if (dev.size != sizeof dev || dev.version != RELO_STATS_VERSION) die("stats size/version not filled");
    if (dev.allocations != allocations)
        die("stats: %llu allocations, model has %llu", (unsigned long long)dev.allocations,
            (unsigned long long)allocations);
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

/* ---- sizes --------------------------------------------------------------- */

/* A size biased toward the edges the allocator cares about. */
static uint64_t pick_size(cursor *c)
{
    uint8_t k = take8(c);
    uint64_t r = take_n(c, 2);
    switch (k % 24) {
    case 0: return 0;
    case 1: return 1 + r % 64;                  /* tiny */
    case 2: return 64 * KIB - 64 + r % 128;     /* around the small pool's limit */
    case 3: return 4 * KIB - 2 + r % 4;         /* around a host page */
    case 4: return 2 * MIB - 64 + r % 128;      /* around the arena floor */
    case 5: return MIB * (1 + r % 12) + r % 97; /* grows through page sizes */
    case 6: return 8 * MIB - 32 + r % 64;       /* the small pool's page */
    case 7: return M.max_page - 32 + r % 64;    /* around the max page */
    case 8: return M.max_page + 1 + r;          /* too big */
    case 9: return UINT64_MAX - r;              /* near 2^64 */
    case 10: return (UINT64_C(1) << 50) + r;    /* huge */
    case 11: return (UINT64_C(1) << 63) + r;
    case 12: return r % (64 * KIB);              /* small */
    case 13: return r * 16;                      /* up to 1 MiB */
    case 14: return 3 * MIB + 2 * MIB * (r % 8); /* a ladder through arena page sizes */
    case 15: return M.max_page - M.alignment * (r % 4);
    case 16: return 7 * MIB + r % 1024; /* near the small page, arena side */
    case 17: return 32 + r % 32;
    default: return r % (2 * MIB) + (uint64_t)(k & 3) * MIB;
    }
}

/* ---- operations -------------------------------------------------------- */

static void write_pattern(live *l)
{
    uint8_t buf[WINDOW_MAX];
    uint64_t off[3], len[3];
    int n = windows(l->size, off, len);
    if (trace_ops)
        fprintf(stderr, "  handle %#llx: %llu B, stream %d, seed %u\n", (unsigned long long)l->handle.id,
                (unsigned long long)l->size, l->stream, l->seed);
    for (int w = 0; w < n; w++) {
        fill_pattern(buf, l->seed, off[w], len[w]);
        relo_status s = relo_write(M.device, l->handle, off[w], buf, len[w]);
        if (s != RELO_OK) die("relo_write of a live allocation gave %s", sn(s));
    }
    if (n) veto(l->handle);
    l->patterned = true;
}

static void op_reserve(cursor *c)
{
    int si = take8(c) % STREAMS;
    uint64_t size = pick_size(c);
    uint8_t seed = take8(c);
    relo_handle h = {0};
    if (!M.capacity && size <= M.max_page &&
        sparse_bytes_held(M.sb) + size + 8 * MIB > UNKNOWN_CAPACITY_BUDGET)
        return;
    if (M.nlive == MAX_LIVE) return;
    /* Steer around reported, unfixed bugs here when FUZZ_OPS_SKIP_KNOWN is
     * set, e.g. (bug fixed since, regressions/fuzz_ops-packed-size0-divzero):
     * if (skip_known && size == 0 && M.packed) return; */
    (void)skip_known;
    relo_status s = relo_reserve(M.streams[si], size, &h);
    switch (s) {
    case RELO_OK:
        if (size > M.max_page)
            die("reserve(%llu) succeeded above the max page %llu", (unsigned long long)size,
                (unsigned long long)M.max_page);
        if (h.id == 0) die("reserve returned handle 0");
        if (find_live(h.id) >= 0)
            die("reserve returned a live handle again: %#llx", (unsigned long long)h.id);
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
        if (size > M.max_page)
            die("reserve(%llu) above the max page gave %s", (unsigned long long)size, sn(s));
        return;
    default: die("reserve(%llu) on stream %d gave %s", (unsigned long long)size, si, sn(s));
    }
    /* A check inside a pass of this reservation may have released one. */
    if (M.nlive == MAX_LIVE) die("model: no room for a new allocation");
    live *l = &M.lives[M.nlive++];
    memset(l, 0, sizeof *l);
    l->handle = h;
    l->size = size;
    l->refs = 1;
    l->stream = si;
    l->seed = seed;
    write_pattern(l);
}

static void op_release(cursor *c)
{
    live *l = pick_free(take8(c));
    if (!l) return;
    relo_status s = relo_release(M.device, l->handle);
    if (s != RELO_OK) die("release of a live handle gave %s", sn(s));
    released((int)(l - M.lives));
}

static void op_retain(cursor *c)
{
    uint8_t k = take8(c);
    if (!M.nlive) return;
    live *l = &M.lives[k % M.nlive];
    relo_status s = relo_retain(M.device, l->handle);
    if (s != RELO_OK) die("retain of a live handle gave %s", sn(s));
    l->refs++;
}

static void op_write(cursor *c)
{
    uint8_t k = take8(c), seed = take8(c);
    live *l = pick_free(k);
    if (!l) return;
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
    if (b.size != l->size)
        die("resolved size %llu, reserved %llu", (unsigned long long)b.size, (unsigned long long)l->size);
    veto(l->handle);
}

static void op_reclaim(cursor *c)
{
    int si = take8(c) % STREAMS;
    relo_status s = relo_reclaim(M.streams[si]);
    relo_status want = any_recording() ? RELO_ERR_RECORDING : M.P.pass ? RELO_ERR_BUSY : RELO_OK;
    if (s != want) die("reclaim gave %s, expected %s", sn(s), sn(want));
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
    } else if (M.P.pass) {
        if (s != RELO_ERR_BUSY) die("prepare while a pass is open gave %s", sn(s));
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
    } else if (M.P.pass) {
        if (s != RELO_ERR_BUSY) die("capture begin while a pass is open gave %s", sn(s));
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

static void op_end(cursor *c)
{
    end_capture(take8(c) % STREAMS);
}

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
    memset(&M.faults, 0, sizeof M.faults);
    M.faults.refuse_copies = bits & 1;
    M.faults.fail_wait_copies = (bits >> 1) & 1;
    M.faults.fail_wait_device = (bits >> 2) & 1;
    M.faults.refuse_alloc_above = above[a % 7];
    if (bits & 8) M.faults.refuse_alloc_after = 1 + (a >> 4);
    if (bits & 16) M.faults.refuse_copy_after = 1 + (a >> 4);
    if ((bits & 0xE0) == 0xE0) memset(&M.faults, 0, sizeof M.faults);
    sparse_set_faults(M.sb, &M.faults);
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
    s = relo_unpin(M.device, h);
    if (s != RELO_ERR_NOT_FOUND && s != RELO_ERR_INVALID_ARGUMENT)
        die("unpin of bad handle %#llx gave %s", (unsigned long long)h.id, sn(s));
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
    if (H.in_flight) return; /* the job may use the stream */
    bool owns = false;
    for (int i = 0; i < M.nlive; i++)
        if (M.lives[i].stream == si) owns = true;
    relo_stats st;
    if (relo_stream_stats(M.streams[si], &st) != RELO_OK) die("stream stats failed");
    relo_status s = relo_stream_destroy(M.streams[si]);
    if (owns || M.cap[si] != CAP_IDLE || M.P.pass) {
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
    M.finish[si] = 0;
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

/* ---- pins and reads ------------------------------------------------------ */

static void op_pin(cursor *c)
{
    int si = take8(c) % STREAMS;
    live *l = pick_free(take8(c));
    if (!l) return;
    relo_binding b;
    relo_status s = relo_pin(M.streams[si], l->handle, &b);
    if (s != RELO_OK) die("pin of a live handle gave %s", sn(s));
    if (b.size != l->size)
        die("pinned size %llu, reserved %llu", (unsigned long long)b.size, (unsigned long long)l->size);
    if (l->pins && !same_place(b, l->pinned_at)) die("a pinned allocation moved");
    if (!l->pins++) l->pinned_at = b;
    veto(l->handle);
}

static void op_unpin(cursor *c)
{
    live *l = pick_free(take8(c));
    if (!l) return;
    relo_status s = relo_unpin(M.device, l->handle);
    if (s != (l->pins ? RELO_OK : RELO_ERR_INVALID_ARGUMENT))
        die("unpin with %u pins gave %s", l->pins, sn(s));
    if (l->pins) l->pins--;
}

static void op_read(cursor *c)
{
    uint8_t k = take8(c), w = take8(c);
    if (!M.nlive) return;
    live *l = &M.lives[k % M.nlive];
    uint64_t off[3], len[3];
    int n = windows(l->size, off, len);
    if (!n || l->job == J_WRITE) return;
    uint8_t buf[WINDOW_MAX];
    relo_status s = relo_read(M.device, l->handle, off[w % n], buf, len[w % n]);
    if (s != RELO_OK) die("relo_read of a live handle gave %s", sn(s));
    if (l->patterned) expect_pattern(buf, l->handle, l->seed, off[w % n], len[w % n], "relo_read");
    veto(l->handle);
}


typedef struct op {
    const char *name;
    void (*fn)(cursor *);
} op;

/* The first 19 keep the codes the committed corpus was written with. */
static const op OPS[] = {
    {"reserve", op_reserve},
    {"reserve", op_reserve},
    {"release", op_release},
    {"release", op_release},
    {"retain", op_retain},
    {"write", op_write},
    {"resolve", op_resolve},
    {"reclaim", op_reclaim},
    {"mode_push", op_mode_push},
    {"mode_pop", op_mode_pop},
    {"prepare", op_prepare},
    {"begin", op_begin},
    {"end", op_end},
    {"graph_destroy", op_graph_destroy},
    {"faults", op_faults},
    {"bad_handle", op_bad_handle},
    {"relocate", op_relocate},
    {"stream_cycle", op_stream_cycle},
    {"many", op_many},
    {"pass_begin", op_pass_begin},
    {"pass_begin", op_pass_begin},
    {"pass_skip", op_pass_skip},
    {"pass_own_copy", op_pass_own_copy},
    {"pass_copy", op_pass_copy},
    {"pass_end", op_pass_end},
    {"pin", op_pin},
    {"unpin", op_unpin},
    {"read", op_read},
    {"job", op_job},
    {"job", op_job},
    {"join", op_join},
    {"set_finish", op_set_finish},
    {"arm_hook", op_arm_hook},
};
enum { NOPS = (int)(sizeof OPS / sizeof OPS[0]) };

/* ---- setup and teardown ------------------------------------------------ */

static void print_totals(void)
{
    fprintf(stderr,
            "fuzz_ops: %llu runs, %llu operations; %llu passes, %llu moves planned, %llu committed; "
            "%llu jobs on the second thread (%llu held at a gate, %llu waiting for a pass); "
            "relo_device_check inside passes: %llu in the device wait, %llu in finishes, "
            "%llu on the second thread with a pass open, %llu by the opener between operations\n",
            (unsigned long long)T.runs, (unsigned long long)T.ops, (unsigned long long)T.passes,
            (unsigned long long)T.moves, (unsigned long long)T.committed, (unsigned long long)T.jobs,
            (unsigned long long)T.jobs_held, (unsigned long long)T.jobs_waited,
            (unsigned long long)T.checks_in_pass_hook, (unsigned long long)T.checks_in_finish,
            (unsigned long long)T.checks_other_thread_in_pass, (unsigned long long)T.checks_opener_in_pass);
}

static void setup(cursor *c)
{
    static const uint64_t pages[] = {8 * MIB,        16 * MIB, 32 * MIB, 2 * MIB,
                                     3 * MIB + 1000, 12 * MIB, 4 * MIB,  MIB};
    static const uint64_t aligns[] = {64, 32, 1, 8, 50, 256, 4096, 10};
    static bool once;
    uint8_t b0 = take8(c), b1 = take8(c), b2 = take8(c), b3 = take8(c);
    memset(&M, 0, sizeof M);
    if (!once) {
        once = true;
        trace_ops = getenv("FUZZ_OPS_TRACE") != NULL;
        skip_known = getenv("FUZZ_OPS_SKIP_KNOWN") != NULL;
        if (getenv("FUZZ_OPS_STATS")) atexit(print_totals);
    }
    relo_backend_props props;
    memset(&props, 0, sizeof props);
    props.max_page_size = pages[b0 % 8];
    props.alignment = aligns[b2 % 8];
    if (props.alignment > props.max_page_size) props.alignment = 64;
    props.capacity = (b1 < 16) ? 0 : (16 + (uint64_t)(b1 - 16) % 112) * MIB; /* 16..127 MiB */
    relo_backend *be = NULL;
    relo_status s = sparse_backend_create(&props, &M.sb, &be);
    if (s != RELO_OK) die("sparse backend create gave %s", sn(s));
    M.alignment = props.alignment;
    M.max_page = props.max_page_size / props.alignment * props.alignment;
    M.capacity = props.capacity;

    relo_device_desc dd;
    memset(&dd, 0, sizeof dd);
    /* Flag 1 asks for the exclusive placement whatever flag 4 says. */
    dd.placement = (b3 & 1)   ? RELO_PLACEMENT_EXCLUSIVE
                   : (b3 & 4) ? RELO_PLACEMENT_PACKED
                              : RELO_PLACEMENT_ADAPTIVE;
    dd.relocation = (b3 & 2) ? RELO_RELOCATION_OFF : RELO_RELOCATION_AUTO;
    dd.pass_max_bytes = (b3 & 8) ? 4 * MIB : 0;
    M.packed = dd.placement == RELO_PLACEMENT_PACKED;
    M.relocation_on = !(b3 & 3);
    dd.log = on_log;
    if (trace_ops)
        fprintf(stderr,
                "setup: max page %llu, alignment %llu, capacity %llu, placement %s, relocation %d, "
                "pass_max_bytes %llu\n",
                (unsigned long long)M.max_page, (unsigned long long)M.alignment,
                (unsigned long long)M.capacity, relo_placement_name(dd.placement), (int)dd.relocation,
                (unsigned long long)dd.pass_max_bytes);
    s = relo_device_create(&dd, be, &M.device);
    if (s != RELO_OK) {
        relo_backend_destroy(be);
        die("device create gave %s", sn(s));
    }
    M.backend = be;
    sparse_set_wait_hook(M.sb, on_wait_device, NULL);
    sparse_set_park_hook(M.sb, on_park, NULL);
    for (int i = 0; i < STREAMS; i++) {
        s = relo_stream_create(M.device, NULL, &M.streams[i]);
        if (s != RELO_OK) die("stream create gave %s", sn(s));
    }
}

static void teardown(void)
{
    M.op_name = "teardown";
    M.hook = HOOK_NONE;
    sparse_faults none;
    memset(&none, 0, sizeof none);
    sparse_set_faults(M.sb, &none);
    M.faults = none;
    if (M.P.pass) {
        /* A job waiting for the pass goes on once it ends. */
        if (H.in_flight && H.j.kind == J_PASS_COPY) join();
        relo_status s = relo_pass_end(M.P.pass, RELO_PASS_ABANDONED);
        if (s != RELO_OK) die("teardown pass end gave %s", sn(s));
        memset(&M.P, 0, sizeof M.P);
    }
    join();
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
    atomic_fetch_add(&T.runs, 1);
    while (c.n) {
        const op *o = &OPS[take8(&c) % NOPS];
        M.op_index++;
        M.op_name = o->name;
        if (trace_ops) {
            fprintf(stderr, "op #%llu %s:", (unsigned long long)M.op_index, o->name);
            for (size_t i = 0; i < c.n && i < 10; i++) fprintf(stderr, " %02x", c.p[i]);
            fprintf(stderr, " (live %d%s)\n", M.nlive, M.P.pass ? ", pass open" : "");
        }
        o->fn(&c);
        check_all();
    }
    atomic_fetch_add(&T.ops, M.op_index);
    teardown();
    return 0;
}
