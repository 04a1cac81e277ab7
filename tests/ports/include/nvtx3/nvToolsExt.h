/* Stand-in for NVTX (tests/ports/check.sh): the two calls device/cuda/ makes. */
#ifndef CONVOY_PORT_NVTOOLSEXT_H
#define CONVOY_PORT_NVTOOLSEXT_H
int nvtxRangePushA(const char *message);
int nvtxRangePop(void);
#endif
