#!/bin/sh
# Proves that bench/host_profile.py runs tiny_tasks under callgrind and reads what it
# counted: positive instructions per task for the program's thread and the progress
# thread, and runs that verified. Skipped (77) without valgrind or python3, in sanitized
# builds, which valgrind cannot run, and where host_profile.py says it cannot profile this
# build (exit 3: tiny_tasks built without valgrind's headers, or debug information this
# valgrind cannot read).
set -u
for v in $(env | sed -n 's/^\(CONVOY_[A-Z_0-9]*\)=.*/\1/p'); do unset "$v"; done
if ! command -v valgrind >/dev/null 2>&1 || ! command -v python3 >/dev/null 2>&1; then
    echo "SKIP: valgrind or python3 is not installed"
    exit 77
fi
if grep -q -e '-fsanitize' Makefile 2>/dev/null; then
    echo "SKIP: a sanitized build (valgrind cannot run it)"
    exit 77
fi
# The progress thread's count is the difference of two runs, and what it does while it
# waits (passes that find nothing over, polling its queue for progress_idle_us before it
# sleeps) depends on timing that valgrind stretches: with 64 tasks a CI run measured
# -3844 a task, and 1 of 4 runs here still went negative with the idle polling off. 512
# tasks, idle polling off: 10 of 10 runs here between 3918 and 4109.
out=$(timeout 600 python3 "$(dirname "$0")/../bench/host_profile.py" --build . --tasks 512 \
    --runs-a 1 --runs-b 2 --top 5 -- --convoy-progress_idle_us=0 2>&1)
rc=$?
echo "$out"
if [ "$rc" -eq 3 ]; then
    echo "SKIP: this build or this valgrind cannot be profiled (above)"
    exit 77
fi
last=$(echo "$out" | tail -n 1)
case "$last" in
host_profile\ *verified=yes) ;;
*)
    echo "FAIL: bench/host_profile.py exited $rc, or its last line is not a verified result"
    exit 1
    ;;
esac
for key in program_ir progress_ir; do
    n=$(echo "$last" | sed -n "s/.* $key=\([0-9]*\) .*/\1/p")
    if [ -z "$n" ] || [ "$n" -le 0 ]; then
        echo "FAIL: $key is '${n}', not a positive count of instructions per task"
        exit 1
    fi
done
echo "ok: $last"
