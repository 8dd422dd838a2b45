/*
 * relo_opencl.h — the OpenCL backend: relo's pages are cl_mem buffers of
 * one context and device.
 *
 * A binding's buffer is the page's cl_mem and its offset the allocation's
 * byte offset in it; its address is 0 (OpenCL 1.2 has no device addresses).
 * A kernel takes the cl_mem and the offset as two arguments.
 *
 * Streams: relo_stream_create(device, queue, &stream) registers a
 * cl_command_queue of the same context. Before relocation the backend
 * finishes (clFinish) every registered queue and its own copy queue, then
 * copies with clEnqueueCopyBuffer on the copy queue and finishes that queue.
 * relo_write and relo_read are blocking clEnqueueWriteBuffer and
 * clEnqueueReadBuffer on the copy queue: they are ordered after earlier
 * relocation copies but not after kernels on the runtime's own queues,
 * which the runtime finishes first, as with any blocking transfer.
 *
 * Errors: a buffer the device refuses (CL_MEM_OBJECT_ALLOCATION_FAILURE,
 * CL_OUT_OF_RESOURCES, CL_INVALID_BUFFER_SIZE) is RELO_ERR_OUT_OF_MEMORY,
 * CL_OUT_OF_HOST_MEMORY is RELO_ERR_HOST_MEMORY, every other OpenCL error
 * is RELO_ERR_BACKEND; relo_backend_opencl_last_error tells the raw code.
 *
 * Many OpenCL implementations allocate lazily: clCreateBuffer succeeds and
 * the device memory is only committed when a command first uses the
 * buffer. A refusal may then surface later, as an error of that command
 * (a kernel launch, a copy, a wait), not as RELO_ERR_OUT_OF_MEMORY from
 * relo_reserve. relo's capacity rule (it relocates before the next page
 * would leave less than a page of room) keeps this rare.
 *
 * Compiled in when CMake finds OpenCL (RELO_WITH_OPENCL). Define
 * CL_TARGET_OPENCL_VERSION before including this header to pick another
 * API version than 1.2.
 */
#ifndef RELO_OPENCL_H
#define RELO_OPENCL_H

#ifndef CL_TARGET_OPENCL_VERSION
#define CL_TARGET_OPENCL_VERSION 120
#endif
#ifdef __APPLE__
#include <OpenCL/opencl.h>
#else
#include <CL/cl.h>
#endif

#include "relo_backend.h"

#ifdef __cplusplus
extern "C" {
#endif

/**
 * Creates a backend over an OpenCL device.
 *
 * context     the context every page is created in; retained until the
 *             backend is destroyed.
 * device      the device of that context whose limits relo honours:
 *             capacity = CL_DEVICE_GLOBAL_MEM_SIZE, max page =
 *             CL_DEVICE_MAX_MEM_ALLOC_SIZE, alignment =
 *             CL_DEVICE_MEM_BASE_ADDR_ALIGN (bits, given in bytes) so that a
 *             runtime may make sub-buffers at any binding's offset.
 * copy_queue  a queue of that context and device for relocation copies and
 *             relo_write/relo_read; retained until the backend is
 *             destroyed. It may be one of the runtime's queues, though a
 *             queue of its own lets copies overlap nothing else.
 * out         receives the backend; untouched on failure.
 *
 * Returns RELO_OK; RELO_ERR_INVALID_ARGUMENT (a NULL argument, the queue
 * belongs to another context or device, or an invalid OpenCL object);
 * RELO_ERR_HOST_MEMORY; RELO_ERR_BACKEND (a device query failed).
 * Thread-safe: it touches only the objects given.
 */
RELO_API relo_status relo_backend_opencl_create(cl_context context, cl_device_id device,
                                                cl_command_queue copy_queue, relo_backend **out);

/**
 * Writes to *out the OpenCL error code of the last call of this backend
 * that failed (CL_SUCCESS when none has), for a log line that says more
 * than RELO_ERR_BACKEND. Returns RELO_ERR_INVALID_ARGUMENT for NULLs or a
 * backend of another kind. Thread-safe only while no device call is in
 * flight.
 */
RELO_API relo_status relo_backend_opencl_last_error(const relo_backend *backend, cl_int *out);

#ifdef __cplusplus
}
#endif

#endif /* RELO_OPENCL_H */
