/*
 * dist_tiny: tiny tasks whose inputs live on another rank (doc/dist.md).
 *
 * Each round, rank r's tiny tasks rewrite its inputs (one task per input), and the tasks
 * of rank (r + 1) % size each read three of them and write one output of their own, so
 * every input travels to another rank once per round: one remote flow per input. With
 * fusion (dist_fuse=1, the default) the flows bound for one peer share messages; with
 * --convoy-dist-fuse=0 each flow is a message. The outputs are checked against the
 * formula on every rank at the end. CPU chores, and CUDA ones (bench/dist_tiny_cuda.cu)
 * in a build with CUDA: CONVOY_DEVICES=cuda runs them on the GPU; with --batch 1 the
 * classes are batchable and the GPU runs a ring of them in one kernel.
 *
 *   mpirun -np 2 bench/dist_tiny [--tasks N] [--rounds R] [--bytes B] [--batch 0|1]
 *                                [--convoy-...]
 *
 * Tasks count both kinds, over all ranks; messages and flows are the sums of what the
 * ranks sent. Last line: key=value pairs with tasks_per_s, messages, flows, verified.
 */
#include "config.h"

#include <mpi.h>

#include "bench/bench_common.h"

typedef struct args {
    uint64_t round, index;
} args_t;

#if CONVOY_HAVE_CUDA
int dist_tiny_update_cuda(const convoy_task_view_t *t, void *stream);
int dist_tiny_update_cuda_batch(const convoy_task_view_t *const *t, int n, void *stream);
int dist_tiny_sum_cuda(const convoy_task_view_t *t, void *stream);
int dist_tiny_sum_cuda_batch(const convoy_task_view_t *const *t, int n, void *stream);
#endif

static uint64_t value(uint64_t round, uint64_t index)
{
    return (round + 1) * 1000003u + index * 7919u;
}

/* An input of round a->round: its value in every 8-byte word. */
static int update_chore(const convoy_task_view_t *t, void *stream)
{
    (void)stream;
    const args_t *a = t->args;
    uint64_t v = value(a->round, a->index);
    uint64_t *p = t->flows[0];
    for (size_t i = 0; i < t->flow_bytes[0] / 8; i++)
        p[i] = v;
    return 0;
}

/* out = in0 + in1 + in2 (first words). */
static int sum_chore(const convoy_task_view_t *t, void *stream)
{
    (void)stream;
    uint64_t s = 0;
    for (int i = 0; i < 3; i++)
        s += *(const uint64_t *)t->flows[i];
    *(uint64_t *)t->flows[3] = s;
    return 0;
}

int main(int argc, char **argv)
{
    const char *prog = "dist_tiny";
    convoy_context_t *ctx = bench_init(prog, &argc, &argv);
    long ntasks = 1024, rounds = 20, bytes = 1024, batch = 0;
    for (int i = 1; i < argc; i++) {
        const char *v;
        if ((v = bench_opt(argc, argv, &i, "--tasks")) != NULL)
            ntasks = bench_long(prog, "--tasks", v, 1, 1 << 20);
        else if ((v = bench_opt(argc, argv, &i, "--rounds")) != NULL)
            rounds = bench_long(prog, "--rounds", v, 1, 1 << 20);
        else if ((v = bench_opt(argc, argv, &i, "--bytes")) != NULL)
            bytes = bench_long(prog, "--bytes", v, 8, 1 << 26);
        else if ((v = bench_opt(argc, argv, &i, "--batch")) != NULL)
            batch = bench_long(prog, "--batch", v, 0, 1);
        else {
            fprintf(stderr, "%s: unknown option %s\n", prog, argv[i]);
            return 2;
        }
    }
    bytes = (bytes + 7) / 8 * 8;
    if (convoy_dist_start(ctx, NULL) != CONVOY_SUCCESS) {
        fprintf(stderr, "%s: %s\n", prog, convoy_last_error(ctx));
        convoy_fini(ctx);
        return convoy_build_has_mpi() ? 1 : 77;
    }
    int rank = convoy_dist_rank(ctx), size = convoy_dist_size(ctx);
    long nin = 3 * ntasks;
    /* Rank r owns inputs [r * nin, (r + 1) * nin) and outputs read from rank r - 1. */
    long tin = nin * size, tout = ntasks * size;
    char *in_mem = calloc((size_t)tin, (size_t)bytes);
    uint64_t *out_mem = calloc((size_t)tout, sizeof(uint64_t));
    convoy_data_t **in = calloc((size_t)tin, sizeof(*in)),
                  **out = calloc((size_t)tout, sizeof(*out));
    for (long i = 0; i < tin; i++) {
        convoy_data_new(ctx, in_mem + i * bytes, (size_t)bytes, &in[i]);
        convoy_data_set_owner(in[i], (int)(i / nin));
    }
    for (long i = 0; i < tout; i++) {
        convoy_data_new(ctx, &out_mem[i], sizeof(uint64_t), &out[i]);
        convoy_data_set_owner(out[i], (int)((i / ntasks + 1) % size));
    }
    convoy_access_t um = CONVOY_WRITE;
    convoy_access_t sm[4] = {CONVOY_READ, CONVOY_READ, CONVOY_READ, CONVOY_WRITE};
    convoy_class_t *update, *sum;
    unsigned flags = batch ? CONVOY_CLASS_BATCHABLE : 0;
    convoy_class_new(ctx, "update", 1, &um, flags, &update);
    convoy_class_new(ctx, "sum", 4, sm, flags, &sum);
    convoy_class_set_chore(update, CONVOY_DEVICE_CPU, update_chore);
    convoy_class_set_chore(sum, CONVOY_DEVICE_CPU, sum_chore);
    /* On sim devices: the device-data path of the distributed mode, without a GPU. */
    convoy_class_set_chore(update, CONVOY_DEVICE_SIM, update_chore);
    convoy_class_set_chore(sum, CONVOY_DEVICE_SIM, sum_chore);
#if CONVOY_HAVE_CUDA
    convoy_class_set_chore(update, CONVOY_DEVICE_CUDA, dist_tiny_update_cuda);
    convoy_class_set_chore(sum, CONVOY_DEVICE_CUDA, dist_tiny_sum_cuda);
    if (batch) {
        convoy_class_set_batch_chore(update, CONVOY_DEVICE_CUDA, dist_tiny_update_cuda_batch);
        convoy_class_set_batch_chore(sum, CONVOY_DEVICE_CUDA, dist_tiny_sum_cuda_batch);
    }
#endif
    convoy_dist_wait(ctx);
    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = bench_now();
    for (long r = 0; r < rounds; r++) {
        for (long i = 0; i < tin; i++) {
            args_t a = {(uint64_t)r, (uint64_t)i};
            convoy_task_insert(ctx, update, &a, sizeof(a), &in[i]);
        }
        for (long i = 0; i < tout; i++) {
            convoy_data_t *fl[4] = {in[3 * i], in[3 * i + 1], in[3 * i + 2], out[i]};
            convoy_task_insert(ctx, sum, NULL, 0, fl);
        }
    }
    convoy_status_t st = convoy_dist_wait(ctx);
    double secs = bench_now() - t0;
    int ok = st == CONVOY_SUCCESS;
    long last = rounds - 1;
    for (long i = 0; i < tout && ok; i++)
        if (convoy_data_owner(out[i]) == rank)
            ok = out_mem[i] == value((uint64_t)last, (uint64_t)(3 * i)) +
                                   value((uint64_t)last, (uint64_t)(3 * i + 1)) +
                                   value((uint64_t)last, (uint64_t)(3 * i + 2));
    convoy_stats_t s;
    convoy_get_stats(ctx, &s);
    uint64_t mine[3] = {s.dist_messages_sent, s.dist_flows_sent, (uint64_t)!ok}, all[3];
    MPI_Allreduce(mine, all, 3, MPI_UINT64_T, MPI_SUM, MPI_COMM_WORLD);
    char fuse[16] = "?";
    convoy_param_get(ctx, "dist_fuse", fuse, sizeof(fuse));
    double tasks = (double)rounds * (double)(tin + tout);
    if (rank == 0)
        printf("dist_tiny: ranks=%d sched=%s fuse=%s batch=%ld tasks=%.0f bytes=%ld seconds=%.4f "
               "tasks_per_s=%.0f messages=%llu flows=%llu flows_per_message=%.1f verified=%d\n",
               size, convoy_sched_name(ctx), fuse, batch, tasks, bytes, secs, tasks / secs,
               (unsigned long long)all[0], (unsigned long long)all[1],
               all[0] ? (double)all[1] / (double)all[0] : 0.0, all[2] == 0);
    convoy_fini(ctx);
    free(in);
    free(out);
    free(in_mem);
    free(out_mem);
    return all[2] == 0 ? 0 : 1;
}
