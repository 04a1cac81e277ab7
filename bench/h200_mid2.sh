#!/bin/bash
# One short H200 call (doc/results.md, host-cost run 4): mixed_latency by progress_spin_us,
# tiny_tasks and chains, base (.dev/convoy-base.tar.gz) and new (.dev/convoy-new.tar.gz).
set -u
out=${OUT:-/tmp/out}; mkdir -p "$out"; top=$PWD
. "$(dirname "$0")/h200_build.sh"
build() { h200_build "$1" "$2" /tmp "${@:3}"; }
build base .dev/convoy-base.tar.gz & build new .dev/convoy-new.tar.gz & wait
BASE=$(echo /tmp/base/convoy-*); NEW=$(echo /tmp/new/convoy-*)
export CONVOY_DEVICES=cuda
b="$out/bench.log"
run() { echo "### $*" >>"$b"; timeout 60 "$@" >>"$b" 2>&1; echo "rc=$?" >>"$b"; }
run $BASE/bench/mixed_latency
for s in 0 100 1000; do run $NEW/bench/mixed_latency --convoy-progress_spin_us=$s; done
run $NEW/bench/mixed_latency --convoy-progress_spin_us=100 --convoy-batch_max_wait_us=0
for i in 1 2 3; do run $BASE/bench/tiny_tasks; run $NEW/bench/tiny_tasks; done
run $NEW/bench/tiny_tasks --convoy-progress_spin_us=0
run $NEW/bench/tiny_tasks --convoy-progress_profile=1
for i in 1 2; do run $BASE/bench/chains; run $NEW/bench/chains; done
grep -E "rc=[1-9]|verified=no" "$b" | head
awk '/^### /{tag=($2 ~ /\/tmp\/base/) ? "BASE" : "NEW"; opt=$3" "$4; next} /progress_profile:|^(tiny_tasks|chains|overhead|mixed_latency) /{print tag, opt, $0}' "$b" | sed -E 's/ (inputs|outputs|h2d_copies|batch_chore|bytes_per_task|device|d2h_copies|h2d_submissions|d2h_submissions|launches|flow_bytes|final_bytes|d2d_copies|small|large_bytes|rounds|sched)=[^ ]*//g' | cut -c1-480
