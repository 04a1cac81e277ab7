#!/bin/bash
# One H200 call (doc/results.md, 2026-12-01): build a base tarball (.dev/convoy-old.tar.gz)
# and the new one (.dev/convoy-new.tar.gz), the GPU tests, then
# benchmarks alternating old/new. Logs under $OUT; a short table last.
set -u
out=${OUT:-/tmp/out}; mkdir -p "$out"
top=$PWD
{ date -u; nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv; nvcc --version | tail -n 2; nproc; } >"$out/machine.txt" 2>&1
build() { # name tarball
    mkdir -p /tmp/$1 && tar -C /tmp/$1 -xzf "$2" && cd /tmp/$1/convoy-* &&
    ./configure --with-cuda-arch=90 >"$out/configure-$1.log" 2>&1 && make -j16 >"$out/make-$1.log" 2>&1
    echo "build $1 rc=$?"; cd "$top"
}
build old .dev/convoy-old.tar.gz & build new .dev/convoy-new.tar.gz & wait
OLD=$(echo /tmp/old/convoy-*); NEW=$(echo /tmp/new/convoy-*)
(cd "$NEW" && timeout 240 make -j8 check >"$out/check.log" 2>&1; echo "check rc=$?"; cat tests/gpu_*.log test-suite.log > "$out/tests.log" 2>/dev/null; grep -h -E "^(PASS|FAIL|SKIP|ERROR):|[0-9]+ passed" "$out/check.log" tests/gpu_*.log | tail -30)
export CONVOY_DEVICES=cuda
b="$out/bench.log"
run() { echo "### $*" >>"$b"; timeout 120 "$@" >>"$b" 2>&1; echo "rc=$?" >>"$b"; }
for i in 1 2 3; do
    run $OLD/bench/tiny_tasks --convoy-sched=batch
    run $NEW/bench/tiny_tasks --convoy-sched=batch
done
run $NEW/bench/chains --convoy-sched=batch
run $NEW/bench/chains --convoy-sched=batch --bytes=1024
run $NEW/bench/chains --convoy-sched=fifo --chains=256
for i in 1 2 3; do run $NEW/bench/chains --convoy-sched=batch; done
run $NEW/bench/evict --convoy-sched=batch --convoy-device_memory=64M --data=4096 --bytes=65536 --sweeps=4
run $NEW/bench/evict --convoy-sched=batch --convoy-device_memory=16M --data=4096 --bytes=8192 --sweeps=4
run $OLD/bench/overhead --convoy-sched=batch
run $NEW/bench/overhead --convoy-sched=batch
run $NEW/bench/overhead --convoy-sched=batch --convoy-cpu_write_backup=0
run $OLD/bench/mixed_latency --convoy-sched=batch
run $NEW/bench/mixed_latency --convoy-sched=batch
if command -v compute-sanitizer >/dev/null; then
    (cd "$NEW" && timeout 100 compute-sanitizer --tool memcheck --error-exitcode 9 tests/gpu_tasks >"$out/memcheck_tasks.log" 2>&1; echo "memcheck gpu_tasks rc=$?"; tail -3 "$out/memcheck_tasks.log")
    (cd "$NEW" && timeout 100 compute-sanitizer --tool memcheck --error-exitcode 9 bench/chains --convoy-sched=batch --chains=256 --repeat=1 >"$out/memcheck_chains.log" 2>&1; echo "memcheck chains rc=$?")
fi
grep -E "^# (PASS|FAIL|SKIP|ERROR)|passed|failed" "$out/check.log" | head
grep -E "rc=[1-9]|verified=no" "$b" | head
awk '/^### /{tag=($2 ~ /\/tmp\/old/) ? "OLD" : "NEW"; next} /^(tiny_tasks|chains|evict|overhead|mixed_latency) /{print tag, $0}' "$b" | sed -E 's/ (flow_bytes|inputs|outputs|h2d_copies|rounds|batch_chore)=[^ ]*//g'
tail -3 "$out"/memcheck_*.log 2>/dev/null
