/*
 * host_costs: what the host's primitives cost, the floor under convoy's per-task host
 * time: reading the clock, a system call, a futex wake with no one waiting, an
 * uncontended mutex, an atomic increment, and a cache line passed between two threads
 * (one way of a ping-pong). No convoy code runs; it says what the machine charges.
 * Then the memcpy rate of the pinned bounce's shape (tiny_tasks on malloc'd memory):
 * 49152 separately malloc'd 8 KiB pieces copied into 3 MiB blocks, by 1, 2, 4 and 8
 * threads sharing the pieces (the best of 3 passes each), so that what helper threads
 * can gain is known.
 *
 * Last line: host_costs clock_ns=.. syscall_ns=.. futex_wake_ns=.. mutex_ns=..
 * atomic_ns=.. line_transfer_ns=.. clocksource=NAME memcpy_gbs_1t=.. _2t=.. _4t=.. _8t=..
 */
#include "config.h"

#ifdef __linux__
#include <linux/futex.h>
#include <sys/syscall.h>
#endif
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

#define TIMED(n, body)                                                                             \
    ({                                                                                             \
        uint64_t t0_ = now_ns();                                                                   \
        for (long i_ = 0; i_ < (n); i_++) {                                                        \
            body;                                                                                  \
        }                                                                                          \
        (double)(now_ns() - t0_) / (double)(n);                                                    \
    })

static _Atomic long ball; /* odd: the partner's turn */
static long rounds = 200000;

static void *partner(void *arg)
{
    (void)arg;
    for (long k = 0; k < rounds; k++) {
        while ((atomic_load_explicit(&ball, memory_order_acquire) & 1) == 0)
            ;
        atomic_fetch_add_explicit(&ball, 1, memory_order_release);
    }
    return NULL;
}

#define PIECES 49152
#define PIECE 8192
#define BLOCK_PIECES 384 /* 3 MiB, a bounce block of tiny_tasks' submissions */
static unsigned char *pieces[PIECES];
static unsigned char *blocks; /* 4 blocks, used in turn */

typedef struct copier {
    pthread_t th;
    int first, last; /* pieces [first, last) */
} copier_t;

static void *copy_share(void *arg)
{
    copier_t *c = arg;
    for (int i = c->first; i < c->last; i++) {
        unsigned char *dst =
            blocks + ((size_t)(i / BLOCK_PIECES % 4) * BLOCK_PIECES + i % BLOCK_PIECES) * PIECE;
        memcpy(dst, pieces[i], PIECE);
    }
    return NULL;
}

/* GB/s of PIECES pieces copied by n threads, the best of 3 passes. */
static double memcpy_gbs(int n)
{
    copier_t c[8];
    double best = 0;
    for (int pass = 0; pass < 3; pass++) {
        uint64_t t0 = now_ns();
        for (int k = 0; k < n; k++) {
            c[k].first = PIECES / n * k;
            c[k].last = k == n - 1 ? PIECES : PIECES / n * (k + 1);
            pthread_create(&c[k].th, NULL, copy_share, &c[k]);
        }
        for (int k = 0; k < n; k++)
            pthread_join(c[k].th, NULL);
        double gbs = (double)PIECES * PIECE / (double)(now_ns() - t0);
        best = gbs > best ? gbs : best;
    }
    return best;
}

int main(void)
{
    volatile uint64_t sink = 0;
    double clock_ns = TIMED(1000000, sink += now_ns());
#ifdef __linux__
    double syscall_ns = TIMED(200000, sink += (uint64_t)syscall(SYS_getppid));
    static int word;
    double futex_ns =
        TIMED(200000, syscall(SYS_futex, &word, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0));
#else
    double syscall_ns = TIMED(200000, sink += (uint64_t)getppid());
    double futex_ns = -1; /* no futex here */
#endif
    pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
    double mutex_ns = TIMED(1000000, pthread_mutex_lock(&m); pthread_mutex_unlock(&m));
    static _Atomic long counter;
    double atomic_ns = TIMED(1000000, atomic_fetch_add(&counter, 1));
    pthread_t th;
    pthread_create(&th, NULL, partner, NULL);
    uint64_t t0 = now_ns();
    for (long k = 0; k < rounds; k++) {
        atomic_fetch_add_explicit(&ball, 1, memory_order_release);
        while ((atomic_load_explicit(&ball, memory_order_acquire) & 1) != 0)
            ;
    }
    double line_ns = (double)(now_ns() - t0) / (double)rounds / 2;
    pthread_join(th, NULL);
    char source[64] = "unknown";
    FILE *f = fopen("/sys/devices/system/clocksource/clocksource0/current_clocksource", "r");
    if (f != NULL) {
        if (fgets(source, sizeof(source), f) != NULL)
            source[strcspn(source, "\n")] = '\0';
        fclose(f);
    }
    blocks = malloc((size_t)4 * BLOCK_PIECES * PIECE);
    for (int i = 0; i < PIECES && blocks != NULL; i++) {
        if ((pieces[i] = malloc(PIECE)) == NULL) {
            fprintf(stderr, "host_costs: out of memory\n");
            return 1;
        }
        memset(pieces[i], i, PIECE);
    }
    if (blocks == NULL) {
        fprintf(stderr, "host_costs: out of memory\n");
        return 1;
    }
    memset(blocks, 0, (size_t)4 * BLOCK_PIECES * PIECE);
    double gbs[4];
    for (int k = 0; k < 4; k++)
        gbs[k] = memcpy_gbs(1 << k);
    printf("host_costs clock_ns=%.1f syscall_ns=%.1f futex_wake_ns=%.1f mutex_ns=%.1f "
           "atomic_ns=%.1f line_transfer_ns=%.1f clocksource=%s memcpy_gbs_1t=%.1f "
           "memcpy_gbs_2t=%.1f memcpy_gbs_4t=%.1f memcpy_gbs_8t=%.1f\n",
           clock_ns, syscall_ns, futex_ns, mutex_ns, atomic_ns, line_ns, source, gbs[0], gbs[1],
           gbs[2], gbs[3]);
    for (int i = 0; i < PIECES; i++)
        free(pieces[i]);
    free(blocks);
    return sink == 42;
}
