/*
 * cuda_standin.h — the controls of the CUDA driver stand-in
 * (cuda_standin.c), for tests that link it in place of libcuda.
 *
 * The stand-in implements, over host memory, the driver entry points that
 * relo's CUDA backend, its tests and the CUDA graph example call; their
 * prototypes come from the toolkit's own cuda.h. It is not a GPU and runs no
 * kernels: it exists so that every path of src/backend/cuda.c runs on every
 * commit, on machines without a GPU. scripts/gpu-check.sh, on the real
 * driver, stays the proof.
 *
 * What it models (docs/cuda-standin.md has the whole list):
 * - two devices with one primary context each; a context is current per
 *   thread (push/pop); device memory is host memory, counted against a
 *   capacity; every live context holds a little of it, as a real one does.
 * - streams as FIFOs of operations that run as late as the API allows: only
 *   when something waits for them (a synchronize, a blocking copy, a
 *   free). That is the most adversarial order a real device may choose, so
 *   a missing wait shows as wrong bytes every time, not now and then.
 * - the legacy default stream (NULL or CU_STREAM_LEGACY) orders itself
 *   with every blocking stream of its context, both ways; streams created
 *   with CU_STREAM_NON_BLOCKING do not. cuMemcpyHtoD and cuMemcpyDtoH run
 *   on the legacy stream; cuMemcpyHtoD returns once its bytes are staged,
 *   before they land (as the driver documents for pageable memory).
 * - events: record, query, synchronize, cuStreamWaitEvent.
 * - stream capture into a graph, instantiate and launch.
 * - fault injection: any entry point can be made to fail once.
 *
 * These controls are thread-safe, like every entry point of the stand-in.
 */
#ifndef RELO_CUDA_STANDIN_H
#define RELO_CUDA_STANDIN_H

#include <stddef.h>

#include <cuda.h>

/** Bytes of device memory each device has unless changed. */
#define CUDA_STANDIN_DEFAULT_MEMORY ((size_t)1 << 30)

/** Bytes each live primary context holds of its device's memory. */
#define CUDA_STANDIN_CONTEXT_BYTES ((size_t)4 << 20)

/** Devices the stand-in offers (cuDeviceGetCount). */
#define CUDA_STANDIN_DEVICES 2

/**
 * Makes one call of the entry point named entry (its name without the
 * version suffix, e.g. "cuMemAlloc", "cuCtxPopCurrent") fail with code:
 * the first `after` calls from now succeed, the next one fails, later ones
 * succeed again. A failing call does nothing else. At most 16 faults are
 * armed at once; more are ignored. entry must stay valid until the fault
 * fires or cuda_standin_reset runs.
 */
void cuda_standin_fail(const char *entry, unsigned after, CUresult code);

/** Sets the device memory of every device, in bytes (the total that
 *  cuMemGetInfo and cuDeviceTotalMem report, and cuMemAlloc counts). */
void cuda_standin_set_memory(size_t bytes);

/** Disarms every fault and restores the default memory size. */
void cuda_standin_reset(void);

/** Operations enqueued on any stream that have not run yet. */
size_t cuda_standin_pending(void);

/** Streams created with cuStreamCreate and not destroyed yet. */
size_t cuda_standin_streams(void);

#endif /* RELO_CUDA_STANDIN_H */
