/*
 * The link of one emulated device, shared by its lanes (the parameter lanes opens a
 * device once per lane, each with the device's local index): copies of every lane take
 * their place on the same per-direction timelines, as on a GPU whose lanes share one
 * PCIe or NVLink connection. Without lanes each device has a link of its own.
 */
#include "config.h"

#include <stdlib.h>

#define CONVOY__SIM_INTERNAL 1
#include "device/sim/sim.h"

static pthread_mutex_t registry_lock = PTHREAD_MUTEX_INITIALIZER;
static convoy__sim_link_t *registry; /* every link attached, of every context */

convoy__sim_link_t *convoy__sim_link_attach(convoy_context_t *ctx, int local_index)
{
    pthread_mutex_lock(&registry_lock);
    convoy__sim_link_t *l = registry;
    while (l != NULL && (l->ctx != ctx || l->local_index != local_index))
        l = l->next;
    if (l != NULL) {
        l->refs++;
    } else if ((l = calloc(1, sizeof(*l))) != NULL) {
        pthread_mutex_init(&l->lock, NULL);
        l->ctx = ctx;
        l->local_index = local_index;
        l->refs = 1;
        l->next = registry;
        registry = l;
    }
    pthread_mutex_unlock(&registry_lock);
    return l;
}

void convoy__sim_link_detach(convoy__sim_link_t *l)
{
    if (l == NULL)
        return;
    pthread_mutex_lock(&registry_lock);
    if (--l->refs == 0) {
        convoy__sim_link_t **pp = &registry;
        while (*pp != l)
            pp = &(*pp)->next;
        *pp = l->next;
        pthread_mutex_destroy(&l->lock);
        free(l);
    }
    pthread_mutex_unlock(&registry_lock);
}
