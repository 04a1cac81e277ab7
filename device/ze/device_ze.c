/*
 * The Level Zero device component: Intel GPUs through the Level Zero API, in plain C.
 * It has run on no Intel GPU (no machine of the project has one): doc/level-zero.md
 * says what is tested, against a fake loader.
 *
 * This file holds the component alone: its table, query, open and close; ze_dev.h lists
 * the other files. Level Zero has no current device, so no op starts by making one
 * current (unlike CUDA and HIP).
 *
 * Fork: query calls zeInit, zeDriverGet, zeDeviceGet and zeDeviceGetProperties, which
 * load the drivers and create no context, no queue and no memory, as cudaGetDeviceCount
 * does on CUDA (device.h). Whether a child may use Level Zero after its parent called
 * zeInit is the driver's matter, which the specification leaves open: as with CUDA, a
 * program that forks workers should let them start convoy themselves.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "device/ze/ze_dev.h"
#include "src/context.h"

static const convoy__device_ops_t ze_ops = {
    .mem_alloc = convoy__ze_mem_alloc,
    .mem_free = convoy__ze_mem_free,
    .stream_create = convoy__ze_stream_create,
    .stream_destroy = convoy__ze_stream_destroy,
    .stream_native = convoy__ze_stream_native,
    .event_create = convoy__ze_event_create,
    .event_destroy = convoy__ze_event_destroy,
    .event_record = convoy__ze_event_record,
    .event_query = convoy__ze_event_query,
    .stream_wait_event = convoy__ze_stream_wait_event,
    .stream_sync = convoy__ze_stream_sync,
    .memcpy = convoy__ze_memcpy,
    .memcpy_multi = convoy__ze_memcpy_multi,
    .launch = convoy__ze_launch,
    .idle_wait = NULL,
};

static int ze_query(const convoy__params_t *params, char *why, size_t why_len)
{
    (void)params;
    return convoy__ze_find(-1, NULL, NULL, why, why_len);
}

/* The device's memory (the largest of its memories; Level Zero has no free-memory query
 * outside Sysman) and its compute queue group, into dev. */
static convoy_status_t describe(convoy__ze_dev_t *dev, size_t *total_p, char *name, size_t len)
{
    convoy__device_t *b = &dev->base;
    ze_device_properties_t props = {.stype = ZE_STRUCTURE_TYPE_DEVICE_PROPERTIES};
    convoy_status_t st =
        CONVOY_ZE_CALL(b->ctx, b->name, zeDeviceGetProperties(dev->device, &props));
    if (st != CONVOY_SUCCESS)
        return st;
    snprintf(name, len, "%s", props.name);
    ze_device_memory_properties_t mem[8];
    uint32_t nmem = 8;
    for (uint32_t i = 0; i < nmem; i++)
        mem[i] =
            (ze_device_memory_properties_t){.stype = ZE_STRUCTURE_TYPE_DEVICE_MEMORY_PROPERTIES};
    st = CONVOY_ZE_CALL(b->ctx, b->name, zeDeviceGetMemoryProperties(dev->device, &nmem, mem));
    if (st != CONVOY_SUCCESS)
        return st;
    *total_p = 0;
    for (uint32_t i = 0; i < nmem && i < 8; i++)
        if (mem[i].totalSize > *total_p)
            *total_p = (size_t)mem[i].totalSize;
    ze_command_queue_group_properties_t groups[16];
    uint32_t ngroups = 16;
    for (uint32_t i = 0; i < ngroups; i++)
        groups[i] = (ze_command_queue_group_properties_t){
            .stype = ZE_STRUCTURE_TYPE_COMMAND_QUEUE_GROUP_PROPERTIES};
    st = CONVOY_ZE_CALL(b->ctx, b->name,
                        zeDeviceGetCommandQueueGroupProperties(dev->device, &ngroups, groups));
    if (st != CONVOY_SUCCESS)
        return st;
    for (uint32_t i = 0; i < ngroups && i < 16; i++)
        if (groups[i].flags & ZE_COMMAND_QUEUE_GROUP_PROPERTY_FLAG_COMPUTE) {
            dev->ordinal = i;
            return CONVOY_SUCCESS;
        }
    return convoy__error(b->ctx, CONVOY_ERR_UNAVAILABLE,
                         "%s: none of the %u command queue groups of %s runs compute work", b->name,
                         (unsigned)ngroups, name);
}

static void ze_close(convoy__device_t *d);

static convoy_status_t ze_open(convoy_context_t *ctx, int local_index, int global_index,
                               convoy__device_t **dev_p)
{
    const convoy__params_t *p = convoy__ctx_params(ctx);
    convoy__ze_dev_t *dev = convoy__calloc(ctx, 1, sizeof(*dev), "a Level Zero device");
    if (dev == NULL)
        return CONVOY_ERR_NOMEM;
    convoy__device_t *b = &dev->base;
    b->component = &convoy__device_ze;
    b->ops = &ze_ops;
    b->ctx = ctx;
    b->kind = CONVOY_DEVICE_ZE;
    b->index = global_index;
    snprintf(b->name, sizeof(b->name), "ze%d", local_index);
    b->max_batch = 4096;
    b->launch_inline = 1;
    b->methods = (1u << CONVOY__METHOD_LOOP) | (1u << CONVOY__METHOD_ENGINE);

    char why[256] = "";
    if (convoy__ze_find(local_index, &dev->driver, &dev->device, why, sizeof(why)) <= local_index ||
        dev->device == NULL) {
        free(dev);
        return convoy__error(ctx, CONVOY_ERR_UNAVAILABLE, "%s: no such Level Zero GPU%s%s", b->name,
                             why[0] ? ": " : "", why);
    }
    convoy_status_t st = convoy__ze_context_acquire(ctx, dev->driver, &dev->zctx);
    if (st != CONVOY_SUCCESS) {
        free(dev);
        return st;
    }
    size_t total = 0;
    char name[256] = "";
    st = describe(dev, &total, name, sizeof(name));
    if (st == CONVOY_SUCCESS) {
        size_t want = (size_t)convoy__param_int(p, "ze_memory");
        b->mem_capacity = want > 0 ? want : total / 10 * 9;
        st = convoy__devpool_init(&dev->pool, b, &convoy__ze_pool_ops,
                                  (size_t)convoy__param_int(p, "ze_pool_chunk"));
    }
    if (st != CONVOY_SUCCESS) {
        convoy__ze_context_release();
        free(dev);
        return st;
    }
    dev->hostmem = convoy__hostslab_attach(&convoy__ze_hostslab_ops, ctx,
                                           (size_t)convoy__param_int(p, "ze_host_slab"));
    if (dev->hostmem == NULL) {
        char msg[640];
        snprintf(msg, sizeof(msg), "%s", convoy_last_error(NULL));
        ze_close(b);
        return convoy__error(ctx, CONVOY_ERR_NOMEM, "%s", msg);
    }
    convoy__log_info("%s: %s, %zu bytes, capacity %zu, methods loop, engine (never run on an "
                     "Intel GPU: doc/level-zero.md)",
                     b->name, name, total, b->mem_capacity);
    *dev_p = b;
    return CONVOY_SUCCESS;
}

/* After the pipeline has destroyed the streams: nothing runs any more. The slabs go
 * before the context they were allocated in. */
static void ze_close(convoy__device_t *d)
{
    if (d == NULL)
        return;
    convoy__ze_dev_t *dev = convoy__ze_dev(d);
    convoy__devpool_fini(&dev->pool);
    convoy__ze_events_fini(dev);
    convoy__hostslab_detach(dev->hostmem);
    convoy__ze_context_release();
    free(dev);
}

const convoy__device_component_t convoy__device_ze = {
    .name = "ze",
    .priority = CONVOY__ZE_PRIORITY,
    .kind = CONVOY_DEVICE_ZE,
    .doc = convoy__ze_doc,
    .params = convoy__ze_params,
    .query = ze_query,
    .open = ze_open,
    .close = ze_close,
    .host_mem = &convoy__ze_host_mem_ops,
};
