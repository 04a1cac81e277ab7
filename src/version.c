/*
 * The library's version and what this build holds, for programs that ask at run time.
 */
#include "config.h"

#include "convoy.h"

void convoy_version(int *major, int *minor, int *patch)
{
    if (major != NULL)
        *major = CONVOY_VERSION_MAJOR;
    if (minor != NULL)
        *minor = CONVOY_VERSION_MINOR;
    if (patch != NULL)
        *patch = CONVOY_VERSION_PATCH;
}

int convoy_build_has_device(convoy_device_kind_t kind)
{
    switch (kind) {
    case CONVOY_DEVICE_CPU:
    case CONVOY_DEVICE_SIM: return 1;
    case CONVOY_DEVICE_CUDA: return CONVOY_HAVE_CUDA;
    case CONVOY_DEVICE_HIP: return CONVOY_HAVE_HIP;
    case CONVOY_DEVICE_ZE: return CONVOY_HAVE_ZE;
    default: return 0;
    }
}
