/*
 * Stand-in for the CUDA runtime header (tests/ports/check.sh): declares just what the C
 * files of device/cuda/ use, so that they compile on a machine without CUDA. The
 * version is CONVOY_PORT_CUDART (default 13000); cudaMemcpyBatchAsync has the
 * signature of that version: 12.8 (non-const arrays, failIdx), 12.9 (const arrays,
 * failIdx), 13.0 (no failIdx), none before 12.8; cudaGetDriverEntryPointByVersion from
 * 12.5. Not for linking.
 */
#ifndef CONVOY_PORT_CUDA_RUNTIME_API_H
#define CONVOY_PORT_CUDA_RUNTIME_API_H

#include <stddef.h>

#ifndef CONVOY_PORT_CUDART
#define CONVOY_PORT_CUDART 13000
#endif
#define CUDART_VERSION CONVOY_PORT_CUDART

typedef enum cudaError {
    cudaSuccess = 0,
    cudaErrorMemoryAllocation = 2,
    cudaErrorStubLibrary = 34,
    cudaErrorInsufficientDriver = 35,
    cudaErrorNoDevice = 100,
    cudaErrorECCUncorrectable = 214,
    cudaErrorContained = 226,
    cudaErrorNotReady = 600,
    cudaErrorIllegalAddress = 700,
    cudaErrorLaunchTimeout = 702,
    cudaErrorAssert = 710,
    cudaErrorHardwareStackError = 714,
    cudaErrorIllegalInstruction = 715,
    cudaErrorMisalignedAddress = 716,
    cudaErrorInvalidAddressSpace = 717,
    cudaErrorInvalidPc = 718,
    cudaErrorLaunchFailure = 719,
    cudaErrorTensorMemoryLeak = 721,
} cudaError_t;

typedef struct CUstream_st *cudaStream_t;
typedef struct CUevent_st *cudaEvent_t;

enum cudaMemcpyKind {
    cudaMemcpyHostToDevice = 1,
    cudaMemcpyDeviceToHost = 2,
    cudaMemcpyDeviceToDevice = 3,
};
enum cudaDeviceAttr { cudaDevAttrCanMapHostMemory = 19, cudaDevAttrUnifiedAddressing = 41 };
enum cudaMemoryType { cudaMemoryTypeUnregistered = 0, cudaMemoryTypeHost = 1 };

struct cudaDeviceProp {
    char name[256];
    int major, minor, multiProcessorCount;
};
struct cudaPointerAttributes {
    enum cudaMemoryType type;
    int device;
    void *devicePointer, *hostPointer;
};

#define cudaStreamNonBlocking 0x01
#define cudaEventDisableTiming 0x02
#define cudaHostAllocPortable 0x01
#define cudaHostAllocMapped 0x02

cudaError_t cudaGetLastError(void);
const char *cudaGetErrorName(cudaError_t error);
const char *cudaGetErrorString(cudaError_t error);
cudaError_t cudaGetDeviceCount(int *count);
cudaError_t cudaSetDevice(int device);
cudaError_t cudaGetDeviceProperties(struct cudaDeviceProp *prop, int device);
cudaError_t cudaDeviceGetAttribute(int *value, enum cudaDeviceAttr attr, int device);
cudaError_t cudaMemGetInfo(size_t *free_bytes, size_t *total_bytes);
cudaError_t cudaMalloc(void **ptr, size_t size);
cudaError_t cudaFree(void *ptr);
cudaError_t cudaHostAlloc(void **ptr, size_t size, unsigned int flags);
cudaError_t cudaFreeHost(void *ptr);
cudaError_t cudaHostGetDevicePointer(void **dev_ptr, void *host_ptr, unsigned int flags);
cudaError_t cudaPointerGetAttributes(struct cudaPointerAttributes *attr, const void *ptr);
cudaError_t cudaStreamCreateWithFlags(cudaStream_t *stream, unsigned int flags);
cudaError_t cudaStreamDestroy(cudaStream_t stream);
cudaError_t cudaStreamSynchronize(cudaStream_t stream);
cudaError_t cudaStreamWaitEvent(cudaStream_t stream, cudaEvent_t event, unsigned int flags);
cudaError_t cudaEventCreateWithFlags(cudaEvent_t *event, unsigned int flags);
cudaError_t cudaEventDestroy(cudaEvent_t event);
cudaError_t cudaEventRecord(cudaEvent_t event, cudaStream_t stream);
cudaError_t cudaEventQuery(cudaEvent_t event);
cudaError_t cudaEventSynchronize(cudaEvent_t event);
cudaError_t cudaMemcpyAsync(void *dst, const void *src, size_t count, enum cudaMemcpyKind kind,
                            cudaStream_t stream);
cudaError_t cudaDeviceSynchronize(void);

#if CUDART_VERSION >= 12050
#define cudaEnableDefault 0x0
enum cudaDriverEntryPointQueryResult {
    cudaDriverEntryPointSuccess = 0,
    cudaDriverEntryPointSymbolNotFound = 1,
    cudaDriverEntryPointVersionNotSufficent = 2,
};
cudaError_t cudaGetDriverEntryPointByVersion(const char *symbol, void **funcPtr,
                                             unsigned int cudaVersion, unsigned long long flags,
                                             enum cudaDriverEntryPointQueryResult *driverStatus);
#endif

#if CUDART_VERSION >= 12080
enum cudaMemcpySrcAccessOrder { cudaMemcpySrcAccessOrderStream = 1 };
enum cudaMemcpyFlags { cudaMemcpyFlagDefault = 0, cudaMemcpyFlagPreferOverlapWithCompute = 1 };
struct cudaMemcpyAttributes {
    enum cudaMemcpySrcAccessOrder srcAccessOrder;
    unsigned int flags;
};
#if CUDART_VERSION >= 13000
cudaError_t cudaMemcpyBatchAsync(void *const *dsts, const void *const *srcs, const size_t *sizes,
                                 size_t count, struct cudaMemcpyAttributes *attrs,
                                 size_t *attrsIdxs, size_t numAttrs, cudaStream_t stream);
#elif CUDART_VERSION >= 12090
cudaError_t cudaMemcpyBatchAsync(const void **dsts, const void **srcs, const size_t *sizes,
                                 size_t count, struct cudaMemcpyAttributes *attrs,
                                 size_t *attrsIdxs, size_t numAttrs, size_t *failIdx,
                                 cudaStream_t stream);
#else
cudaError_t cudaMemcpyBatchAsync(void **dsts, void **srcs, size_t *sizes, size_t count,
                                 struct cudaMemcpyAttributes *attrs, size_t *attrsIdxs,
                                 size_t numAttrs, size_t *failIdx, cudaStream_t stream);
#endif
#endif

#endif /* CONVOY_PORT_CUDA_RUNTIME_API_H */
