/*
 * log.h — relo prints nothing itself: log lines go to the callback in the
 * device desc, formatted here.
 */
#ifndef RELO_LOG_H
#define RELO_LOG_H

#include "relo.h"

struct relo_device;

/** Formats and sends one line to the device's log callback, if any.
 *  Called with the device lock held. */
void relo__log(const struct relo_device *device, relo_log_level level, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

#endif /* RELO_LOG_H */
