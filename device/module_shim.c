/*
 * The module side of module.h, linked into every device module: the core services
 * under the names the component's code (and device/'s vendor-neutral files, which each
 * module carries its own copy of) already calls, forwarded to the libconvoy that loaded
 * the module. Nothing here is exported: the module's only exported symbol is its
 * descriptor (device/NAME/NAME_module.c).
 */
#include "config.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#include "device/module.h"
#include "src/context.h"

static const convoy__module_core_t *core;

/* The log macros test this before calling convoy__log_impl: let every call through and
 * filter below with libconvoy's own threshold, which init may change at any time. */
_Atomic int convoy__log_threshold = CONVOY__LOG_TRACE;

void convoy__module_bind(const convoy__module_core_t *c)
{
    core = c;
}

convoy_status_t convoy__error_record(convoy_context_t *ctx, convoy_status_t status, const char *fmt,
                                     ...)
{
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    return core->error(ctx, status, msg);
}

void convoy__log_impl(convoy__log_level_t level, const char *file, int line, const char *fmt, ...)
{
    if ((int)level > atomic_load_explicit(core->log_threshold, memory_order_relaxed))
        return;
    char msg[1200];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    core->log(level, file, line, msg);
}

const char *convoy_last_error(const convoy_context_t *ctx)
{
    return core->last_error(ctx);
}

void *convoy__malloc(convoy_context_t *ctx, size_t bytes, const char *what)
{
    void *p = malloc(bytes);
    if (p == NULL)
        convoy__error(ctx, CONVOY_ERR_NOMEM, "out of host memory allocating %zu bytes for %s",
                      bytes, what);
    return p;
}

void *convoy__calloc(convoy_context_t *ctx, size_t n, size_t size, const char *what)
{
    void *p = calloc(n, size);
    if (p == NULL)
        convoy__error(ctx, CONVOY_ERR_NOMEM, "out of host memory allocating %zu x %zu bytes for %s",
                      n, size, what);
    return p;
}

int64_t convoy__param_int(const convoy__params_t *params, const char *name)
{
    return core->param_int(params, name);
}

const convoy__params_t *convoy__ctx_params(const convoy_context_t *ctx)
{
    return core->ctx_params(ctx);
}

const char *convoy__copy_method_name(int method)
{
    return core->copy_method_name(method);
}
