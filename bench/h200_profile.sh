#!/bin/bash
# Where a progress thread's time goes on a GPU machine (issue 10): builds the tarball,
# then runs tiny_tasks (8 KiB and 1 KiB flows) and chains with progress_profile=1, and
# bench/overhead with spin_us 0, 5 and 20. Logs under $OUT; the profile lines and the
# benchmarks' last lines at the end.
#   bench/h200_profile.sh convoy-0.1.0.tar.gz
set -u
tarball=${1:?usage: bench/h200_profile.sh TARBALL}
out=${OUT:-/tmp/out}; mkdir -p "$out"
work=$(mktemp -d)
tar -C "$work" -xzf "$tarball" && cd "$work"/convoy-* &&
    ./configure --with-cuda-arch=90 >"$out/configure-profile.log" 2>&1 &&
    make -j16 >"$out/make-profile.log" 2>&1 || { echo "build failed"; exit 1; }
export CONVOY_DEVICES=cuda
b="$out/profile.log"
run() { echo "### $*" >>"$b"; timeout 100 "$@" >>"$b" 2>&1; echo "rc=$?" >>"$b"; }
run bench/tiny_tasks --convoy-progress_profile=1
run bench/tiny_tasks --convoy-progress_profile=1
run bench/tiny_tasks --flow-bytes 1024 --convoy-progress_profile=1
run bench/chains --convoy-progress_profile=1
for s in 0 5 20; do run bench/overhead --convoy-spin_us=$s; done
grep -E "rc=[1-9]|verified=no" "$b" | head
awk '/^### /{opt=$2" "$3" "$4; next} /progress_profile:|^(tiny_tasks|chains|overhead) /{print opt, $0}' "$b" |
    sed -E 's/ (inputs|outputs|h2d_copies|batch_chore|bytes_per_task|device|d2h_copies|h2d_submissions|d2h_submissions|launches)=[^ ]*//g' | cut -c1-520
