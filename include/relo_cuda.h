/*
 * relo_cuda.h — the CUDA backend, over the driver API only (cuda.h,
 * libcuda): relo's pages are cuMemAlloc ranges of one context.
 *
 * A binding's address is the allocation's CUdeviceptr (page base plus
 * offset), ready to pass to a kernel or a memset/memcpy node; its buffer is
 * the page's base CUdeviceptr cast to a pointer, so buffer identity and
 * offset work as on every other backend.
 *
 * Streams: relo_stream_create(device, stream, &s) takes any CUstream of
 * the backend's context, NULL (the legacy default stream) included, and
 * refuses one of another context. Before relocation the backend waits for
 * the whole context (cuCtxSynchronize): every stream's work is done first,
 * on the legacy default stream, on per-thread default streams and on
 * streams relo was never told of, so a runtime need not register every
 * stream it launches on. The price: the wait also covers work that touches
 * none of relo's memory; it is one driver call however many streams exist.
 * Relocation copies are cuMemcpyDtoDAsync on the copy stream, and
 * wait_copies is cuStreamSynchronize of it.
 *
 * Because that wait covers the whole context, no stream of the context may
 * be capturing a graph while relo relocates, whether relo knows the stream
 * or not: the driver does not let a thread wait for a capturing stream, so
 * the wait may fail (the relocation is then abandoned) and the capture be
 * invalidated. relo never relocates while one of its streams records;
 * a runtime capturing on a stream relo does not know brackets the capture
 * with relo_capture_begin/relo_capture_end on one of its relo streams.
 *
 * relo_write is cuMemcpyHtoD followed by a synchronize of the legacy
 * stream: from pageable memory the driver may return before the bytes
 * land, and the write is done, for every stream, when relo_write returns.
 * relo_read is cuMemcpyDtoH. Both run on the legacy default stream, so they
 * are ordered after work on it and on blocking streams, but not after work
 * on non-blocking streams, which the runtime finishes first.
 *
 * Threads: the backend's only changing state is the code of its last
 * error (atomic), and the driver is thread-safe, so its operations may run
 * on several threads at once.
 *
 * Errors: CUDA_ERROR_OUT_OF_MEMORY is RELO_ERR_OUT_OF_MEMORY, every other
 * CUresult RELO_ERR_BACKEND; relo_backend_cuda_last_error tells the raw
 * code. Graph capture: relo never calls the device while a relo stream
 * records, so a runtime brackets cuStreamBeginCapture/cuStreamEndCapture
 * with relo_capture_begin/relo_capture_end (docs/cuda-graphs.md).
 *
 * Compiled in when CMake finds the CUDA toolkit (RELO_WITH_CUDA). Tests
 * run it on every commit against a stand-in for the driver library
 * (docs/cuda-standin.md); scripts/gpu-check.sh runs it on a real GPU.
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
RELO_API relo_status relo_backend_cuda_create(CUcontext context, CUdevice device, CUstream copy_stream,
                                              relo_backend **out);

/**
 * Writes to *out the CUresult of the last driver call of this backend that
 * failed (CUDA_SUCCESS when none has). Returns RELO_ERR_INVALID_ARGUMENT
 * for NULLs or a backend of another kind. Thread-safe; with calls in
 * flight on other threads, "last" is whichever failure was stored last.
 */
RELO_API relo_status relo_backend_cuda_last_error(const relo_backend *backend, CUresult *out);

#ifdef __cplusplus
}
#endif

#endif /* RELO_CUDA_H */
