# tests/: Check suites (when Check is installed) and GPU test programs (when CUDA is
# built; they exit 77, "skipped", without a GPU). All run under automake's parallel test
# harness: `make check -j2`; logs in tests/NAME.log and test-suite.log.

# CK_DEFAULT_TIMEOUT: seconds per Check test (forked), unless the caller set it.
AM_TESTS_ENVIRONMENT = \
	CK_DEFAULT_TIMEOUT=$${CK_DEFAULT_TIMEOUT:-120}; export CK_DEFAULT_TIMEOUT; \
	MPIEXEC='$(MPIEXEC)'; export MPIEXEC;

if HAVE_CHECK
convoy_check_suites = \
	tests/check_param \
	tests/check_component \
	tests/check_deps \
	tests/check_api \
	tests/check_pipeline \
	tests/check_pipeline_faults \
	tests/check_coherence \
	tests/check_batch \
	tests/check_batch_queue \
	tests/check_bounce \
	tests/check_plan \
	tests/check_gpumem \
	tests/check_robust \
	tests/check_robust_core \
	tests/check_robust_chore \
	tests/check_workers \
	tests/check_done_batch \
	tests/check_devcache \
	tests/check_pool \
	tests/check_lanes \
	tests/check_write_behind \
	tests/check_push_behind \
	tests/check_in_place \
	tests/check_version \
	tests/check_trace_path \
	tests/check_bind
if CONVOY_MODULES
convoy_check_suites += tests/check_module
endif
check_PROGRAMS += $(convoy_check_suites)
TESTS += $(convoy_check_suites)

convoy_check_cflags = $(AM_CFLAGS) $(CHECK_CFLAGS)
convoy_check_ldadd = $(LDADD) $(CHECK_LIBS)
convoy_check_util = tests/test_util.c tests/test_util.h

tests_check_param_SOURCES = tests/check_param.c $(convoy_check_util)
tests_check_param_CFLAGS = $(convoy_check_cflags)
tests_check_param_LDADD = $(convoy_check_ldadd)

tests_check_lanes_SOURCES = tests/check_lanes.c $(convoy_check_util)
tests_check_lanes_CFLAGS = $(convoy_check_cflags)
tests_check_lanes_LDADD = $(convoy_check_ldadd)

tests_check_write_behind_SOURCES = tests/check_write_behind.c $(convoy_check_util)
tests_check_write_behind_CFLAGS = $(convoy_check_cflags)
tests_check_write_behind_LDADD = $(convoy_check_ldadd)

tests_check_push_behind_SOURCES = tests/check_push_behind.c $(convoy_check_util)
tests_check_push_behind_CFLAGS = $(convoy_check_cflags)
tests_check_push_behind_LDADD = $(convoy_check_ldadd)

tests_check_in_place_SOURCES = tests/check_in_place.c $(convoy_check_util)
tests_check_in_place_CFLAGS = $(convoy_check_cflags)
tests_check_in_place_LDADD = $(convoy_check_ldadd)

tests_check_component_SOURCES = tests/check_component.c $(convoy_check_util)
tests_check_component_CFLAGS = $(convoy_check_cflags)
tests_check_component_LDADD = $(convoy_check_ldadd)

tests_check_module_SOURCES = tests/check_module.c $(convoy_check_util)
tests_check_module_CFLAGS = $(convoy_check_cflags)
tests_check_module_LDADD = $(convoy_check_ldadd)

# The module loader's test modules (tests/fake_module.c): "fakeok", which loads,
# "fakeother", from another build, and "fakegone", which needs libconvoy_gone.so.0, a library the dynamic loader does not find
# (as a module whose vendor runtime is missing): it is named to the linker inside -Wl,
# where libtool does not see it, so libtool adds no run path to its build folder, and
# the module's run path names a folder that does not exist.
if CONVOY_MODULES
check_LTLIBRARIES += tests/libconvoy_gone.la tests/convoy_fakeok.la tests/convoy_fakegone.la \
	tests/convoy_fakeother.la
convoy_fake_ldflags = -module -avoid-version -shared -rpath $(abs_builddir)/tests/nowhere
tests_libconvoy_gone_la_SOURCES = tests/fake_gone.c
tests_libconvoy_gone_la_LDFLAGS = -rpath $(abs_builddir)/tests/nowhere
tests_convoy_fakeok_la_SOURCES = tests/fake_module.c device/module_shim.c
tests_convoy_fakeok_la_LDFLAGS = $(convoy_fake_ldflags)
tests_convoy_fakegone_la_SOURCES = tests/fake_module.c device/module_shim.c
tests_convoy_fakegone_la_CPPFLAGS = $(AM_CPPFLAGS) -DCONVOY_FAKE_GONE=1
tests_convoy_fakegone_la_LDFLAGS = $(convoy_fake_ldflags) \
	-Wl,-L,$(abs_builddir)/tests/.libs -Wl,--no-as-needed -Wl,-l:libconvoy_gone.so.0
tests_convoy_fakegone_la_DEPENDENCIES = tests/libconvoy_gone.la
# "fakeother": a module of another build (its descriptor's version differs).
tests_convoy_fakeother_la_SOURCES = tests/fake_module.c device/module_shim.c
tests_convoy_fakeother_la_CPPFLAGS = $(AM_CPPFLAGS) -DCONVOY_FAKE_OTHER_BUILD=1
tests_convoy_fakeother_la_LDFLAGS = $(convoy_fake_ldflags)
endif

tests_check_deps_SOURCES = tests/check_deps.c $(convoy_check_util)
tests_check_deps_CFLAGS = $(convoy_check_cflags)
tests_check_deps_LDADD = $(convoy_check_ldadd)

tests_check_api_SOURCES = tests/check_api.c $(convoy_check_util)
tests_check_api_CFLAGS = $(convoy_check_cflags)
tests_check_api_LDADD = $(convoy_check_ldadd)

tests_check_pipeline_SOURCES = tests/check_pipeline.c tests/pipeline_world.c \
	tests/pipeline_world.h $(convoy_check_util)
tests_check_pipeline_CFLAGS = $(convoy_check_cflags)
tests_check_pipeline_LDADD = $(convoy_check_ldadd)
tests_check_pipeline_faults_SOURCES = tests/check_pipeline_faults.c tests/pipeline_world.c \
	tests/pipeline_world.h $(convoy_check_util)
tests_check_pipeline_faults_CFLAGS = $(convoy_check_cflags)
tests_check_pipeline_faults_LDADD = $(convoy_check_ldadd)

tests_check_coherence_SOURCES = tests/check_coherence.c $(convoy_check_util)
tests_check_coherence_CFLAGS = $(convoy_check_cflags)
tests_check_coherence_LDADD = $(convoy_check_ldadd)

tests_check_bounce_SOURCES = tests/check_bounce.c $(convoy_check_util)
tests_check_bounce_CFLAGS = $(convoy_check_cflags)
tests_check_bounce_LDADD = $(convoy_check_ldadd)

tests_check_batch_SOURCES = tests/check_batch.c $(convoy_check_util)
tests_check_batch_CFLAGS = $(convoy_check_cflags)
tests_check_batch_LDADD = $(convoy_check_ldadd)

tests_check_plan_SOURCES = tests/check_plan.c $(convoy_check_util)
tests_check_plan_CFLAGS = $(convoy_check_cflags)
tests_check_plan_LDADD = $(convoy_check_ldadd)

tests_check_gpumem_SOURCES = tests/check_gpumem.c $(convoy_check_util)
tests_check_gpumem_CFLAGS = $(convoy_check_cflags)
tests_check_gpumem_LDADD = $(convoy_check_ldadd)

tests_check_robust_SOURCES = tests/check_robust.c $(convoy_check_util)
tests_check_robust_CFLAGS = $(convoy_check_cflags)
tests_check_robust_LDADD = $(convoy_check_ldadd)

tests_check_robust_core_SOURCES = tests/check_robust_core.c $(convoy_check_util)
tests_check_robust_core_CFLAGS = $(convoy_check_cflags)
tests_check_robust_core_LDADD = $(convoy_check_ldadd)

tests_check_workers_SOURCES = tests/check_workers.c $(convoy_check_util)
tests_check_workers_CFLAGS = $(convoy_check_cflags)
tests_check_workers_LDADD = $(convoy_check_ldadd)
tests_check_done_batch_SOURCES = tests/check_done_batch.c tests/task_records.h $(convoy_check_util)
tests_check_done_batch_CFLAGS = $(convoy_check_cflags)
tests_check_done_batch_LDADD = $(convoy_check_ldadd)

tests_check_batch_queue_SOURCES = tests/check_batch_queue.c $(convoy_check_util)
tests_check_batch_queue_CFLAGS = $(convoy_check_cflags)
tests_check_batch_queue_LDADD = $(convoy_check_ldadd)
tests_check_pool_SOURCES = tests/check_pool.c $(convoy_check_util)
tests_check_pool_CFLAGS = $(convoy_check_cflags)
tests_check_pool_LDADD = $(convoy_check_ldadd)
tests_check_devcache_SOURCES = tests/check_devcache.c $(convoy_check_util)
tests_check_devcache_CFLAGS = $(convoy_check_cflags)
tests_check_devcache_LDADD = $(convoy_check_ldadd)

tests_check_robust_chore_SOURCES = tests/check_robust_chore.c $(convoy_check_util)
tests_check_robust_chore_CFLAGS = $(convoy_check_cflags)
tests_check_robust_chore_LDADD = $(convoy_check_ldadd)

tests_check_version_SOURCES = tests/check_version.c $(convoy_check_util)
tests_check_version_CFLAGS = $(convoy_check_cflags)
tests_check_version_LDADD = $(convoy_check_ldadd)

tests_check_trace_path_SOURCES = tests/check_trace_path.c $(convoy_check_util)
tests_check_trace_path_CFLAGS = $(convoy_check_cflags)
tests_check_trace_path_LDADD = $(convoy_check_ldadd)

tests_check_bind_SOURCES = tests/check_bind.c $(convoy_check_util)
tests_check_bind_CFLAGS = $(convoy_check_cflags)
tests_check_bind_LDADD = $(convoy_check_ldadd)

# The Level Zero component against a fake loader (tests/fake_ze.c), named
# libze_loader.so.1 in a folder of its own, which tests/ze_fake.sh puts first on
# LD_LIBRARY_PATH: check_ze is run only through it.
if HAVE_ZE
check_PROGRAMS += tests/check_ze
tests_check_ze_SOURCES = tests/check_ze.c tests/fake_ze.h $(convoy_check_util)
tests_check_ze_CFLAGS = $(convoy_check_cflags)
tests_check_ze_LDADD = $(convoy_check_ldadd) $(DL_LIBS)
check_LTLIBRARIES += tests/fakeze/libze_loader.la
tests_fakeze_libze_loader_la_SOURCES = tests/fake_ze.c tests/fake_ze.h
tests_fakeze_libze_loader_la_CPPFLAGS = $(AM_CPPFLAGS) $(ZE_CPPFLAGS)
tests_fakeze_libze_loader_la_LDFLAGS = -version-info 1:0:0 -rpath $(abs_builddir)/tests/nowhere
tests_fakeze_libze_loader_la_LIBADD = -lpthread
endif
endif
TESTS += tests/ze_fake.sh
EXTRA_DIST += tests/ze_fake.sh

if HAVE_CUDA
convoy_gpu_tests = tests/gpu_copy tests/gpu_tasks
check_PROGRAMS += $(convoy_gpu_tests)
TESTS += $(convoy_gpu_tests)

tests_gpu_copy_SOURCES = tests/gpu_copy.c
tests_gpu_copy_LDADD = $(LDADD) $(CONVOY_CUDA_PROGRAM_LIBS)
tests_gpu_tasks_SOURCES = tests/gpu_tasks.c bench/tiny_tasks_cuda.cu
tests_gpu_tasks_LDADD = $(LDADD) $(CONVOY_CUDA_PROGRAM_LIBS)
# Never built: links the program with the C linker.
nodist_EXTRA_tests_gpu_tasks_SOURCES = tests/gpu_tasks_linker.c
endif

# The guide's example program (doc/example.c), run on whatever devices are here.
check_PROGRAMS += doc/example
TESTS += doc/example
doc_example_SOURCES = doc/example.c

# doc/reference.md lists every parameter (tests/reference_params.sh).
TESTS += tests/reference_params.sh
EXTRA_DIST += tests/reference_params.sh

# The command lines of convoy-info and convoy-trace (exit codes, outputs).
TESTS += tests/tools_cli.sh
EXTRA_DIST += tests/tools_cli.sh

# Every benchmark verifies its results on the sim device at small sizes.
TESTS += tests/bench_smoke.sh
EXTRA_DIST += tests/bench_smoke.sh

# bench/host_profile.py counts a task's host cost under callgrind (where valgrind is).
TESTS += tests/host_profile.sh
EXTRA_DIST += tests/host_profile.sh

# Under taskset -c 1, convoy's threads keep to CPU 1.
TESTS += tests/bind_taskset.sh
EXTRA_DIST += tests/bind_taskset.sh

# doc/convoy.3 lists every function of convoy.h.
TESTS += tests/man3_api.sh
EXTRA_DIST += tests/man3_api.sh

# Two processes with one CONVOY_TRACE=run-%p.json pattern write two traces.
TESTS += tests/trace_procs.sh tests/trace_merge.sh
EXTRA_DIST += tests/trace_procs.sh tests/trace_merge.sh doc/make-reference.sh doc/reference.md.in doc/example.c

# The trace: its Check suite (runtime + reader) and a bounded fuzz run of the reader.
if HAVE_JANSSON
if HAVE_CHECK
check_PROGRAMS += tests/check_trace tests/check_trace_read
TESTS += tests/check_trace tests/check_trace_read
tests_check_trace_SOURCES = tests/check_trace.c tests/task_records.h $(convoy_check_util) \
	$(convoy_trace_reader)
tests_check_trace_CFLAGS = $(convoy_check_cflags) $(JANSSON_CFLAGS)
tests_check_trace_LDADD = $(convoy_check_ldadd) $(JANSSON_LIBS)
tests_check_trace_read_SOURCES = tests/check_trace_read.c $(convoy_check_util) \
	$(convoy_trace_reader)
tests_check_trace_read_CFLAGS = $(convoy_check_cflags) $(JANSSON_CFLAGS)
tests_check_trace_read_LDADD = $(convoy_check_ldadd) $(JANSSON_LIBS)
endif
check_PROGRAMS += tests/trace_fuzz
TESTS += tests/trace_fuzz
tests_trace_fuzz_SOURCES = tests/trace_fuzz.c $(convoy_trace_reader)
tests_trace_fuzz_CFLAGS = $(AM_CFLAGS) $(JANSSON_CFLAGS)
tests_trace_fuzz_LDADD = $(JANSSON_LIBS) $(CONVOY_SYS_LIBS)
endif
EXTRA_DIST += tests/check_trace.c tests/check_trace_read.c tests/trace_fuzz.c

# Outside projects built against the installed convoy by .ci/test's "outside" phase.
EXTRA_DIST += tests/outside/hello.c tests/outside/cmake/CMakeLists.txt \
	tests/outside/pkgconfig/hello.mk

# Host allocation failure, each allocation in turn (tests/failalloc.sh): a preloaded
# malloc wrapper (a libtool module, never installed) and the program it drives.
check_LTLIBRARIES += tests/failalloc.la
tests_failalloc_la_SOURCES = tests/failalloc.c
tests_failalloc_la_LDFLAGS = -module -avoid-version -shared -rpath /nowhere
tests_failalloc_la_LIBADD = -ldl
check_PROGRAMS += tests/failalloc_run
tests_failalloc_run_SOURCES = tests/failalloc_run.c tests/sanitized.h
TESTS += tests/failalloc.sh
EXTRA_DIST += tests/failalloc.sh

# make stress: the random suites and random API misuse (tests/stress_misuse.c) over many
# seeds for a bounded time (tests/stress.sh; STRESS_SECONDS=120 by default). CI runs it in
# its sanitizer phases.
EXTRA_DIST += tests/stress.sh
check_PROGRAMS += tests/stress_misuse
tests_stress_misuse_SOURCES = tests/stress_misuse.c tests/stress_misuse_calls.c tests/stress_misuse.h \
	tests/sanitized.h
tests_stress_misuse_LDADD = $(LDADD) -lpthread
stress: $(convoy_check_suites) tests/stress_misuse
	$(SHELL) $(top_srcdir)/tests/stress.sh tests
.PHONY: stress

# Stand-in vendor headers: .ci/test ports compiles device/cuda/ and device/hip/ against
# them for each runtime version (tests/ports/check.sh).
EXTRA_DIST += tests/ports/check.sh tests/ports/include/cuda_runtime_api.h \
	tests/ports/include/cuda.h \
	tests/ports/include/nvtx3/nvToolsExt.h tests/ports/include/hip/hip_runtime_api.h

# The distributed mode (doc/dist.md): MPI programs, run by tests/dist_mpirun.sh under
# mpirun (plain programs: a process that initialised MPI must not fork).
if HAVE_MPI
check_PROGRAMS += tests/check_dist tests/check_dist_fuse
tests_check_dist_SOURCES = tests/check_dist.c tests/dist_check.h
tests_check_dist_fuse_SOURCES = tests/check_dist_fuse.c tests/dist_check.h
endif
TESTS += tests/dist_mpirun.sh
EXTRA_DIST += tests/dist_mpirun.sh tests/dist_tsan.supp tests/check_dist.c tests/check_dist_fuse.c \
	tests/dist_check.h tests/sanitized.h
