# bench/: benchmarks; built by `make`, not installed.

noinst_HEADERS += bench/bench_common.h bench/tiny_tasks.h bench/rw_chores.h

noinst_PROGRAMS += bench/overhead bench/tiny_tasks bench/mixed_latency bench/chains bench/evict \
	bench/host_costs

bench_overhead_SOURCES = bench/overhead.c
bench_tiny_tasks_SOURCES = bench/tiny_tasks.c
bench_mixed_latency_SOURCES = bench/mixed_latency.c
bench_chains_SOURCES = bench/chains.c bench/rw_chores.c
bench_evict_SOURCES = bench/evict.c bench/rw_chores.c
# The machine's own costs: no convoy in it.
bench_host_costs_SOURCES = bench/host_costs.c
bench_host_costs_LDADD = $(CONVOY_SYS_LIBS)
# With CUDA, their .cu files call the CUDA runtime, which libconvoy does not bring when
# the CUDA component is a module (CONVOY_CUDA_PROGRAM_LIBS is empty without CUDA).
bench_tiny_tasks_LDADD = $(LDADD) $(CONVOY_CUDA_PROGRAM_LIBS)
bench_mixed_latency_LDADD = $(LDADD) $(CONVOY_CUDA_PROGRAM_LIBS)
bench_chains_LDADD = $(LDADD) $(CONVOY_CUDA_PROGRAM_LIBS)
bench_evict_LDADD = $(LDADD) $(CONVOY_CUDA_PROGRAM_LIBS)

if HAVE_CUDA
bench_tiny_tasks_SOURCES += bench/tiny_tasks_cuda.cu
bench_mixed_latency_SOURCES += bench/mixed_latency_cuda.cu
bench_chains_SOURCES += bench/rw_chores_cuda.cu
bench_evict_SOURCES += bench/rw_chores_cuda.cu

noinst_PROGRAMS += bench/copy_paths
bench_copy_paths_SOURCES = bench/copy_paths.cu
bench_copy_paths_LDADD = $(LDADD) $(CONVOY_CUDA_PROGRAM_LIBS)
# Never built: it only makes automake link a program without C sources with the C linker.
nodist_EXTRA_bench_copy_paths_SOURCES = bench/copy_paths_linker.c
endif
# Shipped by `make dist` whether or not this build has CUDA.
EXTRA_DIST += bench/tiny_tasks_cuda.cu bench/mixed_latency_cuda.cu bench/copy_paths.cu \
	bench/rw_chores_cuda.cu
EXTRA_DIST += bench/h200.sh bench/h200_compare.sh bench/h200_final.sh bench/h200_host.sh bench/h200_profile.sh bench/h200_copy.sh bench/h200_mid.sh bench/h200_mid2.sh bench/h200_final2.sh bench/h200_dist.sh bench/h200_build.sh bench/h200_wake.sh bench/h200_cache.sh bench/h200_ab.sh bench/h200_ab3.sh bench/h200_pageable.sh bench/h200_latency.sh bench/mixed_latency_steps.py bench/mixed_latency_rounds.py bench/host_profile.py

# The distributed mode (doc/dist.md): run under mpirun.
if HAVE_MPI
noinst_PROGRAMS += bench/dist_tiny bench/stencil
bench_dist_tiny_SOURCES = bench/dist_tiny.c
bench_stencil_SOURCES = bench/stencil.c
bench_dist_tiny_LDADD = $(LDADD) $(CONVOY_CUDA_PROGRAM_LIBS)
bench_stencil_LDADD = $(LDADD) $(CONVOY_CUDA_PROGRAM_LIBS)
if HAVE_CUDA
bench_dist_tiny_SOURCES += bench/dist_tiny_cuda.cu
bench_stencil_SOURCES += bench/stencil_cuda.cu
endif
endif
EXTRA_DIST += bench/dist_tiny.c bench/stencil.c bench/dist_tiny_cuda.cu bench/stencil_cuda.cu
