/*
 * Loadable device modules (doc/modules.md): the GPU components built as shared objects
 * that libconvoy opens with dlopen, so that libconvoy itself needs no vendor runtime.
 * Internal to convoy.
 *
 * A module exports one symbol, convoy__device_module (CONVOY__MODULE_SYMBOL): its
 * descriptor. It is linked with no libconvoy symbol: the few core services its code
 * calls (errors, logging, parameters) reach libconvoy through the table that the loader
 * hands to bind() (device/module_shim.c gives the module those functions under their
 * usual names). A module and the libconvoy that loads it must come from the same build:
 * the descriptor carries the ABI number and the package version, and a mismatch makes
 * the component unavailable.
 */
#ifndef CONVOY_MODULE_H
#define CONVOY_MODULE_H

#include <stddef.h>
#include <stdint.h>

#include "device/device.h"
#include "src/util.h"

#define CONVOY__MODULE_ABI 2 /* bump with any change to device.h's structs or this file */
#define CONVOY__MODULE_SYMBOL "convoy__device_module"

/* The core services a module may use; each does what the function of the same name in
 * src/ does (messages arrive formatted). */
typedef struct convoy__module_core {
    int abi;                  /* CONVOY__MODULE_ABI */
    const _Atomic int *log_threshold; /* &convoy__log_threshold */
    void (*log)(convoy__log_level_t level, const char *file, int line, const char *msg);
    convoy_status_t (*error)(convoy_context_t *ctx, convoy_status_t status, const char *msg);
    const char *(*last_error)(const convoy_context_t *ctx);
    int64_t (*param_int)(const convoy__params_t *params, const char *name);
    const convoy__params_t *(*ctx_params)(const convoy_context_t *ctx);
    const char *(*copy_method_name)(int method);
} convoy__module_core_t;

/* What a module exports under CONVOY__MODULE_SYMBOL. */
typedef struct convoy__device_module {
    int abi;                                         /* CONVOY__MODULE_ABI */
    const char *version;                             /* PACKAGE_VERSION of its build */
    const convoy__device_component_t *component;     /* the real component */
    void (*bind)(const convoy__module_core_t *core); /* called once, before any other call */
} convoy__device_module_t;

/* The descriptor of a module (device/NAME/NAME_module.c) and the bind() it points to
 * (module_shim.c); both exist only inside modules. */
extern const convoy__device_module_t convoy__device_module;
void convoy__module_bind(const convoy__module_core_t *core);

/*
 * The component of module `name` (the file DIR/convoy_NAME.so), loading it on first use:
 * DIR is the parameter module_dir when set, else the build folder's device/.libs when
 * the code runs from the build folder, else the install folder (pkglibdir). Returns NULL
 * with the reason in why (the dlopen/dlsym message, or the mismatch) when the module
 * cannot be used; a failure is not remembered, so a later call tries again. Thread-safe.
 * A loaded module stays loaded until the process ends (vendor runtimes do not survive
 * being unloaded).
 */
const convoy__device_component_t *convoy__module_component(const char *name,
                                                           const convoy__params_t *params,
                                                           char *why, size_t why_len);

/* The folder convoy__module_component would load from with these parameters. */
const char *convoy__module_dir(const convoy__params_t *params, char *buf, size_t len);

/*
 * A stand-in for the module component NAME (cuda, hip), defined in libconvoy: the
 * parameters, doc and priority are libconvoy's own (NAME_params.h), so they are known,
 * checked and listed whether or not the module loads; query and open load the module.
 */
#define CONVOY__MODULE_STANDIN(NAME, KIND, PRIORITY)                                               \
    static int NAME##_standin_query(const convoy__params_t *params, char *why, size_t why_len)     \
    {                                                                                              \
        const convoy__device_component_t *c =                                                      \
            convoy__module_component(#NAME, params, why, why_len);                                 \
        return c != NULL ? c->query(params, why, why_len) : 0;                                     \
    }                                                                                              \
    static convoy_status_t NAME##_standin_open(convoy_context_t *ctx, int local_index,             \
                                               int global_index, convoy__device_t **dev_p)         \
    {                                                                                              \
        return convoy__module_open(#NAME, ctx, local_index, global_index, dev_p);                  \
    }                                                                                              \
    const convoy__device_component_t convoy__device_##NAME = {                                     \
        .name = #NAME,                                                                             \
        .priority = (PRIORITY),                                                                    \
        .kind = (KIND),                                                                            \
        .doc = convoy__##NAME##_doc,                                                               \
        .params = convoy__##NAME##_params,                                                         \
        .query = NAME##_standin_query,                                                             \
        .open = NAME##_standin_open,                                                               \
        .close = NULL, /* a device closes through its own (the module's) component */              \
        .host_mem = NULL,                                                                          \
    }

/* open() of a module component: loads it (see convoy__module_component) or fails with
 * CONVOY_ERR_UNAVAILABLE and the reason. */
convoy_status_t convoy__module_open(const char *name, convoy_context_t *ctx, int local_index,
                                    int global_index, convoy__device_t **dev_p);

#endif /* CONVOY_MODULE_H */
