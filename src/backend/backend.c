/*
 * backend/backend.c — wraps a backend's ops, context and properties into
 * the relo_backend object a device takes (relo_backend_create), and checks
 * the contract's required operations and property ranges once, here, so the
 * core can rely on them.
 */
#include "backend/backend.h"

#include "base/hostmem.h"

relo_status relo_backend_create(const relo_backend_ops *ops, void *ctx, const relo_backend_props *props,
                                relo_backend **out)
{
    if (!ops || !props || !out) return RELO_ERR_INVALID_ARGUMENT;
    if (!ops->alloc || !ops->free || !ops->wait_device || !ops->copy || !ops->wait_copies)
        return RELO_ERR_INVALID_ARGUMENT;
    if (props->alignment == 0 || props->max_page_size < props->alignment) return RELO_ERR_INVALID_ARGUMENT;
    relo_backend *b = relo__calloc(sizeof *b);
    if (!b) return RELO_ERR_HOST_MEMORY;
    b->ops = *ops;
    b->ctx = ctx;
    b->props = *props;
    *out = b;
    return RELO_OK;
}

void relo_backend_destroy(relo_backend *backend)
{
    if (!backend) return;
    if (backend->ops.destroy) backend->ops.destroy(backend->ctx);
    relo__free(backend);
}

relo_status relo_backend_props_get(const relo_backend *backend, relo_backend_props *out)
{
    if (!backend || !out) return RELO_ERR_INVALID_ARGUMENT;
    *out = backend->props;
    return RELO_OK;
}
