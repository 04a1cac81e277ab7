/*
 * The HIP component's module descriptor (device/module.h): the one symbol the module
 * exports. Built only into the module, not when the component is part of libconvoy.
 */
#include "config.h"

#include "device/hip/hip_dev.h"
#include "device/module.h"

const convoy__device_module_t convoy__device_module = {
    .abi = CONVOY__MODULE_ABI,
    .version = PACKAGE_VERSION,
    .component = &convoy__device_hip,
    .bind = convoy__module_bind,
};
