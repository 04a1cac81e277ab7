/*
 * Stand-in for the HIP runtime header (tests/ports/check.sh): declares just what the C
 * files of device/hip/ use. The version is CONVOY_PORT_HIP (HIP_VERSION, default
 * 50200000: Debian 12's ROCm 5.2); from 6.0 the pointer attributes' field is `type`,
 * from 7.1 hipMemcpyBatchAsync exists (the CUDA 12.8 form, with failIdx). Not for
 * linking.
 */
#ifndef CONVOY_PORT_HIP_RUNTIME_API_H
#define CONVOY_PORT_HIP_RUNTIME_API_H

#include <stddef.h>

#ifndef CONVOY_PORT_HIP
#define CONVOY_PORT_HIP 50200000
#endif
#define HIP_VERSION CONVOY_PORT_HIP
#define HIP_VERSION_MAJOR (HIP_VERSION / 10000000)

typedef enum hipError_t {
    hipSuccess = 0,
    hipErrorInvalidValue = 1,
    hipErrorOutOfMemory = 2,
    hipErrorNoDevice = 100,
    hipErrorNotReady = 600,
    hipErrorIllegalAddress = 700,
    hipErrorAssert = 710,
    hipErrorLaunchFailure = 719,
    hipErrorNotSupported = 801,
} hipError_t;

typedef struct ihipStream_t *hipStream_t;
typedef struct ihipEvent_t *hipEvent_t;

typedef enum hipMemcpyKind {
    hipMemcpyHostToDevice = 1,
    hipMemcpyDeviceToHost = 2,
    hipMemcpyDeviceToDevice = 3,
} hipMemcpyKind;

#if HIP_VERSION_MAJOR >= 6
enum hipMemoryType { hipMemoryTypeUnregistered = 0, hipMemoryTypeHost = 1 };
typedef struct hipPointerAttribute_t {
    enum hipMemoryType type;
    int device;
    void *devicePointer, *hostPointer;
} hipPointerAttribute_t;
#else
enum hipMemoryType { hipMemoryTypeHost = 0 };
typedef struct hipPointerAttribute_t {
    enum hipMemoryType memoryType;
    int device;
    void *devicePointer, *hostPointer;
} hipPointerAttribute_t;
#endif

#define hipStreamNonBlocking 0x01
#define hipEventDisableTiming 0x02
#define hipHostMallocPortable 0x01
#define hipHostMallocMapped 0x02

hipError_t hipGetLastError(void);
const char *hipGetErrorName(hipError_t error);
const char *hipGetErrorString(hipError_t error);
hipError_t hipGetDeviceCount(int *count);
hipError_t hipSetDevice(int device);
hipError_t hipMemGetInfo(size_t *free_bytes, size_t *total_bytes);
hipError_t hipMalloc(void **ptr, size_t size);
hipError_t hipFree(void *ptr);
hipError_t hipHostMalloc(void **ptr, size_t size, unsigned int flags);
hipError_t hipHostFree(void *ptr);
hipError_t hipPointerGetAttributes(hipPointerAttribute_t *attr, const void *ptr);
hipError_t hipStreamCreateWithFlags(hipStream_t *stream, unsigned int flags);
hipError_t hipStreamDestroy(hipStream_t stream);
hipError_t hipStreamSynchronize(hipStream_t stream);
hipError_t hipStreamWaitEvent(hipStream_t stream, hipEvent_t event, unsigned int flags);
hipError_t hipEventCreateWithFlags(hipEvent_t *event, unsigned flags);
hipError_t hipEventDestroy(hipEvent_t event);
hipError_t hipEventRecord(hipEvent_t event, hipStream_t stream);
hipError_t hipEventQuery(hipEvent_t event);
hipError_t hipMemcpyAsync(void *dst, const void *src, size_t bytes, hipMemcpyKind kind,
                          hipStream_t stream);

#if HIP_VERSION >= 70100000
typedef enum hipMemcpySrcAccessOrder { hipMemcpySrcAccessOrderStream = 1 } hipMemcpySrcAccessOrder;
typedef struct hipMemcpyAttributes {
    hipMemcpySrcAccessOrder srcAccessOrder;
    unsigned int flags;
} hipMemcpyAttributes;
hipError_t hipMemcpyBatchAsync(void **dsts, void **srcs, size_t *sizes, size_t count,
                               hipMemcpyAttributes *attrs, size_t *attrsIdxs, size_t numAttrs,
                               size_t *failIdx, hipStream_t stream);
#endif

#endif /* CONVOY_PORT_HIP_RUNTIME_API_H */
