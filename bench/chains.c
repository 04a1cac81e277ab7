/*
 * chains: C independent chains of S read-modify-write tasks on device data (each task
 * adds 1 to every word of its chain's datum), then the host reads the results. With
 * write-back only the final versions come home: d2h_bytes equals final_bytes.
 *
 *   chains [--chains C] [--steps S] [--bytes B] [--repeat R] [--ping-pong]
 *   (default 2048 x 8, 8 KiB)
 *
 * --ping-pong gives each chain two data, a and b: step s reads one and writes the sum
 * into the other (a READ flow and a WRITE flow, hop_class), so each step's output is an
 * output in write_behind's sense; the final versions are both data's (final_bytes twice
 * as much) and the result is in the one step S - 1 wrote.
 *
 * Host data come from convoy_host_alloc. Each repetition resets the data (acquire(RW))
 * and times insertion to the end of convoy_wait (which brings the results home); the
 * best repetition is reported. Last line:
 *   chains sched=.. device=.. tasks=.. d2h_bytes=.. final_bytes=.. d2d_copies=..
 *   seconds=.. tasks_per_s=.. verified=yes|no
 * Exit status 1 when the results do not verify, 2 on bad options.
 */
#include "config.h"

#include "bench/bench_common.h"
#include "bench/rw_chores.h"

static const char *prog = "chains";

static uint32_t initial(long c, size_t i)
{
    return (uint32_t)(c * 7 + (long)(i % 5));
}

int main(int argc, char **argv)
{
    convoy_context_t *ctx = bench_init(prog, &argc, &argv);
    long chains = 2048, steps = 8, bytes = 8192, repeat = 3;
    int pingpong = 0;
    for (int i = 1; i < argc; i++) {
        const char *v;
        if (strcmp(argv[i], "--ping-pong") == 0)
            pingpong = 1;
        else if ((v = bench_opt(argc, argv, &i, "--chains")))
            chains = bench_long(prog, "--chains", v, 1, 1 << 20);
        else if ((v = bench_opt(argc, argv, &i, "--steps")))
            steps = bench_long(prog, "--steps", v, 1, 1 << 20);
        else if ((v = bench_opt(argc, argv, &i, "--bytes")))
            bytes = bench_long(prog, "--bytes", v, 4, 1L << 30);
        else if ((v = bench_opt(argc, argv, &i, "--repeat")))
            repeat = bench_long(prog, "--repeat", v, 1, 1000);
        else {
            fprintf(stderr, "%s: unknown option '%s'\n", prog, argv[i]);
            return 2;
        }
    }
    bytes -= bytes % 4;
    convoy_class_t *cls = pingpong ? hop_class(ctx, "chain_hop") : rw_class(ctx, "chain_step");
    /* Datum c of chain c; with --ping-pong also datum chains + c, its second. */
    long ndata = pingpong ? 2 * chains : chains;
    uint32_t **host = malloc((size_t)ndata * sizeof(*host));
    convoy_data_t **d = malloc((size_t)ndata * sizeof(*d));
    if (host == NULL || d == NULL)
        return 1;
    for (long c = 0; c < ndata; c++) {
        host[c] = convoy_host_alloc(ctx, (size_t)bytes);
        if (host[c] == NULL || convoy_data_new(ctx, host[c], (size_t)bytes, &d[c]) != 0) {
            fprintf(stderr, "%s: %s\n", prog, convoy_last_error(ctx));
            return 1;
        }
    }
    double best = 1e30;
    convoy_stats_t s0, s1, best_delta = {0};
    int ok = 1;
    for (long r = 0; r < repeat && ok; r++) {
        for (long c = 0; c < chains; c++) {
            convoy_data_acquire(d[c], CONVOY_WRITE);
            for (size_t i = 0; i < (size_t)bytes / 4; i++)
                host[c][i] = initial(c, i);
        }
        convoy_get_stats(ctx, &s0);
        double t0 = bench_now();
        uint32_t one = 1;
        for (long s = 0; s < steps; s++)
            for (long c = 0; c < chains; c++) {
                /* Ping-pong: step s reads the datum step s - 1 wrote and writes the other. */
                convoy_data_t *f[2] = {d[c + (s % 2) * chains * pingpong],
                                       d[c + ((s + 1) % 2) * chains * pingpong]};
                if (convoy_task_insert(ctx, cls, &one, sizeof(one), f) != CONVOY_SUCCESS) {
                    fprintf(stderr, "%s: %s\n", prog, convoy_last_error(ctx));
                    return 1;
                }
            }
        convoy_status_t st = convoy_wait(ctx);
        double secs = bench_now() - t0;
        convoy_get_stats(ctx, &s1);
        if (st != CONVOY_SUCCESS) {
            fprintf(stderr, "%s: %s\n", prog, convoy_last_error(ctx));
            ok = 0;
        }
        for (long c = 0; c < chains && ok; c++) {
            const uint32_t *result = host[c + (steps % 2) * chains * pingpong];
            for (size_t i = 0; i < (size_t)bytes / 4 && ok; i++)
                ok = result[i] == initial(c, i) + (uint32_t)steps;
        }
        if (secs < best) {
            best = secs;
            best_delta.d2h_bytes = s1.d2h_bytes - s0.d2h_bytes;
            best_delta.d2d_copies = s1.d2d_copies - s0.d2d_copies;
        }
        printf("repetition %ld: %.6f s, d2h_bytes %llu\n", r, secs,
               (unsigned long long)(s1.d2h_bytes - s0.d2h_bytes));
    }
    long tasks = chains * steps;
    printf("chains sched=%s device=%s tasks=%ld d2h_bytes=%llu final_bytes=%llu d2d_copies=%llu "
           "seconds=%.6f tasks_per_s=%.0f verified=%s\n",
           convoy_sched_name(ctx), bench_device(ctx), tasks,
           (unsigned long long)best_delta.d2h_bytes,
           (unsigned long long)((pingpong && steps > 1 ? 2 : 1) * chains * bytes),
           (unsigned long long)best_delta.d2d_copies, best, tasks / best, ok ? "yes" : "no");
    for (long c = 0; c < ndata; c++)
        convoy_data_free(d[c]);
    convoy_fini(ctx);
    free(host);
    free(d);
    return ok ? 0 : 1;
}
