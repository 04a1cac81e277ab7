#!/bin/bash
# One H200 call (doc/results.md, run 6): the tree in .dev/convoy-new.tar.gz (make dist) on
# the GPU machine: GPU tests, memcheck on gpu_copy with
# five seeds and on gpu_tasks, tiny_tasks and chains three times each.
set -u
out=${OUT:-/tmp/out}; mkdir -p "$out"
{ date -u; nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv; } >"$out/machine.txt" 2>&1
mkdir -p /tmp/new && tar -C /tmp/new -xzf .dev/convoy-new.tar.gz && cd /tmp/new/convoy-* &&
./configure --with-cuda-arch=90 >"$out/configure.log" 2>&1 && make -j16 >"$out/make.log" 2>&1; echo "build rc=$?"
timeout 200 make -j8 check >"$out/check.log" 2>&1; echo "check rc=$?"
grep -h -E "^(FAIL|ERROR):|[0-9]+ passed" "$out/check.log" tests/gpu_*.log | tail -6
export CONVOY_DEVICES=cuda
for s in 1 2 3 4 5; do
  CONVOY_TEST_SEED=$s timeout 120 compute-sanitizer --tool memcheck --report-api-errors no --error-exitcode 9 tests/gpu_copy >"$out/memcheck_copy_$s.log" 2>&1
  echo "memcheck gpu_copy seed $s rc=$? $(grep -E 'passed|ERROR SUMMARY' "$out/memcheck_copy_$s.log" | tr '\n' ' ')"
done
timeout 100 compute-sanitizer --tool memcheck --error-exitcode 9 tests/gpu_tasks >"$out/memcheck_tasks.log" 2>&1; echo "memcheck gpu_tasks rc=$? $(grep -E 'ERROR SUMMARY' "$out/memcheck_tasks.log")"
for i in 1 2 3; do bench/tiny_tasks --convoy-sched=batch | tail -1; bench/chains | tail -1; done > "$out/bench.log" 2>&1
cat "$out/bench.log" | sed -E 's/ (flow_bytes|inputs|outputs|h2d_copies|batch_chore)=[^ ]*//g'
