/*
 * Task classes.
 */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "src/core.h"

/* Add cls to the context's table (its id indexes the schedulers' per-class lists). */
static convoy_status_t register_class(convoy_context_t *ctx, convoy_class_t *cls)
{
    pthread_mutex_lock(&ctx->data_lock);
    if (ctx->nclasses == ctx->classes_cap) {
        int cap = ctx->classes_cap ? 2 * ctx->classes_cap : 16;
        convoy_class_t **c = realloc(ctx->classes, (size_t)cap * sizeof(*c));
        if (c == NULL) {
            pthread_mutex_unlock(&ctx->data_lock);
            return convoy__error(ctx, CONVOY_ERR_NOMEM, "out of memory for class %s", cls->name);
        }
        ctx->classes = c;
        ctx->classes_cap = cap;
    }
    cls->id = ctx->nclasses;
    ctx->classes[ctx->nclasses++] = cls;
    pthread_mutex_unlock(&ctx->data_lock);
    return CONVOY_SUCCESS;
}

static int host_side(const convoy_task_view_t *task, void *stream)
{
    (void)task;
    (void)stream;
    return 0;
}

convoy_status_t convoy__classes_init_internal(convoy_context_t *ctx)
{
    static const struct {
        const char *name;
        int nflows;
        convoy_access_t mode;
        unsigned flags;
    } spec[CONVOY__CLS_COUNT] = {
        [CONVOY__CLS_FLUSH] = {"convoy:flush", 1, CONVOY_READ, CONVOY_CLASS_BATCHABLE},
        [CONVOY__CLS_FLUSH_ALL] = {"convoy:flush-all", 0, CONVOY_READ, 0},
        [CONVOY__CLS_DROP] = {"convoy:drop", 1, CONVOY_READ, CONVOY_CLASS_BATCHABLE},
        [CONVOY__CLS_HOST] = {"convoy:acquire", 1, CONVOY_READ, 0},
        [CONVOY__CLS_HOST_RW] = {"convoy:acquire", 1, CONVOY_RW, 0},
    };
    for (int k = CONVOY__CLS_USER + 1; k < CONVOY__CLS_COUNT; k++) {
        convoy_class_t *cls = convoy__calloc(ctx, 1, sizeof(*cls), "an internal class");
        if (cls == NULL)
            return CONVOY_ERR_NOMEM;
        cls->name = strdup(spec[k].name);
        if (cls->name == NULL) {
            free(cls);
            return convoy__error(ctx, CONVOY_ERR_NOMEM, "out of memory for an internal class");
        }
        cls->ctx = ctx;
        cls->nflows = spec[k].nflows;
        cls->modes[0] = spec[k].mode;
        cls->flags = spec[k].flags;
        cls->internal = k;
        if (k == CONVOY__CLS_HOST || k == CONVOY__CLS_HOST_RW)
            cls->chore[CONVOY_DEVICE_CPU] = host_side;
        convoy_status_t st = register_class(ctx, cls);
        if (st != CONVOY_SUCCESS) {
            free(cls->name);
            free(cls);
            return st;
        }
        ctx->internal[k] = cls;
    }
    return CONVOY_SUCCESS;
}

convoy_status_t convoy_class_new(convoy_context_t *ctx, const char *name, int nflows,
                                 const convoy_access_t *modes, unsigned flags,
                                 convoy_class_t **cls_p)
{
    if (ctx == NULL)
        return convoy__error(NULL, CONVOY_ERR_INVALID, "convoy_class_new: ctx is NULL");
    if (name == NULL || name[0] == '\0')
        return convoy__error(ctx, CONVOY_ERR_INVALID, "convoy_class_new: the name is empty");
    if (cls_p == NULL)
        return convoy__error(ctx, CONVOY_ERR_INVALID, "convoy_class_new(%s): cls_p is NULL", name);
    if (nflows < 1 || nflows > CONVOY_MAX_FLOWS)
        return convoy__error(ctx, CONVOY_ERR_INVALID,
                             "convoy_class_new(%s): nflows %d is out of range [1, %d]", name,
                             nflows, CONVOY_MAX_FLOWS);
    if (modes == NULL)
        return convoy__error(ctx, CONVOY_ERR_INVALID, "convoy_class_new(%s): modes is NULL", name);
    for (int i = 0; i < nflows; i++)
        if (modes[i] != CONVOY_READ && modes[i] != CONVOY_WRITE && modes[i] != CONVOY_RW)
            return convoy__error(ctx, CONVOY_ERR_INVALID,
                                 "convoy_class_new(%s): flow %d has access mode %d; allowed: "
                                 "CONVOY_READ (1), CONVOY_WRITE (2), CONVOY_RW (3)",
                                 name, i, (int)modes[i]);
    const unsigned known = CONVOY_CLASS_BATCHABLE | CONVOY_CLASS_INPUTS_IN_PLACE;
    if ((flags & ~known) != 0)
        return convoy__error(ctx, CONVOY_ERR_INVALID, "convoy_class_new(%s): unknown flags 0x%x",
                             name, flags & ~known);
    convoy_class_t *cls = convoy__calloc(ctx, 1, sizeof(*cls), "a task class");
    if (cls == NULL)
        return CONVOY_ERR_NOMEM;
    cls->name = strdup(name);
    if (cls->name == NULL) {
        free(cls);
        return convoy__error(ctx, CONVOY_ERR_NOMEM, "out of memory for class %s", name);
    }
    cls->ctx = ctx;
    cls->nflows = nflows;
    cls->flags = flags;
    memcpy(cls->modes, modes, (size_t)nflows * sizeof(*modes));
    convoy_status_t st = register_class(ctx, cls);
    if (st != CONVOY_SUCCESS) {
        free(cls->name);
        free(cls);
        return st;
    }
    *cls_p = cls;
    return CONVOY_SUCCESS;
}

static convoy_status_t check_kind(convoy_class_t *cls, convoy_device_kind_t kind, const char *fn)
{
    if (cls == NULL)
        return convoy__error(NULL, CONVOY_ERR_INVALID, "%s: cls is NULL", fn);
    if ((int)kind < 0 || kind >= CONVOY_DEVICE_KIND_COUNT)
        return convoy__error(cls->ctx, CONVOY_ERR_INVALID,
                             "%s(%s): device kind %d is out of range [0, %d]", fn, cls->name,
                             (int)kind, CONVOY_DEVICE_KIND_COUNT - 1);
    return CONVOY_SUCCESS;
}

convoy_status_t convoy_class_set_chore(convoy_class_t *cls, convoy_device_kind_t kind,
                                       convoy_chore_fn fn)
{
    convoy_status_t st = check_kind(cls, kind, "convoy_class_set_chore");
    if (st == CONVOY_SUCCESS)
        __atomic_store_n(&cls->chore[kind], fn, __ATOMIC_RELEASE); /* read as tasks run */
    return st;
}

convoy_status_t convoy_class_set_batch_chore(convoy_class_t *cls, convoy_device_kind_t kind,
                                             convoy_batch_chore_fn fn)
{
    convoy_status_t st = check_kind(cls, kind, "convoy_class_set_batch_chore");
    if (st != CONVOY_SUCCESS)
        return st;
    if (fn != NULL && !(cls->flags & CONVOY_CLASS_BATCHABLE))
        return convoy__error(cls->ctx, CONVOY_ERR_INVALID,
                             "convoy_class_set_batch_chore(%s): the class is not "
                             "CONVOY_CLASS_BATCHABLE",
                             cls->name);
    __atomic_store_n(&cls->batch_chore[kind], fn, __ATOMIC_RELEASE);
    return CONVOY_SUCCESS;
}
