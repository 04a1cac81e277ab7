# doc/: documentation shipped in the tarball. The user documents are installed in
# $(docdir) as well, the API's overview page as convoy(3).

dist_doc_DATA = \
	LICENSE \
	README.md \
	doc/guide.md \
	doc/reference.md \
	doc/modules.md \
	doc/design.md \
	doc/tracing.md \
	doc/robustness.md \
	doc/cuda.md \
	doc/threads.md \
	doc/dist.md \
	doc/physics.md \
	doc/intended-design.md \
	doc/results.md

dist_man3_MANS = doc/convoy.3

EXTRA_DIST += \
	doc/results/plot.sh \
	doc/results/h200-2026-12-02-hostcopies.log \
	doc/results/h200-2026-12-02-lanes.log \
	doc/results/h200-2026-12-02-morning.log \
	doc/results/h200-2026-12-02-prefetch.log \
	doc/results/h200-2026-12-02-written.log \
	doc/results/h200-2026-12-03-write-behind.log \
	doc/results/h200-2026-12-03-evening.log \
	doc/results/h200-2026-12-03-fresh-pages.log \
	doc/results/h200-2026-12-03-late.log \
	doc/results/h200-2026-12-03-night.log \
	doc/results/h200-2026-12-03-prefetch.log \
	doc/results/h200-2026-12-03-spread.log \
	doc/results/h200-2026-12-03-trace.log \
	doc/results/h200-2026-12-03-write-behind-default.log \
	doc/results/h200-2026-12-04-b.log \
	doc/results/h200-2026-12-04-c.log \
	doc/results/h200-2026-12-04-d.log \
	doc/results/h200-2026-12-04-e.log \
	doc/results/h200-2026-12-04-f.log \
	doc/results/h200-2026-12-04-g.log \
	doc/results/h200-2026-12-04-h.log \
	doc/results/h200-2026-12-04.log \
	doc/results/host-2026-12-04-night.log \
	doc/results/h200-2026-12-05.log \
	doc/results/host-2026-12-05.log \
	doc/results/host-2026-12-05-c.log \
	doc/results/host-2026-12-05-d.log \
	doc/results/h100-2026-12-05.log \
	doc/results/h100-2026-12-05-b.log \
	doc/results/h200-2026-12-01-run2-bench.log \
	doc/results/h200-2026-12-01-run3-bench.log \
	doc/results/h200-2026-12-01-run5-bench.log \
	doc/results/h200-2026-12-01-run6-bench.log \
	doc/results/h200-2026-12-01-run6-tests.log \
	doc/results/h200-2026-12-01-host1-bench.log \
	doc/results/h200-2026-12-01-host2-profile.log \
	doc/results/h200-2026-12-01-host2-copy_paths.log \
	doc/results/h200-2026-12-01-host3-bench.log \
	doc/results/h200-2026-12-01-host4-bench.log \
	doc/results/h200-2026-12-01-host5-bench.log \
	doc/results/h200-2026-12-01-host5-tests.log \
	doc/results/h200-2026-12-01-host5-machine.txt \
	doc/results/h200-2026-12-01-host6-memcheck.log \
	doc/results/h200-2026-12-01-host8-dist.log \
	doc/results/h200-2026-12-01-eve1-bench.log \
	doc/results/h200-2026-12-01-eve2-tiny.log \
	doc/results/h200-2026-12-01-eve3-bench.log \
	doc/results/h200-2026-12-01-eve4-bench.log \
	doc/results/h200-2026-12-01-eve5-final.log \
	doc/results/h200-2026-12-01-eve6-ab.log \
	doc/results/h200-2026-12-01-eve7-final.log \
	doc/results/h200-2026-12-01-eve7-gpu-tests.log \
	doc/results/h200-2026-12-01-eve8-bounce.log \
	doc/results/h200-2026-12-01-bounce.log \
	doc/results/h200-2026-12-01-latency.log \
	doc/results/h200-2026-12-01-final.log \
	doc/results/h200-2026-12-01-night-final.log \
	doc/results/h200-2026-12-01-night-ab.log \
	doc/results/h200-2026-12-01-night-scale.log \
	doc/results/h200-2026-12-01-night-gpu-tests.log \
	doc/results/h200-2026-12-01-late-noise.log \
	doc/results/h200-2026-12-01-late-pool.log \
	doc/results/h200-2026-12-01-late-cache.log \
	doc/results/h200-2026-12-01-late-gpu-tests.log \
	doc/results/h200-2026-12-01-eve-host_costs.log \
	doc/results/h200-2026-12-01-eve-machine.txt \
	doc/results/h200-2026-12-01-eve-topology.txt \
	doc/results/h200-2026-12-01-machine.txt \
	doc/results/copy_paths_h2d.svg \
	doc/results/copy_paths_d2h.svg \
	doc/results/tiny_tasks.svg \
	doc/results/h200-2026-11-29-run1.log \
	doc/results/h200-2026-11-29-run2.log \
	doc/results/h200-2026-11-29-run3.log \
	doc/results/h200-2026-11-29-tests.log \
	doc/results/h200-2026-11-29-run5.log \
	doc/results/h200-2026-11-29-run5-tests.log \
	doc/results/h200-2026-11-29-run6.log \
	doc/results/h200-2026-11-29-run6-tests.log \
	doc/results/h200-2026-11-29-machine.txt \
	doc/tracing/h200_tiny_batch.svg \
	doc/tracing/h200_tiny_fifo.svg \
	doc/tracing/h200_mixed_split_on.svg \
	doc/tracing/h200_mixed_split_off.svg
