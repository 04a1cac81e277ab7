/*
 * Errors of the CUDA runtime: the slow path of CONVOY_CUDA_CALL (cuda_dev.h), which
 * every file of the component uses, and the list of sticky errors. It depends on nothing
 * else of the component, so that the component's files form no circle.
 */
#include "config.h"

#include "device/cuda/cuda_dev.h"

int convoy__cuda_is_sticky(cudaError_t rc)
{
    /* Faults on the device (cuda_runtime_api.h: "the process must be terminated");
     * numbers rather than names, for runtimes that predate some of them. */
    switch ((int)rc) {
    case 214: /* cudaErrorECCUncorrectable */
    case 226: /* cudaErrorContained */
    case 700: /* cudaErrorIllegalAddress */
    case 702: /* cudaErrorLaunchTimeout */
    case 710: /* cudaErrorAssert */
    case 714: /* cudaErrorHardwareStackError */
    case 715: /* cudaErrorIllegalInstruction */
    case 716: /* cudaErrorMisalignedAddress */
    case 717: /* cudaErrorInvalidAddressSpace */
    case 718: /* cudaErrorInvalidPc */
    case 719: /* cudaErrorLaunchFailure */
    case 721: /* cudaErrorTensorMemoryLeak */ return 1;
    default: return 0;
    }
}

convoy_status_t convoy__cuda_fail(cudaError_t rc, const char *call, convoy_context_t *ctx,
                                  const char *where)
{
    int sticky = convoy__cuda_is_sticky(rc);
    if (!sticky)
        (void)cudaGetLastError(); /* a host-side failure: the next call starts clean */
    return convoy__error(ctx, CONVOY_ERR_DEVICE, "%s: %s failed: %s (%d: %s)%s", where, call,
                         cudaGetErrorName(rc), (int)rc, cudaGetErrorString(rc),
                         sticky ? "; the CUDA context is unusable from now on" : "");
}
