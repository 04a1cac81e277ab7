/*
 * What components may ask of a running context. Internal to convoy.
 */
#ifndef CONVOY_CONTEXT_H
#define CONVOY_CONTEXT_H

#include "convoy.h"
#include "src/param.h"

struct convoy__device;

const convoy__params_t *convoy__ctx_params(const convoy_context_t *ctx);
int convoy__ctx_accel_count(const convoy_context_t *ctx);
struct convoy__device *convoy__ctx_accel(const convoy_context_t *ctx, int index);
/* Block until no task at all is in flight, internal ones included (the drops that
 * convoy_data_free leaves running): for convoy_fini, and tests (src/wait.c). */
void convoy__wait_quiet(convoy_context_t *ctx);

#endif /* CONVOY_CONTEXT_H */
