/*
 * check_module: the loader of device modules (device/module.c) and the component
 * interface without a context: a module loads from module_dir and reaches libconvoy's
 * core services; a module that cannot load (missing file, missing library, not a
 * module, another component's file) gives no component and a reason; the GPU
 * components of this build, when they are modules that cannot load, are unavailable
 * with the loader's reason while CPU tasks still run; selection honours priority.
 * Run from the build folder (make check): the test modules are in tests/.libs.
 */
#include "config.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "device/module.h"
#include "src/core.h"
#include "tests/test_util.h"

static char test_modules[PATH_MAX]; /* the absolute path of tests/.libs */

/* Parameters as a program would get them with these presets. */
static void load_params(convoy__params_t *params, const char *const *presets)
{
    tu_set_presets(presets);
    ck_assert_msg(convoy__params_load(params, NULL, NULL) == CONVOY_SUCCESS, "%s",
                  convoy_last_error(NULL));
}

/* Asks for module `name` in dir; returns the component and leaves the reason in why. */
static const convoy__device_component_t *get(const char *dir, const char *name, char *why,
                                             size_t len)
{
    convoy__params_t params;
    load_params(&params, (const char *const[]){"module_dir", dir, "sim_count", "3", NULL});
    why[0] = '\0';
    const convoy__device_component_t *c = convoy__module_component(name, &params, why, len);
    convoy__params_free(&params);
    return c;
}

START_TEST(module_loads)
{
    /* Proves: a module in module_dir loads, its component is the module's own, and it
     * reads parameters and records errors through libconvoy (the core table): its
     * query reports sim_count, its open's error is convoy_last_error's. */
    char why[512];
    const convoy__device_component_t *c = get(test_modules, "fakeok", why, sizeof(why));
    ck_assert_msg(c != NULL, "fakeok did not load: %s", why);
    ck_assert_str_eq(c->name, "fakeok");
    convoy__params_t params;
    load_params(&params, (const char *const[]){"sim_count", "3", NULL});
    ck_assert_int_eq(c->query(&params, why, sizeof(why)), 3);
    ck_assert_str_eq(why, "fake module: sim_count 3");
    convoy__params_free(&params);
    convoy__device_t *dev = NULL;
    ck_assert_int_eq(c->open(NULL, 1, 4, &dev), CONVOY_ERR_DEVICE);
    tu_assert_error_has(NULL, "fake module: open 1 as accelerator 4 refused");
    /* Loaded once: the second call gives the same component. */
    ck_assert_ptr_eq(get(test_modules, "fakeok", why, sizeof(why)), c);
}
END_TEST

START_TEST(module_dependency_missing)
{
    /* Proves: a module whose dependency the dynamic loader cannot find (as a module
     * whose vendor runtime is absent) gives no component, with dlerror's text naming
     * the missing library as the reason; asking again fails again (failures are not
     * cached). */
    char why[512];
    for (int round = 0; round < 2; round++) {
        ck_assert_ptr_null(get(test_modules, "fakegone", why, sizeof(why)));
        ck_assert_msg(strstr(why, "module not loaded") != NULL, "%s", why);
        ck_assert_msg(strstr(why, "libconvoy_gone.so.0") != NULL, "%s", why);
    }
}
END_TEST

START_TEST(module_missing_or_bad)
{
    /* Proves: no file, a file that is not a shared object, and another component's
     * module under this component's name each give no component and a reason. */
    char why[512], dir[] = "/tmp/convoy_modXXXXXX", path[PATH_MAX + 32], cmd[3 * PATH_MAX];
    ck_assert_ptr_null(get("/nonexistent/convoy", "fakeok", why, sizeof(why)));
    ck_assert_msg(strstr(why, "/nonexistent/convoy/convoy_fakeok.so") != NULL, "%s", why);

    ck_assert_ptr_nonnull(mkdtemp(dir));
    snprintf(path, sizeof(path), "%s/convoy_junk.so", dir);
    FILE *f = fopen(path, "w");
    ck_assert_ptr_nonnull(f);
    fputs("not a shared object\n", f);
    fclose(f);
    ck_assert_ptr_null(get(dir, "junk", why, sizeof(why)));
    ck_assert_msg(strstr(why, "module not loaded") != NULL && strstr(why, "convoy_junk.so"), "%s",
                  why);

    snprintf(cmd, sizeof(cmd), "cp '%s/convoy_fakeok.so' '%s/convoy_other.so'", test_modules, dir);
    ck_assert_int_eq(system(cmd), 0);
    ck_assert_ptr_null(get(dir, "other", why, sizeof(why)));
    ck_assert_msg(strstr(why, "not that of this component") != NULL, "%s", why);
    /* A shared object without the descriptor. */
    snprintf(cmd, sizeof(cmd), "cp '%s/libconvoy_gone.so.0' '%s/convoy_nosym.so'", test_modules,
             dir);
    ck_assert_int_eq(system(cmd), 0);
    ck_assert_ptr_null(get(dir, "nosym", why, sizeof(why)));
    ck_assert_msg(strstr(why, "has no symbol " CONVOY__MODULE_SYMBOL) != NULL, "%s", why);
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
    ck_assert_int_eq(system(cmd), 0);

    /* A module of another build. */
    ck_assert_ptr_null(get(test_modules, "fakeother", why, sizeof(why)));
    ck_assert_msg(strstr(why, "another build") && strstr(why, "0.0.0-another-build") &&
                      strstr(why, PACKAGE_VERSION),
                  "%s", why);
}
END_TEST

START_TEST(module_table_full)
{
    /* Proves: once the loader's table is full (copies of one module in as many
     * folders), the next module is refused with a reason, and those loaded stay usable. */
    char why[512], cmd[3 * PATH_MAX], dirs[12][32];
    int loaded_n = 0, refused = 0;
    for (int i = 0; i < 12 && !refused; i++) {
        snprintf(dirs[i], sizeof(dirs[i]), "/tmp/convoy_modXXXXXX");
        ck_assert_ptr_nonnull(mkdtemp(dirs[i]));
        snprintf(cmd, sizeof(cmd), "cp '%s/convoy_fakeok.so' '%s/'", test_modules, dirs[i]);
        ck_assert_int_eq(system(cmd), 0);
        if (get(dirs[i], "fakeok", why, sizeof(why)) != NULL)
            loaded_n++;
        else {
            ck_assert_msg(strstr(why, "modules are loaded already") != NULL, "%s", why);
            refused = 1;
        }
    }
    ck_assert_msg(refused, "12 modules loaded: the table has no bound");
    ck_assert_int_ge(loaded_n, 1);
    ck_assert_ptr_nonnull(get(dirs[0], "fakeok", why, sizeof(why)));
    for (int i = 0; i <= loaded_n; i++) {
        snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dirs[i]);
        ck_assert_int_eq(system(cmd), 0);
    }
}
END_TEST

START_TEST(module_open_fails)
{
    /* Proves: opening a device of a module that cannot load is CONVOY_ERR_UNAVAILABLE,
     * recorded in the context with the component's name and the loader's reason. */
    convoy_context_t *ctx = tu_init((const char *const[]){
        "devices", "host", "module_dir", "/nonexistent/convoy", "nthreads", "1", NULL});
    convoy__device_t *dev = NULL;
    ck_assert_int_eq(convoy__module_open("fakeok", ctx, 0, 0, &dev), CONVOY_ERR_UNAVAILABLE);
    ck_assert_ptr_null(dev);
    tu_assert_error_has(ctx, "device fakeok", "/nonexistent/convoy/convoy_fakeok.so",
                        "cannot open shared object file");
    convoy_fini(ctx);
}
END_TEST

static int cpu_chore(const convoy_task_view_t *t, void *stream)
{
    (void)stream;
    *(int *)t->flows[0] += 1;
    return 0;
}

START_TEST(gpu_modules_unloadable)
{
    /* Proves: with module_dir pointing where no module is, the GPU components of this
     * build that are modules (none in a build without CUDA and HIP) are unavailable,
     * with the loader's reason, from query and from an explicit devices=NAME, and
     * devices=auto still starts and runs CPU tasks. */
    char why[512];
    convoy__params_t params;
    load_params(&params, (const char *const[]){"module_dir", "/nonexistent/convoy", NULL});
    for (int i = 0; convoy__device_components[i] != NULL; i++) {
        const convoy__device_component_t *c = convoy__device_components[i];
        if (c->kind != CONVOY_DEVICE_CUDA && c->kind != CONVOY_DEVICE_HIP)
            continue;
        why[0] = '\0';
        ck_assert_int_eq(c->query(&params, why, sizeof(why)), 0);
        ck_assert_msg(strstr(why, "not loaded") && strstr(why, "/nonexistent/convoy"),
                      "%s: %s", c->name, why);
        tu_set_presets(
            (const char *const[]){"module_dir", "/nonexistent/convoy", "devices", c->name, NULL});
        convoy_context_t *ctx = NULL;
        ck_assert_int_eq(convoy_init(NULL, NULL, &ctx), CONVOY_ERR_UNAVAILABLE);
        tu_assert_error_has(NULL, c->name, "not loaded");
    }
    convoy__params_free(&params);

    convoy_context_t *ctx = tu_init((const char *const[]){"module_dir", "/nonexistent/convoy",
                                                          "sim_count", "0", "nthreads", "2", NULL});
    ck_assert_int_eq(convoy_accel_count(ctx), 0);
    convoy_class_t *cls;
    convoy_access_t rw = CONVOY_RW;
    ck_assert_int_eq(convoy_class_new(ctx, "inc", 1, &rw, 0, &cls), CONVOY_SUCCESS);
    ck_assert_int_eq(convoy_class_set_chore(cls, CONVOY_DEVICE_CPU, cpu_chore), CONVOY_SUCCESS);
    int value = 0;
    convoy_data_t *d;
    ck_assert_int_eq(convoy_data_new(ctx, &value, sizeof(value), &d), CONVOY_SUCCESS);
    for (int i = 0; i < 10; i++)
        ck_assert_int_eq(convoy_task_insert(ctx, cls, NULL, 0, &d), CONVOY_SUCCESS);
    ck_assert_int_eq(convoy_wait(ctx), CONVOY_SUCCESS);
    ck_assert_int_eq(convoy_data_acquire(d, CONVOY_READ), CONVOY_SUCCESS);
    ck_assert_int_eq(value, 10);
    convoy_data_free(d);
    convoy_fini(ctx);
}
END_TEST

START_TEST(query_without_context)
{
    /* Proves: every device component answers query() from parameters alone (no
     * context): sim counts sim_count, host its workers with the reason; the registry
     * (what convoy-info lists) is in decreasing priority, host last. */
    char why[256];
    convoy__params_t params;
    load_params(&params, (const char *const[]){"sim_count", "2", "nthreads", "3", NULL});
    int host_prio = 0, min_other = INT_MAX;
    for (int i = 0; convoy__device_components[i] != NULL; i++) {
        const convoy__device_component_t *c = convoy__device_components[i];
        if (i > 0)
            ck_assert_int_ge(convoy__device_components[i - 1]->priority, c->priority);
        why[0] = '\0';
        int n = c->query(&params, why, sizeof(why));
        if (c->kind == CONVOY_DEVICE_SIM)
            ck_assert_int_eq(n, 2);
        if (c->kind == CONVOY_DEVICE_CPU) {
            ck_assert_int_eq(n, 3);
            ck_assert_str_eq(why, "3 CPU worker(s) (nthreads)");
            host_prio = c->priority;
        } else if (c->priority < min_other)
            min_other = c->priority;
    }
    ck_assert_int_lt(host_prio, min_other);
    convoy__params_free(&params);
}
END_TEST

START_TEST(module_dir_default)
{
    /* Proves: without module_dir, code run from the build folder (this test) looks in
     * the build folder's device/.libs, where make puts the modules; with it, there. */
    char dir[PATH_MAX], want[PATH_MAX + 16], here[PATH_MAX];
    convoy__params_t params;
    load_params(&params, NULL);
    ck_assert_ptr_nonnull(realpath(".", here));
    snprintf(want, sizeof(want), "%s/device/.libs", here);
    ck_assert_str_eq(convoy__module_dir(&params, dir, sizeof(dir)), want);
    convoy__params_free(&params);
    load_params(&params, (const char *const[]){"module_dir", "/opt/x", NULL});
    ck_assert_str_eq(convoy__module_dir(&params, dir, sizeof(dir)), "/opt/x");
    convoy__params_free(&params);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("module");
    TCase *tc = tu_tcase(s, "loader", 30);
    tcase_add_test(tc, module_loads);
    tcase_add_test(tc, module_dependency_missing);
    tcase_add_test(tc, module_missing_or_bad);
    tcase_add_test(tc, module_dir_default);
    tcase_add_test(tc, module_open_fails);
    tcase_add_test(tc, module_table_full); /* last: it fills the table (CK_FORK=no) */
    tc = tu_tcase(s, "components", 30);
    tcase_add_test(tc, gpu_modules_unloadable);
    tcase_add_test(tc, query_without_context);
    return s;
}

int main(void)
{
    if (realpath("tests/.libs", test_modules) == NULL) {
        fprintf(stderr, "check_module: run from the build folder (no tests/.libs here)\n");
        return 99;
    }
    return tu_main(suite());
}
