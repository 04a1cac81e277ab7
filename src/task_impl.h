/*
 * A task's own small lock and state, for the files of the task life cycle (src/insert.c,
 * src/task.c). Internal to convoy.
 */
#ifndef CONVOY_TASK_IMPL_H
#define CONVOY_TASK_IMPL_H

#include "src/core.h"

static inline int task_state(const convoy__task_t *t)
{
    return __atomic_load_n(&t->state, __ATOMIC_ACQUIRE);
}

static inline void task_lock(convoy__task_t *t)
{
    convoy__spin_lock(&t->lock);
}

static inline void task_unlock(convoy__task_t *t)
{
    convoy__spin_unlock(&t->lock);
}

#endif /* CONVOY_TASK_IMPL_H */
