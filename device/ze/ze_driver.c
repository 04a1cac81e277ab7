/*
 * The Level Zero driver of the component: finding its GPUs (query and open) and the one
 * Level Zero context that every open device of the process and the pinned slabs share
 * (memory from zeMemAllocHost belongs to a context, and the host_mem ops receive no
 * device).
 *
 * Only the first driver that has a GPU is used: Intel's GPU driver presents all its
 * GPUs under one driver, and one driver means one context for every allocation.
 */
#include "config.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#include "device/ze/ze_dev.h"

#define MAX_HANDLES 64 /* drivers, and devices of a driver, looked at */

static void say(char *why, size_t why_len, const char *fmt, const char *what, ze_result_t rc)
{
    if (why != NULL && why_len > 0)
        snprintf(why, why_len, fmt, what, convoy__ze_result_name(rc), (unsigned)rc);
}

int convoy__ze_find(int index, ze_driver_handle_t *driver_p, ze_device_handle_t *device_p,
                    char *why, size_t why_len)
{
    /* zeInit loads the drivers and creates no context; without a driver the loader
     * answers ZE_RESULT_ERROR_UNINITIALIZED. */
    ze_result_t rc = zeInit(ZE_INIT_FLAG_GPU_ONLY);
    if (rc != ZE_RESULT_SUCCESS) {
        say(why, why_len, "%s (zeInit: %s, 0x%x)", "no Level Zero GPU driver", rc);
        return 0;
    }
    uint32_t ndrivers = MAX_HANDLES;
    ze_driver_handle_t drivers[MAX_HANDLES];
    rc = zeDriverGet(&ndrivers, drivers);
    if (rc != ZE_RESULT_SUCCESS) {
        say(why, why_len, "%s (zeDriverGet: %s, 0x%x)", "Level Zero cannot list its drivers", rc);
        return 0;
    }
    for (uint32_t i = 0; i < ndrivers; i++) {
        uint32_t ndev = MAX_HANDLES;
        ze_device_handle_t devs[MAX_HANDLES];
        if (zeDeviceGet(drivers[i], &ndev, devs) != ZE_RESULT_SUCCESS)
            continue;
        int gpus = 0;
        for (uint32_t k = 0; k < ndev; k++) {
            ze_device_properties_t props = {.stype = ZE_STRUCTURE_TYPE_DEVICE_PROPERTIES};
            if (zeDeviceGetProperties(devs[k], &props) != ZE_RESULT_SUCCESS ||
                props.type != ZE_DEVICE_TYPE_GPU)
                continue;
            if (gpus == index && device_p != NULL) {
                *device_p = devs[k];
                if (driver_p != NULL)
                    *driver_p = drivers[i];
            }
            gpus++;
        }
        if (gpus > 0)
            return gpus;
    }
    if (why != NULL && why_len > 0)
        snprintf(why, why_len, "no GPU among the %u Level Zero driver(s)", (unsigned)ndrivers);
    return 0;
}

static pthread_mutex_t shared_lock = PTHREAD_MUTEX_INITIALIZER;
static ze_context_handle_t shared_ctx; /* guarded by shared_lock */
static int shared_refs;

convoy_status_t convoy__ze_context_acquire(convoy_context_t *ctx, ze_driver_handle_t driver,
                                           ze_context_handle_t *zctx_p)
{
    convoy_status_t st = CONVOY_SUCCESS;
    pthread_mutex_lock(&shared_lock);
    if (shared_refs == 0) {
        ze_context_desc_t desc = {.stype = ZE_STRUCTURE_TYPE_CONTEXT_DESC};
        st = CONVOY_ZE_CALL(ctx, "ze", zeContextCreate(driver, &desc, &shared_ctx));
    }
    if (st == CONVOY_SUCCESS) {
        shared_refs++;
        *zctx_p = shared_ctx;
    }
    pthread_mutex_unlock(&shared_lock);
    return st;
}

void convoy__ze_context_release(void)
{
    pthread_mutex_lock(&shared_lock);
    if (shared_refs > 0 && --shared_refs == 0) {
        CONVOY_ZE_CALL(NULL, "ze", zeContextDestroy(shared_ctx));
        shared_ctx = NULL;
    }
    pthread_mutex_unlock(&shared_lock);
}

ze_context_handle_t convoy__ze_context(void)
{
    pthread_mutex_lock(&shared_lock);
    ze_context_handle_t c = shared_ctx;
    pthread_mutex_unlock(&shared_lock);
    return c;
}
