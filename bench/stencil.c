/*
 * stencil: a 2D Jacobi on tiles with halo exchanges over iterations, in the distributed
 * mode (doc/dist.md), checked against a sequential run of the same arithmetic.
 *
 * The grid (--n, square) is cut into --tiles x --tiles tiles; tile rows are spread over
 * the ranks in blocks (their owners). Each iteration, the task of a tile reads its four
 * neighbours' edges of the last iteration (a datum per edge and per iteration parity, so
 * a tile's new edges never overwrite what its neighbours still read) and writes its own
 * edges of this iteration: edges between tiles of two ranks are the halo messages. The
 * grid's border is fixed (1.0 on the top side, 0 elsewhere). CPU chores, and CUDA ones
 * (bench/stencil_cuda.cu) in a build with CUDA: CONVOY_DEVICES=cuda runs the steps on the
 * GPU, whose arithmetic is the CPU's, so the check stays bit for bit.
 *
 *   mpirun -np 2 bench/stencil [--n N] [--tiles T] [--iters K] [--convoy-...]
 *
 * Last line: key=value pairs with seconds, tile_updates_per_s, messages, flows, verified
 * (every rank's tiles equal, bit for bit, the sequential run).
 */
#include "config.h"

#include <mpi.h>

#include "bench/bench_common.h"

enum { N_, S_, W_, E_ }; /* the sides of a tile */

#if CONVOY_HAVE_CUDA
int stencil_cuda_chore(const convoy_task_view_t *t, void *stream);
#endif

typedef struct targs {
    int ts; /* tile side */
} targs_t;

/* One Jacobi step of a tile: flows tile (RW), the neighbours' facing edges N S W E
 * (READ), its own edges N S W E (WRITE). */
static int step_chore(const convoy_task_view_t *t, void *stream)
{
    (void)stream;
    int ts = ((const targs_t *)t->args)->ts;
    double *a = t->flows[0];
    const double *nb[4] = {t->flows[1], t->flows[2], t->flows[3], t->flows[4]};
    double *tmp = malloc((size_t)ts * (size_t)ts * sizeof(double));
    if (tmp == NULL)
        return -1;
    for (int y = 0; y < ts; y++) {
        for (int x = 0; x < ts; x++) {
            double up = y > 0 ? a[(y - 1) * ts + x] : nb[N_][x];
            double down = y < ts - 1 ? a[(y + 1) * ts + x] : nb[S_][x];
            double left = x > 0 ? a[y * ts + x - 1] : nb[W_][y];
            double right = x < ts - 1 ? a[y * ts + x + 1] : nb[E_][y];
            tmp[y * ts + x] = 0.25 * (up + down + left + right);
        }
    }
    memcpy(a, tmp, (size_t)ts * (size_t)ts * sizeof(double));
    free(tmp);
    double *own[4] = {t->flows[5], t->flows[6], t->flows[7], t->flows[8]};
    for (int k = 0; k < ts; k++) {
        own[N_][k] = a[k];
        own[S_][k] = a[(ts - 1) * ts + k];
        own[W_][k] = a[k * ts];
        own[E_][k] = a[k * ts + ts - 1];
    }
    return 0;
}

/* The same iterations on the whole grid, with the same expression per point. */
static void sequential(double *g, int n, int iters)
{
    double *h = malloc((size_t)n * (size_t)n * sizeof(double));
    for (int it = 0; it < iters; it++) {
        for (int y = 0; y < n; y++)
            for (int x = 0; x < n; x++) {
                double up = y > 0 ? g[(y - 1) * n + x] : 1.0;
                double down = y < n - 1 ? g[(y + 1) * n + x] : 0.0;
                double left = x > 0 ? g[y * n + x - 1] : 0.0;
                double right = x < n - 1 ? g[y * n + x + 1] : 0.0;
                h[y * n + x] = 0.25 * (up + down + left + right);
            }
        memcpy(g, h, (size_t)n * (size_t)n * sizeof(double));
    }
    free(h);
}

int main(int argc, char **argv)
{
    const char *prog = "stencil";
    convoy_context_t *ctx = bench_init(prog, &argc, &argv);
    long n = 512, nt = 8, iters = 50;
    for (int i = 1; i < argc; i++) {
        const char *v;
        if ((v = bench_opt(argc, argv, &i, "--n")) != NULL)
            n = bench_long(prog, "--n", v, 2, 1 << 15);
        else if ((v = bench_opt(argc, argv, &i, "--tiles")) != NULL)
            nt = bench_long(prog, "--tiles", v, 1, 256);
        else if ((v = bench_opt(argc, argv, &i, "--iters")) != NULL)
            iters = bench_long(prog, "--iters", v, 1, 1 << 20);
        else {
            fprintf(stderr, "%s: unknown option %s\n", prog, argv[i]);
            return 2;
        }
    }
    if (n % nt != 0) {
        fprintf(stderr, "%s: --n %ld is not a multiple of --tiles %ld\n", prog, n, nt);
        return 2;
    }
    if (convoy_dist_start(ctx, NULL) != CONVOY_SUCCESS) {
        fprintf(stderr, "%s: %s\n", prog, convoy_last_error(ctx));
        convoy_fini(ctx);
        return convoy_build_has_mpi() ? 1 : 77;
    }
    int rank = convoy_dist_rank(ctx), size = convoy_dist_size(ctx);
    int ts = (int)(n / nt);
    size_t tile_bytes = (size_t)ts * (size_t)ts * sizeof(double),
           edge_bytes = (size_t)ts * sizeof(double);
    long ntiles = nt * nt;
    double *tiles = calloc((size_t)ntiles, tile_bytes);
    double *edges = calloc((size_t)ntiles * 8, edge_bytes);  /* [tile][parity][side] */
    double *border = calloc((size_t)ntiles * 4, edge_bytes); /* [tile][side], fixed */
    convoy_data_t **dt = calloc((size_t)ntiles, sizeof(*dt));
    convoy_data_t **de = calloc((size_t)ntiles * 8, sizeof(*de));
    convoy_data_t **db = calloc((size_t)ntiles * 4, sizeof(*db));
    for (long t = 0; t < ntiles; t++) {
        int owner = (int)((t / nt) * size / nt);
        convoy_data_new(ctx, (char *)tiles + t * tile_bytes, tile_bytes, &dt[t]);
        convoy_data_set_owner(dt[t], owner);
        for (int k = 0; k < 8; k++) {
            convoy_data_new(ctx, (char *)edges + (t * 8 + k) * edge_bytes, edge_bytes,
                            &de[t * 8 + k]);
            convoy_data_set_owner(de[t * 8 + k], owner);
        }
        for (int s = 0; s < 4; s++) {
            double *b = (double *)((char *)border + (t * 4 + s) * edge_bytes);
            for (int k = 0; k < ts; k++)
                b[k] = s == N_ ? 1.0 : 0.0;
            convoy_data_new(ctx, b, edge_bytes, &db[t * 4 + s]);
            convoy_data_set_owner(db[t * 4 + s], owner);
        }
    }
    convoy_access_t modes[9] = {CONVOY_RW,    CONVOY_READ,  CONVOY_READ,  CONVOY_READ, CONVOY_READ,
                                CONVOY_WRITE, CONVOY_WRITE, CONVOY_WRITE, CONVOY_WRITE};
    convoy_class_t *step;
    convoy_class_new(ctx, "jacobi", 9, modes, 0, &step);
    convoy_class_set_chore(step, CONVOY_DEVICE_CPU, step_chore);
    convoy_class_set_chore(step, CONVOY_DEVICE_SIM, step_chore); /* device data, tested here */
#if CONVOY_HAVE_CUDA
    convoy_class_set_chore(step, CONVOY_DEVICE_CUDA, stencil_cuda_chore);
#endif
    convoy_dist_wait(ctx);
    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = bench_now();
    targs_t a = {ts};
    for (long it = 0; it < iters; it++) {
        int rp = (int)(it % 2), wp = 1 - rp; /* edges read (last iteration's), written */
        for (long ty = 0; ty < nt; ty++) {
            for (long tx = 0; tx < nt; tx++) {
                long t = ty * nt + tx;
                /* A neighbour's facing edge, or the fixed border; at it 0 the edges of the
                 * initial tiles (zeros) are parity 0 and were never written: they hold 0,
                 * as the initial grid does. */
                convoy_data_t *fl[9] = {
                    dt[t],
                    ty > 0 ? de[((ty - 1) * nt + tx) * 8 + rp * 4 + S_] : db[t * 4 + N_],
                    ty < nt - 1 ? de[((ty + 1) * nt + tx) * 8 + rp * 4 + N_] : db[t * 4 + S_],
                    tx > 0 ? de[(t - 1) * 8 + rp * 4 + E_] : db[t * 4 + W_],
                    tx < nt - 1 ? de[(t + 1) * 8 + rp * 4 + W_] : db[t * 4 + E_],
                    de[t * 8 + wp * 4 + N_],
                    de[t * 8 + wp * 4 + S_],
                    de[t * 8 + wp * 4 + W_],
                    de[t * 8 + wp * 4 + E_]};
                convoy_task_insert(ctx, step, &a, sizeof(a), fl);
            }
        }
    }
    convoy_status_t st = convoy_dist_wait(ctx);
    double secs = bench_now() - t0;
    int ok = st == CONVOY_SUCCESS;
    double *g = calloc((size_t)n * (size_t)n, sizeof(double));
    sequential(g, (int)n, (int)iters);
    for (long t = 0; t < ntiles && ok; t++) {
        if (convoy_data_owner(dt[t]) != rank)
            continue;
        const double *tile = (const double *)((char *)tiles + t * tile_bytes);
        long ty = t / nt, tx = t % nt;
        for (int y = 0; y < ts && ok; y++)
            ok = memcmp(&tile[y * ts], &g[(ty * ts + y) * n + tx * ts], edge_bytes) == 0;
    }
    convoy_stats_t s;
    convoy_get_stats(ctx, &s);
    uint64_t mine[3] = {s.dist_messages_sent, s.dist_flows_sent, (uint64_t)!ok}, all[3];
    MPI_Allreduce(mine, all, 3, MPI_UINT64_T, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0)
        printf("stencil: ranks=%d sched=%s n=%ld tiles=%ldx%ld iters=%ld seconds=%.4f "
               "tile_updates_per_s=%.0f messages=%llu flows=%llu verified=%d\n",
               size, convoy_sched_name(ctx), n, nt, nt, iters, secs,
               (double)ntiles * (double)iters / secs, (unsigned long long)all[0],
               (unsigned long long)all[1], all[2] == 0);
    convoy_fini(ctx);
    free(g);
    free(dt);
    free(de);
    free(db);
    free(tiles);
    free(edges);
    free(border);
    return all[2] == 0 ? 0 : 1;
}
