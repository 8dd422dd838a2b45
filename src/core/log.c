/*
 * core/log.c — formats log lines for the user's callback (see core/log.h).
 */
#include "core/log.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "core/device.h"

void relo__log(struct relo_device *device, relo_log_level level, const char *fmt, ...)
{
    if (!device || !device->desc.log) return;
    relo_log_queue *q = &device->log;
    if (q->count == RELO_LOG_QUEUE) {
        q->dropped++;
        return;
    }
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(q->line[q->count], RELO_LOG_LINE, fmt, ap);
    va_end(ap);
    q->level[q->count++] = level;
}

void relo__log_take(relo_log_queue *q, relo_log_queue *out)
{
    out->count = q->count;
    out->dropped = q->dropped;
    for (uint32_t i = 0; i < q->count; i++) {
        out->level[i] = q->level[i];
        memcpy(out->line[i], q->line[i], RELO_LOG_LINE);
    }
    q->count = 0;
    q->dropped = 0;
}

void relo__log_send(const struct relo_device *device, const relo_log_queue *lines)
{
    for (uint32_t i = 0; i < lines->count; i++)
        device->desc.log(device->desc.log_user, lines->level[i], lines->line[i]);
    if (lines->dropped) {
        char note[64];
        snprintf(note, sizeof note, "%u more log lines were dropped", lines->dropped);
        device->desc.log(device->desc.log_user, RELO_LOG_WARN, note);
    }
}
