/*
 * stress_misuse's misuse (tests/stress_misuse.c says what the program proves): one random
 * bad call, or group of calls, at a time, each checked for its documented error and
 * message; and the chore that calls what a chore may not.
 */
#include "config.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "convoy.h"
#include "stress_misuse.h"

/* What a misbehaving chore does, from its args. */
enum { BAD_WAIT, BAD_ACQUIRE, BAD_FREE, BAD_FINI, BAD_FAIL, BAD_FAIL0, BAD_FAIL_NULL, BAD_COUNT };
typedef struct bad_args {
    int what;
    convoy_data_t *own; /* the handle of the task's own datum */
    int code;
} bad_args_t;
atomic_int sm_chore_violations;
char sm_chore_violation[256];

static void chore_bad(const char *what, convoy_status_t st)
{
    if (atomic_fetch_add(&sm_chore_violations, 1) == 0)
        snprintf(sm_chore_violation, sizeof(sm_chore_violation), "a chore's %s returned %s", what,
                 convoy_status_name(st));
}

int sm_bad_chore(const convoy_task_view_t *t, void *stream)
{
    (void)stream;
    bad_args_t a;
    memcpy(&a, t->args, sizeof(a));
    convoy_status_t st;
    switch (a.what) {
    case BAD_WAIT:
        if ((st = convoy_wait(sm_ctx)) != CONVOY_ERR_STATE)
            chore_bad("convoy_wait", st);
        break;
    case BAD_ACQUIRE:
        /* INVALID when the main thread is freeing the datum (waiting for this task). */
        st = convoy_data_acquire(a.own, CONVOY_READ);
        if (st != CONVOY_ERR_STATE && st != CONVOY_ERR_INVALID)
            chore_bad("convoy_data_acquire", st);
        break;
    case BAD_FREE:
        convoy_data_free(a.own); /* refused: the handle stays */
        if (convoy_data_bytes(a.own) != NINT * sizeof(int))
            chore_bad("convoy_data_free (the handle went)", CONVOY_SUCCESS);
        break;
    case BAD_FINI:
        convoy_fini(sm_ctx); /* refused: the context stays */
        break;
    case BAD_FAIL:
        convoy_task_fail(t, a.code);
        convoy_task_fail(t, a.code); /* twice: still one failure */
        return 0;
    case BAD_FAIL0:
        convoy_task_fail(t, 0); /* taken as -1 */
        return 0;
    case BAD_FAIL_NULL:
        convoy_task_fail(NULL, 3); /* ignored */
        return 0;
    }
    return 0;
}

/* One random misuse. */
void sm_misuse(void)
{
    convoy_status_t st;
    char buf[64];
    int j = sm_pick(NJUNK);
    convoy_access_t modes[CONVOY_MAX_FLOWS + 1];
    for (int i = 0; i <= CONVOY_MAX_FLOWS; i++)
        modes[i] = CONVOY_RW;
    convoy_class_t *c = NULL;
    switch (sm_pick(24)) {
    case 0:
        sm_expect("convoy_task_insert(NULL ctx)",
                  convoy_task_insert(NULL, sm_cls_add, NULL, 0, &sm_junk_d[j]), CONVOY_ERR_INVALID,
                  NULL, "ctx");
        break;
    case 1:
        sm_expect("convoy_task_insert(NULL cls)",
                  convoy_task_insert(sm_ctx, NULL, NULL, 0, &sm_junk_d[j]), CONVOY_ERR_INVALID,
                  sm_ctx, "cls");
        break;
    case 2: {
        convoy_data_t *f[2] = {sm_junk_d[j], NULL};
        sm_expect("convoy_task_insert(NULL flow)",
                  convoy_task_insert(sm_ctx, sm_cls_addfrom, NULL, 0, f), CONVOY_ERR_INVALID,
                  sm_ctx, "flow 1");
        sm_expect("convoy_task_insert(NULL flows)",
                  convoy_task_insert(sm_ctx, sm_cls_add, NULL, 0, NULL), CONVOY_ERR_INVALID, sm_ctx,
                  "flows");
        sm_expect("convoy_task_insert(NULL args, size 4)",
                  convoy_task_insert(sm_ctx, sm_cls_add, NULL, 4, &sm_junk_d[j]),
                  CONVOY_ERR_INVALID, sm_ctx, "args_size is 4");
        break;
    }
    case 3: {
        int n = sm_pick(2) ? 0 : CONVOY_MAX_FLOWS + 1 + sm_pick(100);
        snprintf(buf, sizeof(buf), "nflows %d", n);
        sm_expect("convoy_class_new(nflows)", convoy_class_new(sm_ctx, "bad", n, modes, 0, &c),
                  CONVOY_ERR_INVALID, sm_ctx, buf);
        break;
    }
    case 4: {
        int bad = sm_pick(2) ? 0 : 4 + sm_pick(100);
        modes[1] = (convoy_access_t)bad;
        snprintf(buf, sizeof(buf), "access mode %d", bad);
        sm_expect("convoy_class_new(mode)", convoy_class_new(sm_ctx, "bad", 2, modes, 0, &c),
                  CONVOY_ERR_INVALID, sm_ctx, buf);
        sm_expect("convoy_class_new(NULL modes)", convoy_class_new(sm_ctx, "bad", 2, NULL, 0, &c),
                  CONVOY_ERR_INVALID, sm_ctx, "modes");
        sm_expect("convoy_class_new(no name)", convoy_class_new(sm_ctx, "", 1, modes, 0, &c),
                  CONVOY_ERR_INVALID, sm_ctx, "name");
        sm_expect("convoy_class_new(NULL cls_p)",
                  convoy_class_new(sm_ctx, "bad", 1, modes, 0, NULL), CONVOY_ERR_INVALID, sm_ctx,
                  "cls_p");
        break;
    }
    case 5: {
        unsigned flags = 1u << (2 + sm_pick(30)); /* bits 0 and 1 are flags */
        snprintf(buf, sizeof(buf), "0x%x", flags);
        sm_expect("convoy_class_new(flags)", convoy_class_new(sm_ctx, "bad", 1, modes, flags, &c),
                  CONVOY_ERR_INVALID, sm_ctx, buf);
        break;
    }
    case 6: {
        int kind = sm_pick(2) ? -1 - sm_pick(5) : CONVOY_DEVICE_KIND_COUNT + sm_pick(100);
        snprintf(buf, sizeof(buf), "device kind %d", kind);
        sm_expect("convoy_class_set_chore(kind)",
                  convoy_class_set_chore(sm_cls_flaky, (convoy_device_kind_t)kind, sm_add_chore),
                  CONVOY_ERR_INVALID, sm_ctx, buf);
        sm_expect(
            "convoy_class_set_batch_chore(kind)",
            convoy_class_set_batch_chore(sm_cls_add, (convoy_device_kind_t)kind, sm_add_batch),
            CONVOY_ERR_INVALID, sm_ctx, buf);
        sm_expect("convoy_class_set_chore(NULL)",
                  convoy_class_set_chore(NULL, CONVOY_DEVICE_CPU, sm_add_chore), CONVOY_ERR_INVALID,
                  NULL, "cls");
        sm_expect("convoy_class_set_batch_chore(not batchable)",
                  convoy_class_set_batch_chore(sm_cls_addfrom, CONVOY_DEVICE_CPU, sm_add_batch),
                  CONVOY_ERR_INVALID, sm_ctx, "BATCHABLE");
        break;
    }
    case 7: {
        /* Overlapping registrations, the NULL pointer and zero bytes. */
        int off = sm_pick(NINT);
        convoy_data_t *d = NULL;
        sm_expect(
            "convoy_data_new(overlap)",
            convoy_data_new(sm_ctx, (char *)sm_junk_x[j] + off * sizeof(int), sizeof(int), &d),
            CONVOY_ERR_INVALID, sm_ctx, "overlaps");
        sm_expect("convoy_data_new(overlap, valid)",
                  convoy_data_new(sm_ctx, sm_valid_x[sm_pick(NVALID)], 2 * NINT * sizeof(int), &d),
                  CONVOY_ERR_INVALID, sm_ctx, "overlaps");
        sm_expect("convoy_data_new(NULL)", convoy_data_new(sm_ctx, NULL, 4, &d), CONVOY_ERR_INVALID,
                  sm_ctx, "host_ptr");
        sm_expect("convoy_data_new(0 bytes)", convoy_data_new(sm_ctx, sm_junk_x[NJUNK], 0, &d),
                  CONVOY_ERR_INVALID, sm_ctx, "bytes is 0");
        sm_expect("convoy_data_new(past the end)",
                  convoy_data_new(sm_ctx, (void *)(UINTPTR_MAX - 8), 64, &d), CONVOY_ERR_INVALID,
                  sm_ctx, "end of the address space");
        break;
    }
    case 8: {
        int mode = sm_pick(2) ? 0 : 4 + sm_pick(50);
        snprintf(buf, sizeof(buf), "access mode %d", mode);
        sm_expect("convoy_data_acquire(mode)",
                  convoy_data_acquire(sm_junk_d[j], (convoy_access_t)mode), CONVOY_ERR_INVALID,
                  sm_ctx, buf);
        sm_expect("convoy_data_acquire(NULL)", convoy_data_acquire(NULL, CONVOY_READ),
                  CONVOY_ERR_INVALID, NULL, "data");
        break;
    }
    case 9: {
        unsigned flags = 1u << (2 + sm_pick(30));
        snprintf(buf, sizeof(buf), "0x%x", flags);
        sm_expect("convoy_data_set_flags", convoy_data_set_flags(sm_junk_d[j], flags),
                  CONVOY_ERR_INVALID, sm_ctx, buf);
        break;
    }
    case 10: {
        const char *names[] = {"no_such_param", "", "SCHED", "sched ", "batch_max_tasksx"};
        const char *name = names[sm_pick(5)];
        sm_expect("convoy_param_get(unknown)", convoy_param_get(sm_ctx, name, buf, sizeof(buf)),
                  CONVOY_ERR_NOT_FOUND, sm_ctx, name);
        sm_expect("convoy_param_preset(unknown)", convoy_param_preset(name, "1"),
                  CONVOY_ERR_NOT_FOUND, NULL, name);
        const char *values[] = {"-5", "abc", "1e999", "99999999999999999999", "12Q"};
        const char *value = values[sm_pick(5)];
        sm_expect("convoy_param_preset(nthreads)", convoy_param_preset("nthreads", value),
                  CONVOY_ERR_INVALID, NULL, value);
        sm_expect("convoy_param_preset(sched)", convoy_param_preset("sched", "nosuchsched"),
                  CONVOY_ERR_NOT_FOUND, NULL, "nosuchsched");
        break;
    }
    case 11: {
        convoy_task_opts_t o = {0};
        int n = convoy_accel_count(sm_ctx);
        o.where = sm_pick(2) ? n + 1 + sm_pick(100) : -2 - sm_pick(100);
        snprintf(buf, sizeof(buf), "where %d", o.where);
        sm_expect(
            "convoy_task_insert_ex(where)",
            convoy_task_insert_ex(sm_ctx, sm_cls_add, &o.where, sizeof(int), &sm_junk_d[j], &o),
            CONVOY_ERR_INVALID, sm_ctx, buf);
        if (n > 0) {
            o.where = CONVOY_WHERE_ACCEL(sm_pick(n));
            sm_expect("convoy_task_insert_ex(accel, CPU-only class)",
                      convoy_task_insert_ex(sm_ctx, sm_cls_cpu_only, &o.where, sizeof(int),
                                            &sm_junk_d[j], &o),
                      CONVOY_ERR_INVALID, sm_ctx, "no chore");
        }
        break;
    }
    case 12:
    case 13: {
        /* A chore that calls what it may not. */
        bad_args_t a = {.what = sm_pick(BAD_COUNT), .own = sm_junk_d[j], .code = 1 + sm_pick(100)};
        convoy_task_opts_t o = {.done = sm_done_cb};
        int *o_cb = NULL;
        if (sm_ncb < MAXCB) {
            o.done_arg = (void *)(intptr_t)sm_ncb;
            sm_expect_fail[sm_ncb] = a.what == BAD_FAIL || a.what == BAD_FAIL0 ? 1 : -1;
            o_cb = &sm_ncb;
        }
        st = convoy_task_insert_ex(sm_ctx, sm_cls_bad, &a, sizeof(a), &sm_junk_d[j],
                                   o_cb ? &o : NULL);
        if (st != CONVOY_SUCCESS)
            sm_fail("inserting a misbehaving chore's task: %s", convoy_last_error(NULL));
        else if (o_cb != NULL)
            sm_ncb++;
        break;
    }
    case 14: {
        /* Remove a chore of a class with tasks pending (they fail or run elsewhere),
         * sometimes put it back. */
        int kind = sm_pick(2) ? CONVOY_DEVICE_CPU : CONVOY_DEVICE_SIM;
        for (int k = 0; k < 1 + sm_pick(4); k++) {
            int delta = 1;
            st = convoy_task_insert(sm_ctx, sm_cls_flaky, &delta, sizeof(delta),
                                    &sm_junk_d[sm_pick(NJUNK)]);
            if (st != CONVOY_SUCCESS && st != CONVOY_ERR_INVALID) /* no chore left at all */
                sm_fail("inserting into a flaky class: %s", convoy_status_name(st));
        }
        sm_expect("convoy_class_set_chore(NULL fn)",
                  convoy_class_set_chore(sm_cls_flaky, (convoy_device_kind_t)kind,
                                         sm_pick(2) ? NULL : sm_add_chore),
                  CONVOY_SUCCESS, sm_ctx, NULL);
        break;
    }
    case 15: {
        /* A class without any chore for the devices in use. */
        if (convoy_class_new(sm_ctx, "nochore", 1, modes, 0, &c) != CONVOY_SUCCESS) {
            sm_fail("convoy_class_new(nochore): %s", convoy_last_error(NULL));
            break;
        }
        sm_expect("convoy_task_insert(no chore)",
                  convoy_task_insert(sm_ctx, c, NULL, 0, &sm_junk_d[j]), CONVOY_ERR_INVALID, sm_ctx,
                  "no chore");
        break;
    }
    case 16: {
        /* Free a datum with tasks pending, then again (refused), then register its
         * memory anew. */
        int delta = 2;
        for (int k = 0; k < sm_pick(4); k++)
            convoy_task_insert(sm_ctx, sm_cls_add, &delta, sizeof(delta), &sm_junk_d[j]);
        convoy_data_t *gone = sm_junk_d[j];
        convoy_data_free(gone);
        convoy_data_free(gone);
        sm_expect("convoy_data_acquire(freed)", convoy_data_acquire(gone, CONVOY_READ),
                  CONVOY_ERR_INVALID, NULL, "not a live data handle");
        sm_expect("convoy_data_set_flags(freed)", convoy_data_set_flags(gone, 0),
                  CONVOY_ERR_INVALID, NULL, "not a live data handle");
        st = convoy_data_new(sm_ctx, sm_junk_x[j], sizeof(sm_junk_x[j]), &sm_junk_d[j]);
        if (st != CONVOY_SUCCESS) {
            sm_fail("registering freed memory again: %s", convoy_last_error(NULL));
            exit(1); /* junk_d[j] is gone: nothing below could use it */
        }
        break;
    }
    case 17:
        sm_expect("convoy_wait(NULL)", convoy_wait(NULL), CONVOY_ERR_INVALID, NULL, "ctx");
        sm_expect("convoy_data_set_flags(NULL)", convoy_data_set_flags(NULL, 0), CONVOY_ERR_INVALID,
                  NULL, "data");
        sm_expect("convoy_class_new(NULL ctx)", convoy_class_new(NULL, "x", 1, modes, 0, &c),
                  CONVOY_ERR_INVALID, NULL, "ctx");
        sm_expect("convoy_data_new(NULL ctx)", convoy_data_new(NULL, sm_junk_x[NJUNK], 4, NULL),
                  CONVOY_ERR_INVALID, NULL, "ctx");
        convoy_data_free(NULL);
        convoy_fini(NULL);
        if (convoy_host_alloc(sm_ctx, 0) != NULL)
            sm_fail("convoy_host_alloc(0) is not NULL");
        convoy_host_free(sm_ctx, NULL);
        if (convoy_data_host_ptr(NULL) != NULL || convoy_data_bytes(NULL) != 0)
            sm_fail("convoy_data_host_ptr/bytes(NULL)");
        break;
    case 18: {
        /* A datum of another context (rarely: a context starts threads). */
        if (sm_pick(8) != 0)
            break;
        convoy_context_t *other = NULL;
        static int other_x[NINT];
        if (convoy_init(NULL, NULL, &other) != CONVOY_SUCCESS) {
            sm_fail("a second context: %s", convoy_last_error(NULL));
            break;
        }
        convoy_data_t *od = NULL;
        if (convoy_data_new(other, other_x, sizeof(other_x), &od) == CONVOY_SUCCESS)
            sm_expect("convoy_task_insert(foreign datum)",
                      convoy_task_insert(sm_ctx, sm_cls_add, buf, sizeof(int), &od),
                      CONVOY_ERR_INVALID, sm_ctx, "another context");
        convoy_class_t *oc = NULL;
        if (convoy_class_new(other, "foreign", 1, modes, 0, &oc) == CONVOY_SUCCESS)
            sm_expect("convoy_task_insert(foreign class)",
                      convoy_task_insert(sm_ctx, oc, NULL, 0, &sm_junk_d[j]), CONVOY_ERR_INVALID,
                      sm_ctx, "another context");
        convoy_fini(other); /* frees od and oc */
        if (od != NULL) {
            /* After fini: refused, nothing read (the fini freed it). */
            convoy_data_free(od);
            sm_expect("convoy_data_acquire(after fini)", convoy_data_acquire(od, CONVOY_READ),
                      CONVOY_ERR_INVALID, NULL, "not a live data handle");
        }
        break;
    }
    case 19:
        if (convoy_accel_name(sm_ctx, -1) != NULL || convoy_accel_name(sm_ctx, 1000) != NULL)
            sm_fail("convoy_accel_name out of range is not NULL");
        sm_expect("convoy_param_get(len 0)", convoy_param_get(sm_ctx, "sched", buf, 0),
                  CONVOY_ERR_INVALID, sm_ctx, "len 0");
        sm_expect("convoy_param_get(NULL buf)", convoy_param_get(sm_ctx, "sched", NULL, 8),
                  CONVOY_ERR_INVALID, sm_ctx, "NULL");
        break;
    default: {
        /* Valid work on the junk data, with a datum in two flows of one task. */
        convoy_data_t *f[2] = {sm_junk_d[j], sm_junk_d[j]};
        sm_expect("convoy_task_insert(one datum, two flows)",
                  convoy_task_insert(sm_ctx, sm_cls_addfrom, NULL, 0, f), CONVOY_SUCCESS, sm_ctx,
                  NULL);
        break;
    }
    }
}
