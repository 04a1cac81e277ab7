/*
 * check_version: the version macros and convoy_version() agree with configure's version,
 * and convoy_build_has_device() reports the device components this build holds.
 */
#include "config.h"

#include <stdio.h>
#include <string.h>

#include "convoy.h"
#include "tests/test_util.h"

START_TEST(version_matches)
{
    /* Proves: CONVOY_VERSION is configure's PACKAGE_VERSION, the numbers spell it, and
     * convoy_version() returns them, each pointer optional. */
    ck_assert_str_eq(CONVOY_VERSION, PACKAGE_VERSION);
    char text[64];
    snprintf(text, sizeof(text), "%d.%d.%d", CONVOY_VERSION_MAJOR, CONVOY_VERSION_MINOR,
             CONVOY_VERSION_PATCH);
    ck_assert_str_eq(text, PACKAGE_VERSION);
    ck_assert_int_eq(CONVOY_VERSION_NUMBER, CONVOY_VERSION_MAJOR * 10000 +
                                                CONVOY_VERSION_MINOR * 100 + CONVOY_VERSION_PATCH);
    int major = -1, minor = -1, patch = -1;
    convoy_version(&major, &minor, &patch);
    ck_assert_int_eq(major, CONVOY_VERSION_MAJOR);
    ck_assert_int_eq(minor, CONVOY_VERSION_MINOR);
    ck_assert_int_eq(patch, CONVOY_VERSION_PATCH);
    convoy_version(NULL, NULL, NULL);
    minor = -1;
    convoy_version(NULL, &minor, NULL);
    ck_assert_int_eq(minor, CONVOY_VERSION_MINOR);
}
END_TEST

START_TEST(build_has_device)
{
    /* Proves: CPU and SIM are always built, CUDA and HIP exactly when configure built
     * them, and kinds out of range are 0 (not a crash). */
    ck_assert_int_eq(convoy_build_has_device(CONVOY_DEVICE_CPU), 1);
    ck_assert_int_eq(convoy_build_has_device(CONVOY_DEVICE_SIM), 1);
    ck_assert_int_eq(convoy_build_has_device(CONVOY_DEVICE_CUDA), CONVOY_HAVE_CUDA);
    ck_assert_int_eq(convoy_build_has_device(CONVOY_DEVICE_HIP), CONVOY_HAVE_HIP);
    ck_assert_int_eq(convoy_build_has_device(CONVOY_DEVICE_KIND_COUNT), 0);
    ck_assert_int_eq(convoy_build_has_device((convoy_device_kind_t)-1), 0);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("version");
    TCase *tc = tu_tcase(s, "version", 10);
    tcase_add_test(tc, version_matches);
    tcase_add_test(tc, build_has_device);
    return s;
}

int main(void)
{
    return tu_main(suite());
}
