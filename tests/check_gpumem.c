/*
 * check_gpumem: the vendor-neutral memory of the GPU components (device/devpool.c,
 * device/hostslab.c) and the copy arguments of every device (device/copyargs.c), over
 * fake vendor calls in host memory, so that the logic under every CUDA and HIP run is
 * tested on machines without a GPU: chunk and slab sizes, the capacity, trimming, the
 * per-context registry, the device pointers of slabs, and every error path's message.
 */
#include "config.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "device/copyargs.h"
#include "device/devpool.h"
#include "device/hostslab.h"
#include "src/util.h"
#include "tests/test_util.h"

#define MIB ((size_t)1 << 20)

/* ---- fake vendor calls ------------------------------------------------------------- */

/* What the fake runtime did, and how it should fail next. */
static struct {
    int enters, allocs, frees;
    size_t last_size; /* bytes of the last chunk or slab allocated */
    int fail_nomem;   /* chunk_alloc: out of memory */
    int fail_device;  /* chunk_alloc, slab_alloc: another error, recorded */
    int foreign;      /* what foreign_pinned answers */
    int foreign_asked;
} fake;

static void *fake_alloc(size_t bytes)
{
    void *p = NULL;
    ck_assert_int_eq(posix_memalign(&p, 4096, bytes), 0);
    fake.allocs++;
    fake.last_size = bytes;
    return p;
}

static convoy_status_t fake_enter(convoy__device_t *dev)
{
    (void)dev;
    fake.enters++;
    return CONVOY_SUCCESS;
}

static convoy_status_t fake_chunk_alloc(convoy__device_t *dev, size_t bytes, void **chunk_p)
{
    if (fake.fail_nomem)
        return CONVOY_ERR_NOMEM;
    if (fake.fail_device)
        return convoy__error(dev->ctx, CONVOY_ERR_DEVICE, "%s: fakeMalloc failed: broken",
                             dev->name);
    *chunk_p = fake_alloc(bytes);
    return CONVOY_SUCCESS;
}

static void fake_chunk_free(convoy__device_t *dev, void *chunk)
{
    (void)dev;
    fake.frees++;
    free(chunk);
}

static const convoy__devpool_ops_t fake_pool_ops = {
    .vendor = "FAKE",
    .malloc_name = "fakeMalloc",
    .enter = fake_enter,
    .chunk_alloc = fake_chunk_alloc,
    .chunk_free = fake_chunk_free,
};

#define DEV_TAG ((uintptr_t)1 << 44) /* a slab's device pointer: its base plus this */

static convoy_status_t fake_slab_alloc(convoy_context_t *ctx, size_t bytes, void **base_p,
                                       void **dev_p)
{
    if (fake.fail_device)
        return convoy__error(ctx, CONVOY_ERR_DEVICE, "fake: fakeHostAlloc failed: broken");
    *base_p = fake_alloc(bytes);
    *dev_p = (void *)((uintptr_t)*base_p + DEV_TAG);
    return CONVOY_SUCCESS;
}

static void fake_slab_free(void *base)
{
    fake.frees++;
    free(base);
}

static int fake_foreign_pinned(const void *p, size_t bytes)
{
    (void)p;
    ck_assert_uint_gt(bytes, 0);
    fake.foreign_asked++;
    return fake.foreign;
}

static const convoy__hostslab_ops_t fake_slab_ops = {
    .name = "fake",
    .vendor = "FAKE",
    .slab_alloc = fake_slab_alloc,
    .slab_free = fake_slab_free,
    .foreign_pinned = fake_foreign_pinned,
};
/* A second component, whose state must stay apart from the first's. */
static const convoy__hostslab_ops_t other_slab_ops = {
    .name = "other",
    .vendor = "OTHER",
    .slab_alloc = fake_slab_alloc,
    .slab_free = fake_slab_free,
    .foreign_pinned = fake_foreign_pinned,
};

static void fake_reset(void)
{
    memset(&fake, 0, sizeof(fake));
}

/* A device of capacity bytes with a pool of chunk-byte chunks. */
static void pool_open(convoy__device_t *dev, convoy__devpool_t *pool, size_t capacity, size_t chunk)
{
    fake_reset();
    memset(dev, 0, sizeof(*dev));
    strcpy(dev->name, "fake0");
    dev->mem_capacity = capacity;
    memset(pool, 0, sizeof(*pool));
    ck_assert_int_eq(convoy__devpool_init(pool, dev, &fake_pool_ops, chunk), CONVOY_SUCCESS);
}

static void *pool_alloc_ok(convoy__devpool_t *pool, size_t bytes)
{
    void *p = NULL;
    convoy_status_t st = convoy__devpool_alloc(pool, bytes, &p);
    ck_assert_msg(st == CONVOY_SUCCESS, "alloc of %zu: %s", bytes, convoy_last_error(NULL));
    ck_assert_ptr_nonnull(p);
    ck_assert_uint_eq((uintptr_t)p % 256, 0);
    return p;
}

/* ---- devpool ----------------------------------------------------------------------- */

START_TEST(pool_chunks)
{
    /* Proves: small requests share one chunk of the chunk size, 256-byte aligned, that
     * the pool knows and a kernel may touch; a request larger than a chunk gets a chunk of
     * its own rounded to 2 MiB; freed memory is reused; fini frees every chunk once. */
    convoy__device_t dev;
    convoy__devpool_t pool;
    pool_open(&dev, &pool, 64 * MIB, 4 * MIB);
    void *a = pool_alloc_ok(&pool, 1000);
    void *b = pool_alloc_ok(&pool, 1);
    ck_assert_int_eq(fake.allocs, 1);
    ck_assert_uint_eq(fake.last_size, 4 * MIB);
    ck_assert_uint_eq((uintptr_t)b - (uintptr_t)a, 1024);
    pthread_mutex_lock(&pool.lock);
    ck_assert(convoy__devpool_contains_locked(&pool, a, 1000));
    ck_assert(!convoy__devpool_contains_locked(&pool, a, 4 * MIB + 1));
    ck_assert(!convoy__devpool_contains_locked(&pool, &dev, 1));
    pthread_mutex_unlock(&pool.lock);

    void *big = pool_alloc_ok(&pool, 5 * MIB + 1);
    ck_assert_int_eq(fake.allocs, 2);
    ck_assert_uint_eq(fake.last_size, 6 * MIB);

    convoy__devpool_free(&pool, a);
    ck_assert_ptr_eq(pool_alloc_ok(&pool, 1000), a);
    ck_assert_int_eq(fake.allocs, 2);

    convoy__devpool_free(&pool, NULL);
    convoy__devpool_free(&pool, (char *)a + 256); /* logged, ignored */
    convoy__devpool_free(&pool, big);
    convoy__devpool_fini(&pool);
    ck_assert_int_eq(fake.frees, 2);
    ck_assert_ptr_null(pool.arena);
    convoy__devpool_fini(&pool); /* twice: nothing left to do */
    ck_assert_int_eq(fake.frees, 2);
}
END_TEST

START_TEST(pool_bad_arguments)
{
    /* Proves: a NULL ptr_p or 0 bytes is CONVOY_ERR_INVALID, more than the capacity
     * CONVOY_ERR_NOMEM, each with its message, and nothing is allocated. */
    convoy__device_t dev;
    convoy__devpool_t pool;
    pool_open(&dev, &pool, 8 * MIB, 2 * MIB);
    void *p = &dev;
    ck_assert_int_eq(convoy__devpool_alloc(&pool, 16, NULL), CONVOY_ERR_INVALID);
    tu_assert_error_has(NULL, "fake0: mem_alloc: NULL ptr_p");
    ck_assert_int_eq(convoy__devpool_alloc(&pool, 0, &p), CONVOY_ERR_INVALID);
    tu_assert_error_has(NULL, "fake0: mem_alloc: 0 bytes asked");
    ck_assert_int_eq(convoy__devpool_alloc(&pool, 8 * MIB + 1, &p), CONVOY_ERR_NOMEM);
    tu_assert_error_has(NULL, "bytes exceed the capacity, 8388608 bytes");
    ck_assert_ptr_eq(p, &dev);
    ck_assert_int_eq(fake.allocs, 0);
    convoy__devpool_fini(&pool);
}
END_TEST

START_TEST(pool_capacity)
{
    /* Proves: the capacity bounds what is in use ("device memory full" naming what is
     * asked and in use), and the last chunk takes only what the capacity leaves. */
    convoy__device_t dev;
    convoy__devpool_t pool;
    pool_open(&dev, &pool, 5 * MIB, 2 * MIB);
    pool_alloc_ok(&pool, 2 * MIB);
    pool_alloc_ok(&pool, 2 * MIB);
    void *p = NULL;
    ck_assert_int_eq(convoy__devpool_alloc(&pool, 2 * MIB, &p), CONVOY_ERR_NOMEM);
    tu_assert_error_has(NULL, "fake0: device memory full: 2097152 bytes asked",
                        "4194304 of 5242880 in use");
    void *last = pool_alloc_ok(&pool, MIB);
    ck_assert_int_eq(fake.allocs, 3);
    ck_assert_uint_eq(fake.last_size, MIB); /* not a 2 MiB chunk: the capacity leaves 1 */
    convoy__devpool_free(&pool, last);
    convoy__devpool_fini(&pool);
    ck_assert_int_eq(fake.frees, 3);
}
END_TEST

START_TEST(pool_trim)
{
    /* Proves: when the capacity is all reserved in chunks that cannot hold a request,
     * the empty ones are given back (the device made current first) and the request
     * gets a chunk of its own; chunks in use are kept. */
    convoy__device_t dev;
    convoy__devpool_t pool;
    pool_open(&dev, &pool, 4 * MIB, MIB);
    void *p[4];
    for (int i = 0; i < 4; i++)
        p[i] = pool_alloc_ok(&pool, MIB);
    ck_assert_int_eq(fake.allocs, 4);
    for (int i = 1; i < 4; i++)
        convoy__devpool_free(&pool, p[i]);
    int enters = fake.enters;
    pool_alloc_ok(&pool, 3 * MIB);
    ck_assert_int_gt(fake.enters, enters);
    ck_assert_int_eq(fake.frees, 3);
    ck_assert_int_eq(fake.allocs, 5);
    ck_assert_uint_eq(fake.last_size, 3 * MIB); /* 4 MiB rounded, cut to the capacity */
    pthread_mutex_lock(&pool.lock);
    ck_assert(convoy__devpool_contains_locked(&pool, p[0], MIB));
    pthread_mutex_unlock(&pool.lock);
    convoy__devpool_fini(&pool);
    ck_assert_int_eq(fake.frees, 5);
}
END_TEST

START_TEST(pool_vendor_errors)
{
    /* Proves: the runtime out of memory is CONVOY_ERR_NOMEM naming the allocator and the
     * chunk; another runtime error is returned as the runtime recorded it. */
    convoy__device_t dev;
    convoy__devpool_t pool;
    pool_open(&dev, &pool, 64 * MIB, 2 * MIB);
    void *p = NULL;
    fake.fail_nomem = 1;
    ck_assert_int_eq(convoy__devpool_alloc(&pool, 100, &p), CONVOY_ERR_NOMEM);
    tu_assert_error_has(NULL, "fake0: fakeMalloc of a 2097152-byte chunk failed (out of memory)",
                        "with 0 bytes reserved of 67108864");
    fake.fail_nomem = 0;
    fake.fail_device = 1;
    ck_assert_int_eq(convoy__devpool_alloc(&pool, 100, &p), CONVOY_ERR_DEVICE);
    tu_assert_error_has(NULL, "fake0: fakeMalloc failed: broken");
    ck_assert_ptr_null(p);
    fake.fail_device = 0;
    pool_alloc_ok(&pool, 100);
    convoy__devpool_fini(&pool);
    ck_assert_int_eq(fake.frees, 1);
}
END_TEST

/* ---- hostslab ---------------------------------------------------------------------- */

START_TEST(slab_registry)
{
    /* Proves: without an open device convoy_host_alloc is CONVOY_ERR_STATE naming the
     * vendor; the devices of one component share one state, another component has its
     * own; the last detach frees every slab, and then the state is gone. */
    fake_reset();
    ck_assert_ptr_null(convoy__hostslab_alloc(&fake_slab_ops, NULL, 64));
    tu_assert_error_has(NULL, "convoy_host_alloc: no FAKE device is open");
    convoy__hostslab_t *a = convoy__hostslab_attach(&fake_slab_ops, NULL, MIB);
    convoy__hostslab_t *b = convoy__hostslab_attach(&fake_slab_ops, NULL, MIB);
    ck_assert_ptr_nonnull(a);
    ck_assert_ptr_eq(a, b);
    ck_assert_ptr_null(convoy__hostslab_alloc(&other_slab_ops, NULL, 64));
    tu_assert_error_has(NULL, "no OTHER device is open");
    convoy__hostslab_t *o = convoy__hostslab_attach(&other_slab_ops, NULL, MIB);
    ck_assert_ptr_ne(o, a);

    void *p = convoy__hostslab_alloc(&fake_slab_ops, NULL, 100);
    void *q = convoy__hostslab_alloc(&other_slab_ops, NULL, 100);
    ck_assert_ptr_nonnull(p);
    ck_assert_ptr_nonnull(q);
    ck_assert_int_eq(fake.allocs, 2);
    ck_assert(convoy__hostslab_is_pinned(&fake_slab_ops, NULL, p, 100));
    ck_assert_int_eq(fake.foreign_asked, 0);
    ck_assert(!convoy__hostslab_is_pinned(&fake_slab_ops, NULL, q, 100)); /* the other's */
    ck_assert_int_eq(fake.foreign_asked, 1);

    convoy__hostslab_detach(o);
    ck_assert_int_eq(fake.frees, 1);
    convoy__hostslab_detach(a);
    ck_assert_int_eq(fake.frees, 1); /* b still holds it */
    ck_assert(convoy__hostslab_is_pinned(&fake_slab_ops, NULL, p, 1));
    convoy__hostslab_detach(b); /* p was never freed: reported at info, slab freed */
    ck_assert_int_eq(fake.frees, 2);
    ck_assert_ptr_null(convoy__hostslab_alloc(&fake_slab_ops, NULL, 64));
    tu_assert_error_has(NULL, "no FAKE device is open");
    convoy__hostslab_detach(NULL);
}
END_TEST

START_TEST(slab_blocks)
{
    /* Proves: blocks are 64-byte aligned and share a slab of the slab size; a block
     * larger than a slab gets a slab of its own rounded to 2 MiB; map_locked gives the
     * device pointer of a range inside one slab and nothing outside; freed blocks are
     * reused; free ignores NULL and a pointer it did not hand out. */
    fake_reset();
    convoy__hostslab_t *hs = convoy__hostslab_attach(&fake_slab_ops, NULL, MIB);
    ck_assert_ptr_nonnull(hs);
    char *a = convoy__hostslab_alloc(&fake_slab_ops, NULL, 1);
    char *b = convoy__hostslab_alloc(&fake_slab_ops, NULL, 65);
    ck_assert_uint_eq((uintptr_t)a % 64, 0);
    ck_assert_ptr_eq(b, a + 64);
    ck_assert_int_eq(fake.allocs, 1);
    ck_assert_uint_eq(fake.last_size, MIB);

    char *big = convoy__hostslab_alloc(&fake_slab_ops, NULL, 3 * MIB);
    ck_assert_ptr_nonnull(big);
    ck_assert_int_eq(fake.allocs, 2);
    ck_assert_uint_eq(fake.last_size, 4 * MIB);

    void *dev_p = NULL;
    const convoy__arena_t *slabs = convoy__hostslab_lock(hs);
    ck_assert(convoy__hostslab_map_locked(slabs, b + 10, 100, &dev_p, NULL));
    ck_assert_uint_eq((uintptr_t)dev_p, (uintptr_t)(b + 10) + DEV_TAG);
    ck_assert(convoy__hostslab_map_locked(slabs, big, 3 * MIB, &dev_p, NULL));
    ck_assert_uint_eq((uintptr_t)dev_p, (uintptr_t)big + DEV_TAG);
    ck_assert(!convoy__hostslab_map_locked(slabs, a, MIB + 1, &dev_p, NULL));
    /* With a hint: a hit in the hinted slab, a miss there that finds the other slab and
     * becomes the hint, a range the hint holds only in part is looked up and refused
     * (the hint stays), and a range of the first slab again is found by search. */
    const convoy__arena_region_t *last = NULL;
    ck_assert(convoy__hostslab_map_locked(slabs, b + 10, 100, &dev_p, &last));
    const convoy__arena_region_t *first = last;
    ck_assert_ptr_nonnull(first);
    ck_assert(convoy__hostslab_map_locked(slabs, b + 200, 8, &dev_p, &last));
    ck_assert_ptr_eq(last, first);
    ck_assert_uint_eq((uintptr_t)dev_p, (uintptr_t)(b + 200) + DEV_TAG);
    ck_assert(convoy__hostslab_map_locked(slabs, big + 64, 64, &dev_p, &last));
    ck_assert_ptr_ne(last, first);
    ck_assert_uint_eq((uintptr_t)dev_p, (uintptr_t)(big + 64) + DEV_TAG);
    const convoy__arena_region_t *second = last;
    ck_assert(!convoy__hostslab_map_locked(slabs, big, 5 * MIB, &dev_p, &last));
    ck_assert_ptr_eq(last, second); /* a refusal leaves the hint */
    ck_assert(convoy__hostslab_map_locked(slabs, b + 300, 8, &dev_p, &last)); /* back, by search */
    ck_assert_ptr_eq(last, first);
    convoy__hostslab_unlock(hs);

    convoy__hostslab_free(&fake_slab_ops, NULL, b);
    ck_assert_ptr_eq(convoy__hostslab_alloc(&fake_slab_ops, NULL, 128), b);
    convoy__hostslab_free(&fake_slab_ops, NULL, NULL);
    convoy__hostslab_free(&fake_slab_ops, NULL, a + 8); /* logged, ignored */
    ck_assert_int_eq(fake.allocs, 2);
    convoy__hostslab_detach(hs);
    ck_assert_int_eq(fake.frees, 2);
}
END_TEST

START_TEST(slab_errors)
{
    /* Proves: 0 bytes is CONVOY_ERR_INVALID and a size past SIZE_MAX / 2 CONVOY_ERR_NOMEM;
     * a failed pin is CONVOY_ERR_NOMEM carrying the runtime's message; is_pinned asks the
     * runtime outside the slabs (0 bytes as 1) and says no for NULL. */
    fake_reset();
    convoy__hostslab_t *hs = convoy__hostslab_attach(&fake_slab_ops, NULL, MIB);
    ck_assert_ptr_null(convoy__hostslab_alloc(&fake_slab_ops, NULL, 0));
    tu_assert_error_has(NULL, "convoy_host_alloc: 0 bytes cannot be allocated");
    ck_assert_ptr_null(convoy__hostslab_alloc(&fake_slab_ops, NULL, SIZE_MAX / 2 + 1));
    tu_assert_error_has(NULL, "bytes cannot be allocated");
    fake.fail_device = 1;
    ck_assert_ptr_null(convoy__hostslab_alloc(&fake_slab_ops, NULL, 100));
    tu_assert_error_has(
        NULL, "convoy_host_alloc: no pinned slab of 1048576 bytes for a block of 100 bytes",
        "fakeHostAlloc failed: broken");
    fake.fail_device = 0;
    ck_assert_int_eq(fake.allocs, 0);

    int x = 0;
    ck_assert(!convoy__hostslab_is_pinned(&fake_slab_ops, NULL, NULL, 8));
    ck_assert(!convoy__hostslab_is_pinned(&fake_slab_ops, NULL, &x, 0));
    fake.foreign = 1;
    ck_assert(convoy__hostslab_is_pinned(&fake_slab_ops, NULL, &x, sizeof(x)));
    ck_assert_int_eq(fake.foreign_asked, 2);
    convoy__hostslab_detach(hs);
    ck_assert_int_eq(fake.frees, 0);
}
END_TEST

/* ---- copyargs ---------------------------------------------------------------------- */

/* A device record with only what the checks read: its name, fake0, and max_batch. */
static void fake_copy_device(convoy__device_t *dev, int max_batch)
{
    memset(dev, 0, sizeof(*dev));
    strcpy(dev->name, "fake0");
    dev->max_batch = max_batch;
}

START_TEST(copy_checks)
{
    /* Proves: the checks of memcpy and memcpy_multi name the device, the call and the
     * first thing wrong: NULL copies, n outside 1..max_batch, a NULL pointer or empty
     * copy, an unknown direction, a NULL stream (checked after the copies). */
    convoy__device_t dev;
    fake_copy_device(&dev, 4);
    char buf[64];
    convoy__stream_t *s = (convoy__stream_t *)(void *)buf;
    convoy__copy_t c[5];
    for (int i = 0; i < 5; i++)
        c[i] = (convoy__copy_t){.dst = buf, .src = buf + 32, .bytes = 8, .dir = CONVOY__D2D};
    ck_assert_int_eq(convoy__copyargs_check(&dev, "memcpy_multi", s, c, 4), CONVOY_SUCCESS);
    ck_assert_int_eq(convoy__copyargs_check(&dev, "memcpy", s, NULL, 1), CONVOY_ERR_INVALID);
    tu_assert_error_has(NULL, "fake0: memcpy: NULL copies");
    ck_assert_int_eq(convoy__copyargs_check(&dev, "memcpy_multi", s, c, 5), CONVOY_ERR_INVALID);
    tu_assert_error_has(NULL, "fake0: memcpy_multi: n = 5 is outside 1..4");
    ck_assert_int_eq(convoy__copyargs_check(&dev, "memcpy_multi", s, c, 0), CONVOY_ERR_INVALID);
    c[2].src = NULL;
    ck_assert_int_eq(convoy__copyargs_check(&dev, "memcpy_multi", NULL, c, 4), CONVOY_ERR_INVALID);
    tu_assert_error_has(NULL, "fake0: memcpy_multi: copy 2: dst",
                        "(NULL pointers and empty copies are not allowed)");
    c[2].src = buf;
    c[3].dir = 3;
    ck_assert_int_eq(convoy__copyargs_check(&dev, "memcpy_multi", s, c, 4), CONVOY_ERR_INVALID);
    tu_assert_error_has(NULL, "fake0: memcpy_multi: copy 3: dir 3 is unknown");
    ck_assert_int_eq(convoy__copyargs_check(&dev, "memcpy", NULL, c, 1), CONVOY_ERR_INVALID);
    tu_assert_error_has(NULL, "fake0: memcpy: NULL stream");
}
END_TEST

START_TEST(copy_summary)
{
    /* Proves: the check's pass also sums what a device's method choice reads: the bytes,
     * the host sides not flagged pinned (a D2D copy has none) and how many of those are
     * device to host; a failed check leaves the summary as it was. */
    convoy__device_t dev;
    fake_copy_device(&dev, 8);
    char buf[64];
    convoy__stream_t *s = (convoy__stream_t *)(void *)buf;
    convoy__copy_t c[5] = {
        {.dst = buf, .src = buf + 8, .bytes = 8, .dir = CONVOY__H2D},
        {.dst = buf, .src = buf + 8, .bytes = 16, .dir = CONVOY__D2H},
        {.dst = buf,
         .src = buf + 8,
         .bytes = 4,
         .dir = CONVOY__D2H,
         .flags = CONVOY__COPY_HOST_PINNED},
        {.dst = buf, .src = buf + 8, .bytes = 2, .dir = CONVOY__D2D},
        {.dst = buf,
         .src = buf + 8,
         .bytes = 1,
         .dir = CONVOY__H2D,
         .flags = CONVOY__COPY_HOST_PINNED},
    };
    convoy__copy_summary_t sum;
    ck_assert_int_eq(convoy__copyargs_scan(&dev, "memcpy_multi", s, c, 5, &sum), CONVOY_SUCCESS);
    ck_assert_uint_eq(sum.bytes, 31);
    ck_assert_int_eq(sum.pageable, 2);
    ck_assert_int_eq(sum.pageable_d2h, 1);
    ck_assert_int_eq(convoy__copyargs_scan(&dev, "memcpy_multi", s, c + 2, 3, &sum),
                     CONVOY_SUCCESS);
    ck_assert_uint_eq(sum.bytes, 7);
    ck_assert_int_eq(sum.pageable, 0);
    ck_assert_int_eq(sum.pageable_d2h, 0);
    c[4].bytes = 0;
    ck_assert_int_eq(convoy__copyargs_scan(&dev, "memcpy_multi", s, c, 5, &sum),
                     CONVOY_ERR_INVALID);
    ck_assert_uint_eq(sum.bytes, 7);
}
END_TEST

START_TEST(copy_arrays)
{
    /* Proves: the batch arrays start at 64 entries, double as needed and hold each
     * copy's destination, source and size. */
    convoy__device_t dev;
    memset(&dev, 0, sizeof(dev));
    strcpy(dev.name, "fake0");
    static char buf[200];
    convoy__copy_t c[130];
    for (int i = 0; i < 130; i++)
        c[i] = (convoy__copy_t){.dst = buf + i, .src = buf + 199 - i, .bytes = (size_t)i + 1};
    convoy__copyargs_t a;
    memset(&a, 0, sizeof(a));
    ck_assert_int_eq(convoy__copyargs_set(&a, &dev, c, 3), CONVOY_SUCCESS);
    ck_assert_int_eq(a.cap, 64);
    ck_assert_int_eq(convoy__copyargs_set(&a, &dev, c, 130), CONVOY_SUCCESS);
    ck_assert_int_eq(a.cap, 256);
    for (int i = 0; i < 130; i++) {
        ck_assert_ptr_eq(a.dsts[i], c[i].dst);
        ck_assert_ptr_eq(a.srcs[i], c[i].src);
        ck_assert_uint_eq(a.sizes[i], c[i].bytes);
    }
    convoy__copyargs_fini(&a);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("gpumem");
    TCase *tc = tu_tcase(s, "devpool", 20);
    tcase_add_test(tc, pool_chunks);
    tcase_add_test(tc, pool_bad_arguments);
    tcase_add_test(tc, pool_capacity);
    tcase_add_test(tc, pool_trim);
    tcase_add_test(tc, pool_vendor_errors);

    tc = tu_tcase(s, "hostslab", 20);
    tcase_add_test(tc, slab_registry);
    tcase_add_test(tc, slab_blocks);
    tcase_add_test(tc, slab_errors);

    tc = tu_tcase(s, "copyargs", 20);
    tcase_add_test(tc, copy_checks);
    tcase_add_test(tc, copy_summary);
    tcase_add_test(tc, copy_arrays);
    return s;
}

int main(void)
{
    return tu_main(suite());
}
