/*
 * A program outside convoy's tree, built against an installed convoy by CMake
 * (tests/outside/cmake) and by pkg-config (tests/outside/pkgconfig): it proves that the
 * installed header and library work from outside, that the header's version is the
 * library's, and runs one task on the CPUs. Exit 0 on success.
 */
#include <convoy.h>
#include <stdio.h>

static int add_one(const convoy_task_view_t *task, void *stream)
{
    (void)stream;
    int *x = task->flows[0];
    *x += 1;
    return 0;
}

int main(int argc, char **argv)
{
    int major, minor, patch;
    convoy_version(&major, &minor, &patch);
    if (major != CONVOY_VERSION_MAJOR || minor != CONVOY_VERSION_MINOR ||
        patch != CONVOY_VERSION_PATCH) {
        fprintf(stderr, "header %s, library %d.%d.%d\n", CONVOY_VERSION, major, minor, patch);
        return 1;
    }
    convoy_context_t *ctx;
    if (convoy_init(&argc, &argv, &ctx) != CONVOY_SUCCESS) {
        fprintf(stderr, "convoy_init: %s\n", convoy_last_error(NULL));
        return 1;
    }
    convoy_access_t mode = CONVOY_RW;
    convoy_class_t *cls;
    int x = 41;
    convoy_data_t *d;
    if (convoy_class_new(ctx, "add_one", 1, &mode, 0, &cls) != CONVOY_SUCCESS ||
        convoy_class_set_chore(cls, CONVOY_DEVICE_CPU, add_one) != CONVOY_SUCCESS ||
        convoy_data_new(ctx, &x, sizeof(x), &d) != CONVOY_SUCCESS ||
        convoy_task_insert(ctx, cls, NULL, 0, &d) != CONVOY_SUCCESS ||
        convoy_wait(ctx) != CONVOY_SUCCESS ||
        convoy_data_acquire(d, CONVOY_READ) != CONVOY_SUCCESS) {
        fprintf(stderr, "convoy: %s\n", convoy_last_error(ctx));
        convoy_fini(ctx);
        return 1;
    }
    convoy_data_free(d);
    convoy_fini(ctx);
    printf("convoy %s from outside: x = %d (%s)\n", CONVOY_VERSION, x, x == 42 ? "ok" : "WRONG");
    return x == 42 ? 0 : 1;
}
