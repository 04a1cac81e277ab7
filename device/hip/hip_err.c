/*
 * Errors of the HIP runtime: the slow path of CONVOY_HIP_CALL (hip_dev.h), which every
 * file of the component uses, and the list of sticky errors. It depends on nothing else
 * of the component.
 */
#include "config.h"

#include "device/hip/hip_dev.h"

int convoy__hip_is_sticky(hipError_t rc)
{
    switch ((int)rc) { /* the device-fault codes HIP shares with CUDA */
    case 700:          /* hipErrorIllegalAddress */
    case 702:          /* launch timeout */
    case 710:          /* hipErrorAssert */
    case 719: /* hipErrorLaunchFailure */ return 1;
    default: return 0;
    }
}

convoy_status_t convoy__hip_fail(hipError_t rc, const char *call, convoy_context_t *ctx,
                                 const char *where)
{
    int sticky = convoy__hip_is_sticky(rc);
    if (!sticky)
        (void)hipGetLastError();
    return convoy__error(ctx, CONVOY_ERR_DEVICE, "%s: %s failed: %s (%d: %s)%s", where, call,
                         hipGetErrorName(rc), (int)rc, hipGetErrorString(rc),
                         sticky ? "; the HIP context is unusable from now on" : "");
}
