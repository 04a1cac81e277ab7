/*
 * The guide's example (doc/guide.md): y[i] = a*x[i] + y[i] over many small vectors, on
 * whatever devices convoy selects. Built and run by `make check` so it stays true.
 */
#include <stdio.h>
#include <stdlib.h>

#include "convoy.h"

#define NVEC 1000 /* vectors */
#define LEN 2048  /* floats per vector: 8 KiB flows */

/* The chore: one task's work. On the CPU and on sim it does the work itself; the
 * pointers are valid on the device it runs on. */
static int axpy(const convoy_task_view_t *t, void *stream)
{
    (void)stream;
    float a = *(const float *)t->args;
    const float *x = t->flows[0];
    float *y = t->flows[1];
    for (size_t i = 0; i < t->flow_bytes[1] / sizeof(float); i++)
        y[i] = a * x[i] + y[i];
    return 0;
}

/* The batch chore: the work of a whole ring in one call (on a GPU: one kernel launch). */
static int axpy_ring(const convoy_task_view_t *const *tasks, int n, void *stream)
{
    for (int k = 0; k < n; k++)
        axpy(tasks[k], stream);
    return 0;
}

int main(int argc, char **argv)
{
    convoy_context_t *ctx = NULL;
    if (convoy_init(&argc, &argv, &ctx) != CONVOY_SUCCESS) { /* consumes --convoy-* */
        fprintf(stderr, "%s\n", convoy_last_error(NULL));
        return 1;
    }

    /* A class: two flows, x read and y read-written; batchable. */
    convoy_access_t modes[2] = {CONVOY_READ, CONVOY_RW};
    convoy_class_t *cls = NULL;
    convoy_class_new(ctx, "axpy", 2, modes, CONVOY_CLASS_BATCHABLE, &cls);
    convoy_class_set_chore(cls, CONVOY_DEVICE_CPU, axpy);
    convoy_class_set_chore(cls, CONVOY_DEVICE_SIM, axpy);
    convoy_class_set_batch_chore(cls, CONVOY_DEVICE_SIM, axpy_ring);

    /* Data: host memory from convoy_host_alloc (pinned when a GPU is present). */
    float *x[NVEC], *y[NVEC];
    convoy_data_t *dx[NVEC], *dy[NVEC];
    for (int v = 0; v < NVEC; v++) {
        x[v] = convoy_host_alloc(ctx, LEN * sizeof(float));
        y[v] = convoy_host_alloc(ctx, LEN * sizeof(float));
        for (int i = 0; i < LEN; i++) {
            x[v][i] = (float)v;
            y[v][i] = 1;
        }
        convoy_data_new(ctx, x[v], LEN * sizeof(float), &dx[v]);
        convoy_data_new(ctx, y[v], LEN * sizeof(float), &dy[v]);
    }

    /* Tasks, in program order: two passes, the second depends on the first through y. */
    for (int pass = 0; pass < 2; pass++) {
        float a = 2.0f;
        for (int v = 0; v < NVEC; v++) {
            convoy_data_t *flows[2] = {dx[v], dy[v]};
            if (convoy_task_insert(ctx, cls, &a, sizeof(a), flows) != CONVOY_SUCCESS) {
                fprintf(stderr, "%s\n", convoy_last_error(ctx));
                return 1;
            }
        }
    }
    if (convoy_wait(ctx) != CONVOY_SUCCESS) { /* results are home now */
        fprintf(stderr, "%s\n", convoy_last_error(ctx));
        return 1;
    }

    int bad = 0;
    for (int v = 0; v < NVEC; v++)
        bad += y[v][LEN - 1] != 1 + 4.0f * (float)v; /* y = 1 + 2x + 2x */
    convoy_stats_t s;
    convoy_get_stats(ctx, &s);
    printf("example: %s, %llu tasks, %llu rings, %llu stage-in submissions, %s\n",
           convoy_sched_name(ctx), (unsigned long long)s.tasks_completed,
           (unsigned long long)s.rings, (unsigned long long)s.h2d_submissions,
           bad ? "WRONG" : "correct");
    convoy_fini(ctx); /* frees data handles, classes and convoy_host_alloc memory */
    return bad != 0;
}
