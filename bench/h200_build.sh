# Sourced by the bench/h200_*.sh scripts (h200_machine, h200_run and h200_spin below too):
# h200_build NAME TARBALL ROOT [CONFIGURE ARGS...]
# unpacks TARBALL into ROOT/NAME (emptied first) and builds it there with
# --with-cuda-arch=90, logs in $out/configure-NAME.log and $out/make-NAME.log; prints
# "build NAME rc=N" and comes back to the folder it was called from.
h200_build() {
    local name=$1 tarball=$2 root=$3 here=$PWD
    shift 3
    rm -rf "$root/$name" && mkdir -p "$root/$name" && tar -C "$root/$name" -xzf "$tarball" &&
        cd "$root/$name"/convoy-* &&
        ./configure --with-cuda-arch=90 "$@" >"$out/configure-$name.log" 2>&1 &&
        make -j16 >"$out/make-$name.log" 2>&1
    echo "build $name rc=$?"
    cd "$here" || return 1
}

# h200_machine: the GPU, its driver and the core count into $out/machine.txt.
h200_machine() {
    { date -u; nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv; nproc; } \
        >"$out/machine.txt" 2>&1
}

# h200_run CMD...: CMD (60 s at most) appended to $b under a "### CMD" line, then "rc=N".
h200_run() { echo "### $*" >>"$b"; timeout 60 "$@" >>"$b" 2>&1; echo "rc=$?" >>"$b"; }

# h200_spin N S: N busy loops for S seconds, in the background (doc/results.md: busy cores
# keep the H200 host out of the state that makes tiny_tasks bimodal).
h200_spin() { for k in $(seq "$1"); do timeout "$2" sh -c 'while :; do :; done' & done; }

# h200_ab_setup ROOT: the A/B scripts' start. Records the machine, builds
# .dev/convoy-base.tar.gz and .dev/convoy-new.tar.gz under ROOT (in parallel), sets BASE
# and NEW to their trees and b to the bench log, exports CONVOY_DEVICES=cuda, and runs
# the new tree's GPU tests unless GPU_TESTS=0 (their logs in $out/gpu-tests.log).
# BASE_CONFIGURE and NEW_CONFIGURE add configure arguments to each build (one tarball
# twice, BASE_CONFIGURE=--disable-lto: a build option's A/B).
h200_ab_setup() {
    h200_machine
    # shellcheck disable=SC2086 # each is a list of arguments
    h200_build base .dev/convoy-base.tar.gz "$1" ${BASE_CONFIGURE:-} &
    # shellcheck disable=SC2086
    h200_build new .dev/convoy-new.tar.gz "$1" ${NEW_CONFIGURE:-} &
    wait
    BASE=$(echo "$1"/base/convoy-*)
    NEW=$(echo "$1"/new/convoy-*)
    export CONVOY_DEVICES=cuda
    b="$out/bench.log"
    if [ "${GPU_TESTS:-1}" != 0 ]; then
        (cd "$NEW" && timeout 280 make -j16 check TESTS="tests/gpu_copy tests/gpu_tasks" >"$out/check.log" 2>&1; echo "gpu tests rc=$?")
        grep -h -E "[0-9]+ passed" "$NEW"/tests/gpu_*.log | tail -3
        cat "$NEW"/tests/gpu_*.log >"$out/gpu-tests.log" 2>/dev/null
    fi
}
