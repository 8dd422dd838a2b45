/*
 * basic.c — relo in a page: a device over the host backend, one stream,
 * a few reservations that make the arena grow, a reclaim that relocates
 * the allocation left on the outdated page, and the stats before and after.
 */
#include <stdio.h>
#include <string.h>

#include "relo.h"
#include "relo_backend.h"

#define MiB ((uint64_t)1 << 20)

static int check(relo_status st, const char *what)
{
    if (st == RELO_OK) return 0;
    fprintf(stderr, "%s: %s (%s)\n", what, relo_status_name(st), relo_status_string(st));
    return 1;
}

static void show(relo_device *dev, const char *when)
{
    relo_stats s;
    relo_device_stats(dev, &s);
    printf("%-26s live %3llu  in use %9llu B  reserved %9llu B  pages %llu (outdated %llu)  moved %llu\n",
           when, (unsigned long long)s.allocations, (unsigned long long)s.bytes_in_use,
           (unsigned long long)s.bytes_reserved, (unsigned long long)s.pages,
           (unsigned long long)s.outdated_pages, (unsigned long long)s.allocations_moved);
}

int main(void)
{
    relo_backend *backend;
    relo_device *dev;
    relo_stream *stream;
    relo_host_desc host = {0};
    host.alignment = 256;
    if (check(relo_backend_host_create(&host, &backend), "backend")) return 1;
    if (check(relo_device_create(NULL, backend, &dev), "device")) {
        relo_backend_destroy(backend);
        return 1;
    }
    if (check(relo_stream_create(dev, NULL, &stream), "stream")) return 1;

    /* A small tensor, then one too large for the first pages: the arena grows
     * and the first page is outdated, still holding the small tensor. */
    relo_handle small, big;
    if (check(relo_reserve(stream, 1 * MiB, &small), "reserve 1 MiB")) return 1;
    char pattern[64];
    memset(pattern, 7, sizeof pattern);
    if (check(relo_write(dev, small, 0, pattern, sizeof pattern), "write")) return 1;
    if (check(relo_reserve(stream, 10 * MiB, &big), "reserve 10 MiB")) return 1;
    show(dev, "after growth:");

    /* reclaim moves the small tensor onto the current page; the outdated page
     * goes back to the device now. The handle is unchanged. */
    if (check(relo_reclaim(stream), "reclaim")) return 1;
    show(dev, "after relo_reclaim:");
    char back[64];
    relo_binding b;
    if (check(relo_read(dev, small, 0, back, sizeof back), "read")) return 1;
    if (check(relo_resolve(stream, small, &b), "resolve")) return 1;
    printf("the 1 MiB tensor now lives at offset %llu of its page; bytes %s\n",
           (unsigned long long)b.offset, memcmp(back, pattern, sizeof back) ? "LOST" : "intact");

    relo_release(dev, small);
    relo_release(dev, big);
    relo_reclaim(stream);
    show(dev, "after release + reclaim:");
    relo_stream_destroy(stream);
    return check(relo_device_destroy(dev), "destroy");
}
