#!/bin/bash
# The closing H200 calls of 2026-12-01 afternoon (doc/results.md). Two phases, one call
# each, so that each fits a call's 10 minutes:
#   bench/h200_final2.sh bench    builds .dev/convoy-base.tar.gz and .dev/convoy-new.tar.gz
#                                 (the new one with MPI when mpicc is there), runs the new
#                                 one's make check (GPU programs, MPI programs), then the
#                                 benchmarks, base and new alternating, and the MPI ones
#   bench/h200_final2.sh memcheck compute-sanitizer memcheck over tests/gpu_copy (seeds 1-5)
#                                 and tests/gpu_tasks, on the build of the first phase
# Builds live under .dev/final (the memcheck phase builds the new one again when it is
# gone: a call that carries .dev replaces it). Logs under $OUT.
set -u
phase=${1:?usage: bench/h200_final2.sh bench|memcheck}
out=${OUT:-/tmp/out}; mkdir -p "$out"
top=$PWD; w=$top/.dev/final
. "$(dirname "$0")/h200_build.sh"
build() { h200_build "$1" "$2" "$w" "${@:3}"; }
if [ "$phase" = bench ]; then
    { date -u; nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv; nvcc --version | tail -n 2; nproc; mpirun --version 2>&1 | head -1; } >"$out/machine.txt" 2>&1
    build base .dev/convoy-base.tar.gz & build new .dev/convoy-new.tar.gz & wait
    BASE=$(echo $w/base/convoy-*); NEW=$(echo $w/new/convoy-*)
    grep -E "MPI|mpi" "$out/configure-new.log" | tail -3
    (cd "$NEW" && OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 timeout 280 make -j8 check >"$out/check.log" 2>&1; echo "check rc=$?")
    cat "$NEW"/tests/gpu_*.log "$NEW"/tests/dist_mpirun.sh.log > "$out/tests.log" 2>/dev/null
    grep -h -E "^(PASS|FAIL|SKIP|ERROR|XFAIL):|^# (TOTAL|PASS|FAIL|SKIP|ERROR)" "$out/check.log" | grep -v "^PASS" | head -20
    grep -h -E "[0-9]+ passed" "$NEW"/tests/gpu_*.log | tail -3
    export CONVOY_DEVICES=cuda
    b="$out/bench.log"
    run() { echo "### $*" >>"$b"; timeout 60 "$@" >>"$b" 2>&1; echo "rc=$?" >>"$b"; }
    for i in 1 2 3; do run $BASE/bench/tiny_tasks; run $NEW/bench/tiny_tasks; done
    run $NEW/bench/tiny_tasks --host-memory malloc
    run $NEW/bench/tiny_tasks --host-memory malloc --convoy-pageable_bounce=off
    run $NEW/bench/tiny_tasks --host-memory malloc
    run $NEW/bench/tiny_tasks --host-memory pinned
    run $NEW/bench/tiny_tasks --flow-bytes 1024
    for i in 1 2; do run env CONVOY_TRACE=/tmp/t.json $NEW/bench/tiny_tasks; run $NEW/bench/tiny_tasks; done
    for i in 1 2; do run $BASE/bench/chains; run $NEW/bench/chains; done
    run $BASE/bench/overhead; run $NEW/bench/overhead
    run $BASE/bench/mixed_latency; run $NEW/bench/mixed_latency
    run $NEW/bench/mixed_latency --convoy-spin_us=1000
    run $NEW/bench/mixed_latency --convoy-spin_us=1000 --convoy-batch_max_wait_us=0
    if [ -x "$NEW/bench/stencil" ]; then
        export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
        for np in 1 4; do CONVOY_DEVICES=host run mpirun --oversubscribe -np $np $NEW/bench/stencil --convoy-nthreads=$((16 / np)); done
        for np in 1 2; do run mpirun --oversubscribe -np $np $NEW/bench/dist_tiny; done
        run mpirun --oversubscribe -np 2 $NEW/bench/dist_tiny --convoy-dist_fuse=0
    fi
    grep -E "rc=[1-9]|verified=(no|0)" "$b" | head
    awk '/^### /{tag=($0 ~ /\/base\//) ? "BASE" : "NEW"; opt=$0; sub(/^### /,"",opt); sub(/[^ ]*\/bench\//,"",opt); next} /^(tiny_tasks|chains|overhead|mixed_latency|stencil|dist_tiny) /{print tag, "[" opt "]", $0}' "$b" |
        sed -E 's/ (inputs|outputs|h2d_copies|batch_chore|bytes_per_task|device|d2h_copies|h2d_submissions|d2h_submissions|launches|final_bytes|d2d_copies|small|large_bytes|rounds)=[^ ]*//g' | cut -c1-300
else
    [ -x "$(echo $w/new/convoy-*)/tests/gpu_copy" ] || build new .dev/convoy-new.tar.gz
    NEW=$(echo $w/new/convoy-*)
    (cd "$NEW" && make -j16 tests/gpu_copy tests/gpu_tasks >>"$out/make-new.log" 2>&1)
    [ -x "$NEW/tests/gpu_copy" ] || { echo "no tests/gpu_copy in $NEW"; exit 1; }
    cd "$NEW"
    pids=()
    for s in 1 2 3 4 5; do
        CONVOY_TEST_SEED=$s timeout 280 compute-sanitizer --tool memcheck --error-exitcode 9 --report-api-errors no tests/gpu_copy >"$out/memcheck_gpu_copy_$s.log" 2>&1 &
        pids+=($!)
    done
    timeout 280 compute-sanitizer --tool memcheck --error-exitcode 9 --report-api-errors no tests/gpu_tasks >"$out/memcheck_gpu_tasks.log" 2>&1 &
    pids+=($!)
    for p in "${pids[@]}"; do wait "$p"; done
    for f in "$out"/memcheck_*.log; do
        echo "$(basename "$f"): $(grep -h -E "ERROR SUMMARY" "$f" | tail -1); $(grep -h -E "[0-9]+ passed" "$f" | tail -1); $(grep -h -E "^(FAIL|FATAL)" "$f" | head -2 | cut -c1-200)"
    done
fi
