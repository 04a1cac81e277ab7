# device/: the device interface, the accelerator pipeline and the device components.

noinst_HEADERS += \
	device/device.h \
	device/pipeline.h \
	device/pipeline_impl.h \
	device/devmem.h \
	device/arena.h \
	device/devpool.h \
	device/hostslab.h \
	device/copyargs.h \
	device/host/host.h \
	device/sim/sim.h

# arena, devpool, hostslab: the vendor-neutral memory of the GPU components (the range
# allocator, the device pool, the pinned host slabs), plain C and always built, so that
# it compiles on any machine; copyargs: the arguments of copies (checks, batch arrays).
libconvoy_internal_la_SOURCES += \
	device/pipeline.c \
	device/pipeline_ring.c \
	device/devmem.c \
	device/arena.c \
	device/devpool.c \
	device/hostslab.c \
	device/copyargs.c \
	device/host/device_host.c \
	device/sim/device_sim.c \
	device/sim/sim_stream.c

if HAVE_CUDA
libconvoy_internal_la_SOURCES += \
	device/cuda/device_cuda.c \
	device/cuda/cuda_params.c \
	device/cuda/cuda_err.c \
	device/cuda/cuda_mem.c \
	device/cuda/cuda_stream.c \
	device/cuda/cuda_copy.c \
	device/cuda/cuda_hostmem.c \
	device/cuda/cuda_copy_kernel.cu
endif
# Shipped by `make dist` whether or not this build has CUDA.
EXTRA_DIST += device/cuda/cuda_copy_kernel.cu
noinst_HEADERS += \
	device/cuda/cuda_dev.h \
	device/cuda/cuda_kernel.h \
	device/cuda/cuda_params.h \
	device/hip/hip_dev.h \
	device/hip/hip_params.h
# nvcc objects get no automatic header dependencies (see Makefile.am).
device/cuda/cuda_copy_kernel.lo: device/cuda/cuda_kernel.h

if HAVE_HIP
libconvoy_internal_la_SOURCES += \
	device/hip/device_hip.c \
	device/hip/hip_params.c \
	device/hip/hip_err.c \
	device/hip/hip_mem.c \
	device/hip/hip_stream.c \
	device/hip/hip_copy.c \
	device/hip/hip_hostmem.c
endif
