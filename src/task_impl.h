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
    while (atomic_exchange_explicit(&t->lock, 1, memory_order_acquire) != 0) {
        while (atomic_load_explicit(&t->lock, memory_order_relaxed) != 0) {
        }
    }
}

static inline void task_unlock(convoy__task_t *t)
{
    atomic_store_explicit(&t->lock, 0, memory_order_release);
}

#endif /* CONVOY_TASK_IMPL_H */
