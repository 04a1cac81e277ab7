/*
 * Events of a Level Zero device (device.h's events over Level Zero events).
 *
 * A convoy event holds the Level Zero event its last record signals. Level Zero events
 * come from event pools (ZE_POOL_EVENTS each, created as needed, kept until close) and
 * are reused; a used one must be reset on the host before it is signalled again. That
 * is where Level Zero differs from CUDA: a wait appended to a command list reads the
 * event when the list reaches it, not when it is appended, so an event reset and
 * signalled again while a wait on it has not run yet would hold that wait until the
 * new signal (or for ever). So each wait is followed on its list by a signal of an
 * "ack" event of its own, which only the host reads, and a Level Zero event is reset
 * only once it and the acks of every wait on it have been signalled. A record therefore
 * signals a fresh event, and the one it replaces is retired until then (dev->retired,
 * swept when no event is free).
 *
 * All of it runs on the device's progress thread (device.h), or at close.
 */
#include "config.h"

#include <stdint.h>
#include <stdlib.h>

#include "device/ze/ze_dev.h"

#define ZE_POOL_EVENTS 64

struct convoy__ze_slot {
    ze_event_handle_t h;
    convoy__ze_slot_t *next; /* in dev->free or dev->retired, or in the owner's acks */
    convoy__ze_slot_t *acks; /* the acks of the waits on it since it was last reset */
    int stuck;               /* a wait on it went without its ack: never reset */
};

struct convoy__ze_pool {
    ze_event_pool_handle_t h;
    convoy__ze_pool_t *next;
    int created; /* events created (slots[0..created)) */
    convoy__ze_slot_t slots[ZE_POOL_EVENTS];
};

/* What the pipeline holds as a convoy__event_t. */
typedef struct ze_event {
    convoy__ze_slot_t *cur; /* signalled by the last record; NULL before the first */
} ze_event_t;

static int signalled(const convoy__ze_slot_t *s)
{
    return zeEventQueryStatus(s->h) == ZE_RESULT_SUCCESS;
}

/* Whether s can be reset: it and every ack of it signalled. */
static int idle(const convoy__ze_slot_t *s)
{
    if (s->stuck || !signalled(s))
        return 0;
    for (const convoy__ze_slot_t *a = s->acks; a != NULL; a = a->next)
        if (!signalled(a))
            return 0;
    return 1;
}

static void push_free(convoy__ze_dev_t *dev, convoy__ze_slot_t *s)
{
    if (CONVOY_ZE_CALL(NULL, dev->base.name, zeEventHostReset(s->h)) != CONVOY_SUCCESS) {
        convoy__log_warn("%s: a Level Zero event that cannot be reset is not reused",
                         dev->base.name);
        return;
    }
    s->next = dev->free;
    dev->free = s;
}

/* Reset an idle slot and its acks onto the free list. */
static void recycle(convoy__ze_dev_t *dev, convoy__ze_slot_t *s)
{
    convoy__ze_slot_t *a = s->acks;
    s->acks = NULL;
    while (a != NULL) {
        convoy__ze_slot_t *next = a->next;
        push_free(dev, a);
        a = next;
    }
    push_free(dev, s);
}

/* A slot its event no longer signals: free now if idle, else retired. */
static void release(convoy__ze_dev_t *dev, convoy__ze_slot_t *s)
{
    if (idle(s)) {
        recycle(dev, s);
    } else {
        s->next = dev->retired;
        dev->retired = s;
    }
}

static convoy_status_t add_pool(convoy__ze_dev_t *dev)
{
    convoy__device_t *b = &dev->base;
    convoy__ze_pool_t *p = convoy__calloc(b->ctx, 1, sizeof(*p), "a Level Zero event pool");
    if (p == NULL)
        return CONVOY_ERR_NOMEM;
    ze_event_pool_desc_t desc = {.stype = ZE_STRUCTURE_TYPE_EVENT_POOL_DESC,
                                 .flags = ZE_EVENT_POOL_FLAG_HOST_VISIBLE,
                                 .count = ZE_POOL_EVENTS};
    convoy_status_t st = CONVOY_ZE_CALL(
        b->ctx, b->name, zeEventPoolCreate(dev->zctx, &desc, 1, &dev->device, &p->h));
    if (st != CONVOY_SUCCESS) {
        free(p);
        return st;
    }
    p->next = dev->pools;
    dev->pools = p;
    for (int i = 0; i < ZE_POOL_EVENTS && st == CONVOY_SUCCESS; i++) {
        ze_event_desc_t ed = {.stype = ZE_STRUCTURE_TYPE_EVENT_DESC,
                              .index = (uint32_t)i,
                              .signal = ZE_EVENT_SCOPE_FLAG_HOST,
                              .wait = ZE_EVENT_SCOPE_FLAG_HOST};
        convoy__ze_slot_t *s = &p->slots[i];
        st = CONVOY_ZE_CALL(b->ctx, b->name, zeEventCreate(p->h, &ed, &s->h));
        if (st == CONVOY_SUCCESS) {
            p->created++;
            s->next = dev->free;
            dev->free = s;
        }
    }
    return p->created > 0 ? CONVOY_SUCCESS : st;
}

/* A reset Level Zero event: a free one, else one of the retired that is idle now, else
 * one of a new pool. NULL with the error recorded. */
static convoy__ze_slot_t *get_slot(convoy__ze_dev_t *dev)
{
    if (dev->free == NULL) {
        convoy__ze_slot_t **pp = &dev->retired;
        while (*pp != NULL) {
            convoy__ze_slot_t *s = *pp;
            if (idle(s)) {
                *pp = s->next;
                recycle(dev, s);
            } else {
                pp = &s->next;
            }
        }
    }
    if (dev->free == NULL && add_pool(dev) != CONVOY_SUCCESS)
        return NULL;
    convoy__ze_slot_t *s = dev->free;
    dev->free = s->next;
    s->next = NULL;
    s->acks = NULL;
    s->stuck = 0;
    return s;
}

/* Back to the free list unsignalled (a signal that could not be appended). */
static void unget_slot(convoy__ze_dev_t *dev, convoy__ze_slot_t *s)
{
    s->next = dev->free;
    dev->free = s;
}

convoy_status_t convoy__ze_event_create(convoy__device_t *d, convoy__event_t **event_p)
{
    ze_event_t *e = convoy__calloc(d->ctx, 1, sizeof(*e), "an event");
    if (e == NULL)
        return CONVOY_ERR_NOMEM;
    *event_p = (convoy__event_t *)(void *)e;
    return CONVOY_SUCCESS;
}

void convoy__ze_event_destroy(convoy__device_t *d, convoy__event_t *event)
{
    ze_event_t *e = (ze_event_t *)(void *)event;
    if (e == NULL)
        return;
    if (e->cur != NULL)
        release(convoy__ze_dev(d), e->cur);
    free(e);
}

convoy_status_t convoy__ze_event_record(convoy__device_t *d, convoy__event_t *event,
                                        convoy__stream_t *stream)
{
    convoy__ze_dev_t *dev = convoy__ze_dev(d);
    convoy__ze_stream_t *s = convoy__ze_stream(stream);
    ze_event_t *e = (ze_event_t *)(void *)event;
    convoy_status_t st = convoy__ze_order(dev, s);
    if (st != CONVOY_SUCCESS)
        return st;
    convoy__ze_slot_t *slot = get_slot(dev);
    if (slot == NULL)
        return CONVOY_ERR_DEVICE;
    st = CONVOY_ZE_CALL(d->ctx, d->name, zeCommandListAppendSignalEvent(s->list, slot->h));
    if (st != CONVOY_SUCCESS) {
        unget_slot(dev, slot);
        return st;
    }
    if (e->cur != NULL)
        release(dev, e->cur);
    e->cur = slot;
    return CONVOY_SUCCESS;
}

/* An event never recorded is complete, as on CUDA. */
int convoy__ze_event_query(convoy__device_t *d, convoy__event_t *event)
{
    ze_event_t *e = (ze_event_t *)(void *)event;
    if (e->cur == NULL)
        return 1;
    ze_result_t rc = zeEventQueryStatus(e->cur->h);
    if (rc == ZE_RESULT_SUCCESS)
        return 1;
    if (rc == ZE_RESULT_NOT_READY)
        return 0;
    return (int)convoy__ze_fail(rc, "zeEventQueryStatus", d->ctx, d->name);
}

convoy_status_t convoy__ze_stream_wait_event(convoy__device_t *d, convoy__stream_t *stream,
                                             convoy__event_t *event)
{
    convoy__ze_dev_t *dev = convoy__ze_dev(d);
    convoy__ze_stream_t *s = convoy__ze_stream(stream);
    ze_event_t *e = (ze_event_t *)(void *)event;
    if (e->cur == NULL)
        return CONVOY_SUCCESS;
    convoy__ze_slot_t *ack = get_slot(dev);
    if (ack == NULL)
        return CONVOY_ERR_DEVICE;
    convoy_status_t st =
        CONVOY_ZE_CALL(d->ctx, d->name, zeCommandListAppendWaitOnEvents(s->list, 1, &e->cur->h));
    if (st != CONVOY_SUCCESS) {
        unget_slot(dev, ack);
        return st;
    }
    /* The wait holds every later command of the list, this signal included. */
    if (CONVOY_ZE_CALL(d->ctx, d->name, zeCommandListAppendSignalEvent(s->list, ack->h)) !=
        CONVOY_SUCCESS) {
        convoy__log_warn("%s; the event waited on is not reused", convoy_last_error(NULL));
        unget_slot(dev, ack);
        e->cur->stuck = 1;
        return CONVOY_SUCCESS; /* the wait itself is in the list */
    }
    ack->next = e->cur->acks;
    e->cur->acks = ack;
    return CONVOY_SUCCESS;
}

convoy_status_t convoy__ze_signal_and_wait(convoy__ze_dev_t *dev, convoy__ze_stream_t *s)
{
    convoy__device_t *b = &dev->base;
    convoy_status_t st = convoy__ze_order(dev, s);
    if (st != CONVOY_SUCCESS)
        return st;
    convoy__ze_slot_t *slot = get_slot(dev);
    if (slot == NULL)
        return CONVOY_ERR_DEVICE;
    st = CONVOY_ZE_CALL(b->ctx, b->name, zeCommandListAppendSignalEvent(s->list, slot->h));
    if (st != CONVOY_SUCCESS) {
        unget_slot(dev, slot);
        return st;
    }
    st = CONVOY_ZE_CALL(b->ctx, b->name, zeEventHostSynchronize(slot->h, UINT64_MAX));
    release(dev, slot);
    return st;
}

void convoy__ze_events_fini(convoy__ze_dev_t *dev)
{
    while (dev->pools != NULL) {
        convoy__ze_pool_t *p = dev->pools;
        dev->pools = p->next;
        for (int i = 0; i < p->created; i++)
            CONVOY_ZE_CALL(NULL, dev->base.name, zeEventDestroy(p->slots[i].h));
        CONVOY_ZE_CALL(NULL, dev->base.name, zeEventPoolDestroy(p->h));
        free(p);
    }
    dev->free = NULL;
    dev->retired = NULL;
}
