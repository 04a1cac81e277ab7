/*
 * What libconvoy knows of the CUDA component without loading it: its parameters, its
 * one-line doc and its selection priority (device.h). No CUDA header here. Internal to
 * convoy.
 */
#ifndef CONVOY_CUDA_PARAMS_H
#define CONVOY_CUDA_PARAMS_H

#include "src/param.h"

#define CONVOY__CUDA_PRIORITY 20 /* before hip (10) and sim (0) */

extern const convoy__param_def_t convoy__cuda_params[];
extern const char convoy__cuda_doc[];

#endif /* CONVOY_CUDA_PARAMS_H */
