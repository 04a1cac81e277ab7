# device/: the device interface, the accelerator pipeline and the device components.

noinst_HEADERS += \
	device/device.h \
	device/pipeline.h \
	device/pipeline_impl.h \
	device/devmem.h \
	device/host/host.h \
	device/sim/sim.h

libconvoy_internal_la_SOURCES += \
	device/pipeline.c \
	device/pipeline_ring.c \
	device/devmem.c \
	device/host/device_host.c \
	device/sim/device_sim.c \
	device/sim/sim_stream.c

if HAVE_CUDA
libconvoy_internal_la_SOURCES += \
	device/cuda/device_cuda.c \
	device/cuda/cuda_mem.c \
	device/cuda/cuda_copy.c \
	device/cuda/cuda_hostmem.c \
	device/cuda/cuda_copy_kernel.cu
endif
# Shipped by `make dist` whether or not this build has CUDA.
EXTRA_DIST += device/cuda/cuda_copy_kernel.cu
noinst_HEADERS += \
	device/cuda/cuda_dev.h \
	device/cuda/cuda_kernel.h \
	device/cuda/cuda_arena.h \
	device/hip/hip_dev.h
# nvcc objects get no automatic header dependencies (see Makefile.am).
device/cuda/cuda_copy_kernel.lo: device/cuda/cuda_kernel.h

if HAVE_HIP
libconvoy_internal_la_SOURCES += \
	device/hip/device_hip.c \
	device/hip/hip_hostmem.c
endif

# The range allocator under the CUDA and HIP pools and pinned slabs: plain C, built once
# when either component is.
if HAVE_CUDA
libconvoy_internal_la_SOURCES += device/cuda/cuda_arena.c
else
if HAVE_HIP
libconvoy_internal_la_SOURCES += device/cuda/cuda_arena.c
endif
endif
