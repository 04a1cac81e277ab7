/*
 * A device module for tests/check_component's loader tests (device/module.h): the
 * component "fakeok", which loads and answers through libconvoy's core services, or,
 * built with CONVOY_FAKE_GONE, "fakegone", which needs libconvoy_gone.so.0, a library
 * the dynamic loader does not find (as a module whose vendor runtime is missing), or,
 * with CONVOY_FAKE_OTHER_BUILD, "fakeother", whose descriptor names another version.
 */
#include "config.h"

#include <stdio.h>

#include "device/module.h"

#if CONVOY_FAKE_GONE
int convoy_fake_gone(void); /* tests/fake_gone.c */
#define FAKE_NAME "fakegone"
#elif CONVOY_FAKE_OTHER_BUILD
#define FAKE_NAME "fakeother"
#else
#define FAKE_NAME "fakeok"
#endif

/* The number of devices is the parameter sim_count, read through the core. */
static int fake_query(const convoy__params_t *params, char *why, size_t why_len)
{
#if CONVOY_FAKE_GONE
    (void)convoy_fake_gone();
#endif
    int64_t n = convoy__param_int(params, "sim_count");
    snprintf(why, why_len, "fake module: sim_count %lld", (long long)n);
    convoy__log_info("fake module queried: %s", why);
    return (int)n;
}

/* Fails, through the core's error recording, naming the device. */
static convoy_status_t fake_open(convoy_context_t *ctx, int local_index, int global_index,
                                 convoy__device_t **dev_p)
{
    (void)dev_p;
    return convoy__error(ctx, CONVOY_ERR_DEVICE, "fake module: open %d as accelerator %d refused",
                         local_index, global_index);
}

static const convoy__device_component_t fake_component = {
    .name = FAKE_NAME,
    .priority = 0,
    .kind = CONVOY_DEVICE_SIM,
    .doc = "a test module",
    .query = fake_query,
    .open = fake_open,
};

const convoy__device_module_t convoy__device_module = {
    .abi = CONVOY__MODULE_ABI,
#if CONVOY_FAKE_OTHER_BUILD
    .version = "0.0.0-another-build", /* what a module of another convoy would say */
#else
    .version = PACKAGE_VERSION,
#endif
    .component = &fake_component,
    .bind = convoy__module_bind,
};
