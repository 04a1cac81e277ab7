#!/bin/bash
# One short H200 call (doc/results.md, host-cost run 3): base (.dev/convoy-base.tar.gz) and
# new (.dev/convoy-new.tar.gz) built side by side; tiny_tasks, chains and overhead,
# alternating, and a progress profile of tiny_tasks. Logs under $OUT.
set -u
out=${OUT:-/tmp/out}; mkdir -p "$out"; top=$PWD
. "$(dirname "$0")/h200_build.sh"
build() { h200_build "$1" "$2" /tmp "${@:3}"; }
build base .dev/convoy-base.tar.gz & build new .dev/convoy-new.tar.gz & wait
BASE=$(echo /tmp/base/convoy-*); NEW=$(echo /tmp/new/convoy-*)
export CONVOY_DEVICES=cuda
b="$out/bench.log"
run() { echo "### $*" >>"$b"; timeout 100 "$@" >>"$b" 2>&1; echo "rc=$?" >>"$b"; }
for i in 1 2 3; do run $BASE/bench/tiny_tasks; run $NEW/bench/tiny_tasks; done
run $NEW/bench/tiny_tasks --convoy-progress_profile=1
for i in 1 2; do run $BASE/bench/chains; run $NEW/bench/chains; done
run $BASE/bench/overhead; run $NEW/bench/overhead
grep -E "rc=[1-9]|verified=no" "$b" | head
awk '/^### /{tag=($2 ~ /\/tmp\/base/) ? "BASE" : "NEW"; opt=$3; next} /progress_profile:|^(tiny_tasks|chains|overhead) /{print tag, opt, $0}' "$b" | sed -E 's/ (inputs|outputs|h2d_copies|batch_chore|bytes_per_task|device|d2h_copies|h2d_submissions|d2h_submissions|launches|flow_bytes|final_bytes|d2d_copies)=[^ ]*//g' | cut -c1-480
