/*
 * test_stats.c — docs/design.md invariants 10 and 11: stats add up across pools,
 * streams and the device; a device emptied and reclaimed holds nothing;
 * the JSON report is valid and lists every pool.
 */
#include <ctype.h>
#include <stdlib.h>

#include "check.h"
#include "fixture.h"
#include "testing/testing.h"

/* A stream of each kind of memory: small, arena (grown, so one page is
 * outdated), size 0, persistent, dedicated. */
typedef struct mixed {
    relo_handle h[16];
    int n;
} mixed;

static void reserve_mixed(mixed *m, relo_stream *s, uint64_t scale)
{
    static const uint64_t dyn[] = {100, 4096, 0, 1 * MiB, 10 * MiB, 512 * KiB};
    for (size_t i = 0; i < sizeof dyn / sizeof dyn[0]; i++) m->h[m->n++] = fx_reserve(s, dyn[i] * scale);
    expect_ok(relo_mode_push(s, RELO_MODE_PERSISTENT));
    m->h[m->n++] = fx_reserve(s, 1000 * scale);
    expect_ok(relo_mode_push(s, RELO_MODE_DEDICATED));
    m->h[m->n++] = fx_reserve(s, 2 * MiB + 7);
    expect_ok(relo_mode_pop(s));
    expect_ok(relo_mode_pop(s));
}

static void release_mixed(relo_device *d, mixed *m)
{
    for (int i = 0; i < m->n; i++) expect_ok(relo_release(d, m->h[i]));
    m->n = 0;
}

/* The fields that are sums over streams. (Peak and relocation counters are
 * device-wide events and are not compared.) */
#define ADDITIVE(X)   \
    X(allocations)    \
    X(bytes_in_use)   \
    X(bytes_padding)  \
    X(bytes_reserved) \
    X(pages)          \
    X(outdated_pages) \
    X(bytes_outdated) \
    X(guarded_pages)

static void expect_sum(relo_stats dev, relo_stats a, relo_stats b)
{
#define X(field) expect_eq(dev.field, a.field + b.field);
    ADDITIVE(X)
#undef X
}

/* 45. Stats add up: device = sum of streams; reserved = sum of page sizes
 *     held (the host backend's own count of bytes it lent); in use = sum of
 *     requested sizes of live allocations. */
CHECK_TEST(b45_stats_add_up)
{
    fx f;
    require_ok(fx_open2(&f, NULL, FX_ADAPTIVE));
    mixed a = {0}, b = {0};
    reserve_mixed(&a, f.s, 1);
    reserve_mixed(&b, f.s2, 2);
    relo_graph *graph = NULL;
    expect_ok(relo_capture_prepare(f.s2)); /* relocates both streams */
    expect_ok(relo_capture_begin(f.s2));
    (void)fx_bind(f.s2, b.h[5]);
    expect_ok(relo_capture_end(f.s2, &graph));

    relo_stats sa = fx_stats(f.s), sb = fx_stats(f.s2), sd = fx_dev_stats(f.dev);
    expect_eq(sd.size, sizeof(relo_stats));
    expect_eq(sd.version, RELO_STATS_VERSION);
    expect_eq(sa.size, sizeof(relo_stats));
    expect_eq(sa.version, RELO_STATS_VERSION);
    expect_sum(sd, sa, sb);
    expect_eq(sd.bytes_reserved, fx_counts(&f).bytes_held);
    expect_eq(sa.allocations, 8);
    expect_eq(sa.bytes_in_use, 100 + 4096 + 0 + 1 * MiB + 10 * MiB + 512 * KiB + 1000 + 2 * MiB + 7);
    expect_eq(sb.bytes_in_use, 2 * (100 + 4096 + 0 + 1 * MiB + 10 * MiB + 512 * KiB + 1000) + 2 * MiB + 7);
    expect_eq(sa.bytes_padding, 28 + 0 + 0 + 24 + 25); /* 100, 1000, 2 MiB + 7 to 32 */
    expect_eq(sb.guarded_pages, 1);
    expect_ge(sd.peak_bytes_reserved, sd.bytes_reserved);
    expect_eq(sd.backend_allocs - sd.backend_frees, sd.pages);

    /* The same after the guard goes and half of everything is released. */
    relo_graph_destroy(graph);
    for (int i = 0; i < a.n; i += 2) expect_ok(relo_release(f.dev, a.h[i]));
    expect_ok(relo_reclaim(f.s));
    sa = fx_stats(f.s);
    sb = fx_stats(f.s2);
    sd = fx_dev_stats(f.dev);
    expect_sum(sd, sa, sb);
    expect_eq(sd.bytes_reserved, fx_counts(&f).bytes_held);
    expect_eq(sa.allocations, 4);
    expect_eq(sa.bytes_in_use, 4096 + 1 * MiB + 512 * KiB + 2 * MiB + 7);
    expect_eq(sd.backend_allocs - sd.backend_frees, sd.pages);
    expect_ok(relo_device_check(f.dev));
    for (int i = 1; i < a.n; i += 2) expect_ok(relo_release(f.dev, a.h[i]));
    a.n = 0;
    release_mixed(f.dev, &b);
    fx_close(&f);
}

/* 46. After releasing everything and relo_reclaim (on each stream: a
 *     reclaim cleans its own stream's memory only) the device holds 0 bytes
 *     and 0 pages, in every pool kind. */
CHECK_TEST(b46_reclaim_empties_device)
{
    fx f;
    require_ok(fx_open2(&f, NULL, FX_ADAPTIVE));
    mixed a = {0}, b = {0};
    reserve_mixed(&a, f.s, 1);
    reserve_mixed(&b, f.s2, 3);
    expect_gt(fx_dev_stats(f.dev).pages, 8);
    release_mixed(f.dev, &a);
    release_mixed(f.dev, &b);
    expect_ok(relo_reclaim(f.s));
    expect_eq(fx_stats(f.s).pages, 0);
    /* Not this reclaim's stream: only s2's pages already queued to go back
     * (as at any reservation) went; its current pages stay. */
    expect_gt(fx_stats(f.s2).pages, 0);
    expect_ok(relo_reclaim(f.s2));
    relo_stats sd = fx_dev_stats(f.dev);
    expect_eq(sd.allocations, 0);
    expect_eq(sd.bytes_in_use, 0);
    expect_eq(sd.bytes_reserved, 0);
    expect_eq(sd.pages, 0);
    expect_eq(sd.outdated_pages, 0);
    expect_eq(fx_stats(f.s).pages, 0);
    expect_eq(fx_stats(f.s2).pages, 0);
    relo_host_counts c = fx_counts(&f);
    expect_eq(c.bytes_held, 0);
    expect_eq(c.allocs, c.frees);
    expect_eq(sd.backend_allocs, sd.backend_frees);
    fx_close(&f);
}

/* relo_reclaim_device cleans every stream at once. */
CHECK_TEST(reclaim_device_empties_every_stream)
{
    fx f;
    require_ok(fx_open2(&f, NULL, FX_ADAPTIVE));
    mixed a = {0}, b = {0};
    reserve_mixed(&a, f.s, 1);
    reserve_mixed(&b, f.s2, 3);
    release_mixed(f.dev, &a);
    release_mixed(f.dev, &b);
    expect_gt(fx_stats(f.s2).pages, 0);
    expect_ok(relo_reclaim_device(f.dev));
    expect_eq(fx_dev_stats(f.dev).pages, 0);
    expect_eq(fx_dev_stats(f.dev).bytes_reserved, 0);
    expect_status(relo_reclaim_device(NULL), RELO_ERR_INVALID_ARGUMENT);
    fx_close(&f);
}

/* ------------------------------------------------------------------------ */
/* A small JSON reader: enough to validate a document and walk it.          */
/* ------------------------------------------------------------------------ */

typedef enum jtype { J_NULL, J_BOOL, J_NUM, J_STR, J_ARR, J_OBJ } jtype;

typedef struct jval {
    jtype type;
    double num;
    char *str;          /* J_STR */
    struct jval *items; /* J_ARR: values; J_OBJ: values, keys in keys */
    char **keys;
    size_t n;
} jval;

typedef struct jparser {
    const char *p, *end;
    int depth;
    bool ok;
} jparser;

static void jws(jparser *j)
{
    while (j->p < j->end && (*j->p == ' ' || *j->p == '\t' || *j->p == '\n' || *j->p == '\r')) j->p++;
}

static bool jlit(jparser *j, const char *lit)
{
    size_t n = strlen(lit);
    if ((size_t)(j->end - j->p) < n || memcmp(j->p, lit, n) != 0) return false;
    j->p += n;
    return true;
}

static char *jstring(jparser *j)
{
    if (j->p >= j->end || *j->p != '"') return NULL;
    j->p++;
    size_t cap = 16, n = 0;
    char *s = malloc(cap);
    while (j->p < j->end && *j->p != '"') {
        char c = *j->p++;
        if ((unsigned char)c < 0x20) {
            free(s);
            return NULL;
        }
        if (c == '\\') {
            if (j->p >= j->end) {
                free(s);
                return NULL;
            }
            char e = *j->p++;
            if (e == 'u') {
                for (int i = 0; i < 4; i++)
                    if (j->p >= j->end || !isxdigit((unsigned char)*j->p++)) {
                        free(s);
                        return NULL;
                    }
                c = '?';
            } else if (strchr("\"\\/bfnrt", e)) {
                c = e;
            } else {
                free(s);
                return NULL;
            }
        }
        if (n + 2 > cap) s = realloc(s, cap *= 2);
        s[n++] = c;
    }
    if (j->p >= j->end) {
        free(s);
        return NULL;
    }
    j->p++;
    s[n] = 0;
    return s;
}

static bool jvalue(jparser *j, jval *v);

static bool jnumber(jparser *j, jval *v)
{
    const char *s = j->p;
    if (j->p < j->end && *j->p == '-') j->p++;
    if (j->p >= j->end || !isdigit((unsigned char)*j->p)) return false;
    if (*j->p == '0')
        j->p++;
    else
        while (j->p < j->end && isdigit((unsigned char)*j->p)) j->p++;
    if (j->p < j->end && *j->p == '.') {
        j->p++;
        if (j->p >= j->end || !isdigit((unsigned char)*j->p)) return false;
        while (j->p < j->end && isdigit((unsigned char)*j->p)) j->p++;
    }
    if (j->p < j->end && (*j->p == 'e' || *j->p == 'E')) {
        j->p++;
        if (j->p < j->end && (*j->p == '+' || *j->p == '-')) j->p++;
        if (j->p >= j->end || !isdigit((unsigned char)*j->p)) return false;
        while (j->p < j->end && isdigit((unsigned char)*j->p)) j->p++;
    }
    v->type = J_NUM;
    v->num = strtod(s, NULL);
    return true;
}

static bool jcontainer(jparser *j, jval *v, bool object)
{
    char close = object ? '}' : ']';
    v->type = object ? J_OBJ : J_ARR;
    j->p++;
    jws(j);
    if (j->p < j->end && *j->p == close) {
        j->p++;
        return true;
    }
    size_t cap = 0;
    for (;;) {
        if (v->n == cap) {
            cap = cap ? cap * 2 : 8;
            v->items = realloc(v->items, cap * sizeof *v->items);
            if (object) v->keys = realloc(v->keys, cap * sizeof *v->keys);
        }
        jws(j);
        if (object) {
            char *k = jstring(j);
            if (!k) return false;
            v->keys[v->n] = k;
            jws(j);
            if (j->p >= j->end || *j->p++ != ':') {
                free(k);
                return false;
            }
        }
        memset(&v->items[v->n], 0, sizeof v->items[v->n]);
        if (!jvalue(j, &v->items[v->n])) {
            if (object) free(v->keys[v->n]);
            return false;
        }
        v->n++;
        jws(j);
        if (j->p >= j->end) return false;
        if (*j->p == ',') {
            j->p++;
            continue;
        }
        if (*j->p == close) {
            j->p++;
            return true;
        }
        return false;
    }
}

static bool jvalue(jparser *j, jval *v)
{
    if (++j->depth > 64) return false;
    jws(j);
    bool ok = false;
    if (j->p >= j->end)
        ok = false;
    else if (*j->p == '{')
        ok = jcontainer(j, v, true);
    else if (*j->p == '[')
        ok = jcontainer(j, v, false);
    else if (*j->p == '"') {
        v->type = J_STR;
        v->str = jstring(j);
        ok = v->str != NULL;
    } else if (jlit(j, "true") || jlit(j, "false")) {
        v->type = J_BOOL;
        ok = true;
    } else if (jlit(j, "null")) {
        v->type = J_NULL;
        ok = true;
    } else
        ok = jnumber(j, v);
    j->depth--;
    return ok;
}

static void jfree(jval *v)
{
    for (size_t i = 0; i < v->n; i++) {
        jfree(&v->items[i]);
        if (v->type == J_OBJ) free(v->keys[i]);
    }
    free(v->items);
    free(v->keys);
    free(v->str);
    memset(v, 0, sizeof *v);
}

/* Parses text; true if it is exactly one valid JSON value. */
static bool jparse(const char *text, size_t len, jval *out)
{
    jparser j = {text, text + len, 0, true};
    memset(out, 0, sizeof *out);
    if (!jvalue(&j, out)) {
        jfree(out);
        return false;
    }
    jws(&j);
    if (j.p != j.end) {
        jfree(out);
        return false;
    }
    return true;
}

static const jval *jget(const jval *obj, const char *key)
{
    if (!obj || obj->type != J_OBJ) return NULL;
    for (size_t i = 0; i < obj->n; i++)
        if (strcmp(obj->keys[i], key) == 0) return &obj->items[i];
    return NULL;
}

/* The report as one string. */
static char *report(relo_device *d, size_t *len)
{
    FILE *f = tmpfile();
    if (!f) return NULL;
    expect_ok(relo_device_report_json(d, f));
    long n = ftell(f);
    rewind(f);
    char *text = malloc((size_t)n + 1);
    *len = fread(text, 1, (size_t)n, f);
    text[*len] = 0;
    fclose(f);
    return text;
}

CHECK_TEST(b47_json_parser_self_test)
{
    jval v;
    const char *good = " {\"a\": [1, -2.5e3, true, null, \"x\\\"y\"], \"b\": {}} ";
    expect_true(jparse(good, strlen(good), &v));
    expect_eq(jget(&v, "a")->n, 5);
    jfree(&v);
    const char *bad[] = {"{\"a\":1,}", "[1 2]", "{\"a\" 1}", "01", "{\"a\":1}}", "\"x", ""};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        expect_true(!jparse(bad[i], strlen(bad[i]), &v));
    }
}

/* 47. relo_device_report_json is valid JSON listing every pool with its
 *     page size, pages, outdated pages, guarded pages, in-use and reserved
 *     bytes; the pools add up to the device's stats, and the small pool,
 *     the outdated 2 MiB pool and the current 11 MiB pool are there. */
CHECK_TEST(b47_report_json_lists_every_pool)
{
    int failures = check_failures_;
    fx f;
    require_ok(fx_open2(&f, NULL, FX_ADAPTIVE));
    mixed a = {0}, b = {0};
    reserve_mixed(&a, f.s, 1);
    reserve_mixed(&b, f.s2, 2);
    relo_stats sd = fx_dev_stats(f.dev);

    size_t len = 0;
    char *text = report(f.dev, &len);
    require_true(text != NULL);
    jval doc;
    bool valid = jparse(text, len, &doc);
    expect_true(valid);
    if (!valid) {
        fprintf(stderr, "report:\n%s\n", text);
        free(text);
        release_mixed(f.dev, &a);
        release_mixed(f.dev, &b);
        fx_close(&f);
        return;
    }
    const jval *streams = jget(&doc, "streams");
    expect_true(jget(&doc, "stats") != NULL);
    require_true(streams && streams->type == J_ARR);
    expect_eq(streams->n, 2);

    static const char *const keys[] = {"page_size",     "pages",        "outdated_pages",
                                       "guarded_pages", "bytes_in_use", "bytes_reserved"};
    double sum[6] = {0};
    int small = 0, outdated2 = 0, current11 = 0, pools = 0;
    for (size_t s = 0; s < streams->n; s++) {
        const jval *pl = jget(&streams->items[s], "pools");
        expect_true(pl && pl->type == J_ARR);
        if (!pl || pl->type != J_ARR) continue;
        for (size_t i = 0; i < pl->n; i++) {
            const jval *pool = &pl->items[i];
            double v[6];
            bool all = true;
            pools++;
            for (int k = 0; k < 6; k++) {
                const jval *x = jget(pool, keys[k]);
                if (!x || x->type != J_NUM) {
                    fprintf(stderr, "pool %zu of stream %zu lacks numeric %s\n", i, s, keys[k]);
                    all = false;
                    v[k] = 0;
                } else {
                    v[k] = x->num;
                }
                sum[k] += v[k];
            }
            expect_true(all);
            if (s == 0 && v[0] == (double)(8 * MiB) && v[1] == 1) small++;
            if (s == 0 && v[0] == (double)(2 * MiB) && v[2] == 1) outdated2++;
            if (s == 0 && v[0] == (double)(11 * MiB) && v[1] == 1 && v[2] == 0) current11++;
        }
    }
    expect_ge(pools, 10); /* tiny, small, 2 arena, persistent, dedicated per stream */
    expect_eq((uint64_t)sum[1], sd.pages);
    expect_eq((uint64_t)sum[2], sd.outdated_pages);
    expect_eq((uint64_t)sum[3], sd.guarded_pages);
    expect_eq((uint64_t)sum[4], sd.bytes_in_use);
    expect_eq((uint64_t)sum[5], sd.bytes_reserved);
    expect_eq(small, 1);
    expect_eq(outdated2, 1);
    expect_eq(current11, 1);
    if (check_failures_ != failures) fprintf(stderr, "report:\n%s\n", text);
    jfree(&doc);
    free(text);
    release_mixed(f.dev, &a);
    release_mixed(f.dev, &b);
    fx_close(&f);
}

/* Peak bytes in use and the cumulative counts, per stream and device: the
 * peak stays where it was after a release, the totals only grow. */
CHECK_TEST(peak_in_use_and_totals)
{
    fx f;
    require_ok(fx_open2(&f, NULL, NULL));
    relo_handle a = fx_reserve(f.s, 1 * MiB);
    relo_handle b = fx_reserve(f.s, 2 * MiB);
    relo_handle c = fx_reserve(f.s2, 4096);
    expect_ok(relo_release(f.dev, a));
    relo_handle d = fx_reserve(f.s, 512 * KiB);
    relo_stats sd = fx_dev_stats(f.dev), s1 = fx_stats(f.s), s2 = fx_stats(f.s2);
    expect_eq(sd.version, RELO_STATS_VERSION);
    expect_eq(sd.peak_bytes_in_use, 3 * MiB + 4096);
    expect_eq(sd.bytes_in_use, 2 * MiB + 512 * KiB + 4096);
    expect_eq(sd.allocations_total, 4);
    expect_eq(sd.bytes_allocated_total, 3 * MiB + 512 * KiB + 4096);
    expect_eq(sd.frees_total, 1);
    expect_eq(sd.bytes_freed_total, 1 * MiB);
    expect_eq(s1.peak_bytes_in_use, 3 * MiB);
    expect_eq(s1.allocations_total, 3);
    expect_eq(s1.frees_total, 1);
    expect_eq(s2.peak_bytes_in_use, 4096);
    expect_eq(s2.bytes_allocated_total, 4096);
    /* A second owner's release frees nothing. */
    expect_ok(relo_retain(f.dev, b));
    expect_ok(relo_release(f.dev, b));
    expect_eq(fx_dev_stats(f.dev).frees_total, 1);
    expect_ok(relo_release(f.dev, b));
    expect_ok(relo_release(f.dev, c));
    expect_ok(relo_release(f.dev, d));
    sd = fx_dev_stats(f.dev);
    expect_eq(sd.bytes_in_use, 0);
    expect_eq(sd.peak_bytes_in_use, 3 * MiB + 4096);
    expect_eq(sd.frees_total, 4);
    expect_eq(sd.bytes_freed_total, sd.bytes_allocated_total);
    expect_ok(relo_device_check(f.dev));
    /* The printer names the new fields too (one list makes them). */
    FILE *out = tmpfile();
    require_true(out != NULL);
    expect_ok(relo_stats_print(&sd, out));
    rewind(out);
    char buf[8192];
    size_t n = fread(buf, 1, sizeof buf - 1, out);
    buf[n] = '\0';
    fclose(out);
    expect_true(strstr(buf, "peak_bytes_in_use:") != NULL);
    expect_true(strstr(buf, "bytes_freed_total:") != NULL);
    fx_close(&f);
}

/* The per-page map: every slice of a page in address order, covering it
 * exactly, LIVE slices with their handles, and the largest free range of
 * each page and pool. */
CHECK_TEST(report_json_maps_every_page)
{
    fx f;
    require_ok(fx_open(&f, NULL, NULL));
    relo_handle h[3];
    for (int i = 0; i < 3; i++) h[i] = fx_reserve(f.s, 5 * MiB);
    expect_ok(relo_release(f.dev, h[1]));
    size_t len = 0;
    char *text = report(f.dev, &len);
    require_true(text != NULL);
    jval doc;
    bool valid = jparse(text, len, &doc);
    require_true(valid);
    const jval *pools = jget(&jget(&doc, "streams")->items[0], "pools");
    require_true(pools && pools->type == J_ARR);
    int seen[3] = {0};
    int pages = 0;
    for (size_t i = 0; i < pools->n; i++) {
        const jval *pool = &pools->items[i];
        const jval *map = jget(pool, "page_map");
        require_true(map && map->type == J_ARR);
        expect_eq((size_t)jget(pool, "pages")->num, map->n);
        double pool_largest = 0;
        for (size_t k = 0; k < map->n; k++) {
            const jval *pg = &map->items[k];
            const jval *slices = jget(pg, "slices");
            require_true(slices && slices->type == J_ARR);
            pages++;
            double at = 0, largest = 0;
            for (size_t j = 0; j < slices->n; j++) {
                const jval *sl = &slices->items[j];
                const char *state = jget(sl, "state")->str;
                const jval *handle = jget(sl, "handle");
                expect_eq((uint64_t)jget(sl, "offset")->num, (uint64_t)at);
                at += jget(sl, "length")->num;
                if (strcmp(state, "FREE") == 0) {
                    expect_eq(handle->type, J_NULL);
                    if (jget(sl, "length")->num > largest) largest = jget(sl, "length")->num;
                } else if (strcmp(state, "LIVE") == 0) {
                    for (int m = 0; m < 3; m++)
                        if (handle->type == J_NUM && (uint64_t)handle->num == h[m].id) seen[m]++;
                    expect_eq((uint64_t)jget(sl, "size")->num, 5 * MiB);
                }
            }
            expect_eq((uint64_t)at, (uint64_t)jget(pg, "size")->num);
            expect_eq((uint64_t)jget(pg, "largest_free")->num, (uint64_t)largest);
            if (largest > pool_largest) pool_largest = largest;
        }
        expect_eq((uint64_t)jget(pool, "largest_free")->num, (uint64_t)pool_largest);
    }
    expect_ge(pages, 1);
    expect_eq(seen[0], 1);
    expect_eq(seen[1], 0); /* released: its range is FREE, its handle gone */
    expect_eq(seen[2], 1);
    jfree(&doc);
    free(text);
    expect_ok(relo_release(f.dev, h[0]));
    expect_ok(relo_release(f.dev, h[2]));
    fx_close(&f);
}

/* The run-time version is the one this test was compiled against. */
CHECK_TEST(version_at_run_time)
{
    expect_true(strcmp(relo_version(), RELO_VERSION_STRING) == 0);
}

CHECK_MAIN()
