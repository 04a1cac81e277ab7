#!/bin/bash
# The distributed mode on the one-GPU machine (doc/results.md, 2026-12-01, run 8): ranks
# sharing the H200 with CUDA chores (bench/stencil, bench/dist_tiny), 1 rank against 2,
# and a traced 2-rank stencil summarised and merged. Builds .dev/convoy-new.tar.gz.
set -u
out=${OUT:-/tmp/out}; mkdir -p "$out"
w=$(mktemp -d) && tar -C "$w" -xzf .dev/convoy-new.tar.gz && cd "$w"/convoy-* &&
    ./configure --with-cuda-arch=90 >"$out/configure.log" 2>&1 && make -j16 >"$out/make.log" 2>&1 ||
    { echo "build failed"; tail -20 "$out/make.log"; exit 1; }
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMPI_MCA_btl=self,vader OMPI_MCA_btl_vader_single_copy_mechanism=none
b="$out/dist.log"
run() { echo "### $*" >>"$b"; timeout 120 "$@" >>"$b" 2>&1; echo "rc=$?" >>"$b"; }
for np in 1 2; do
    run mpirun --oversubscribe -np $np -x CONVOY_DEVICES=cuda bench/stencil --n 4096 --tiles 8 --iters 50
    run mpirun --oversubscribe -np $np -x CONVOY_DEVICES=cuda bench/dist_tiny
    run mpirun --oversubscribe -np $np -x CONVOY_DEVICES=cuda bench/dist_tiny --batch 1
done
run mpirun --oversubscribe -np 2 -x CONVOY_DEVICES=host bench/stencil --n 4096 --tiles 8 --iters 50
run mpirun --oversubscribe -np 2 -x CONVOY_DEVICES=cuda bench/stencil --n 4096 --tiles 8 --iters 20 --convoy-trace=$out/st.%r.json
# convoy-trace needs jansson, which the GPU machine lacks: the traces come back in $OUT
# for `convoy-trace summary` and `merge` on the development machine.
if [ -x tools/convoy-trace ]; then
    tools/convoy-trace summary $out/st.0.json | grep -E "cuda0: launch|messages|launched tasks" >>"$b" 2>&1
    tools/convoy-trace merge $out/st.0.json $out/st.1.json -o $out/st.all.json >>"$b" 2>&1; echo "merge rc=$?" >>"$b"
fi
grep -E "rc=[1-9]|verified=0" "$b" | head
grep -E "^(stencil|dist_tiny)|launch|messages|merge" "$b" | cut -c1-250
