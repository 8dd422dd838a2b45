/*
 * relo_cuda.h — the CUDA backend, over the driver API only (cuda.h,
 * libcuda): relo's pages are cuMemAlloc ranges of one context.
 *
 * A binding's address is the allocation's CUdeviceptr (page base plus
 * offset), ready to pass to a kernel or a memset/memcpy node; its buffer is
 * the page's base CUdeviceptr cast to a pointer, so buffer identity and
 * offset work as on every other backend.
 *
 * Streams: relo_stream_create(device, stream, &s) registers a CUstream
 * (NULL is the legacy default stream, and is waited on like any other).
 * Before relocation the backend synchronises every registered stream, then
 * its copy stream; copies are cuMemcpyDtoDAsync on the copy stream and
 * wait_copies is cuStreamSynchronize of it. relo_write and relo_read are
 * cuMemcpyHtoD and cuMemcpyDtoH: synchronous, ordered after the legacy
 * default stream but not after work on non-blocking streams, which the
 * runtime finishes first.
 *
 * Errors: CUDA_ERROR_OUT_OF_MEMORY is RELO_ERR_OUT_OF_MEMORY, every other
 * CUresult RELO_ERR_BACKEND; relo_backend_cuda_last_error tells the raw
 * code. Graph capture: relo never calls the device while a relo stream
 * records, so a runtime brackets cuStreamBeginCapture/cuStreamEndCapture
 * with relo_capture_begin/relo_capture_end (docs/cuda-graphs.md).
 *
 * Compiled in when CMake finds the CUDA toolkit (RELO_WITH_CUDA).
 */
#ifndef RELO_CUDA_H
#define RELO_CUDA_H

#include <cuda.h>

#include "relo_backend.h"

#ifdef __cplusplus
extern "C" {
#endif

/**
 * Creates a backend over a CUDA context.
 *
 * context      the context every page is allocated in; the backend makes
 *              it current (cuCtxPushCurrent/cuCtxPopCurrent) around each of
 *              its calls, so callers need not. It is not retained: the
 *              caller keeps it alive until the device is destroyed.
 * device       the context's device; its memory is the capacity
 *              (cuMemGetInfo's total, else cuDeviceTotalMem) and the
 *              largest page. Alignment is 256 bytes, what cuMemAlloc
 *              guarantees.
 * copy_stream  a stream of that context for relocation copies, or NULL to
 *              let the backend create a non-blocking stream of its own
 *              (destroyed with the backend). A stream given stays the
 *              caller's.
 * out          receives the backend; untouched on failure.
 *
 * Returns RELO_OK; RELO_ERR_INVALID_ARGUMENT (NULL context or out, or a
 * device that is not the context's); RELO_ERR_HOST_MEMORY;
 * RELO_ERR_BACKEND (a driver call failed, e.g. cuInit was not called).
 * Thread-safe: it touches only the objects given.
 */
RELO_API relo_status relo_backend_cuda_create(CUcontext context, CUdevice device,
                                              CUstream copy_stream, relo_backend **out);

/**
 * Writes to *out the CUresult of the last driver call of this backend that
 * failed (CUDA_SUCCESS when none has). Returns RELO_ERR_INVALID_ARGUMENT
 * for NULLs or a backend of another kind. Thread-safe only while no device
 * call is in flight.
 */
RELO_API relo_status relo_backend_cuda_last_error(const relo_backend *backend, CUresult *out);

#ifdef __cplusplus
}
#endif

#endif /* RELO_CUDA_H */
