#!/bin/sh
# Proves that every benchmark runs on the sim device at small sizes and verifies its
# results (its line says verified=yes, or verified=1), with the options the results of
# doc/results.md use: a benchmark broken here would otherwise show only on a GPU machine.
set -u
# A developer's CONVOY_* settings would change what runs here.
for v in $(env | sed -n 's/^\(CONVOY_[A-Z_0-9]*\)=.*/\1/p'); do unset "$v"; done
CONVOY_DEVICES=sim
export CONVOY_DEVICES
tmp=${TMPDIR:-/tmp}/convoy-bench-smoke.$$
trap 'rm -f "$tmp"' EXIT
fails=0

# run CMD...: CMD exits 0 within 300 s and prints a line with verified=yes or verified=1.
run() {
    timeout 300 "$@" >"$tmp" 2>&1
    rc=$?
    if [ "$rc" -ne 0 ] || ! grep -q -E 'verified=(yes|1)' "$tmp" ||
        grep -q -E 'verified=(no|0)' "$tmp"; then
        echo "FAIL: '$*' exited $rc:"
        sed 's/^/    /' "$tmp" | tail -20
        fails=$((fails + 1))
    else
        echo "ok: '$*'"
    fi
}

run bench/tiny_tasks --tasks 256 --runs 2
run bench/tiny_tasks --tasks 256 --runs 2 --free-behind
run bench/tiny_tasks --tasks 128 --host-memory malloc
run bench/tiny_tasks --tasks 128 --flow-bytes 1024 --inputs 2 --outputs 2 --batch-chore off
run bench/mixed_latency --rounds 2 --large-bytes 1048576
run bench/chains --chains 16 --steps 4
run bench/chains --chains 16 --steps 4 --ping-pong
run bench/overhead --tasks 2000 --inserters 2
run bench/evict --data 64 --bytes 4096 --sweeps 2 --convoy-sim_memory=128K
# bench/dist_tiny and bench/stencil (MPI) run in tests/dist_mpirun.sh.
[ "$fails" -eq 0 ]
