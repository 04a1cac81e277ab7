#!/bin/sh
# The stress target (`make stress`): the random task graphs of check_pipeline (faults of
# every kind, tiny device memory, one and two sim devices, both schedulers) and of
# check_deps, against their sequential oracles, and random API misuse interleaved with
# valid work (stress_misuse, against its oracle), one seed after another from
# STRESS_FIRST_SEED (default 1) until STRESS_SECONDS (default 120) have passed. Prints
# the seeds run and the failures of each; exits 1 when any seed failed, naming the
# rerun line.
# Run from the build folder; under a sanitizer build the suites use small sizes.
set -u
seconds=${STRESS_SECONDS:-120}
seed=${STRESS_FIRST_SEED:-1}
dir=${1:-tests}
start=$(date +%s)
runs=0
failures=0
misuse_failures=0
while [ $(($(date +%s) - start)) -lt "$seconds" ]; do
    for suite in check_pipeline check_deps; do
        if ! CONVOY_TEST_SEED=$seed CK_RUN_CASE=random "$dir/$suite" >"stress-$suite-$seed.log" 2>&1; then
            failures=$((failures + 1))
            echo "stress: $suite failed with seed $seed (rerun: CONVOY_TEST_SEED=$seed CK_RUN_CASE=random $dir/$suite)"
            grep -E ':[EF]:' "stress-$suite-$seed.log" | head -n 5
        else
            rm -f "stress-$suite-$seed.log"
        fi
    done
    # Its own alarm ends a hang (SIGALRM: a failure like any other).
    if ! "$dir/stress_misuse" "$seed" >"stress-misuse-$seed.log" 2>&1; then
        misuse_failures=$((misuse_failures + 1))
        echo "stress: stress_misuse failed with seed $seed (rerun: $dir/stress_misuse $seed)"
        grep -E '^stress_misuse:|ERROR|SUMMARY' "stress-misuse-$seed.log" | head -n 5
    else
        rm -f "stress-misuse-$seed.log"
    fi
    runs=$((runs + 1))
    seed=$((seed + 1))
done
echo "stress: $runs seeds run in $(($(date +%s) - start)) s, $failures failed"
echo "stress: misuse: $runs seeds run, $misuse_failures failed"
[ "$failures" -eq 0 ] && [ "$misuse_failures" -eq 0 ]
