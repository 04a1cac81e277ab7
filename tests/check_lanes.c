/*
 * check_lanes: the parameter lanes (src/component.c, doc/design.md "Lanes"). Each device
 * is opened once per lane: lane j of sim k is the accelerator "simk.j" with 1/lanes of
 * the device's memory, its own progress thread and streams, and the device's one link
 * (device/sim/sim_link.c); a datum written on one lane and read on another arrives
 * intact (through host memory). (That placement spreads independent tasks evenly over
 * accelerators, lanes or not, is check_batch's test_independent_tasks_spread_evenly.)
 */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "device/sim/sim.h"
#include "src/context.h"
#include "src/core.h"
#include "tests/test_util.h"

START_TEST(names_and_memory)
{
    /* Proves: with lanes 2 and sim_count 2 there are four accelerators, sim0.0, sim0.1,
     * sim1.0 and sim1.1 in that order, each with half of sim_memory; with lanes 1 the
     * names and the memory are those without lanes; device_memory is the device's,
     * shared by its lanes; lanes 0 and 9 are refused, naming the value. */
    const char *const two[] = {"devices", "sim",        "sim_count", "2", "lanes",
                               "2",       "sim_memory", "64M",       NULL};
    convoy_context_t *ctx = tu_init(two);
    ck_assert_int_eq(convoy_accel_count(ctx), 4);
    const char *names[] = {"sim0.0", "sim0.1", "sim1.0", "sim1.1"};
    for (int i = 0; i < 4; i++) {
        ck_assert_str_eq(convoy_accel_name(ctx, i), names[i]);
        ck_assert_uint_eq(convoy__ctx_accel(ctx, i)->mem_capacity, 32u << 20);
    }
    convoy_fini(ctx);

    /* device_memory limits the device: its lanes share it. */
    ctx = tu_init((const char *const[]){"devices", "sim", "lanes", "2", "sim_memory", "64M",
                                        "device_memory", "16M", NULL});
    ck_assert_int_eq(convoy_accel_count(ctx), 2);
    for (int i = 0; i < 2; i++)
        ck_assert_uint_eq(convoy__ctx_accel(ctx, i)->mem_capacity, 8u << 20);
    convoy_fini(ctx);

    ctx = tu_init((const char *const[]){"devices", "sim", "lanes", "1", "sim_memory", "64M", NULL});
    ck_assert_int_eq(convoy_accel_count(ctx), 1);
    ck_assert_str_eq(convoy_accel_name(ctx, 0), "sim0");
    ck_assert_uint_eq(convoy__ctx_accel(ctx, 0)->mem_capacity, 64u << 20);
    convoy_fini(ctx);

    convoy_param_preset_clear();
    ck_assert_int_eq(convoy_param_preset("lanes", "0"), CONVOY_ERR_INVALID);
    tu_assert_error_has(NULL, "'lanes'", "'0'");
    ck_assert_int_eq(convoy_param_preset("lanes", "9"), CONVOY_ERR_INVALID);
    tu_assert_error_has(NULL, "'lanes'", "'9'");
    convoy_param_preset_clear();
}
END_TEST

static int reads_only(const convoy_task_view_t *t, void *s)
{
    (void)t;
    (void)s;
    return 0;
}

START_TEST(whole_devices_only)
{
    /* Proves: where the lanes of every device would pass the most accelerators convoy
     * holds (16), the devices that fit are used with all their lanes and the rest not
     * at all: 6 sim devices with 3 lanes each are 5 devices, 15 accelerators, the last
     * sim4.2. */
    convoy_context_t *ctx = tu_init((const char *const[]){"devices", "sim", "sim_count", "6",
                                                          "lanes", "3", "sim_memory", "8M", NULL});
    ck_assert_int_eq(convoy_accel_count(ctx), 15);
    ck_assert_str_eq(convoy_accel_name(ctx, 14), "sim4.2");
    convoy_fini(ctx);
}
END_TEST

START_TEST(lanes_share_the_link)
{
    /* Proves: the copies of two lanes of one sim device take turns on its link. Two tasks,
     * one pinned to each lane, each stage in 256 KiB at 0.1 GB/s (2.6 ms on the link):
     * the later copy ends at least two transfer times after the earlier was enqueued,
     * where two links would let both end one transfer time after their enqueues. */
    enum { BYTES = 256 << 10 };
    const char *const preset[] = {"devices",
                                  "sim",
                                  "lanes",
                                  "2",
                                  "sim_bandwidth_gbs",
                                  "0.1",
                                  "sim_submit_us",
                                  "0",
                                  "sim_copy_us",
                                  "0",
                                  "sim_launch_us",
                                  "0",
                                  "sim_pageable_us",
                                  "0",
                                  "batch_split_bytes",
                                  "0",
                                  NULL};
    convoy_context_t *ctx = tu_init(preset);
    convoy_access_t ro = CONVOY_READ;
    convoy_class_t *cls;
    ck_assert_int_eq(convoy_class_new(ctx, "reader", 1, &ro, CONVOY_CLASS_BATCHABLE, &cls), 0);
    ck_assert_int_eq(convoy_class_set_chore(cls, CONVOY_DEVICE_SIM, reads_only), 0);
    char *buf[2];
    convoy_data_t *d[2];
    for (int i = 0; i < 2; i++) {
        buf[i] = calloc(1, BYTES);
        ck_assert_ptr_nonnull(buf[i]);
        ck_assert_int_eq(convoy_data_new(ctx, buf[i], BYTES, &d[i]), CONVOY_SUCCESS);
    }
    for (int i = 0; i < 2; i++) {
        convoy_task_opts_t o = {.where = CONVOY_WHERE_ACCEL(i)};
        ck_assert_int_eq(convoy_task_insert_ex(ctx, cls, NULL, 0, &d[i], &o), CONVOY_SUCCESS);
    }
    ck_assert_int_eq(convoy_wait(ctx), CONVOY_SUCCESS);
    convoy__sim_record_t rec[2];
    uint64_t first_enqueue = UINT64_MAX, last_end = 0;
    for (int i = 0; i < 2; i++) {
        convoy__sim_record_t r[8];
        int n = convoy__sim_records(convoy__ctx_accel(ctx, i), r, 8);
        int found = 0;
        for (int k = 0; k < n && k < 8; k++)
            if (r[k].dir == CONVOY__H2D && r[k].bytes == BYTES) {
                rec[i] = r[k];
                found++;
            }
        ck_assert_int_eq(found, 1);
        first_enqueue = CONVOY__MIN(first_enqueue, rec[i].enqueue_ns);
        last_end = CONVOY__MAX(last_end, rec[i].complete_ns);
    }
    uint64_t transfer_ns = (uint64_t)(BYTES / 0.1);
    ck_assert_msg(last_end >= first_enqueue + 2 * transfer_ns - 1000,
                  "the later copy ended %.3f ms after the first enqueue; one link carries two "
                  "in %.3f ms",
                  (double)(last_end - first_enqueue) / 1e6, 2.0 * (double)transfer_ns / 1e6);
    for (int i = 0; i < 2; i++) {
        convoy_data_free(d[i]);
        free(buf[i]);
    }
    convoy_fini(ctx);
}
END_TEST

static int add_one(const convoy_task_view_t *t, void *s)
{
    (void)s;
    (*(int *)t->flows[0])++;
    return 0;
}

START_TEST(data_cross_lanes)
{
    /* Proves: a chain whose tasks alternate between the two lanes (pinned) reads each
     * version the task before wrote on the other lane: 40 increments of a 4 KiB datum's
     * first word give 40 at home after the wait, each move through host memory. */
    enum { STEPS = 40, WORDS = 1024 };
    const char *const preset[] = {"devices", "sim", "lanes", "2", NULL};
    convoy_context_t *ctx = tu_init(preset);
    convoy_access_t rw = CONVOY_RW;
    convoy_class_t *cls;
    ck_assert_int_eq(convoy_class_new(ctx, "add_all", 1, &rw, CONVOY_CLASS_BATCHABLE, &cls), 0);
    ck_assert_int_eq(convoy_class_set_chore(cls, CONVOY_DEVICE_SIM, add_one), 0);
    int *w = calloc(WORDS, sizeof(int));
    ck_assert_ptr_nonnull(w);
    convoy_data_t *d;
    ck_assert_int_eq(convoy_data_new(ctx, w, WORDS * sizeof(int), &d), CONVOY_SUCCESS);
    for (int s = 0; s < STEPS; s++) {
        convoy_task_opts_t o = {.where = CONVOY_WHERE_ACCEL(s % 2)};
        ck_assert_int_eq(convoy_task_insert_ex(ctx, cls, NULL, 0, &d, &o), CONVOY_SUCCESS);
    }
    ck_assert_int_eq(convoy_wait(ctx), CONVOY_SUCCESS);
    ck_assert_int_eq(w[0], STEPS);
    convoy_stats_t st;
    convoy_get_stats(ctx, &st);
    ck_assert_uint_ge(st.d2h_copies, STEPS - 1); /* each move went through host memory */
    convoy_data_free(d);
    free(w);
    convoy_fini(ctx);
}
END_TEST

static Suite *lanes_suite(void)
{
    Suite *s = suite_create("lanes");
    TCase *tc = tcase_create("sim");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, names_and_memory);
    tcase_add_test(tc, whole_devices_only);
    tcase_add_test(tc, lanes_share_the_link);
    tcase_add_test(tc, data_cross_lanes);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return tu_main(lanes_suite());
}
