/*
 * The Level Zero component's module descriptor (device/module.h): the one symbol the
 * module exports. Built only into the module, not when the component is part of
 * libconvoy.
 */
#include "config.h"

#include "device/module.h"
#include "device/ze/ze_dev.h"

const convoy__device_module_t convoy__device_module = {
    .abi = CONVOY__MODULE_ABI,
    .version = PACKAGE_VERSION,
    .component = &convoy__device_ze,
    .bind = convoy__module_bind,
};
