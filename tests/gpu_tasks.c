/*
 * GPU tasks end to end (no Check: the GPU machine may not have it). Exits 77 when no CUDA
 * device can be opened. Proves, on a real GPU:
 *  - tiny tasks (3 inputs, 1 output) verify under fifo and batch, with and without the
 *    batch chore, including a datum read by every task and chains of dependent tasks, and
 *    with their inputs read in place in pinned host memory (CONVOY_CLASS_INPUTS_IN_PLACE);
 *  - a chore that fails (returns non-zero) fails its task with a message naming the task
 *    and class, cancels its successor, and leaves the host copy of the datum it would
 *    have written at its last good value;
 *  - the runtime still works after the failure;
 *  - a CPU task reading a GPU task's output finds it, with no flush task (the output went
 *    home behind its launch, device/push_behind.c), and a failing GPU task whose output a
 *    CPU task reads sends nothing home: the host keeps its last good value.
 * Last line: "N passed, N failed".
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <stdatomic.h>
#include <time.h>

#include "bench/tiny_tasks.h"
#include "convoy.h"
#include "src/core.h"

static int passed, failed;

#define EXPECT(cond, ...)                                                                          \
    do {                                                                                           \
        if (cond) {                                                                                \
            passed++;                                                                              \
        } else {                                                                                   \
            failed++;                                                                              \
            printf("FAIL %s:%d: ", __FILE__, __LINE__);                                            \
            printf(__VA_ARGS__);                                                                   \
            printf("\n");                                                                          \
        }                                                                                          \
    } while (0)

typedef struct tiny_args {
    int inputs, outputs;
} tiny_args_t;

static int failing_chore(const convoy_task_view_t *t, void *stream)
{
    (void)t;
    (void)stream;
    return 42;
}

static convoy_context_t *start(const char *sched)
{
    convoy_param_preset_clear();
    convoy_param_preset("devices", "cuda");
    convoy_param_preset("sched", sched);
    convoy_context_t *ctx;
    if (convoy_init(NULL, NULL, &ctx) != CONVOY_SUCCESS) {
        printf("SKIP: no CUDA device: %s\n", convoy_last_error(NULL));
        exit(77);
    }
    return ctx;
}

/* n tasks o = a + b*c over E floats, b shared by all; then each output is fed through a
 * second task (o2 = o + 0*o) to build chains. Checks every element. With in_place the
 * class reads its inputs in place (CONVOY_CLASS_INPUTS_IN_PLACE): every input at home,
 * up to in_place_max_bytes (64K), is read there by the kernel, through CUDA's mapping. */
static void tiny_round(const char *sched, int batch_chore, int n, int elems, int in_place)
{
    convoy_context_t *ctx = start(sched);
    convoy_access_t modes[4] = {CONVOY_READ, CONVOY_READ, CONVOY_READ, CONVOY_WRITE};
    convoy_class_t *cls;
    convoy_class_new(ctx, "tiny", 4, modes,
                     CONVOY_CLASS_BATCHABLE | (in_place ? CONVOY_CLASS_INPUTS_IN_PLACE : 0), &cls);
    convoy_class_set_chore(cls, CONVOY_DEVICE_CUDA, tiny_cuda_chore);
    if (batch_chore)
        convoy_class_set_batch_chore(cls, CONVOY_DEVICE_CUDA, tiny_cuda_batch_chore);
    size_t bytes = (size_t)elems * sizeof(float);
    float *shared = convoy_host_alloc(ctx, bytes);
    convoy_data_t *dshared;
    for (int i = 0; i < elems; i++)
        shared[i] = 2;
    convoy_data_new(ctx, shared, bytes, &dshared);
    float **a = calloc((size_t)n, sizeof(float *)), **c = calloc((size_t)n, sizeof(float *));
    float **o = calloc((size_t)n, sizeof(float *)), **o2 = calloc((size_t)n, sizeof(float *));
    convoy_data_t **da = calloc((size_t)n, sizeof(void *)),
                  **dc = calloc((size_t)n, sizeof(void *));
    convoy_data_t **dout = calloc((size_t)n, sizeof(void *)),
                  **dout2 = calloc((size_t)n, sizeof(void *));
    tiny_args_t args = {3, 1};
    for (int t = 0; t < n; t++) {
        a[t] = convoy_host_alloc(ctx, bytes);
        c[t] = convoy_host_alloc(ctx, bytes);
        o[t] = convoy_host_alloc(ctx, bytes);
        o2[t] = convoy_host_alloc(ctx, bytes);
        for (int i = 0; i < elems; i++) {
            a[t][i] = (float)(t % 11);
            c[t][i] = (float)(i % 5);
            o[t][i] = o2[t][i] = -1;
        }
        convoy_data_new(ctx, a[t], bytes, &da[t]);
        convoy_data_new(ctx, c[t], bytes, &dc[t]);
        convoy_data_new(ctx, o[t], bytes, &dout[t]);
        convoy_data_new(ctx, o2[t], bytes, &dout2[t]);
    }
    for (int t = 0; t < n; t++) {
        convoy_data_t *f[4] = {da[t], dshared, dc[t], dout[t]};
        convoy_task_insert(ctx, cls, &args, sizeof(args), f);
    }
    /* Chains: o2 = o + shared*o2's zero... keep it simple: o2 = o + 2 * c. */
    for (int t = 0; t < n; t++) {
        convoy_data_t *f[4] = {dout[t], dshared, dc[t], dout2[t]};
        convoy_task_insert(ctx, cls, &args, sizeof(args), f);
    }
    convoy_status_t st = convoy_wait(ctx);
    EXPECT(st == CONVOY_SUCCESS, "%s: wait: %s", sched, convoy_last_error(ctx));
    long bad = 0;
    for (int t = 0; t < n; t++)
        for (int i = 0; i < elems; i++) {
            float want = (float)(t % 11) + 2.0f * (float)(i % 5);
            float want2 = want + 2.0f * (float)(i % 5);
            bad += o[t][i] != want || o2[t][i] != want2;
        }
    EXPECT(bad == 0, "%s batch_chore=%d in_place=%d: %ld wrong elements", sched, batch_chore,
           in_place, bad);
    convoy_stats_t s;
    convoy_get_stats(ctx, &s);
    /* In place: a, b and c of the first tasks, b and c of the second (o is on the GPU). */
    uint64_t want_in_place = in_place && bytes <= 65536 ? 5u * (uint64_t)n : 0;
    EXPECT(s.in_place_reads == want_in_place,
           "%s in_place=%d: %llu inputs read in place, expected %llu", sched, in_place,
           (unsigned long long)s.in_place_reads, (unsigned long long)want_in_place);
    EXPECT(s.tasks_completed == (uint64_t)(2 * n), "%s: %llu tasks completed, expected %d", sched,
           (unsigned long long)s.tasks_completed, 2 * n);
    printf("tiny %s batch_chore=%d in_place=%d tasks=%d: rings=%llu h2d_submissions=%llu "
           "launches=%llu\n",
           sched, batch_chore, in_place, 2 * n, (unsigned long long)s.rings,
           (unsigned long long)s.h2d_submissions, (unsigned long long)s.launches);
    convoy_fini(ctx);
    free(a), free(c), free(o), free(o2), free(da), free(dc), free(dout), free(dout2);
}

/* A failing chore: its task fails and names itself, its successor is cancelled, the
 * datum it would have written keeps its value, and later work runs. */
static void failure_round(const char *sched)
{
    convoy_context_t *ctx = start(sched);
    convoy_access_t modes[4] = {CONVOY_READ, CONVOY_READ, CONVOY_READ, CONVOY_WRITE};
    convoy_class_t *good, *bad;
    convoy_class_new(ctx, "tiny", 4, modes, CONVOY_CLASS_BATCHABLE, &good);
    convoy_class_set_chore(good, CONVOY_DEVICE_CUDA, tiny_cuda_chore);
    convoy_class_new(ctx, "broken", 4, modes, 0, &bad);
    convoy_class_set_chore(bad, CONVOY_DEVICE_CUDA, failing_chore);
    enum { E = 1024 };
    float *in = convoy_host_alloc(ctx, E * sizeof(float));
    float *out = convoy_host_alloc(ctx, E * sizeof(float));
    float *out2 = convoy_host_alloc(ctx, E * sizeof(float));
    for (int i = 0; i < E; i++) {
        in[i] = 1;
        out[i] = 7;
        out2[i] = 9;
    }
    convoy_data_t *din, *dout, *dout2;
    convoy_data_new(ctx, in, E * sizeof(float), &din);
    convoy_data_new(ctx, out, E * sizeof(float), &dout);
    convoy_data_new(ctx, out2, E * sizeof(float), &dout2);
    tiny_args_t args = {3, 1};
    convoy_data_t *f1[4] = {din, din, din, dout};
    convoy_task_insert(ctx, bad, &args, sizeof(args), f1);
    convoy_data_t *f2[4] = {dout, din, din, dout2}; /* successor of the failed task */
    convoy_task_insert(ctx, good, &args, sizeof(args), f2);
    convoy_status_t st = convoy_wait(ctx);
    EXPECT(st == CONVOY_ERR_TASK_FAILED, "%s: wait returned %s", sched, convoy_status_name(st));
    const char *msg = convoy_last_error(ctx);
    EXPECT(strstr(msg, "task 0") && strstr(msg, "broken") && strstr(msg, "42"),
           "%s: message does not name the task, class and code: %s", sched, msg);
    convoy_stats_t s;
    convoy_get_stats(ctx, &s);
    EXPECT(s.tasks_failed == 1 && s.tasks_cancelled == 1, "%s: failed %llu cancelled %llu", sched,
           (unsigned long long)s.tasks_failed, (unsigned long long)s.tasks_cancelled);
    EXPECT(convoy_data_acquire(dout, CONVOY_READ) == CONVOY_ERR_TASK_FAILED,
           "%s: acquire of the failed write did not report it", sched);
    EXPECT(out[0] == 7 && out[E - 1] == 7 && out2[0] == 9, "%s: host data changed: %g %g", sched,
           out[0], out2[0]);
    /* Later work on the same data runs. */
    convoy_data_t *f3[4] = {din, din, din, dout};
    convoy_task_insert(ctx, good, &args, sizeof(args), f3);
    st = convoy_wait(ctx);
    EXPECT(st == CONVOY_SUCCESS && out[0] == 2 && out[E - 1] == 2,
           "%s: after the failure: %s, out=%g", sched, convoy_status_name(st), out[0]);
    convoy_fini(ctx);
}

static atomic_int read_ok, read_bad;

/* A CPU reader of output t of cpu_reader_round: every element is t % 11 + 2 * (i % 5). */
static int reader_chore(const convoy_task_view_t *v, void *stream)
{
    (void)stream;
    int t = *(const int *)v->args;
    const float *o = v->flows[0];
    int ok = 1;
    for (size_t i = 0; i < v->flow_bytes[0] / sizeof(float); i++)
        ok &= o[i] == (float)(t % 11) + 2.0f * (float)(i % 5);
    atomic_fetch_add(ok ? &read_ok : &read_bad, 1);
    return 0;
}

/* n GPU tasks, each with a CPU reader of its output inserted right after it; task
 * `broken` fails. The readers run before any convoy_wait, with no flush task; the failed
 * task's output keeps its value at home and its reader is cancelled. */
static void cpu_reader_round(const char *sched, int n, int broken)
{
    convoy_context_t *ctx = start(sched);
    convoy_access_t modes[4] = {CONVOY_READ, CONVOY_READ, CONVOY_READ, CONVOY_WRITE};
    convoy_access_t rmode = CONVOY_READ;
    convoy_class_t *cls, *bad, *reader;
    convoy_class_new(ctx, "tiny", 4, modes, CONVOY_CLASS_BATCHABLE, &cls);
    convoy_class_set_chore(cls, CONVOY_DEVICE_CUDA, tiny_cuda_chore);
    convoy_class_set_batch_chore(cls, CONVOY_DEVICE_CUDA, tiny_cuda_batch_chore);
    convoy_class_new(ctx, "broken", 4, modes, 0, &bad);
    convoy_class_set_chore(bad, CONVOY_DEVICE_CUDA, failing_chore);
    convoy_class_new(ctx, "reader", 1, &rmode, 0, &reader);
    convoy_class_set_chore(reader, CONVOY_DEVICE_CPU, reader_chore);
    enum { E = 2048 };
    size_t bytes = E * sizeof(float);
    float *shared = convoy_host_alloc(ctx, bytes);
    for (int i = 0; i < E; i++)
        shared[i] = 2;
    convoy_data_t *dshared;
    convoy_data_new(ctx, shared, bytes, &dshared);
    float **a = calloc((size_t)n, sizeof(float *)), **c = calloc((size_t)n, sizeof(float *));
    float **o = calloc((size_t)n, sizeof(float *));
    convoy_data_t **d = calloc((size_t)(3 * n), sizeof(void *));
    atomic_store(&read_ok, 0);
    atomic_store(&read_bad, 0);
    uint64_t internal = atomic_load(&ctx->next_internal_id);
    tiny_args_t args = {3, 1};
    for (int t = 0; t < n; t++) {
        a[t] = convoy_host_alloc(ctx, bytes);
        c[t] = convoy_host_alloc(ctx, bytes);
        o[t] = convoy_host_alloc(ctx, bytes);
        for (int i = 0; i < E; i++) {
            a[t][i] = (float)(t % 11);
            c[t][i] = (float)(i % 5);
            o[t][i] = 7;
        }
        convoy_data_new(ctx, a[t], bytes, &d[3 * t]);
        convoy_data_new(ctx, c[t], bytes, &d[3 * t + 1]);
        convoy_data_new(ctx, o[t], bytes, &d[3 * t + 2]);
        convoy_data_t *f[4] = {d[3 * t], dshared, d[3 * t + 1], d[3 * t + 2]};
        convoy_task_insert(ctx, t == broken ? bad : cls, &args, sizeof(args), f);
        convoy_task_insert(ctx, reader, &t, sizeof(t), &d[3 * t + 2]);
    }
    struct timespec ms = {0, 1000000};
    for (int w = 0; w < 10000 && atomic_load(&read_ok) + atomic_load(&read_bad) < n - 1; w++)
        nanosleep(&ms, NULL);
    EXPECT(atomic_load(&read_ok) == n - 1 && atomic_load(&read_bad) == 0,
           "%s: %d readers found their output, %d did not, of %d", sched, atomic_load(&read_ok),
           atomic_load(&read_bad), n - 1);
    uint64_t flushes = atomic_load(&ctx->next_internal_id) - internal;
    EXPECT(flushes == 0, "%s: %llu flush tasks for CPU readers of GPU outputs", sched,
           (unsigned long long)flushes);
    convoy_status_t st = convoy_wait(ctx);
    EXPECT(st == CONVOY_ERR_TASK_FAILED, "%s: wait returned %s", sched, convoy_status_name(st));
    EXPECT(o[broken][0] == 7 && o[broken][E - 1] == 7, "%s: the failed task's output changed: %g",
           sched, o[broken][0]);
    convoy_stats_t s;
    convoy_get_stats(ctx, &s);
    EXPECT(s.tasks_failed == 1 && s.tasks_cancelled == 1, "%s: failed %llu cancelled %llu", sched,
           (unsigned long long)s.tasks_failed, (unsigned long long)s.tasks_cancelled);
    printf("cpu readers %s tasks=%d: d2h_copies=%llu flush tasks=%llu\n", sched, n,
           (unsigned long long)s.d2h_copies, (unsigned long long)flushes);
    convoy_fini(ctx);
    free(a), free(c), free(o), free(d);
}

int main(void)
{
    tiny_round("fifo", 0, 300, 2048, 0);
    tiny_round("batch", 0, 3000, 2048, 0);
    tiny_round("batch", 1, 3000, 2048, 0);
    tiny_round("batch", 1, 2000, 1, 0);     /* 4-byte flows: tails everywhere */
    tiny_round("batch", 1, 64, 3 << 20, 0); /* 12 MiB flows: above the split size */
    tiny_round("fifo", 0, 300, 2048, 1);    /* inputs read in place */
    tiny_round("batch", 1, 3000, 2048, 1);
    tiny_round("batch", 1, 2000, 1, 1);
    tiny_round("batch", 1, 64, 3 << 20, 1); /* over in_place_max_bytes: staged */
    failure_round("fifo");
    failure_round("batch");
    cpu_reader_round("fifo", 64, 5);
    cpu_reader_round("batch", 512, 100);
    printf("%d passed, %d failed\n", passed, failed);
    return failed == 0 ? 0 : 1;
}
