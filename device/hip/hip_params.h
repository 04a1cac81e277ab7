/*
 * What libconvoy knows of the HIP component without loading it: its parameters, its
 * one-line doc and its selection priority (device.h). No HIP header here. Internal.
 */
#ifndef CONVOY_HIP_PARAMS_H
#define CONVOY_HIP_PARAMS_H

#include "src/param.h"

#define CONVOY__HIP_PRIORITY 10 /* after cuda (20), before sim (0) */

extern const convoy__param_def_t convoy__hip_params[];
extern const char convoy__hip_doc[];

#endif /* CONVOY_HIP_PARAMS_H */
