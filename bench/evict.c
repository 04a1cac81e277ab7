/*
 * evict: an iterative program whose working set is several times device memory (set
 * with --convoy-device_memory or --convoy-sim_memory): N data of B bytes, each sweep adds
 * 1 to every datum on the device, in order. Dirty copies are evicted to make room; the
 * eviction pushouts should be fused (many copies per submission).
 *
 *   evict [--data N] [--bytes B] [--sweeps K]        (default 4096 x 64 KiB, 4 sweeps)
 *
 * Last line: evict sched=.. device=.. tasks=.. working_set=.. device_memory=..
 *   evictions=.. eviction_submissions=.. eviction_copies=.. copies_per_submission=..
 *   seconds=.. tasks_per_s=.. verified=yes|no
 */
#include "config.h"

#include "bench/bench_common.h"
#include "bench/rw_chores.h"

static const char *prog = "evict";

int main(int argc, char **argv)
{
    convoy_context_t *ctx = bench_init(prog, &argc, &argv);
    long ndata = 4096, bytes = 65536, sweeps = 4;
    for (int i = 1; i < argc; i++) {
        const char *v;
        if ((v = bench_opt(argc, argv, &i, "--data")))
            ndata = bench_long(prog, "--data", v, 1, 1 << 22);
        else if ((v = bench_opt(argc, argv, &i, "--bytes")))
            bytes = bench_long(prog, "--bytes", v, 4, 1L << 30);
        else if ((v = bench_opt(argc, argv, &i, "--sweeps")))
            sweeps = bench_long(prog, "--sweeps", v, 1, 1000);
        else {
            fprintf(stderr, "%s: unknown option '%s'\n", prog, argv[i]);
            return 2;
        }
    }
    bytes -= bytes % 4;
    convoy_class_t *cls = rw_class(ctx, "sweep_step");
    uint32_t **host = malloc((size_t)ndata * sizeof(*host));
    convoy_data_t **d = malloc((size_t)ndata * sizeof(*d));
    if (host == NULL || d == NULL)
        return 1;
    for (long k = 0; k < ndata; k++) {
        host[k] = convoy_host_alloc(ctx, (size_t)bytes);
        if (host[k] == NULL || convoy_data_new(ctx, host[k], (size_t)bytes, &d[k]) != 0) {
            fprintf(stderr, "%s: %s\n", prog, convoy_last_error(ctx));
            return 1;
        }
        for (size_t i = 0; i < (size_t)bytes / 4; i++)
            host[k][i] = (uint32_t)(k + i);
    }
    char mem[64] = "?";
    convoy_param_get(ctx, convoy_accel_count(ctx) > 0 &&
                              strncmp(convoy_accel_name(ctx, 0), "sim", 3) == 0
                          ? "sim_memory"
                          : "device_memory",
                     mem, sizeof(mem));
    convoy_stats_t s0, s1;
    convoy_get_stats(ctx, &s0);
    double t0 = bench_now();
    uint32_t one = 1;
    for (long s = 0; s < sweeps; s++)
        for (long k = 0; k < ndata; k++)
            if (convoy_task_insert(ctx, cls, &one, sizeof(one), &d[k]) != CONVOY_SUCCESS) {
                fprintf(stderr, "%s: %s\n", prog, convoy_last_error(ctx));
                return 1;
            }
    convoy_status_t st = convoy_wait(ctx);
    double secs = bench_now() - t0;
    convoy_get_stats(ctx, &s1);
    int ok = st == CONVOY_SUCCESS;
    if (!ok)
        fprintf(stderr, "%s: %s\n", prog, convoy_last_error(ctx));
    for (long k = 0; k < ndata && ok; k++)
        for (size_t i = 0; i < (size_t)bytes / 4 && ok; i++)
            ok = host[k][i] == (uint32_t)(k + i + sweeps);
    uint64_t subs = s1.eviction_submissions - s0.eviction_submissions;
    uint64_t copies = s1.eviction_copies - s0.eviction_copies;
    long tasks = ndata * sweeps;
    printf("evict sched=%s device=%s tasks=%ld working_set=%ld device_memory=%s evictions=%llu "
           "eviction_submissions=%llu eviction_copies=%llu copies_per_submission=%.1f "
           "seconds=%.6f tasks_per_s=%.0f verified=%s\n",
           convoy_sched_name(ctx), bench_device(ctx), tasks, ndata * bytes, mem,
           (unsigned long long)(s1.evictions - s0.evictions), (unsigned long long)subs,
           (unsigned long long)copies, subs > 0 ? (double)copies / (double)subs : 0.0, secs,
           tasks / secs, ok ? "yes" : "no");
    for (long k = 0; k < ndata; k++)
        convoy_data_free(d[k]);
    convoy_fini(ctx);
    free(host);
    free(d);
    return ok ? 0 : 1;
}
