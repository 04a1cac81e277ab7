/*
 * The distributed mode's fusion, failures and bad calls, with exact counts:
 *  - 20 small flows from rank 0 to rank 1 with dist_fuse_max_flows 8 travel in 3
 *    messages (8, 8, 4) and 2 flows over dist_large_bytes in 2 more, alone; with
 *    dist_fuse 0 every flow is a message (22); dist_fuse_max_bytes 1024 packs 300-byte
 *    flows 3 to a message (10 flows: 4 messages); ranks not involved see no message;
 *    a datum read twice on one rank travels once;
 *  - a task failing on rank 0 cancels its reader on rank 1 (a failure marker instead of
 *    the data), and convoy_dist_wait reports the failure, naming rank 0, on every rank;
 *  - a datum registered with different sizes on two ranks fails the receive, naming
 *    both sizes, and every rank's wait reports it;
 *  - a message that is not convoy's (sent by the test on convoy's communicator) breaks
 *    the receiving rank: its waiting receive fails naming the cause, its later
 *    insertions fail with CONVOY_ERR_DEVICE, and convoy_dist_wait returns
 *    CONVOY_ERR_DEVICE with that cause on every rank instead of hanging;
 *  - bad calls: an owner or a named rank out of range, an owner set after use, a second
 *    start, a chore inserting a task (CONVOY_ERR_STATE), the calls without the mode.
 * Run by tests/dist_mpirun.sh under mpirun on 2 and 4 ranks.
 */
#include "config.h"

#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "convoy.h"
#include "tests/dist_check.h"
#include "dist/dist.h" /* the broken test reaches convoy's communicator */
#include <time.h>

static int g_rank, g_size;


static int copy_chore(const convoy_task_view_t *t, void *stream)
{
    (void)stream;
    memcpy(t->flows[1], t->flows[0],
           t->flow_bytes[1] < t->flow_bytes[0] ? t->flow_bytes[1] : t->flow_bytes[0]);
    return 0;
}

static int fail_chore(const convoy_task_view_t *t, void *stream)
{
    (void)t;
    (void)stream;
    return -7;
}

static convoy_context_t *g_ctx;
static convoy_class_t *g_copy;
static int g_refused = -100;

/* A chore that tries to insert: refused in the distributed mode. */
static int inserting_chore(const convoy_task_view_t *t, void *stream)
{
    (void)stream;
    convoy_data_t *fl[2] = {*(convoy_data_t *const *)t->args, *(convoy_data_t *const *)t->args};
    g_refused = convoy_task_insert(g_ctx, g_copy, NULL, 0, fl);
    return 0;
}

static convoy_context_t *start(const char *fuse, const char *max_flows, const char *max_bytes)
{
    convoy_param_preset_clear();
    convoy_param_preset("devices", "host");
    convoy_param_preset("nthreads", "2");
    convoy_param_preset("verbose", "error");
    convoy_param_preset("dist_fuse", fuse);
    convoy_param_preset("dist_fuse_max_flows", max_flows);
    convoy_param_preset("dist_fuse_max_bytes", max_bytes);
    convoy_param_preset("dist_large_bytes", "64K");
    convoy_param_preset("dist_fuse_wait_us", "2000000"); /* only full or the wait close one */
    convoy_context_t *ctx;
    CHECK(convoy_init(NULL, NULL, &ctx) == CONVOY_SUCCESS, "%s", convoy_last_error(NULL));
    CHECK(convoy_dist_start(ctx, NULL) == CONVOY_SUCCESS, "%s", convoy_last_error(ctx));
    convoy_access_t modes[2] = {CONVOY_READ, CONVOY_WRITE};
    CHECK(convoy_class_new(ctx, "copy", 2, modes, 0, &g_copy) == CONVOY_SUCCESS, "%s",
          convoy_last_error(ctx));
    convoy_class_set_chore(g_copy, CONVOY_DEVICE_CPU, copy_chore);
    g_ctx = ctx;
    return ctx;
}

/* nsmall flows of small bytes and nlarge of 100000 from rank 0 to rank 1, each copied on
 * rank 1 into a datum of rank 1's; returns this rank's stats after the wait. */
static convoy_stats_t pattern(convoy_context_t *ctx, int nsmall, size_t small, int nlarge)
{
    int n = nsmall + nlarge;
    convoy_data_t **in = calloc((size_t)n, sizeof(*in)), **out = calloc((size_t)n, sizeof(*out));
    char **mi = calloc((size_t)n, sizeof(*mi)), **mo = calloc((size_t)n, sizeof(*mo));
    for (int i = 0; i < n; i++) {
        size_t b = i < nsmall ? small : 100000;
        mi[i] = malloc(b);
        mo[i] = calloc(1, b);
        memset(mi[i], g_rank == 0 ? 'a' + i % 26 : 0, b);
        CHECK(convoy_data_new(ctx, mi[i], b, &in[i]) == CONVOY_SUCCESS, "%s",
              convoy_last_error(ctx));
        CHECK(convoy_data_new(ctx, mo[i], b, &out[i]) == CONVOY_SUCCESS, "%s",
              convoy_last_error(ctx));
        CHECK(convoy_data_set_owner(out[i], 1) == CONVOY_SUCCESS, "%s", convoy_last_error(ctx));
    }
    /* Interleaved (a large one after every third small one): large flows must not
     * split the fused messages. */
    int ns = 0, nl = 0;
    for (int i = 0; i < n; i++) {
        int k = (i % 4 == 3 && nl < nlarge) || ns == nsmall ? nsmall + nl++ : ns++;
        convoy_data_t *fl[2] = {in[k], out[k]};
        CHECK(convoy_task_insert(ctx, g_copy, NULL, 0, fl) == CONVOY_SUCCESS, "%s",
              convoy_last_error(ctx));
    }
    /* The first small datum read again on rank 1: it is there already, no new flow. */
    if (nsmall > 0) {
        convoy_data_t *fl[2] = {in[0], out[0]};
        CHECK(convoy_task_insert(ctx, g_copy, NULL, 0, fl) == CONVOY_SUCCESS, "%s",
              convoy_last_error(ctx));
    }
    CHECK(convoy_dist_wait(ctx) == CONVOY_SUCCESS, "%s", convoy_last_error(ctx));
    if (g_rank == 1)
        for (int i = 0; i < n; i++)
            CHECK(mo[i][0] == 'a' + i % 26 && mo[i][convoy_data_bytes(out[i]) - 1] == 'a' + i % 26,
                  "flow %d did not land", i);
    convoy_stats_t s;
    convoy_get_stats(ctx, &s);
    for (int i = 0; i < n; i++) {
        convoy_data_free(in[i]);
        convoy_data_free(out[i]);
        free(mi[i]);
        free(mo[i]);
    }
    free(in);
    free(out);
    free(mi);
    free(mo);
    return s;
}

static void expect_counts(const convoy_stats_t *s, uint64_t msgs, uint64_t flows, uint64_t large,
                          const char *what)
{
    uint64_t ms = g_rank == 0 ? msgs : 0, mr = g_rank == 1 ? msgs : 0;
    uint64_t fs = g_rank == 0 ? flows : 0, fr = g_rank == 1 ? flows : 0;
    CHECK(s->dist_messages_sent == ms && s->dist_messages_received == mr &&
              s->dist_flows_sent == fs && s->dist_flows_received == fr &&
              s->dist_large_sent == (g_rank == 0 ? large : 0),
          "%s: messages sent %llu received %llu, flows sent %llu received %llu, large %llu; "
          "expected %llu messages, %llu flows, %llu large",
          what, (unsigned long long)s->dist_messages_sent,
          (unsigned long long)s->dist_messages_received, (unsigned long long)s->dist_flows_sent,
          (unsigned long long)s->dist_flows_received, (unsigned long long)s->dist_large_sent,
          (unsigned long long)msgs, (unsigned long long)flows, (unsigned long long)large);
}

static void test_fusion(void)
{
    convoy_context_t *ctx = start("1", "8", "256K");
    convoy_stats_t s = pattern(ctx, 20, 64, 2);
    expect_counts(&s, 5, 22, 2, "fused, 8 flows a message");
    convoy_fini(ctx);

    ctx = start("0", "8", "256K");
    s = pattern(ctx, 20, 64, 2);
    expect_counts(&s, 22, 22, 2, "unfused");
    convoy_fini(ctx);

    ctx = start("1", "256", "1024");
    s = pattern(ctx, 10, 300, 0);
    expect_counts(&s, 4, 10, 0, "fused, 1024 bytes a message");
    convoy_fini(ctx);
}

static void test_failure(void)
{
    convoy_context_t *ctx = start("1", "256", "256K");
    convoy_access_t w = CONVOY_WRITE;
    convoy_class_t *failing;
    CHECK(convoy_class_new(ctx, "failing", 1, &w, 0, &failing) == CONVOY_SUCCESS, "%s",
          convoy_last_error(ctx));
    convoy_class_set_chore(failing, CONVOY_DEVICE_CPU, fail_chore);
    char a[64] = "old", b[64] = "";
    convoy_data_t *da, *db;
    CHECK(convoy_data_new(ctx, a, sizeof(a), &da) == CONVOY_SUCCESS, "%s", convoy_last_error(ctx));
    CHECK(convoy_data_new(ctx, b, sizeof(b), &db) == CONVOY_SUCCESS, "%s", convoy_last_error(ctx));
    CHECK(convoy_data_set_owner(db, 1) == CONVOY_SUCCESS, "%s", convoy_last_error(ctx));
    CHECK(convoy_task_insert(ctx, failing, NULL, 0, &da) == CONVOY_SUCCESS, "%s",
          convoy_last_error(ctx)); /* on rank 0, fails */
    convoy_data_t *fl[2] = {da, db};
    CHECK(convoy_task_insert(ctx, g_copy, NULL, 0, fl) == CONVOY_SUCCESS, "%s",
          convoy_last_error(ctx)); /* on rank 1: cancelled */
    convoy_status_t st = convoy_dist_wait(ctx);
    CHECK(st == CONVOY_ERR_TASK_FAILED && strstr(convoy_last_error(ctx), "rank 0") != NULL &&
              strstr(convoy_last_error(ctx), "failing") != NULL,
          "wait %d: %s", (int)st, convoy_last_error(ctx));
    convoy_stats_t s;
    convoy_get_stats(ctx, &s);
    CHECK(s.tasks_failed == (g_rank == 0) && s.tasks_cancelled == (g_rank == 1),
          "failed %llu cancelled %llu", (unsigned long long)s.tasks_failed,
          (unsigned long long)s.tasks_cancelled);
    CHECK(g_rank != 1 || b[0] == '\0', "rank 1 got data from a failed task");
    /* The next wait starts clean, and the data move again. */
    CHECK(convoy_task_insert(ctx, g_copy, NULL, 0, fl) == CONVOY_SUCCESS, "%s",
          convoy_last_error(ctx));
    CHECK(convoy_dist_wait(ctx) == CONVOY_SUCCESS, "%s", convoy_last_error(ctx));
    CHECK(g_rank != 1 || strcmp(b, "old") == 0, "rank 1 holds '%s'", b);
    convoy_fini(ctx);
}

static void test_size_mismatch(void)
{
    convoy_context_t *ctx = start("1", "256", "256K");
    char a[64] = "sized", b[64] = "";
    convoy_data_t *da, *db;
    /* The same datum (the first created), 64 bytes on rank 0, 32 elsewhere. */
    CHECK(convoy_data_new(ctx, a, g_rank == 0 ? 64 : 32, &da) == CONVOY_SUCCESS, "%s",
          convoy_last_error(ctx));
    CHECK(convoy_data_new(ctx, b, 32, &db) == CONVOY_SUCCESS, "%s", convoy_last_error(ctx));
    CHECK(convoy_data_set_owner(db, 1) == CONVOY_SUCCESS, "%s", convoy_last_error(ctx));
    convoy_data_t *fl[2] = {da, db};
    CHECK(convoy_task_insert(ctx, g_copy, NULL, 0, fl) == CONVOY_SUCCESS, "%s",
          convoy_last_error(ctx));
    convoy_status_t st = convoy_dist_wait(ctx);
    CHECK(st == CONVOY_ERR_TASK_FAILED &&
              strstr(convoy_last_error(ctx), "carries 64 bytes, the datum has 32") != NULL,
          "wait %d: %s", (int)st, convoy_last_error(ctx));
    CHECK(g_rank != 1 || b[0] == '\0', "rank 1 copied '%s'", b);
    convoy_fini(ctx);
}

static int slow_chore(const convoy_task_view_t *t, void *stream)
{
    (void)stream;
    struct timespec ts = {0, 300 * 1000 * 1000};
    nanosleep(&ts, NULL);
    memset(t->flows[0], 'n', t->flow_bytes[0]);
    return 0;
}

static void test_broken(void)
{
    convoy_context_t *ctx = start("1", "256", "256K");
    convoy_access_t w = CONVOY_WRITE;
    convoy_class_t *slow;
    CHECK(convoy_class_new(ctx, "slow", 1, &w, 0, &slow) == CONVOY_SUCCESS, "%s",
          convoy_last_error(ctx));
    convoy_class_set_chore(slow, CONVOY_DEVICE_CPU, slow_chore);
    char a[64] = "", b[64] = "kept";
    convoy_data_t *da, *db;
    CHECK(convoy_data_new(ctx, a, sizeof(a), &da) == CONVOY_SUCCESS, "%s", convoy_last_error(ctx));
    CHECK(convoy_data_new(ctx, b, sizeof(b), &db) == CONVOY_SUCCESS, "%s", convoy_last_error(ctx));
    CHECK(convoy_data_set_owner(da, 1) == CONVOY_SUCCESS, "%s", convoy_last_error(ctx));
    /* Rank 1 writes a slowly; rank 0 waits for it in a receive meanwhile. */
    CHECK(convoy_task_insert(ctx, slow, NULL, 0, &da) == CONVOY_SUCCESS, "%s",
          convoy_last_error(ctx));
    convoy_data_t *fl[2] = {da, db};
    convoy_task_opts_t on0 = {.rank = CONVOY_RANK(0)};
    CHECK(convoy_task_insert_ex(ctx, g_copy, NULL, 0, fl, &on0) == CONVOY_SUCCESS, "%s",
          convoy_last_error(ctx));
    convoy__dist_t *dist = ctx->dist;
    MPI_Barrier(MPI_COMM_WORLD); /* every rank has inserted before rank 0 breaks */
    if (g_rank == 1) {
        char junk[16] = "not a message";
        CHECK(MPI_Send(junk, sizeof(junk), MPI_BYTE, 0, 7, dist->comm) == MPI_SUCCESS, "send");
    }
    if (g_rank == 0) {
        for (int i = 0; i < 10000 && !atomic_load(&dist->broken); i++) {
            struct timespec ts = {0, 1000 * 1000};
            nanosleep(&ts, NULL);
        }
        CHECK(atomic_load(&dist->broken), "rank 0 did not see the bad message");
        CHECK(convoy_task_insert(ctx, g_copy, NULL, 0, fl) == CONVOY_ERR_DEVICE &&
                  strstr(convoy_last_error(ctx), "not convoy's") != NULL,
              "%s", convoy_last_error(ctx));
    }
    convoy_status_t st = convoy_dist_wait(ctx);
    CHECK(st == CONVOY_ERR_DEVICE && strstr(convoy_last_error(ctx), "on rank 0") != NULL &&
              strstr(convoy_last_error(ctx), "not convoy's") != NULL,
          "wait %d: %s", (int)st, convoy_last_error(ctx));
    convoy_stats_t s;
    convoy_get_stats(ctx, &s);
    CHECK(g_rank != 0 || (s.tasks_cancelled == 1 && strcmp(b, "kept") == 0),
          "rank 0: cancelled %llu, b '%s'", (unsigned long long)s.tasks_cancelled, b);
    convoy_fini(ctx);
}

static void test_bad_calls(void)
{
    convoy_context_t *ctx = start("1", "256", "256K");
    char a[64] = "x", b[64] = "";
    convoy_data_t *da, *db;
    CHECK(convoy_data_new(ctx, a, sizeof(a), &da) == CONVOY_SUCCESS, "%s", convoy_last_error(ctx));
    CHECK(convoy_data_new(ctx, b, sizeof(b), &db) == CONVOY_SUCCESS, "%s", convoy_last_error(ctx));
    CHECK(convoy_data_set_owner(da, g_size) == CONVOY_ERR_INVALID &&
              strstr(convoy_last_error(ctx), "out of range") != NULL,
          "%s", convoy_last_error(ctx));
    CHECK(convoy_data_set_owner(da, -1) == CONVOY_ERR_INVALID, "%s", convoy_last_error(ctx));
    CHECK(convoy_dist_start(ctx, NULL) == CONVOY_ERR_STATE, "%s", convoy_last_error(ctx));
    convoy_data_t *fl[2] = {da, db};
    convoy_task_opts_t o = {.rank = CONVOY_RANK(g_size)};
    CHECK(convoy_task_insert_ex(ctx, g_copy, NULL, 0, fl, &o) == CONVOY_ERR_INVALID &&
              strstr(convoy_last_error(ctx), "out of range") != NULL,
          "%s", convoy_last_error(ctx));
    CHECK(convoy_task_insert(ctx, g_copy, NULL, 0, fl) == CONVOY_SUCCESS, "%s",
          convoy_last_error(ctx));
    CHECK(convoy_data_set_owner(db, 1) == CONVOY_ERR_INVALID &&
              strstr(convoy_last_error(ctx), "used it already") != NULL,
          "%s", convoy_last_error(ctx));
    CHECK(convoy_data_owner(db) == 0, "owner %d", convoy_data_owner(db));
    /* A chore that inserts is refused: its task would be in one rank's stream. */
    convoy_access_t r = CONVOY_READ;
    convoy_class_t *ins;
    CHECK(convoy_class_new(ctx, "inserting", 1, &r, 0, &ins) == CONVOY_SUCCESS, "%s",
          convoy_last_error(ctx));
    convoy_class_set_chore(ins, CONVOY_DEVICE_CPU, inserting_chore);
    convoy_task_opts_t on0 = {.rank = CONVOY_RANK(0)};
    CHECK(convoy_task_insert_ex(ctx, ins, &da, sizeof(da), &da, &on0) == CONVOY_SUCCESS, "%s",
          convoy_last_error(ctx));
    CHECK(convoy_dist_wait(ctx) == CONVOY_SUCCESS, "%s", convoy_last_error(ctx));
    CHECK(g_rank != 0 || g_refused == CONVOY_ERR_STATE, "a chore's insert returned %d", g_refused);
    convoy_fini(ctx);

    /* Without the mode: one rank, and the calls that need it say so. */
    convoy_param_preset_clear();
    convoy_param_preset("devices", "host");
    CHECK(convoy_init(NULL, NULL, &ctx) == CONVOY_SUCCESS, "%s", convoy_last_error(NULL));
    CHECK(convoy_dist_rank(ctx) == 0 && convoy_dist_size(ctx) == 1, "rank/size without the mode");
    CHECK(convoy_data_new(ctx, a, sizeof(a), &da) == CONVOY_SUCCESS, "%s", convoy_last_error(ctx));
    CHECK(convoy_data_set_owner(da, 0) == CONVOY_ERR_STATE, "%s", convoy_last_error(ctx));
    CHECK(convoy_dist_wait(ctx) == CONVOY_SUCCESS, "%s", convoy_last_error(ctx));
    CHECK(convoy_build_has_mpi() == 1, "build has MPI");
    convoy_fini(ctx);
}

int main(int argc, char **argv)
{
    int provided;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &g_rank);
    MPI_Comm_size(MPI_COMM_WORLD, &g_size);
    test_fusion();
    test_failure();
    test_size_mismatch();
    test_broken();
    test_bad_calls();
    if (g_rank == 0)
        printf("check_dist_fuse on %d ranks: passed\n", g_size);
    MPI_Finalize();
    return 0;
}
