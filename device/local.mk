# device/: the device interface, the accelerator pipeline and the device components.

noinst_HEADERS += \
	device/device.h \
	device/module.h \
	device/pipeline.h \
	device/pipeline_impl.h \
	device/devmem.h \
	device/devcache.h \
	device/arena.h \
	device/devpool.h \
	device/hostslab.h \
	device/copyargs.h \
	device/memcpy_gang.h \
	device/host/host.h \
	device/sim/sim.h

# arena, devpool, hostslab: the vendor-neutral memory of the GPU components (the range
# allocator, the device pool, the pinned host slabs), plain C and always built, so that
# it compiles on any machine; copyargs: the arguments of copies (checks, batch arrays).
# Each device module carries its own copy of them (they keep no state shared with the
# core).
convoy_gpu_common = \
	device/arena.c \
	device/devpool.c \
	device/hostslab.c \
	device/copyargs.c

libconvoy_internal_la_SOURCES += \
	device/pipeline.c \
	device/ring.c \
	device/ring_done.c \
	device/push_behind.c \
	device/copies.c \
	device/memcpy_gang.c \
	device/launch.c \
	device/pushout.c \
	device/devmem.c \
	device/devcache.c \
	$(convoy_gpu_common) \
	device/host/device_host.c \
	device/sim/device_sim.c \
	device/sim/sim_hostmem.c \
	device/sim/sim_link.c \
	device/sim/sim_params.c \
	device/sim/sim_stream.c

# The GPU components. cuda_params.c and hip_params.c (the parameter tables, no vendor
# header) are always part of libconvoy; the rest is either a module or built in.
convoy_cuda_sources = \
	device/cuda/device_cuda.c \
	device/cuda/cuda_err.c \
	device/cuda/cuda_mem.c \
	device/cuda/cuda_stream.c \
	device/cuda/cuda_event.c \
	device/cuda/cuda_copy.c \
	device/cuda/cuda_hostmem.c \
	device/cuda/cuda_copy_kernel.cu
convoy_hip_sources = \
	device/hip/device_hip.c \
	device/hip/hip_err.c \
	device/hip/hip_mem.c \
	device/hip/hip_stream.c \
	device/hip/hip_copy.c \
	device/hip/hip_hostmem.c
convoy_ze_sources = \
	device/ze/device_ze.c \
	device/ze/ze_err.c \
	device/ze/ze_driver.c \
	device/ze/ze_mem.c \
	device/ze/ze_event.c \
	device/ze/ze_stream.c \
	device/ze/ze_copy.c \
	device/ze/ze_hostmem.c

# A module exports its descriptor alone (device/module.h) and names no libconvoy symbol
# (-z defs where the linker has it): module_shim.c forwards the core services.
convoy_module_ldflags = -module -avoid-version -shared \
	-export-symbols-regex '^convoy__device_module$$' $(CONVOY_MODULE_LDFLAGS)
convoy_module_common = device/module_shim.c $(convoy_gpu_common)

if CONVOY_MODULES
libconvoy_internal_la_SOURCES += device/module.c
nodist_libconvoy_internal_la_SOURCES = device/module_paths.h
endif

if HAVE_CUDA
libconvoy_internal_la_SOURCES += device/cuda/cuda_params.c
if CONVOY_MODULES
pkglib_LTLIBRARIES += device/convoy_cuda.la
device_convoy_cuda_la_SOURCES = $(convoy_cuda_sources) device/cuda/cuda_params.c \
	device/cuda/cuda_module.c $(convoy_module_common)
device_convoy_cuda_la_LDFLAGS = $(convoy_module_ldflags)
device_convoy_cuda_la_LIBADD = $(CUDA_LDFLAGS) $(CUDA_LIBS) $(CONVOY_SYS_LIBS)
else
libconvoy_internal_la_SOURCES += $(convoy_cuda_sources)
endif
endif
# Shipped by `make dist` whether or not this build has CUDA.
EXTRA_DIST += device/cuda/cuda_copy_kernel.cu
noinst_HEADERS += \
	device/cuda/cuda_dev.h \
	device/cuda/cuda_kernel.h \
	device/cuda/cuda_params.h \
	device/hip/hip_dev.h \
	device/hip/hip_params.h \
	device/ze/ze_dev.h \
	device/ze/ze_params.h
# nvcc objects get no automatic header dependencies (see Makefile.am).
device/cuda/cuda_copy_kernel.lo: device/cuda/cuda_kernel.h

if HAVE_HIP
libconvoy_internal_la_SOURCES += device/hip/hip_params.c
if CONVOY_MODULES
pkglib_LTLIBRARIES += device/convoy_hip.la
device_convoy_hip_la_SOURCES = $(convoy_hip_sources) device/hip/hip_params.c \
	device/hip/hip_module.c $(convoy_module_common)
device_convoy_hip_la_LDFLAGS = $(convoy_module_ldflags)
device_convoy_hip_la_LIBADD = $(HIP_LDFLAGS) $(HIP_LIBS) $(CONVOY_SYS_LIBS)
else
libconvoy_internal_la_SOURCES += $(convoy_hip_sources)
endif
endif

# Level Zero (doc/level-zero.md). Built in, its link flags go on libconvoy's own link
# (and so on every program's, through the convenience library).
if HAVE_ZE
libconvoy_internal_la_SOURCES += device/ze/ze_params.c
if CONVOY_MODULES
pkglib_LTLIBRARIES += device/convoy_ze.la
device_convoy_ze_la_SOURCES = $(convoy_ze_sources) device/ze/ze_params.c \
	device/ze/ze_module.c $(convoy_module_common)
device_convoy_ze_la_CPPFLAGS = $(AM_CPPFLAGS) $(ZE_CPPFLAGS)
device_convoy_ze_la_LDFLAGS = $(convoy_module_ldflags)
device_convoy_ze_la_LIBADD = $(ZE_LDFLAGS) $(ZE_LIBS) $(CONVOY_SYS_LIBS)
else
libconvoy_internal_la_SOURCES += $(convoy_ze_sources)
libconvoy_internal_la_LIBADD = $(ZE_LDFLAGS) $(ZE_LIBS)
endif
endif

# Where the loader looks (device/module.c): the install folder, and the build folder
# for the programs run from it. Generated so that only module.c depends on the paths.
device/module_paths.h: Makefile
	$(AM_V_GEN)$(MKDIR_P) device && { \
	  echo '#define CONVOY__PKGLIBDIR "$(pkglibdir)"'; \
	  echo '#define CONVOY__ABS_BUILDDIR "$(abs_top_builddir)"'; \
	} > $@-t && mv $@-t $@
BUILT_SOURCES += device/module_paths.h
CLEANFILES += device/module_paths.h
