/*
 * sweep.c — replays over a range of capacities (see sweep.h).
 */
#include "sweep.h"

#include <stdio.h>
#include <string.h>

#include "units.h"

bool sweep_run(const trace *t, const replay_config *cfg, uint64_t from, uint64_t to, uint64_t step,
               sweep_result *out)
{
    memset(out, 0, sizeof *out);
    out->from = from;
    out->to = to;
    out->step = step ? step : 1;
    uint64_t replays = to >= from ? (to - from) / out->step + 1 : 0;
    if (replays > SWEEP_MAX_REPLAYS) {
        out->status = RELO_ERR_INVALID_ARGUMENT;
        snprintf(out->error, sizeof out->error,
                 "%llu to %llu bytes by %llu asks for %llu replays, more than the %u a sweep runs "
                 "(a larger STEP or a narrower range)",
                 (unsigned long long)from, (unsigned long long)to, (unsigned long long)out->step,
                 (unsigned long long)replays, SWEEP_MAX_REPLAYS);
        return false;
    }
    uint64_t start = replay_now_ns();
    for (uint64_t capacity = from; capacity <= to; capacity += out->step) {
        replay_config run = *cfg;
        run.capacity = capacity;
        run.record = false;
        if (run.progress) {
            char label[96], cap[32];
            snprintf(label, sizeof label, "%.40s sweep %u: %s", t->name, out->replays + 1,
                     units_format_bytes(capacity, cap, sizeof cap));
            progress_begin(run.progress, label, t->event_count);
        }
        replay_result r;
        bool ok = replay_run(t, &run, &r);
        out->replays++;
        if (!ok && r.status != RELO_ERR_OUT_OF_MEMORY) {
            out->status = r.status;
            snprintf(out->error, sizeof out->error, "at capacity %llu, event %llu: %.240s",
                     (unsigned long long)capacity, (unsigned long long)r.failed_event + 1, r.error);
            replay_result_free(&r);
            break;
        }
        if (!ok) {
            if (out->failed < SWEEP_MAX_NAMED) out->failed_at[out->failed] = capacity;
            out->failed++;
        }
        replay_result_free(&r);
        if (capacity > UINT64_MAX - out->step) break;
    }
    if (cfg->progress) progress_end(cfg->progress);
    out->elapsed_ns = replay_now_ns() - start;
    return out->failed == 0 && out->status == RELO_OK;
}
