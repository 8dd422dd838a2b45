/*
 * options.c — parsing relo-replay's options ("--name value" or
 * "--name=value"), with the help text next to the code it documents.
 */
#include "options.h"

#include <stdlib.h>
#include <string.h>

#include "sweep.h"
#include "units.h"

void options_usage(FILE *f)
{
    fputs(
        "usage: relo-replay [options] TRACE...   (TRACE '-' reads standard input)\n"
        "\n"
        "Replays allocation traces on a relo device and reports memory and time.\n"
        "TRACE is a relo trace (docs/trace-format.md; plain or .trace.gz) or an\n"
        "RMM CSV log.\n"
        "PyTorch snapshots: convert first with tools/torch_snapshot_to_trace.py.\n"
        "\n"
        "options:\n"
        "  --backend sim|host|opencl|vulkan\n"
        "                             sim (default): bookkeeping only, any size;\n"
        "                             host: real bytes, every allocation filled with\n"
        "                             a pattern and checked after each relocation and\n"
        "                             at its free (a mismatch fails the replay);\n"
        "                             opencl: the first OpenCL GPU (else any device),\n"
        "                             bytes checked as on host; vulkan: the first\n"
        "                             Vulkan 1.2 GPU (else any device, e.g. lavapipe),\n"
        "                             bytes checked as on host\n"
        "  --capacity BYTES|auto      device size (e.g. 24G, 1.5GiB, 512M; binary\n"
        "                             units); default unlimited. 'auto' means the fit\n"
        "                             capacity: implies --fit and replays at it\n"
        "  --fit                      find by bisection (within 0.1 %) the smallest\n"
        "                             capacity the trace completes on without running\n"
        "                             out of memory, starting from peak live bytes\n"
        "  --sweep FROM:TO:STEP       replay at every capacity from FROM to TO by STEP,\n"
        "                             each a multiple of peak live bytes (0.0025 or\n"
        "                             0.25%); FROM may be 'fit', the fit capacity\n"
        "                             (implies --fit). Fails when any replay runs out\n"
        "                             of memory; e.g. --sweep fit:1.5:0.25%. At most\n"
        "                             100,000 replays (SWEEP_MAX_REPLAYS)\n"
        "  --granule BYTES            sim, host: each buffer takes its size rounded up\n"
        "                             to this from the capacity, as a GPU driver\n"
        "                             charges; default 2M (CUDA's), 1 = plain bytes\n"
        "  --cache-limit BYTES|proportional|never\n"
        "                             relo_device_desc.cache_limit: empty pages\n"
        "                             kept cached beyond the live bytes (default\n"
        "                             proportional: 1/16 of them; never: no limit,\n"
        "                             every empty page stays)\n"
        "  --placement packed|adaptive|exclusive\n"
        "                             relo_device_desc.placement (docs/placement.md):\n"
        "                             packed (default) carves pages like a caching\n"
        "                             allocator and packs live allocations so pages\n"
        "                             go back; adaptive sizes pages to the workload\n"
        "                             and moves allocations off outdated pages;\n"
        "                             exclusive gives each allocation a page and\n"
        "                             moves nothing\n",
        f);
    fputs(
        "  --no-relocation            never move live allocations\n"
        "  --format auto|relo|rmm     input format (auto: RMM when the first line is\n"
        "                             its CSV header)\n"
        "  --verify-full              host, opencl, vulkan: check every byte, not\n"
        "                             the sparse windows (first/last 4 KiB and 64 B\n"
        "                             per MiB); refused on sim, which holds no bytes\n"
        "  --max-events N             refuse a trace of more than N events (default:\n"
        "                             as many as the reader holds in 1/8 of physical\n"
        "                             memory, counting its map of ids: 16 to about\n"
        "                             130 bytes an event, by format and trace)\n"
        "  --baseline pytorch|pytorch-expandable\n"
        "                             also replay the trace through a model of\n"
        "                             PyTorch's caching allocator (classic, or with\n"
        "                             expandable segments) at the same capacity, and\n"
        "                             with --fit find its fit too; repeatable\n"
        "  --table text|md|json       instead of each trace's report, one row per\n"
        "                             trace: peak live; fit ratio of the packed and\n"
        "                             adaptive placements and of both PyTorch\n"
        "                             models; the granule floor; unlimited peak\n"
        "                             reserved and time-averaged reserved over live;\n"
        "                             device allocations per 1,000 events (relo,\n"
        "                             PyTorch); bytes moved. A TRACE that is a folder\n"
        "                             stands for its *.trace and *.trace.gz files, in\n"
        "                             name order. Runs every replay it needs itself,\n"
        "                             so it takes no --fit, --capacity, --placement,\n"
        "                             --no-relocation, --baseline, --sweep or outputs\n"
        "  --json                     machine-readable report on stdout\n"
        "  --svg FILE                 timeline picture; with several traces each gets\n"
        "                             FILE with '-TRACENAME' (then '-2', '-3' for a\n"
        "                             name seen before) before its extension\n"
        "  --html FILE                interactive report (one self-contained page):\n"
        "                             timeline of this replay, the other placement\n"
        "                             and the baselines, with zoom, pan and hover;\n"
        "                             page maps at kept events; relocations. Several\n"
        "                             traces: as for --svg\n"
        "  --quiet                    no table, no progress bar, no 'written' note\n"
        "  --version                  relo-replay's and the library's versions\n"
        "  --help                     this text\n"
        "\n"
        "exit status (the highest that applies): 0 every replay completed; 1 a replay\n"
        "failed (out of memory at the given capacity, a byte check failed, a relo\n"
        "error); 2 bad usage or an unreadable trace; 3 an output file (--svg) could\n"
        "not be written.\n",
        f);
}

const char *options_placement_word(relo_placement placement)
{
    switch (placement) {
    case RELO_PLACEMENT_ADAPTIVE: return "adaptive";
    case RELO_PLACEMENT_EXCLUSIVE: return "exclusive";
    case RELO_PLACEMENT_DEFAULT:
    case RELO_PLACEMENT_PACKED:
    case RELO_PLACEMENT_COUNT: break;
    }
    return "packed";
}

/* --table decides the replays, placements, baselines and output itself:
 * refuses, naming it, an option that would set one of them. */
static bool table_options_ok(const options *o)
{
    bool any_baseline = false;
    for (int k = 0; k < BASELINE_KIND_COUNT; k++) any_baseline = any_baseline || o->baselines[k];
    const char *clash = o->fit || o->capacity                    ? "--fit and --capacity"
                        : o->sweep                               ? "--sweep"
                        : o->placement != RELO_PLACEMENT_DEFAULT ? "--placement"
                        : o->relocation != RELO_RELOCATION_AUTO  ? "--no-relocation"
                        : any_baseline                           ? "--baseline"
                        : o->json || o->svg || o->html           ? "--json, --svg and --html"
                                                                 : NULL;
    if (clash) {
        fprintf(stderr,
                "relo-replay: --table runs the replays it reports itself (both placements, both\n"
                "  PyTorch models, each fitted); leave out %s\n",
                clash);
        return false;
    }
    if (o->backend == REPLAY_BACKEND_OPENCL || o->backend == REPLAY_BACKEND_VULKAN) {
        fprintf(stderr,
                "relo-replay: --table fits every trace, which needs a backend that lends a chosen\n"
                "  capacity (sim or host)\n");
        return false;
    }
    return true;
}

static bool pick(const char *value, const char *const *names, int count, int *out)
{
    for (int i = 0; i < count; i++) {
        if (strcmp(value, names[i]) == 0) {
            *out = i;
            return true;
        }
    }
    return false;
}

/* A value outside an option's choices: names them all. */
static options_result bad_choice(const char *opt, const char *value, const char *const *names, int count)
{
    fprintf(stderr, "relo-replay: invalid value '%s' for %s (expected ", value, opt);
    for (int i = 0; i < count; i++)
        fprintf(stderr, "%s%s", names[i], i + 2 < count ? ", " : i + 1 < count ? " or " : ")\n");
    return OPTIONS_EXIT_USAGE;
}

/* A multiple of peak live: "1.5", or a percentage "0.25%" (of 1×). */
static bool parse_ratio(const char *text, size_t n, double *out)
{
    char buf[64];
    if (n == 0 || n >= sizeof buf) return false;
    memcpy(buf, text, n);
    buf[n] = '\0';
    char *end = NULL;
    double v = strtod(buf, &end);
    if (end == buf) return false;
    if (*end == '%') {
        v /= 100.0;
        end++;
    }
    if (*end != '\0' || !(v > 0.0) || v > 1e6) return false;
    *out = v;
    return true;
}

/* FROM:TO:STEP, FROM a ratio or "fit", TO ≥ FROM, STEP > 0. */
static bool parse_sweep(const char *value, options *o)
{
    const char *c1 = strchr(value, ':');
    const char *c2 = c1 ? strchr(c1 + 1, ':') : NULL;
    if (!c1 || !c2) return false;
    size_t from_n = (size_t)(c1 - value);
    o->sweep_from_fit = from_n == 3 && strncmp(value, "fit", 3) == 0;
    if (!o->sweep_from_fit && !parse_ratio(value, from_n, &o->sweep_from)) return false;
    if (!parse_ratio(c1 + 1, (size_t)(c2 - c1 - 1), &o->sweep_to)) return false;
    if (!parse_ratio(c2 + 1, strlen(c2 + 1), &o->sweep_step)) return false;
    return o->sweep_from_fit || o->sweep_to >= o->sweep_from;
}

options_result options_parse(int argc, char **argv, options *o)
{
    memset(o, 0, sizeof *o);
    o->granule = OPTIONS_DEFAULT_GRANULE;
    o->traces = argv + argc;
    char **traces = argv + 1;
    int count = 0;
    bool no_more_options = false;
    for (int i = 1; i < argc; i++) {
        char *arg = argv[i];
        if (no_more_options || arg[0] != '-' || arg[1] == '\0') {
            traces[count++] = arg; /* reorders argv in place: traces first */
            continue;
        }
        if (strcmp(arg, "--") == 0) {
            no_more_options = true;
            continue;
        }
        /* Split "--name=value". */
        char name[64];
        const char *value = NULL;
        const char *eq = strchr(arg, '=');
        size_t n = eq ? (size_t)(eq - arg) : strlen(arg);
        if (n >= sizeof name) n = sizeof name - 1;
        memcpy(name, arg, n);
        name[n] = '\0';
        if (eq) value = eq + 1;
        static const char *const with_value[] = {"--backend", "--capacity", "--placement",   "--format",
                                                 "--svg",     "--baseline", "--html",        "--max-events",
                                                 "--granule", "--sweep",    "--cache-limit", "--table"};
        bool wants = false;
        for (size_t k = 0; k < sizeof with_value / sizeof *with_value; k++)
            if (strcmp(name, with_value[k]) == 0) wants = true;
        if (wants && !value) {
            if (i + 1 >= argc) {
                fprintf(stderr, "relo-replay: %s needs a value (see --help)\n", name);
                return OPTIONS_EXIT_USAGE;
            }
            value = argv[++i];
        } else if (!wants && value) {
            fprintf(stderr, "relo-replay: %s takes no value\n", name);
            return OPTIONS_EXIT_USAGE;
        }
        int k;
        if (strcmp(name, "--help") == 0 || strcmp(name, "-h") == 0) {
            options_usage(stdout);
            return OPTIONS_EXIT_OK;
        } else if (strcmp(name, "--backend") == 0) {
            static const char *const names[] = {"sim", "host", "opencl", "vulkan"};
            if (!pick(value, names, 4, &k)) return bad_choice(name, value, names, 4);
            o->backend = (replay_backend_kind)k;
        } else if (strcmp(name, "--capacity") == 0) {
            if (strcmp(value, "auto") == 0) {
                o->capacity_auto = true;
                o->fit = true;
            } else if (!units_parse_bytes(value, &o->capacity) || o->capacity == 0) {
                fprintf(stderr,
                        "relo-replay: invalid value '%s' for --capacity (expected auto or a byte count\n"
                        "  such as 24G, 1.5GiB or 512M, above 0, below 16 EiB, whole bytes: a fraction\n"
                        "  that does not come to whole bytes is refused, not rounded)\n",
                        value);
                return OPTIONS_EXIT_USAGE;
            }
        } else if (strcmp(name, "--granule") == 0) {
            if (!units_parse_bytes(value, &o->granule) || o->granule == 0) {
                fprintf(stderr,
                        "relo-replay: invalid value '%s' for --granule (expected a size above 0,\n"
                        "  such as 2M or 64K; 1 charges plain bytes)\n",
                        value);
                return OPTIONS_EXIT_USAGE;
            }
        } else if (strcmp(name, "--cache-limit") == 0) {
            if (strcmp(value, "proportional") == 0) {
                o->cache_limit = RELO_CACHE_LIMIT_PROPORTIONAL;
            } else if (strcmp(value, "never") == 0) {
                o->cache_limit = RELO_CACHE_LIMIT_NEVER;
            } else if (!units_parse_bytes(value, &o->cache_limit) || o->cache_limit == 0) {
                fprintf(stderr,
                        "relo-replay: invalid value '%s' for --cache-limit (expected proportional,\n"
                        "  never, or a byte count above 0 such as 64M; 1 keeps no empty page)\n",
                        value);
                return OPTIONS_EXIT_USAGE;
            }
        } else if (strcmp(name, "--sweep") == 0) {
            if (!parse_sweep(value, o)) {
                fprintf(stderr,
                        "relo-replay: invalid value '%s' for --sweep (expected FROM:TO:STEP, each a\n"
                        "  multiple of peak live such as 1.01 or 0.25%%, TO at least FROM; FROM may\n"
                        "  be 'fit', as in fit:1.5:0.25%%)\n",
                        value);
                return OPTIONS_EXIT_USAGE;
            }
            /* From a ratio the count is known now; from the fit capacity,
             * sweep_run refuses it once the fit is known. */
            double replays = o->sweep_from_fit ? 0.0 : (o->sweep_to - o->sweep_from) / o->sweep_step + 1.0;
            if (replays > (double)SWEEP_MAX_REPLAYS) {
                fprintf(stderr,
                        "relo-replay: --sweep %s asks for %.3g replays, more than the %u a sweep\n"
                        "  runs (a larger STEP or a narrower range)\n",
                        value, replays, SWEEP_MAX_REPLAYS);
                return OPTIONS_EXIT_USAGE;
            }
            o->sweep = true;
            if (o->sweep_from_fit) o->fit = true;
        } else if (strcmp(name, "--placement") == 0) {
            static const char *const names[] = {"packed", "adaptive", "exclusive"};
            static const relo_placement placements[] = {RELO_PLACEMENT_PACKED, RELO_PLACEMENT_ADAPTIVE,
                                                        RELO_PLACEMENT_EXCLUSIVE};
            if (!pick(value, names, 3, &k)) return bad_choice(name, value, names, 3);
            o->placement = placements[k];
        } else if (strcmp(name, "--format") == 0) {
            static const char *const names[] = {"auto", "relo", "rmm"};
            if (!pick(value, names, 3, &k)) return bad_choice(name, value, names, 3);
            o->format = (trace_format)k;
        } else if (strcmp(name, "--baseline") == 0) {
            baseline_kind b;
            if (!baseline_kind_parse(value, &b)) {
                fprintf(stderr,
                        "relo-replay: invalid value '%s' for --baseline (pytorch or pytorch-expandable)\n",
                        value);
                return OPTIONS_EXIT_USAGE;
            }
            o->baselines[b] = true;
        } else if (strcmp(name, "--table") == 0) {
            static const char *const names[] = {"text", "md", "json"};
            if (!pick(value, names, 3, &k)) return bad_choice(name, value, names, 3);
            o->table = (options_table)(OPTIONS_TABLE_TEXT + k);
        } else if (strcmp(name, "--svg") == 0) {
            o->svg = value;
        } else if (strcmp(name, "--html") == 0) {
            o->html = value;
        } else if (strcmp(name, "--max-events") == 0) {
            if (!units_parse_count(value, &o->max_events) || o->max_events == 0) {
                fprintf(stderr,
                        "relo-replay: invalid value '%s' for --max-events (expected a count above 0,\n"
                        "  such as 500000000)\n",
                        value);
                return OPTIONS_EXIT_USAGE;
            }
        } else if (strcmp(name, "--version") == 0) {
            printf("relo-replay %s (library %s)\n", RELO_VERSION_STRING, relo_version());
            return OPTIONS_EXIT_OK;
        } else if (strcmp(name, "--fit") == 0) {
            o->fit = true;
        } else if (strcmp(name, "--no-relocation") == 0) {
            o->relocation = RELO_RELOCATION_OFF;
        } else if (strcmp(name, "--json") == 0) {
            o->json = true;
        } else if (strcmp(name, "--quiet") == 0) {
            o->quiet = true;
        } else if (strcmp(name, "--verify-full") == 0) {
            o->verify_full = true;
        } else {
            fprintf(stderr, "relo-replay: unknown option %s (see --help)\n", arg);
            return OPTIONS_EXIT_USAGE;
        }
    }
    o->traces = traces;
    o->trace_count = count;
    if (count == 0) {
        fprintf(stderr, "relo-replay: no trace given (see --help)\n");
        return OPTIONS_EXIT_USAGE;
    }
    if (o->verify_full && !replay_backend_has_bytes(o->backend)) {
        fprintf(stderr,
                "relo-replay: --verify-full checks bytes, and the %s backend holds none\n"
                "  (use --backend host, opencl or vulkan)\n",
                replay_backend_name(o->backend));
        return OPTIONS_EXIT_USAGE;
    }
    if (o->table != OPTIONS_TABLE_NONE && !table_options_ok(o)) return OPTIONS_EXIT_USAGE;
    if (o->sweep && o->capacity) {
        fprintf(stderr, "relo-replay: --sweep chooses the capacities itself; leave out --capacity\n");
        return OPTIONS_EXIT_USAGE;
    }
    if ((o->fit || o->sweep) &&
        (o->backend == REPLAY_BACKEND_OPENCL || o->backend == REPLAY_BACKEND_VULKAN)) {
        fprintf(stderr,
                "relo-replay: --fit and --sweep need a backend that lends a chosen capacity (sim or host)\n");
        return OPTIONS_EXIT_USAGE;
    }
    return OPTIONS_RUN;
}
