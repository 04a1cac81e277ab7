/*
 * What libconvoy knows of the Level Zero component without loading it: its parameters,
 * its one-line doc and its selection priority (device.h). No Level Zero header here.
 * Internal.
 */
#ifndef CONVOY_ZE_PARAMS_H
#define CONVOY_ZE_PARAMS_H

#include "src/param.h"

#define CONVOY__ZE_PRIORITY 5 /* after cuda (20) and hip (10), before sim (0) */

extern const convoy__param_def_t convoy__ze_params[];
extern const char convoy__ze_doc[];

#endif /* CONVOY_ZE_PARAMS_H */
