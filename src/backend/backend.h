/*
 * backend/backend.h — the backend object the core holds: the ops table,
 * the backend's context and its properties. Backends in this folder may
 * look inside; the core reaches the device only through these ops.
 */
#ifndef RELO_BACKEND_INTERNAL_H
#define RELO_BACKEND_INTERNAL_H

#include "relo_backend.h"

struct relo_backend {
    relo_backend_ops ops;     /* copied at creation; read-only after */
    void *ctx;                /* the backend's own state */
    relo_backend_props props; /* read-only after creation */
};

#endif /* RELO_BACKEND_INTERNAL_H */
