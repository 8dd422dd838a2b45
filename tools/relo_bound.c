/*
 * relo_bound.c — relo-bound: floors no allocator beats on a trace, on a
 * device that charges whole granules (hold_bound.h has the argument).
 *
 * usage: relo-bound [--granule BYTES] [--allocs N|pytorch] [--time-avg R]
 *                   [--blocks N] TRACE...
 *
 * For each trace, one line: the fit floor (peak live rounded up to the
 * granule ÷ peak live), the floor on time-averaged held ÷ live with any
 * number of device allocations, the floor with at most --allocs of them
 * (a count, or "pytorch": as many as relo-replay's model of PyTorch's
 * caching allocator takes on an unlimited device), and the fewest
 * allocations with which the floor reaches --time-avg (default 1.10).
 * The figures compare with relo-replay's "fit ratio", "time-avg reserved /
 * live" and "backend allocs".
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "baseline.h"
#include "hold_bound.h"
#include "options.h"
#include "trace_reader.h"
#include "units.h"

static void usage(FILE *f)
{
    fputs(
        "usage: relo-bound [--granule BYTES] [--allocs N|pytorch] [--time-avg R] [--blocks N] TRACE...\n"
        "  --granule BYTES   what the device charges each buffer in (default 2M)\n"
        "  --allocs N        device allocations allowed (default pytorch: as many as\n"
        "                    the PyTorch caching allocator model takes, unlimited device)\n"
        "  --time-avg R      the time-averaged held / live to find the fewest\n"
        "                    allocations for (default 1.10)\n"
        "  --blocks N        events are grouped in at most N blocks (default 4096);\n"
        "                    fewer are faster and give lower, still valid, floors\n",
        f);
}

typedef struct bound_options {
    uint64_t granule;
    uint64_t allocs; /* 0 = the PyTorch model's count */
    double target;
    uint64_t blocks;
} bound_options;

/* Parses argv; returns the index of the first trace, 0 to exit with 0, -1 on error. */
static int parse(int argc, char **argv, bound_options *o)
{
    o->granule = OPTIONS_DEFAULT_GRANULE;
    o->allocs = 0;
    o->target = 1.10;
    o->blocks = HOLD_BOUND_DEFAULT_BLOCKS;
    int i = 1;
    for (; i < argc && argv[i][0] == '-' && argv[i][1] == '-'; i++) {
        const char *name = argv[i];
        if (strcmp(name, "--help") == 0) {
            usage(stdout);
            return 0;
        }
        if (i + 1 >= argc) {
            fprintf(stderr, "relo-bound: %s needs a value\n", name);
            return -1;
        }
        const char *value = argv[++i];
        bool ok;
        if (strcmp(name, "--granule") == 0) {
            ok = units_parse_bytes(value, &o->granule) && o->granule > 0;
        } else if (strcmp(name, "--allocs") == 0) {
            o->allocs = 0;
            ok = strcmp(value, "pytorch") == 0 || (units_parse_count(value, &o->allocs) && o->allocs > 0);
        } else if (strcmp(name, "--time-avg") == 0) {
            char *end = NULL;
            o->target = strtod(value, &end);
            ok = end && end != value && *end == '\0' && o->target >= 1.0;
        } else if (strcmp(name, "--blocks") == 0) {
            ok = units_parse_count(value, &o->blocks) && o->blocks > 0 && o->blocks <= 100000;
        } else {
            fprintf(stderr, "relo-bound: unknown option %s\n", name);
            usage(stderr);
            return -1;
        }
        if (!ok) {
            fprintf(stderr, "relo-bound: invalid value '%s' for %s\n", value, name);
            return -1;
        }
    }
    if (i >= argc) {
        usage(stderr);
        return -1;
    }
    return i;
}

/* One trace's line; false when it could not be read or host memory ran out. */
static bool bound_one(const char *path, const bound_options *o)
{
    trace t;
    trace_init(&t);
    trace_error err;
    if (!trace_read_path(path, TRACE_FORMAT_AUTO, 0, &t, &err)) {
        fprintf(stderr, "relo-bound: %s:%llu: %s\n", err.file, (unsigned long long)err.line, err.message);
        return false;
    }
    uint64_t allocs = o->allocs;
    if (allocs == 0) {
        baseline_run run;
        baseline_replay(BASELINE_PYTORCH, &t, 0, 0, &run);
        allocs = run.device_allocs;
        bool done = run.status == BASELINE_COMPLETED;
        baseline_run_free(&run);
        if (!done || allocs == 0) {
            fprintf(stderr, "relo-bound: %s: the PyTorch model did not complete; give --allocs\n", path);
            trace_free(&t);
            return false;
        }
    }
    hold_bound b;
    hold_bound_result r;
    bool ok = hold_bound_init(&b, &t, o->granule, (size_t)o->blocks) &&
              hold_bound_search(&b, allocs, o->target, &r);
    if (ok) {
        double per_1k = 1000.0 / (double)t.event_count;
        printf(
            "%-28s fit floor %.4f  time-avg floor %.4f  with <= %llu allocs (%.2f per 1,000 events): %.4f  "
            "fewest allocs for <= %.2f: ",
            t.name, hold_bound_fit_floor(&b), hold_bound_time_floor(&b), (unsigned long long)allocs,
            (double)allocs * per_1k, r.floor_at_allocs, o->target);
        if (r.fewest_allocs)
            printf("%llu (%.2f per 1,000 events)\n", (unsigned long long)r.fewest_allocs,
                   (double)r.fewest_allocs * per_1k);
        else
            printf("none\n");
    } else {
        fprintf(stderr, "relo-bound: %s: out of host memory\n", path);
    }
    hold_bound_free(&b);
    trace_free(&t);
    return ok;
}

int main(int argc, char **argv)
{
    bound_options o;
    int first = parse(argc, argv, &o);
    if (first <= 0) return first == 0 ? 0 : 2;
    int rc = 0;
    for (int i = first; i < argc; i++)
        if (!bound_one(argv[i], &o)) rc = 1;
    return rc;
}
