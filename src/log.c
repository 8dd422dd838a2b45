/*
 * log.c — formats log lines for the user's callback (see log.h).
 */
#include "log.h"

#include <stdarg.h>
#include <stdio.h>

#include "device.h"

void relo__log(const struct relo_device *device, relo_log_level level, const char *fmt, ...)
{
    if (!device || !device->desc.log) return;
    char line[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    device->desc.log(device->desc.log_user, level, line);
}
