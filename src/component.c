/*
 * Components: the registry of schedulers and devices, and their selection at init.
 * Every decision is logged at level 'info' so that CONVOY_VERBOSE=info shows why a
 * component was or was not used.
 *
 * Device components are asked in decreasing priority (device.h); where CUDA, HIP and
 * Level Zero are loadable modules (CONVOY_HAVE_MODULES), the registry holds libconvoy's
 * stand-ins for them (device/module.h), which load the module when first queried.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "device/cuda/cuda_params.h"
#include "device/hip/hip_params.h"
#include "device/module.h"
#include "device/ze/ze_params.h"
#include "src/core.h"

extern const convoy__device_component_t convoy__device_host;
extern const convoy__device_component_t convoy__device_sim;
/* A module's stand-in here, or the component itself when it is built in. */
#if CONVOY_HAVE_CUDA && CONVOY_HAVE_MODULES
CONVOY__MODULE_STANDIN(cuda, CONVOY_DEVICE_CUDA, CONVOY__CUDA_PRIORITY);
#elif CONVOY_HAVE_CUDA
extern const convoy__device_component_t convoy__device_cuda;
#endif
#if CONVOY_HAVE_HIP && CONVOY_HAVE_MODULES
CONVOY__MODULE_STANDIN(hip, CONVOY_DEVICE_HIP, CONVOY__HIP_PRIORITY);
#elif CONVOY_HAVE_HIP
extern const convoy__device_component_t convoy__device_hip;
#endif
#if CONVOY_HAVE_ZE && CONVOY_HAVE_MODULES
CONVOY__MODULE_STANDIN(ze, CONVOY_DEVICE_ZE, CONVOY__ZE_PRIORITY);
#elif CONVOY_HAVE_ZE
extern const convoy__device_component_t convoy__device_ze;
#endif

const convoy__sched_component_t *const convoy__sched_components[] = {
    &convoy__sched_fifo,
    &convoy__sched_batch,
    NULL,
};

/* In the order convoy-info lists them; selection sorts them by priority. */
const convoy__device_component_t *const convoy__device_components[] = {
#if CONVOY_HAVE_CUDA
    &convoy__device_cuda,
#endif
#if CONVOY_HAVE_HIP
    &convoy__device_hip,
#endif
#if CONVOY_HAVE_ZE
    &convoy__device_ze,
#endif
    &convoy__device_sim,  &convoy__device_host, NULL,
};

/* "fifo, batch" */
static void list_names(int sched, char *buf, size_t len)
{
    size_t o = 0;
    buf[0] = '\0';
    for (int i = 0;; i++) {
        const char *name =
            sched ? (convoy__sched_components[i] ? convoy__sched_components[i]->name : NULL)
                  : (convoy__device_components[i] ? convoy__device_components[i]->name : NULL);
        if (name == NULL || o + 1 >= len)
            break;
        o += (size_t)snprintf(buf + o, len - o, "%s%s", i > 0 ? ", " : "", name);
    }
}

convoy_status_t convoy__select_sched(convoy_context_t *ctx)
{
    const char *want = convoy__param_str(&ctx->params, "sched");
    for (int i = 0; convoy__sched_components[i] != NULL; i++) {
        if (strcmp(convoy__sched_components[i]->name, want) == 0) {
            ctx->sched = convoy__sched_components[i];
            convoy__log_info("scheduler %s selected", want);
            return CONVOY_SUCCESS;
        }
    }
    char names[256];
    list_names(1, names, sizeof(names));
    return convoy__error(NULL, CONVOY_ERR_NOT_FOUND,
                         "unknown scheduler '%s' (parameter 'sched'); the schedulers are: %s", want,
                         names);
}

static const convoy__device_component_t *find_device(const char *name, size_t len)
{
    for (int i = 0; convoy__device_components[i] != NULL; i++)
        if (strlen(convoy__device_components[i]->name) == len &&
            strncmp(convoy__device_components[i]->name, name, len) == 0)
            return convoy__device_components[i];
    return NULL;
}

/*
 * Open every device of one accelerator component, each as `lanes` accelerators (the
 * parameter): lane j of device k is opened with local index k (a component shares what
 * is per device among its lanes, as the sim its link), is named "<name>k.j", and may use
 * 1/lanes of the memory convoy may use on the device (what the component offers, or
 * device_memory if less); the pipeline splits device_cache, pageable_bounce_limit and
 * write_behind the same way (convoy__param_lane_share). To placement, coherence and the
 * pipeline a lane is an accelerator like any other, with its own progress thread,
 * streams and events: so one GPU's host work is spread over several threads without a
 * lock between them (doc/design.md, "Lanes").
 */
static convoy_status_t open_component(convoy_context_t *ctx, const convoy__device_component_t *c,
                                      int count)
{
    int lanes = (int)convoy__param_int(&ctx->params, "lanes");
    for (int k = 0; k < count * lanes; k++) {
        char name[sizeof(ctx->accel[0]->name)];
        if (lanes > 1)
            snprintf(name, sizeof(name), "%s%d.%d", c->name, k / lanes, k % lanes);
        else
            snprintf(name, sizeof(name), "%s%d", c->name, k);
        /* A device is used with all its lanes or not at all. */
        if (k % lanes == 0 && ctx->naccel + lanes > CONVOY__MAX_ACCEL) {
            convoy__log_warn("more than %d accelerators (lanes count each): device %s%d and "
                             "later are not used",
                             CONVOY__MAX_ACCEL, c->name, k / lanes);
            break;
        }
        convoy__device_t *dev;
        convoy_status_t st = c->open(ctx, k / lanes, ctx->naccel, &dev);
        if (st != CONVOY_SUCCESS)
            return st;
        /* device_memory limits the device, whose lanes share it as they share what
         * the device offers. */
        size_t cap = (size_t)convoy__param_int(&ctx->params, "device_memory");
        if (cap > 0 && cap < dev->mem_capacity)
            dev->mem_capacity = cap;
        if (lanes > 1) {
            dev->mem_capacity /= (size_t)lanes;
            snprintf(dev->name, sizeof(dev->name), "%s", name);
        }
        ctx->accel[ctx->naccel++] = dev;
        convoy__log_info("device %s opened (%zu bytes of memory for convoy)", dev->name,
                         dev->mem_capacity);
        /* dev->component: a module's own component, whose host_mem is the real one. */
        if (dev->component->host_mem != NULL && ctx->host_mem == NULL) {
            ctx->host_mem = dev->component->host_mem;
            convoy__log_info("device %s: its component provides pinned host memory "
                             "(convoy_host_alloc)",
                             dev->name);
        }
    }
    return CONVOY_SUCCESS;
}

/* The registry's indexes by decreasing priority (stable: equal priorities keep their
 * registry order). */
static void by_priority(int *order, int n)
{
    for (int i = 0; i < n; i++)
        order[i] = i;
    for (int i = 1; i < n; i++)
        for (int j = i; j > 0 && convoy__device_components[order[j]]->priority >
                                     convoy__device_components[order[j - 1]]->priority;
             j--) {
            int t = order[j];
            order[j] = order[j - 1];
            order[j - 1] = t;
        }
}

convoy_status_t convoy__select_devices(convoy_context_t *ctx)
{
    const char *spec = convoy__param_str(&ctx->params, "devices");
    int n = 0;
    for (int i = 0; convoy__device_components[i] != NULL; i++)
        n++;
    char names[256];
    list_names(0, names, sizeof(names));
    /* wanted[i]: 1 asked for explicitly, 0 not asked for, -1 excluded. */
    int *wanted = calloc((size_t)n * 2, sizeof(int));
    if (wanted == NULL)
        return convoy__error(NULL, CONVOY_ERR_NOMEM, "out of memory");
    int *order = wanted + n;
    int explicit_list = 0, auto_mode = strcmp(spec, "auto") == 0 || spec[0] == '\0';
    convoy_status_t st = CONVOY_SUCCESS;
    for (const char *p = spec; !auto_mode && *p != '\0';) {
        size_t len = strcspn(p, ",");
        if (len == 0) { /* "sim," and ",sim": an empty item names nothing */
            p++;
            continue;
        }
        int exclude = p[0] == '^';
        const char *name = p + exclude;
        size_t nl = len - (size_t)exclude;
        const convoy__device_component_t *c = find_device(name, nl);
        if (c == NULL) {
            st = convoy__error(NULL, CONVOY_ERR_NOT_FOUND,
                               "unknown device '%.*s' (parameter 'devices' = '%s'); the devices "
                               "are: %s",
                               (int)nl, name, spec, names);
            goto out;
        }
        for (int i = 0; i < n; i++)
            if (convoy__device_components[i] == c)
                wanted[i] = exclude ? -1 : 1;
        explicit_list |= !exclude;
        p += len + (p[len] == ',');
    }

    by_priority(order, n);
    const convoy__params_t *params = &ctx->params;
    for (int k = 0; k < n; k++) {
        int i = order[k];
        const convoy__device_component_t *c = convoy__device_components[i];
        char why[256] = "";
        if (c->kind == CONVOY_DEVICE_CPU) {
            c->query(params, why, sizeof(why));
            convoy__log_info("device %s (priority %d) used%s: %s", c->name, c->priority,
                             wanted[i] < 0 ? " although excluded (the CPU workers always run)" : "",
                             why);
            continue;
        }
        if (wanted[i] < 0) {
            convoy__log_info("device %s (priority %d) not used: excluded by devices='%s'", c->name,
                             c->priority, spec);
            continue;
        }
        int sim = c->kind == CONVOY_DEVICE_SIM;
        /* Without an explicit list, every real accelerator is used (the CPUs alone when
         * there is none); with a list, exactly what it names. */
        if (explicit_list && wanted[i] == 0) {
            convoy__log_info("device %s (priority %d) not used: not named by devices='%s'", c->name,
                             c->priority, spec);
            continue;
        }
        if (sim && !explicit_list) {
            /* An emulation that sleeps to model an H200 is never what a program that
             * named nothing wants: without a GPU it runs on the CPUs. */
            convoy__log_info("device %s (priority %d) not used: devices=auto takes real "
                             "accelerators only (name sim to use it)",
                             c->name, c->priority);
            continue;
        }
        int count = c->query(params, why, sizeof(why));
        if (count <= 0) {
            if (explicit_list) {
                st = convoy__error(NULL, CONVOY_ERR_UNAVAILABLE,
                                   "device '%s' was asked for but cannot start: %s", c->name, why);
                goto out;
            }
            convoy__log_info("device %s (priority %d) not used: %s", c->name, c->priority, why);
            continue;
        }
        convoy__log_info("device %s (priority %d) selected: %d device(s)", c->name, c->priority,
                         count);
        if ((st = open_component(ctx, c, count)) != CONVOY_SUCCESS)
            goto out;
    }
    ctx->use_cpu_only = ctx->naccel == 0;
out:
    free(wanted);
    return st;
}

void convoy__close_devices(convoy_context_t *ctx)
{
    for (int i = ctx->naccel - 1; i >= 0; i--) {
        ctx->accel[i]->component->close(ctx->accel[i]);
        ctx->accel[i] = NULL;
    }
    ctx->naccel = 0;
}
