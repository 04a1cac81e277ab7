/*
 * Stand-in for the CUDA driver header (tests/ports/check.sh): the types and constants the
 * C files of device/cuda/ use for driver calls they take by entry point (no driver
 * function is declared: convoy never links libcuda). Not for linking.
 */
#ifndef CONVOY_PORT_CUDA_H
#define CONVOY_PORT_CUDA_H

#include <stdint.h>

typedef enum cudaError_enum { CUDA_SUCCESS = 0, CUDA_ERROR_NOT_SUPPORTED = 801 } CUresult;
typedef struct CUstream_st *CUstream;
typedef unsigned long long CUdeviceptr;
typedef uint32_t cuuint32_t;
typedef enum CUstreamWriteValue_flags_enum {
    CU_STREAM_WRITE_VALUE_DEFAULT = 0x0,
} CUstreamWriteValue_flags;

#endif /* CONVOY_PORT_CUDA_H */
