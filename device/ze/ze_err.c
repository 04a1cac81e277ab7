/*
 * Errors of Level Zero: the slow path of CONVOY_ZE_CALL (ze_dev.h), which every file of
 * the component uses, and the names of the results (the 1.4 API has no call that
 * describes a ze_result_t). It depends on nothing else of the component.
 */
#include "config.h"

#include "device/ze/ze_dev.h"

const char *convoy__ze_result_name(ze_result_t rc)
{
#define ZE_NAME(x)                                                                                 \
    case x: return #x
    switch (rc) {
        ZE_NAME(ZE_RESULT_SUCCESS);
        ZE_NAME(ZE_RESULT_NOT_READY);
        ZE_NAME(ZE_RESULT_ERROR_DEVICE_LOST);
        ZE_NAME(ZE_RESULT_ERROR_OUT_OF_HOST_MEMORY);
        ZE_NAME(ZE_RESULT_ERROR_OUT_OF_DEVICE_MEMORY);
        ZE_NAME(ZE_RESULT_ERROR_DEVICE_REQUIRES_RESET);
        ZE_NAME(ZE_RESULT_ERROR_DEVICE_IN_LOW_POWER_STATE);
        ZE_NAME(ZE_RESULT_ERROR_INSUFFICIENT_PERMISSIONS);
        ZE_NAME(ZE_RESULT_ERROR_NOT_AVAILABLE);
        ZE_NAME(ZE_RESULT_ERROR_DEPENDENCY_UNAVAILABLE);
        ZE_NAME(ZE_RESULT_ERROR_UNINITIALIZED);
        ZE_NAME(ZE_RESULT_ERROR_UNSUPPORTED_VERSION);
        ZE_NAME(ZE_RESULT_ERROR_UNSUPPORTED_FEATURE);
        ZE_NAME(ZE_RESULT_ERROR_INVALID_ARGUMENT);
        ZE_NAME(ZE_RESULT_ERROR_INVALID_NULL_HANDLE);
        ZE_NAME(ZE_RESULT_ERROR_HANDLE_OBJECT_IN_USE);
        ZE_NAME(ZE_RESULT_ERROR_INVALID_NULL_POINTER);
        ZE_NAME(ZE_RESULT_ERROR_INVALID_SIZE);
        ZE_NAME(ZE_RESULT_ERROR_UNSUPPORTED_SIZE);
        ZE_NAME(ZE_RESULT_ERROR_UNSUPPORTED_ALIGNMENT);
        ZE_NAME(ZE_RESULT_ERROR_INVALID_SYNCHRONIZATION_OBJECT);
        ZE_NAME(ZE_RESULT_ERROR_INVALID_ENUMERATION);
        ZE_NAME(ZE_RESULT_ERROR_UNSUPPORTED_ENUMERATION);
        ZE_NAME(ZE_RESULT_ERROR_INVALID_COMMAND_LIST_TYPE);
        ZE_NAME(ZE_RESULT_ERROR_OVERLAPPING_REGIONS);
        ZE_NAME(ZE_RESULT_ERROR_UNKNOWN);
    default: return "an unknown ze_result_t";
    }
#undef ZE_NAME
}

convoy_status_t convoy__ze_fail(ze_result_t rc, const char *call, convoy_context_t *ctx,
                                const char *where)
{
    int lost = rc == ZE_RESULT_ERROR_DEVICE_LOST || rc == ZE_RESULT_ERROR_DEVICE_REQUIRES_RESET;
    return convoy__error(ctx, CONVOY_ERR_DEVICE, "%s: %s failed: %s (0x%x)%s", where, call,
                         convoy__ze_result_name(rc), (unsigned)rc,
                         lost ? "; the device is unusable from now on" : "");
}
