/*
 * A fake Level Zero loader for tests/check_ze: a shared library named libze_loader.so.1
 * (tests/local.mk) that the dynamic loader finds before the real one through
 * LD_LIBRARY_PATH (tests/ze_fake.sh), so that the Level Zero component runs on a
 * machine without an Intel GPU or driver. It implements the ze* calls the component
 * makes, in host memory: one driver with fake_ze_set_devices GPUs; device and host
 * allocations are malloc'd; every command list is immediate and runs each command as it
 * is appended (a copy is a memcpy, a signal sets a flag, a wait checks its flag); events
 * are flags. A chore's "kernel" is then host code over device pointers that are host
 * memory. Any call it makes can be made to fail on request (fake_ze_fail). Controls and
 * counters: tests/fake_ze.h. Thread-safe (one lock).
 */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <level_zero/ze_api.h>

#include "tests/fake_ze.h"

#define FAKE_MAX_DEVICES 8

struct _ze_driver_handle_t {
    int unused;
};
struct _ze_device_handle_t {
    int index;
};
struct _ze_context_handle_t {
    int unused;
};
struct _ze_command_list_handle_t {
    uint32_t magic;
};
struct _ze_event_pool_handle_t {
    uint32_t count;
};
struct _ze_event_handle_t {
    int signalled;
};

#define LIST_MAGIC 0x2e4c1575u

typedef struct alloc {
    void *p;
    size_t bytes;
    ze_memory_type_t type;
    struct alloc *next;
} alloc_t;

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct _ze_driver_handle_t driver;
static struct _ze_device_handle_t devices[FAKE_MAX_DEVICES];
static int ndevices = 1;
static fake_ze_counts_t counts;

/* Fault injection (fake_ze_fail): calls first..first+count-1 of one function fail. */
#define MAX_FAIL_POINTS 16
static struct {
    char name[64];
    long calls, first, count;
} points[MAX_FAIL_POINTS];
static alloc_t *allocs;

/* ---- controls (tests/fake_ze.h) --------------------------------------------------- */

void fake_ze_set_devices(int n);
void fake_ze_fail(const char *fn, int first, int count);
void fake_ze_get_counts(fake_ze_counts_t *c);
int fake_ze_is_list(const void *h);

void fake_ze_set_devices(int n)
{
    pthread_mutex_lock(&lock);
    ndevices = n < 0 ? 0 : n > FAKE_MAX_DEVICES ? FAKE_MAX_DEVICES : n;
    pthread_mutex_unlock(&lock);
}

void fake_ze_fail(const char *fn, int first, int count)
{
    pthread_mutex_lock(&lock);
    int i = 0;
    while (i < MAX_FAIL_POINTS && points[i].name[0] != '\0' && strcmp(points[i].name, fn) != 0)
        i++;
    if (i < MAX_FAIL_POINTS) {
        snprintf(points[i].name, sizeof(points[i].name), "%s", fn);
        points[i].first = points[i].calls + first;
        points[i].count = count;
    }
    pthread_mutex_unlock(&lock);
}

/* Whether this call of fn fails (fake_ze_fail); under lock. */
static int fails_locked(const char *fn)
{
    for (int i = 0; i < MAX_FAIL_POINTS && points[i].name[0] != '\0'; i++)
        if (strcmp(points[i].name, fn) == 0) {
            long call = ++points[i].calls;
            return points[i].count > 0 && call >= points[i].first &&
                   call < points[i].first + points[i].count;
        }
    return 0;
}

static int fails(const char *fn)
{
    pthread_mutex_lock(&lock);
    int f = fails_locked(fn);
    pthread_mutex_unlock(&lock);
    return f;
}

/* The result of an injected failure. */
#define FAIL_POINT(fn)                                                                             \
    do {                                                                                           \
        if (fails(fn))                                                                             \
            return ZE_RESULT_ERROR_DEVICE_LOST;                                                    \
    } while (0)

void fake_ze_get_counts(fake_ze_counts_t *c)
{
    pthread_mutex_lock(&lock);
    *c = counts;
    pthread_mutex_unlock(&lock);
}

int fake_ze_is_list(const void *h)
{
    return h != NULL && ((const struct _ze_command_list_handle_t *)h)->magic == LIST_MAGIC;
}

/* ---- objects ---------------------------------------------------------------------- */

static void *new_object(size_t bytes)
{
    void *p = calloc(1, bytes);
    if (p != NULL) {
        pthread_mutex_lock(&lock);
        counts.live_objects++;
        pthread_mutex_unlock(&lock);
    }
    return p;
}

static ze_result_t free_object(void *p)
{
    if (p == NULL)
        return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
    pthread_mutex_lock(&lock);
    counts.live_objects--;
    pthread_mutex_unlock(&lock);
    free(p);
    return ZE_RESULT_SUCCESS;
}

ze_result_t zeInit(ze_init_flags_t flags)
{
    FAIL_POINT("zeInit");
    (void)flags;
    return ZE_RESULT_SUCCESS;
}

ze_result_t zeDriverGet(uint32_t *pCount, ze_driver_handle_t *phDrivers)
{
    FAIL_POINT("zeDriverGet");
    if (phDrivers != NULL && *pCount >= 1)
        phDrivers[0] = &driver;
    *pCount = 1;
    return ZE_RESULT_SUCCESS;
}

ze_result_t zeDeviceGet(ze_driver_handle_t hDriver, uint32_t *pCount, ze_device_handle_t *phDevices)
{
    FAIL_POINT("zeDeviceGet");
    if (hDriver != &driver)
        return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
    pthread_mutex_lock(&lock);
    uint32_t n = (uint32_t)ndevices;
    pthread_mutex_unlock(&lock);
    if (phDevices != NULL)
        for (uint32_t i = 0; i < n && i < *pCount; i++) {
            devices[i].index = (int)i;
            phDevices[i] = &devices[i];
        }
    if (phDevices == NULL || *pCount > n)
        *pCount = n;
    return ZE_RESULT_SUCCESS;
}

ze_result_t zeDeviceGetProperties(ze_device_handle_t hDevice, ze_device_properties_t *props)
{
    FAIL_POINT("zeDeviceGetProperties");
    if (hDevice == NULL || props == NULL)
        return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
    props->type = ZE_DEVICE_TYPE_GPU;
    strcpy(props->name, "fake Level Zero GPU");
    return ZE_RESULT_SUCCESS;
}

ze_result_t zeDeviceGetMemoryProperties(ze_device_handle_t hDevice, uint32_t *pCount,
                                        ze_device_memory_properties_t *props)
{
    FAIL_POINT("zeDeviceGetMemoryProperties");
    if (hDevice == NULL)
        return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
    if (props != NULL && *pCount >= 1)
        props[0].totalSize = 1ull << 30;
    *pCount = 1;
    return ZE_RESULT_SUCCESS;
}

ze_result_t zeDeviceGetCommandQueueGroupProperties(ze_device_handle_t hDevice, uint32_t *pCount,
                                                   ze_command_queue_group_properties_t *props)
{
    FAIL_POINT("zeDeviceGetCommandQueueGroupProperties");
    if (hDevice == NULL)
        return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
    /* A copy-only group first, so that the component has to look for compute. */
    if (props != NULL && *pCount >= 2) {
        props[0].flags = ZE_COMMAND_QUEUE_GROUP_PROPERTY_FLAG_COPY;
        props[0].numQueues = 2;
        props[1].flags = ZE_COMMAND_QUEUE_GROUP_PROPERTY_FLAG_COMPUTE |
                         ZE_COMMAND_QUEUE_GROUP_PROPERTY_FLAG_COPY;
        props[1].numQueues = 1;
    }
    *pCount = 2;
    return ZE_RESULT_SUCCESS;
}

ze_result_t zeContextCreate(ze_driver_handle_t hDriver, const ze_context_desc_t *desc,
                            ze_context_handle_t *phContext)
{
    FAIL_POINT("zeContextCreate");
    (void)desc;
    if (hDriver != &driver)
        return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
    *phContext = new_object(sizeof(**phContext));
    return *phContext != NULL ? ZE_RESULT_SUCCESS : ZE_RESULT_ERROR_OUT_OF_HOST_MEMORY;
}

ze_result_t zeContextDestroy(ze_context_handle_t hContext)
{
    return free_object(hContext);
}

/* ---- memory ----------------------------------------------------------------------- */

static ze_result_t alloc_mem(size_t size, ze_memory_type_t type, void **pptr)
{
    alloc_t *a = malloc(sizeof(*a));
    void *p = size > 0 ? malloc(size) : NULL;
    if (a == NULL || p == NULL) {
        free(a);
        free(p);
        return ZE_RESULT_ERROR_OUT_OF_DEVICE_MEMORY;
    }
    *a = (alloc_t){.p = p, .bytes = size, .type = type};
    pthread_mutex_lock(&lock);
    a->next = allocs;
    allocs = a;
    counts.live_objects++;
    if (type == ZE_MEMORY_TYPE_HOST)
        counts.host_allocs++;
    pthread_mutex_unlock(&lock);
    *pptr = p;
    return ZE_RESULT_SUCCESS;
}

ze_result_t zeMemAllocDevice(ze_context_handle_t hContext, const ze_device_mem_alloc_desc_t *desc,
                             size_t size, size_t alignment, ze_device_handle_t hDevice, void **pptr)
{
    (void)desc;
    (void)alignment;
    if (hContext == NULL || hDevice == NULL)
        return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
    if (fails("zeMemAllocDevice"))
        return ZE_RESULT_ERROR_OUT_OF_DEVICE_MEMORY;
    return alloc_mem(size, ZE_MEMORY_TYPE_DEVICE, pptr);
}

ze_result_t zeMemAllocHost(ze_context_handle_t hContext, const ze_host_mem_alloc_desc_t *desc,
                           size_t size, size_t alignment, void **pptr)
{
    (void)desc;
    (void)alignment;
    if (hContext == NULL)
        return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
    if (fails("zeMemAllocHost"))
        return ZE_RESULT_ERROR_OUT_OF_HOST_MEMORY;
    return alloc_mem(size, ZE_MEMORY_TYPE_HOST, pptr);
}

ze_result_t zeMemFree(ze_context_handle_t hContext, void *ptr)
{
    FAIL_POINT("zeMemFree");
    if (hContext == NULL)
        return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
    pthread_mutex_lock(&lock);
    alloc_t **pp = &allocs;
    while (*pp != NULL && (*pp)->p != ptr)
        pp = &(*pp)->next;
    alloc_t *a = *pp;
    if (a != NULL) {
        *pp = a->next;
        counts.live_objects--;
    }
    pthread_mutex_unlock(&lock);
    if (a == NULL)
        return ZE_RESULT_ERROR_INVALID_ARGUMENT;
    free(a->p);
    free(a);
    return ZE_RESULT_SUCCESS;
}

ze_result_t zeMemGetAllocProperties(ze_context_handle_t hContext, const void *ptr,
                                    ze_memory_allocation_properties_t *props,
                                    ze_device_handle_t *phDevice)
{
    (void)phDevice;
    if (hContext == NULL)
        return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
    props->type = ZE_MEMORY_TYPE_UNKNOWN;
    pthread_mutex_lock(&lock);
    for (alloc_t *a = allocs; a != NULL; a = a->next)
        if ((const char *)ptr >= (const char *)a->p &&
            (const char *)ptr < (const char *)a->p + a->bytes)
            props->type = a->type;
    pthread_mutex_unlock(&lock);
    return ZE_RESULT_SUCCESS;
}

/* ---- command lists: each command runs as it is appended --------------------------- */

ze_result_t zeCommandListCreateImmediate(ze_context_handle_t hContext, ze_device_handle_t hDevice,
                                         const ze_command_queue_desc_t *altdesc,
                                         ze_command_list_handle_t *phCommandList)
{
    FAIL_POINT("zeCommandListCreateImmediate");
    if (hContext == NULL || hDevice == NULL)
        return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
    if (altdesc == NULL || altdesc->ordinal != 1) /* the compute group */
        return ZE_RESULT_ERROR_INVALID_ARGUMENT;
    ze_command_list_handle_t l = new_object(sizeof(*l));
    if (l == NULL)
        return ZE_RESULT_ERROR_OUT_OF_HOST_MEMORY;
    l->magic = LIST_MAGIC;
    *phCommandList = l;
    return ZE_RESULT_SUCCESS;
}

ze_result_t zeCommandListDestroy(ze_command_list_handle_t hCommandList)
{
    if (!fake_ze_is_list(hCommandList))
        return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
    hCommandList->magic = 0;
    return free_object(hCommandList);
}

ze_result_t zeCommandListAppendBarrier(ze_command_list_handle_t hCommandList,
                                       ze_event_handle_t hSignalEvent, uint32_t numWaitEvents,
                                       ze_event_handle_t *phWaitEvents)
{
    FAIL_POINT("zeCommandListAppendBarrier");
    (void)numWaitEvents;
    (void)phWaitEvents;
    if (!fake_ze_is_list(hCommandList))
        return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
    pthread_mutex_lock(&lock);
    counts.barriers++;
    if (hSignalEvent != NULL)
        hSignalEvent->signalled = 1;
    pthread_mutex_unlock(&lock);
    return ZE_RESULT_SUCCESS;
}

ze_result_t zeCommandListAppendMemoryCopy(ze_command_list_handle_t hCommandList, void *dstptr,
                                          const void *srcptr, size_t size,
                                          ze_event_handle_t hSignalEvent, uint32_t numWaitEvents,
                                          ze_event_handle_t *phWaitEvents)
{
    (void)numWaitEvents;
    (void)phWaitEvents;
    if (!fake_ze_is_list(hCommandList))
        return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
    pthread_mutex_lock(&lock);
    int fail = fails_locked("zeCommandListAppendMemoryCopy");
    if (fail)
        counts.failed++;
    else
        counts.copies++;
    if (!fail && hSignalEvent != NULL)
        hSignalEvent->signalled = 1;
    pthread_mutex_unlock(&lock);
    if (fail)
        return ZE_RESULT_ERROR_DEVICE_LOST;
    memcpy(dstptr, srcptr, size);
    return ZE_RESULT_SUCCESS;
}

ze_result_t zeCommandListAppendSignalEvent(ze_command_list_handle_t hCommandList,
                                           ze_event_handle_t hEvent)
{
    FAIL_POINT("zeCommandListAppendSignalEvent");
    if (!fake_ze_is_list(hCommandList) || hEvent == NULL)
        return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
    pthread_mutex_lock(&lock);
    counts.signals++;
    hEvent->signalled = 1;
    pthread_mutex_unlock(&lock);
    return ZE_RESULT_SUCCESS;
}

ze_result_t zeCommandListAppendWaitOnEvents(ze_command_list_handle_t hCommandList,
                                            uint32_t numEvents, ze_event_handle_t *phEvents)
{
    FAIL_POINT("zeCommandListAppendWaitOnEvents");
    if (!fake_ze_is_list(hCommandList))
        return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
    pthread_mutex_lock(&lock);
    counts.waits++;
    for (uint32_t i = 0; i < numEvents; i++)
        if (!phEvents[i]->signalled)
            counts.bad_waits++;
    pthread_mutex_unlock(&lock);
    return ZE_RESULT_SUCCESS;
}

/* ---- events ----------------------------------------------------------------------- */

ze_result_t zeEventPoolCreate(ze_context_handle_t hContext, const ze_event_pool_desc_t *desc,
                              uint32_t numDevices, ze_device_handle_t *phDevices,
                              ze_event_pool_handle_t *phEventPool)
{
    FAIL_POINT("zeEventPoolCreate");
    (void)numDevices;
    (void)phDevices;
    if (hContext == NULL || desc == NULL)
        return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
    ze_event_pool_handle_t p = new_object(sizeof(*p));
    if (p == NULL)
        return ZE_RESULT_ERROR_OUT_OF_HOST_MEMORY;
    p->count = desc->count;
    *phEventPool = p;
    return ZE_RESULT_SUCCESS;
}

ze_result_t zeEventPoolDestroy(ze_event_pool_handle_t hEventPool)
{
    return free_object(hEventPool);
}

ze_result_t zeEventCreate(ze_event_pool_handle_t hEventPool, const ze_event_desc_t *desc,
                          ze_event_handle_t *phEvent)
{
    FAIL_POINT("zeEventCreate");
    if (hEventPool == NULL || desc == NULL)
        return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
    if (desc->index >= hEventPool->count)
        return ZE_RESULT_ERROR_INVALID_ARGUMENT;
    *phEvent = new_object(sizeof(**phEvent));
    return *phEvent != NULL ? ZE_RESULT_SUCCESS : ZE_RESULT_ERROR_OUT_OF_HOST_MEMORY;
}

ze_result_t zeEventDestroy(ze_event_handle_t hEvent)
{
    return free_object(hEvent);
}

static ze_result_t status(ze_event_handle_t e)
{
    if (e == NULL)
        return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
    pthread_mutex_lock(&lock);
    int s = e->signalled;
    pthread_mutex_unlock(&lock);
    return s ? ZE_RESULT_SUCCESS : ZE_RESULT_NOT_READY;
}

ze_result_t zeEventQueryStatus(ze_event_handle_t hEvent)
{
    FAIL_POINT("zeEventQueryStatus");
    return status(hEvent);
}

/* Everything ran at append: an event not signalled now never will be. */
ze_result_t zeEventHostSynchronize(ze_event_handle_t hEvent, uint64_t timeout)
{
    FAIL_POINT("zeEventHostSynchronize");
    (void)timeout;
    return status(hEvent);
}

ze_result_t zeEventHostReset(ze_event_handle_t hEvent)
{
    FAIL_POINT("zeEventHostReset");
    if (hEvent == NULL)
        return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
    pthread_mutex_lock(&lock);
    counts.resets++;
    hEvent->signalled = 0;
    pthread_mutex_unlock(&lock);
    return ZE_RESULT_SUCCESS;
}
