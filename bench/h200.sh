#!/bin/bash
# Build convoy from its release tarball on a GPU machine, run the GPU tests and the
# benchmarks, and leave logs in $OUT (default ./h200-out). Prints a short table last,
# ending with one line per program run under compute-sanitizer memcheck ("ok" or
# "FAILED (why) log: PATH"); exits 1 when any of those failed or could not run.
#   bench/h200.sh convoy-0.1.0.tar.gz [quick|full]
# The machine needs gcc, make and CUDA; not libtool or Check (the tarball carries what
# the build needs; the Check suites are skipped).
set -uo pipefail
tarball=${1:?usage: bench/h200.sh TARBALL [quick|full]}
mode=${2:-quick}
out=${OUT:-$PWD/h200-out}
mkdir -p "$out"
work=$(mktemp -d)
tar -C "$work" -xzf "$tarball"
cd "$work"/convoy-*/ || exit 1
{
    date -u
    nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv
    nvcc --version | tail -n 2
} >"$out/machine.txt" 2>&1
./configure --with-cuda-arch=90 >"$out/configure.log" 2>&1 || { tail -30 "$out/configure.log"; exit 1; }
make -j"$(nproc)" >"$out/make.log" 2>&1 || { grep -E "error" "$out/make.log" | head -30; exit 1; }
make -j4 check >"$out/check.log" 2>&1
check_rc=$?
cat tests/*.log test-suite.log >"$out/tests.log" 2>/dev/null

run() { # name, command...: log to $out/bench.log, keep the last line
    local name=$1
    shift
    echo "### $name: $*" >>"$out/bench.log"
    "$@" >>"$out/bench.log" 2>&1
    echo "rc=$?" >>"$out/bench.log"
}

export CONVOY_DEVICES=cuda
if [ "$mode" = full ]; then
    run copy_paths bench/copy_paths
else
    run copy_paths bench/copy_paths --quick
fi
for s in fifo batch; do
    run tiny bench/tiny_tasks --convoy-sched=$s --batch-chore=off
done
run tiny bench/tiny_tasks --convoy-sched=batch --batch-chore=on --baselines
run tiny bench/tiny_tasks --convoy-sched=batch --batch-chore=on
for m in engine sm loop; do
    run tiny bench/tiny_tasks --convoy-sched=batch --convoy-copy-method=$m
done
for t in 64 1024; do
    run tiny bench/tiny_tasks --convoy-sched=batch --convoy-batch-max-tasks=$t
done
run tiny bench/tiny_tasks --convoy-sched=batch --convoy-max-inflight=4096
for b in 1024 65536; do
    run tiny bench/tiny_tasks --convoy-sched=batch --flow-bytes=$b
    run tiny bench/tiny_tasks --convoy-sched=fifo --flow-bytes=$b
done
run mixed bench/mixed_latency --convoy-sched=fifo
run mixed bench/mixed_latency --convoy-sched=batch
run mixed bench/mixed_latency --convoy-sched=batch --convoy-batch-split-bytes=0
run overhead bench/overhead
run overhead bench/overhead --convoy-spin-us=0
run overhead bench/overhead --convoy-nthreads=4
# What tracing costs: the same run with the trace off and on, three times each.
for i in 1 2 3; do
    run trace_off bench/tiny_tasks --convoy-sched=batch
    run trace_on env CONVOY_TRACE="$work/cost.json" bench/tiny_tasks --convoy-sched=batch
done
mkdir -p "$out/traces"
for s in fifo batch; do
    CONVOY_TRACE="$out/traces/tiny_$s.json" bench/tiny_tasks --convoy-sched=$s --tasks=2048 >>"$out/bench.log" 2>&1
done
CONVOY_TRACE="$out/traces/mixed_split_on.json" bench/mixed_latency --convoy-sched=batch --rounds=2 >>"$out/bench.log" 2>&1
CONVOY_TRACE="$out/traces/mixed_split_off.json" bench/mixed_latency --convoy-sched=batch --convoy-batch-split-bytes=0 --rounds=2 >>"$out/bench.log" 2>&1
(cd "$out" && tar czf traces.tgz traces && rm -rf traces)

# compute-sanitizer memcheck over the GPU test programs. A failure must not pass
# unnoticed: each program's verdict is a line of the final table (FAILED with the
# reason), its log stays in $out beside logs.tgz, and the script exits non-zero.
sanitizer=$(command -v compute-sanitizer || ls /usr/local/cuda/bin/compute-sanitizer 2>/dev/null)
memcheck_lines=()
memcheck_bad=0
memcheck() { # name, extra sanitizer options..., --, program
    local name=$1 log="$out/memcheck_$1.log" opts=() rc
    shift
    while [ "$1" != -- ]; do opts+=("$1"); shift; done
    shift
    if [ -z "$sanitizer" ]; then
        memcheck_lines+=("memcheck $name: FAILED (no compute-sanitizer found)")
        memcheck_bad=1
        return
    fi
    timeout "${MEMCHECK_SECONDS:-150}" "$sanitizer" --tool memcheck --error-exitcode 9 \
        "${opts[@]}" "$@" >"$log" 2>&1
    rc=$?
    local errors
    errors=$(grep -Eo "ERROR SUMMARY: [0-9]+" "$log" | tail -n 1)
    if [ "$rc" -eq 0 ]; then
        memcheck_lines+=("memcheck $name: ok (${errors:-no summary})")
    else
        local why="rc=$rc"
        [ "$rc" -eq 124 ] && why="timed out after ${MEMCHECK_SECONDS:-150} s"
        [ "$rc" -eq 9 ] && why="memory errors reported"
        memcheck_lines+=("memcheck $name: FAILED ($why; ${errors:-no summary}; $(grep -E "^FATAL|^FAIL " "$log" | head -n 1)) log: $log")
        memcheck_bad=1
    fi
}
memcheck gpu_tasks -- tests/gpu_tasks
# gpu_copy makes failing CUDA calls on purpose: count memory errors only.
memcheck gpu_copy --report-api-errors no -- tests/gpu_copy

echo "== make check: rc=$check_rc"
grep -E "^(# (PASS|FAIL|SKIP|ERROR)|[0-9]+ passed)" "$out/check.log" "$out/tests.log" | sort | uniq | head -20
grep -E "verified=no|rc=[1-9]" "$out/bench.log" | head
grep -E "^(tiny_tasks|mixed_latency|overhead|raw_cuda|copy_paths configs)" "$out/bench.log" |
    sed -E 's/ (flow_bytes|inputs|outputs|h2d_copies|d2h_copies|small|rounds)=[^ ]*//g' | tail -n 14
(cd "$out" && tar czf logs.tgz ./*.log machine.txt && find . -maxdepth 1 -name '*.log' ! -name 'memcheck_*' -delete)
printf '%s\n' "${memcheck_lines[@]}"
exit "$memcheck_bad"
