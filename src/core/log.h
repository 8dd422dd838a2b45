/*
 * core/log.h — relo prints nothing itself: log lines go to the callback in the
 * device desc, formatted here.
 */
#ifndef RELO_LOG_H
#define RELO_LOG_H

#include "relo.h"

struct relo_device;

#define RELO_LOG_LINE 256
#define RELO_LOG_QUEUE 4

/** Lines formatted under the device lock, waiting for it to be dropped:
 *  the user's callback never runs with the lock held. */
typedef struct relo_log_queue {
    relo_log_level level[RELO_LOG_QUEUE];
    char line[RELO_LOG_QUEUE][RELO_LOG_LINE];
    uint32_t count;
    uint32_t dropped; /* lines lost to a full queue, said in the next one */
} relo_log_queue;

/** Formats one line for the device's log callback, if any, and queues it;
 *  relo__device_unlock sends it once the lock is dropped. Called with the
 *  device lock held. */
void relo__log(struct relo_device *device, relo_log_level level, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/** Takes the queued lines out of q into out (lock held); send them with
 *  relo__log_send after dropping the lock. */
void relo__log_take(relo_log_queue *q, relo_log_queue *out);

/** Sends taken lines to the device's callback (lock not held). */
void relo__log_send(const struct relo_device *device, const relo_log_queue *lines);

#endif /* RELO_LOG_H */
