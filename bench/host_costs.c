/*
 * host_costs: what the host's primitives cost, the floor under convoy's per-task host
 * time: reading the clock, a system call, a futex wake with no one waiting, an
 * uncontended mutex, an atomic increment, and a cache line passed between two threads
 * (one way of a ping-pong). No convoy code runs; it says what the machine charges.
 *
 * Last line: host_costs clock_ns=.. syscall_ns=.. futex_wake_ns=.. mutex_ns=..
 * atomic_ns=.. line_transfer_ns=.. clocksource=NAME
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
    printf("host_costs clock_ns=%.1f syscall_ns=%.1f futex_wake_ns=%.1f mutex_ns=%.1f "
           "atomic_ns=%.1f line_transfer_ns=%.1f clocksource=%s\n",
           clock_ns, syscall_ns, futex_ns, mutex_ns, atomic_ns, line_ns, source);
    return sink == 42;
}
