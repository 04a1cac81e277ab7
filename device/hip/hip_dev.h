/*
 * The HIP device component's internal header. Plain C against <hip/hip_runtime_api.h>
 * with __HIP_PLATFORM_AMD__ (HIP_CPPFLAGS): no hipcc, no kernels. Internal to device/hip/.
 *
 *   device_hip.c   the component: parameters, query, open/close, streams, events,
 *                  launches, device memory (the HIP calls under a pool of hipMalloc
 *                  chunks), copies
 *   hip_hostmem.c  pinned, mapped host slabs (convoy_host_alloc): the HIP calls
 *
 * The vendor-neutral parts are shared with the CUDA component, in device/: the pool
 * (devpool.h), the slabs (hostslab.h), the range allocator under both (arena.h), and
 * the checks and batch arrays of copies (copyargs.h).
 */
#ifndef CONVOY_HIP_DEV_H
#define CONVOY_HIP_DEV_H

#include <pthread.h>
#include <stddef.h>

#include <hip/hip_runtime_api.h>

#include "device/copyargs.h"
#include "device/device.h"
#include "device/devpool.h"
#include "device/hostslab.h"
#include "src/util.h"

extern const convoy__device_component_t convoy__device_hip;
extern const convoy__param_def_t convoy__hip_params[];

/* Non-zero for errors after which the HIP context is unusable (device faults). */
int convoy__hip_is_sticky(hipError_t rc);

/* The slow path of CONVOY_HIP_CALL: record CONVOY_ERR_DEVICE with "WHERE: CALL failed:
 * hipErrorName (code: text)", clear the last error unless sticky. */
convoy_status_t convoy__hip_fail(hipError_t rc, const char *call, convoy_context_t *ctx,
                                 const char *where);

static inline convoy_status_t convoy__hip_check(hipError_t rc, const char *call,
                                                convoy_context_t *ctx, const char *where)
{
    if (CONVOY__LIKELY(rc == hipSuccess))
        return CONVOY_SUCCESS;
    return convoy__hip_fail(rc, call, ctx, where);
}

/* Wrap every HIP runtime call (see CONVOY_CUDA_CALL): CONVOY_SUCCESS or CONVOY_ERR_DEVICE
 * recorded with the call's text, the error's name and WHERE ("hip0", or "hip"). */
#define CONVOY_HIP_CALL(ctx, where, call) convoy__hip_check((call), #call, (ctx), (where))

/* ---- pinned host memory (hip_hostmem.c) --------------------------------------------- */

/* The HIP calls under the pinned host slabs (hostslab.h), and the host_mem ops. */
extern const convoy__hostslab_ops_t convoy__hip_hostslab_ops;
extern const convoy__host_mem_ops_t convoy__hip_host_mem_ops;

#endif /* CONVOY_HIP_DEV_H */
