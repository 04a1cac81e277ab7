/*
 * The distributed mode against a sequential oracle: random task graphs over random
 * owners, named ranks and chore failures, under both schedulers, on the CPUs and on the
 * sim device, leave every rank's host memory exactly as the oracle's model of each rank
 * says (the newest versions, the copies received, the stale ones), give each rank the
 * oracle's counts of completed, failed and cancelled tasks, and make convoy_dist_wait
 * report a failure on every rank exactly when a task failed on any rank.
 *
 * Run by tests/dist_mpirun.sh under mpirun (2 and 4 ranks). A plain program, not a Check
 * suite: a process that initialised MPI must not fork. The program initialises MPI
 * itself, so several contexts run one after the other in one process.
 */
#include "config.h"

#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "convoy.h"
#include "tests/dist_check.h"

#define ND 12
#define NT 90
#define MAXF 3

static int g_rank, g_size;
static uint64_t g_failed, g_cancelled, g_flows; /* this rank's, over every run */


static uint64_t rng_state;
static uint64_t rnd(void)
{
    rng_state = rng_state * 6364136223846793005ull + 1442695040888963407ull;
    return rng_state >> 33;
}

static uint64_t mix(uint64_t h, uint64_t v)
{
    h ^= v + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
    return h * 0xff51afd7ed558ccdull;
}

/* A datum's bytes: a 64-bit value, then its low byte repeated. */
static void fill(void *p, size_t n, uint64_t v)
{
    memcpy(p, &v, sizeof(v));
    memset((char *)p + 8, (int)(v & 0xff), n - 8);
}

static int intact(const void *p, size_t n, uint64_t *v_p)
{
    uint64_t v;
    memcpy(&v, p, sizeof(v));
    for (size_t i = 8; i < n; i++)
        if (((const unsigned char *)p)[i] != (v & 0xff))
            return 0;
    *v_p = v;
    return 1;
}

typedef struct targs {
    uint64_t seq;
    int fail;
    int nflows;
    convoy_access_t modes[MAXF];
} targs_t;

/* out_j = mix(seq, values read) + j; a failing chore writes garbage first. */
static int chore(const convoy_task_view_t *t, void *stream)
{
    (void)stream;
    const targs_t *a = t->args;
    uint64_t h = mix(0x1234, a->seq);
    for (int i = 0; i < t->nflows; i++) {
        if (!(a->modes[i] & CONVOY_READ))
            continue;
        uint64_t v;
        if (!intact(t->flows[i], t->flow_bytes[i], &v))
            return 99; /* torn data: the oracle will disagree */
        h = mix(h, v);
    }
    for (int i = 0; i < t->nflows; i++)
        if (a->modes[i] & CONVOY_WRITE)
            fill(t->flows[i], t->flow_bytes[i], a->fail ? 0xbad : h + (uint64_t)i);
    return a->fail ? -1 : 0;
}

/* The oracle's model of one rank's copy of one datum. */
typedef struct model {
    uint64_t val;
    int lw_bad; /* the last local writer failed or was cancelled */
    int rd_bad; /* a local reader since did */
} model_t;

static convoy_class_t *class_for(convoy_context_t *ctx, convoy_class_t **cache, int n,
                                 const convoy_access_t *modes)
{
    int key = 0;
    for (int i = 0; i < n; i++)
        key = key * 3 + (int)modes[i] - 1;
    int idx = (n == 1 ? 0 : n == 2 ? 3 : 12) + key;
    if (cache[idx] == NULL) {
        char name[32];
        snprintf(name, sizeof(name), "k%d", idx);
        CHECK(convoy_class_new(ctx, name, n, modes, 0, &cache[idx]) == CONVOY_SUCCESS, "%s",
              convoy_last_error(ctx));
        convoy_class_set_chore(cache[idx], CONVOY_DEVICE_CPU, chore);
        convoy_class_set_chore(cache[idx], CONVOY_DEVICE_SIM, chore);
    }
    return cache[idx];
}

static void run_config(const char *sched, const char *devices, uint64_t seed)
{
    convoy_param_preset_clear();
    convoy_param_preset("sched", sched);
    convoy_param_preset("devices", devices);
    convoy_param_preset("nthreads", "2");
    convoy_param_preset("verbose", "error");
    convoy_context_t *ctx = NULL;
    CHECK(convoy_init(NULL, NULL, &ctx) == CONVOY_SUCCESS, "%s", convoy_last_error(NULL));
    CHECK(convoy_dist_start(ctx, NULL) == CONVOY_SUCCESS, "%s", convoy_last_error(ctx));
    CHECK(convoy_dist_rank(ctx) == g_rank && convoy_dist_size(ctx) == g_size, "rank/size");
    rng_state = seed;
    static size_t sizes[ND];
    void *mem[ND];
    convoy_data_t *d[ND];
    static model_t m[16][ND];
    int holder[ND];
    unsigned char valid[16][ND];
    for (int i = 0; i < ND; i++) {
        sizes[i] = i % 5 == 4 ? 100000 + 8 * (size_t)i : 64 + 8 * (size_t)i; /* a few large */
        mem[i] = malloc(sizes[i]);
        int owner = (int)(rnd() % (uint64_t)g_size);
        for (int r = 0; r < g_size; r++) {
            m[r][i] =
                (model_t){.val = r == owner ? mix(seed, (uint64_t)i) : 0xdead00 + (uint64_t)r};
            valid[r][i] = r == owner;
        }
        holder[i] = owner;
        fill(mem[i], sizes[i], m[g_rank][i].val);
        CHECK(convoy_data_new(ctx, mem[i], sizes[i], &d[i]) == CONVOY_SUCCESS, "%s",
              convoy_last_error(ctx));
        CHECK(convoy_data_set_owner(d[i], owner) == CONVOY_SUCCESS, "%s", convoy_last_error(ctx));
    }
    convoy_class_t *cache[40] = {0};
    uint64_t seq = 0;
    for (int round = 0; round < 3; round++) {
        uint64_t done[16] = {0}, failed[16] = {0}, cancelled[16] = {0};
        convoy_stats_t before;
        convoy_get_stats(ctx, &before);
        for (int r = 0; r < g_size; r++)
            for (int i = 0; i < ND; i++)
                m[r][i].lw_bad = m[r][i].rd_bad = 0; /* the last wait reported them */
        for (int k = 0; k < NT; k++, seq++) {
            targs_t a = {.seq = seq, .fail = rnd() % 100 < 6, .nflows = 1 + (int)(rnd() % MAXF)};
            int ix[MAXF];
            for (int f = 0; f < a.nflows; f++) {
                int dup;
                do {
                    ix[f] = (int)(rnd() % ND);
                    dup = 0;
                    for (int g = 0; g < f; g++)
                        dup |= ix[g] == ix[f];
                } while (dup);
                a.modes[f] = (convoy_access_t)(1 + rnd() % 3);
            }
            convoy_task_opts_t o = {0};
            if (rnd() % 4 == 0)
                o.rank = CONVOY_RANK((int)(rnd() % (uint64_t)g_size));
            /* The runner, as doc/dist.md says. */
            int e;
            if (o.rank != 0) {
                e = o.rank - 1;
            } else {
                int first = 0;
                for (int f = a.nflows - 1; f >= 0; f--)
                    if (a.modes[f] & CONVOY_WRITE)
                        first = f;
                e = convoy_data_owner(d[ix[first]]);
            }
            /* Transfers: the send reads after the holder's last writer; the receive writes
             * after the runner's last writer and readers. */
            for (int f = 0; f < a.nflows; f++) {
                int i = ix[f];
                if (!(a.modes[f] & CONVOY_READ) || valid[e][i])
                    continue;
                int h = holder[i];
                int send_bad = m[h][i].lw_bad;
                m[h][i].rd_bad |= send_bad;
                int recv_bad = send_bad || m[e][i].lw_bad || m[e][i].rd_bad;
                if (!recv_bad)
                    m[e][i].val = m[h][i].val;
                m[e][i].lw_bad = recv_bad;
                m[e][i].rd_bad = 0;
                valid[e][i] = 1;
            }
            int bad = 0;
            for (int f = 0; f < a.nflows; f++) {
                model_t *x = &m[e][ix[f]];
                bad |= x->lw_bad || ((a.modes[f] & CONVOY_WRITE) && x->rd_bad);
            }
            int ok = !bad && !a.fail;
            if (ok) {
                uint64_t h = mix(0x1234, a.seq);
                for (int f = 0; f < a.nflows; f++)
                    if (a.modes[f] & CONVOY_READ)
                        h = mix(h, m[e][ix[f]].val);
                for (int f = 0; f < a.nflows; f++)
                    if (a.modes[f] & CONVOY_WRITE)
                        m[e][ix[f]].val = h + (uint64_t)f;
            }
            for (int f = 0; f < a.nflows; f++) {
                model_t *x = &m[e][ix[f]];
                if (a.modes[f] & CONVOY_WRITE) {
                    x->lw_bad = !ok;
                    x->rd_bad = 0;
                } else {
                    x->rd_bad |= !ok;
                }
            }
            for (int f = 0; f < a.nflows; f++) {
                if (!(a.modes[f] & CONVOY_WRITE))
                    continue;
                for (int r = 0; r < g_size; r++)
                    valid[r][ix[f]] = r == e;
                holder[ix[f]] = e;
            }
            done[e] += ok;
            failed[e] += !bad && a.fail;
            cancelled[e] += bad;
            convoy_data_t *fl[MAXF];
            for (int f = 0; f < a.nflows; f++)
                fl[f] = d[ix[f]];
            CHECK(convoy_task_insert_ex(ctx, class_for(ctx, cache, a.nflows, a.modes), &a,
                                        sizeof(a), fl, &o) == CONVOY_SUCCESS,
                  "%s", convoy_last_error(ctx));
        }
        uint64_t any_failed = 0;
        for (int r = 0; r < g_size; r++)
            any_failed += failed[r];
        convoy_status_t st = convoy_dist_wait(ctx);
        CHECK((st == CONVOY_ERR_TASK_FAILED) == (any_failed > 0),
              "seed %llu round %d (%s, %s): wait %d, %llu failures expected: %s",
              (unsigned long long)seed, round, sched, devices, (int)st,
              (unsigned long long)any_failed, convoy_last_error(ctx));
        if (any_failed > 0)
            CHECK(strstr(convoy_last_error(ctx), "failed") != NULL, "message: %s",
                  convoy_last_error(ctx));
        convoy_stats_t s;
        convoy_get_stats(ctx, &s);
        CHECK(s.tasks_completed - before.tasks_completed == done[g_rank] &&
                  s.tasks_failed - before.tasks_failed == failed[g_rank] &&
                  s.tasks_cancelled - before.tasks_cancelled == cancelled[g_rank],
              "seed %llu round %d (%s, %s): completed %llu failed %llu cancelled %llu, oracle "
              "%llu %llu %llu",
              (unsigned long long)seed, round, sched, devices,
              (unsigned long long)(s.tasks_completed - before.tasks_completed),
              (unsigned long long)(s.tasks_failed - before.tasks_failed),
              (unsigned long long)(s.tasks_cancelled - before.tasks_cancelled),
              (unsigned long long)done[g_rank], (unsigned long long)failed[g_rank],
              (unsigned long long)cancelled[g_rank]);
        for (int i = 0; i < ND; i++) {
            uint64_t v = 0;
            CHECK(intact(mem[i], sizes[i], &v) && v == m[g_rank][i].val,
                  "seed %llu round %d (%s, %s): datum %d holds %llx, oracle %llx",
                  (unsigned long long)seed, round, sched, devices, i, (unsigned long long)v,
                  (unsigned long long)m[g_rank][i].val);
        }
    }
    convoy_stats_t s;
    convoy_get_stats(ctx, &s);
    g_failed += s.tasks_failed;
    g_cancelled += s.tasks_cancelled;
    g_flows += s.dist_flows_received;
    convoy_fini(ctx);
    for (int i = 0; i < ND; i++)
        free(mem[i]);
}

int main(int argc, char **argv)
{
    int provided;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &g_rank);
    MPI_Comm_size(MPI_COMM_WORLD, &g_size);
    if (g_size > 16) {
        MPI_Finalize();
        return 77;
    }
    int seeds = argc > 1 ? atoi(argv[1]) : 3;
    const char *scheds[] = {"fifo", "batch"};
    const char *devs[] = {"host", "sim"};
    for (int s = 0; s < seeds; s++)
        for (int k = 0; k < 2; k++)
            for (int v = 0; v < 2; v++)
                run_config(scheds[k], devs[v], 1000 + (uint64_t)s * 7919);
    if (g_rank == 0)
        printf("check_dist: %d seeds x 2 schedulers x 2 device sets on %d ranks: passed (rank 0: "
               "%llu tasks failed, %llu cancelled, %llu flows received)\n",
               seeds, g_size, (unsigned long long)g_failed, (unsigned long long)g_cancelled,
               (unsigned long long)g_flows);
    MPI_Finalize();
    return 0;
}
