#!/bin/bash
# The copy paths on a GPU machine (issue 10's copy paths, issue 11's memcheck of gpu_copy).
# Builds convoy from its release tarball, then:
#  1. bench/copy_paths (every method beside raw_loop, raw_batch and raw_sm, timed in
#     turns) with the defaults (--quick), then its 8 KiB and 1 KiB configurations
#     (--only-8k) with each alternative the parameters offer: cuda_sm_desc=device,
#     cuda_engine_overlap=1, cuda_engine_max_copies=4096 (one batch call, as before the
#     split), cuda_sm_threads=512; and bench/tiny_tasks (batch) with the scheduler's
#     submission caps against caps for the SM kernel's optimum, three turns each;
#  2. tests/gpu_copy under compute-sanitizer memcheck with CONVOY_TEST_SEED 1..5, and a
#     raw-CUDA probe of the call that ran before the one memcheck failure seen so far (a
#     cudaMemcpyBatchAsync of 600 H2D copies of 1..16 KiB from cudaHostAllocDefault
#     memory, gpu_copy's round trip 134), from that kind of memory and from mapped
#     memory: all seven at once, to stay inside the time budget.
# Logs in $OUT (default ./h200-copy-out, also packed in logs.tgz); a short table last:
# the 1 KiB and 8 KiB lines of each copy_paths run, then one verdict line per run ("ok",
# or "FAILED (why) log: PATH"). Exits 1 when any run failed.
#   bench/h200_copy.sh convoy-0.1.0.tar.gz
# Time: about 4 minutes (build ~1, copy_paths ~1-2, memcheck ~1-2); it ends by
# BUDGET_SECONDS (420) or soon after: copy_paths runs that no longer fit are listed as not
# run, and memcheck's runs get what is left (at least 120 s, at most MEMCHECK_SECONDS).
# SEEDS overrides the seeds.
set -uo pipefail
tarball=${1:?usage: bench/h200_copy.sh TARBALL}
out=${OUT:-$PWD/h200-copy-out}
mkdir -p "$out"
budget=${BUDGET_SECONDS:-420}       # the whole script, build included, ends about then
memcheck_max=${MEMCHECK_SECONDS:-200} # memcheck's runs go in parallel, each at most this
memcheck_min=120                      # ... and at least this, whatever the budget says
copy_s=${COPY_SECONDS:-90}            # one copy_paths run at most
seeds=${SEEDS:-1 2 3 4 5}
t0=$SECONDS
work=$(mktemp -d)
tar -C "$work" -xzf "$tarball" || exit 1
cd "$work"/convoy-*/ || exit 1
{
    date -u
    nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv
    nvcc --version | tail -n 2
} >"$out/machine.txt" 2>&1
./configure --with-cuda-arch=90 >"$out/configure.log" 2>&1 || { tail -30 "$out/configure.log"; exit 1; }
{ make -j"$(nproc)" && make -j"$(nproc)" tests/gpu_copy; } >"$out/make.log" 2>&1 ||
    { grep -E "error" "$out/make.log" | head -30; exit 1; }
echo "build: $((SECONDS - t0)) s"

# The probe: raw CUDA only, so that a failure of it under memcheck is not convoy's.
cat >"$work/probe.cu" <<'EOF'
#include <cuda_runtime.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#define BUF (40u << 20)
#define N 600
#define CK(call)                                                                   \
    do {                                                                           \
        cudaError_t rc_ = (call);                                                  \
        if (rc_ != cudaSuccess) {                                                  \
            printf("probe %s: round %d: %s: %s\n", kind, round, #call,             \
                   cudaGetErrorName(rc_));                                         \
            return 1;                                                              \
        }                                                                          \
    } while (0)
int main(int argc, char **argv)
{
    const char *kind = argc > 1 ? argv[1] : "default";
    int rounds = argc > 2 ? atoi(argv[2]) : 100, round = -1;
    unsigned flags = strcmp(kind, "mapped") == 0 ? cudaHostAllocMapped | cudaHostAllocPortable
                                                 : cudaHostAllocDefault;
    unsigned char *h, *d, *chk = (unsigned char *)malloc(BUF);
    void *dsts[N];
    const void *srcs[N];
    size_t sizes[N];
    cudaStream_t s;
    CK(cudaSetDevice(0));
    CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    CK(cudaHostAlloc((void **)&h, BUF, flags));
    CK(cudaMalloc((void **)&d, BUF));
    unsigned long long x = 88172645463325252ull;
    for (round = 0; round < rounds; round++) {
        size_t cur = 0;
        for (int i = 0; i < N; i++) {
            x ^= x << 13, x ^= x >> 7, x ^= x << 17;
            size_t sz = 1 + x % 16384, off = ((cur + 15) & ~(size_t)15) + (x >> 20) % 16;
            srcs[i] = h + off, dsts[i] = d + off, sizes[i] = sz, cur = off + sz;
        }
        for (size_t k = 0; k < cur; k++)
            h[k] = (unsigned char)(k * 131 + round);
        CK(cudaMemsetAsync(d, 0xA5, cur, s));
        cudaMemcpyAttributes attr;
        memset(&attr, 0, sizeof(attr));
        attr.srcAccessOrder = cudaMemcpySrcAccessOrderStream;
        size_t idx = 0;
#if CUDART_VERSION >= 13000
        CK(cudaMemcpyBatchAsync(dsts, srcs, sizes, N, &attr, &idx, 1, s));
#else
        size_t fail = 0;
        CK(cudaMemcpyBatchAsync((void **)dsts, (void **)srcs, sizes, N, &attr, &idx, 1, &fail, s));
#endif
        CK(cudaMemcpyAsync(chk, d, cur, cudaMemcpyDeviceToHost, s));
        CK(cudaStreamSynchronize(s));
        for (int i = 0; i < N; i++)
            if (memcmp(chk + ((const unsigned char *)srcs[i] - h), srcs[i], sizes[i]) != 0) {
                printf("probe %s: round %d: copy %d differs\n", kind, round, i);
                return 1;
            }
    }
    printf("probe %s: %d rounds of %d copies ok\n", kind, rounds, N);
    return 0;
}
EOF
nvcc -O2 -o "$work/probe" "$work/probe.cu" >"$out/probe_build.log" 2>&1 || echo "probe: build failed (see probe_build.log)"

lines=()
bad=0
export CONVOY_DEVICES=cuda

# copy_paths first, on a quiet GPU; each run bounded by COPY_SECONDS and by what is
# left of the budget (a run that no longer fits is listed as not run).
copy_runs=(
    "default|--quick"
    "sm_desc_device|--only-8k --convoy-cuda-sm-desc=device"
    "engine_overlap|--only-8k --convoy-cuda-engine-overlap=1"
    "engine_unsplit|--only-8k --convoy-cuda-engine-max-copies=4096"
    "sm_threads512|--only-8k --convoy-cuda-sm-threads=512"
)
table=()
for r in "${copy_runs[@]}"; do
    name=${r%%|*} args=${r#*|} log="$out/copy_$name.log"
    t1=$SECONDS
    limit=$((budget - memcheck_min - (SECONDS - t0)))
    [ "$limit" -gt "$copy_s" ] && limit=$copy_s
    if [ "$limit" -lt 20 ]; then
        lines+=("copy_paths $name: not run (time budget: BUDGET_SECONDS=$budget)")
        continue
    fi
    # shellcheck disable=SC2086
    timeout "$limit" bench/copy_paths $args >"$log" 2>&1
    rc=$?
    if [ "$rc" -ne 0 ]; then
        lines+=("copy_paths $name: FAILED (rc=$rc$([ "$rc" -eq 124 ] && echo ", timed out after $limit s")$([ "$rc" -eq 77 ] && echo ", no CUDA device")) log: $log")
        bad=1
    else
        lines+=("copy_paths $name: ok ($((SECONDS - t1)) s, $(tail -n 1 "$log"))")
    fi
    while read -r l; do
        table+=("$(printf '%-15s %s' "$name" "$l")")
    done < <(grep -E "^copy_paths dir=.* chunk=(1024|8192) count=(512|2048) " "$log" |
        sed -E 's/^copy_paths //; s/ (raw_loop_gbs|verified)=[^ ]*//g')
done

# The submission cap, per method (issue 10): the scheduler's caps (batch_max_copies 512,
# batch_max_bytes 4M) against caps sized for the SM kernel's optimum (2048 x 8 KiB,
# PHYSICS.md s6), with rings large enough to fill them; the engine method stays split
# at cuda_engine_max_copies. Three turns of each, alternating.
caps="--convoy-batch-max-tasks=1024 --convoy-batch-max-copies=2048 --convoy-batch-max-bytes=16M"
for i in 1 2 3; do
    for v in default caps2048; do
        [ $((budget - memcheck_min - (SECONDS - t0))) -lt 20 ] && break 2
        a=""
        [ "$v" = caps2048 ] && a=$caps
        # shellcheck disable=SC2086
        l=$(timeout 30 bench/tiny_tasks --convoy-sched=batch $a 2>>"$out/tiny.log" | tail -n 1)
        echo "$v $l" >>"$out/tiny.log"
        case "$l" in
        *verified=yes*) ;;
        *)
            lines+=("tiny_tasks $v turn $i: FAILED ($l) log: $out/tiny.log")
            bad=1
            ;;
        esac
        table+=("$(printf '%-15s %s' "tiny_$v" "$(echo "$l" | sed -E 's/^tiny_tasks //; s/ (device|flow_bytes|inputs|outputs|batch_chore|h2d_copies|d2h_copies)=[^ ]*//g')")")
    done
done

sanitizer=$(command -v compute-sanitizer || ls /usr/local/cuda/bin/compute-sanitizer 2>/dev/null)
if [ -z "$sanitizer" ]; then
    lines+=("memcheck: FAILED (no compute-sanitizer in PATH or /usr/local/cuda/bin)")
    bad=1
else
    t1=$SECONDS
    memcheck_s=$((budget - (SECONDS - t0)))
    [ "$memcheck_s" -gt "$memcheck_max" ] && memcheck_s=$memcheck_max
    [ "$memcheck_s" -lt "$memcheck_min" ] && memcheck_s=$memcheck_min
    names=()
    pids=()
    for s in $seeds; do
        names+=("gpu_copy_seed$s")
        CONVOY_TEST_SEED=$s timeout "$memcheck_s" "$sanitizer" --tool memcheck \
            --report-api-errors no --error-exitcode 9 tests/gpu_copy \
            >"$out/memcheck_gpu_copy_seed$s.log" 2>&1 &
        pids+=($!)
    done
    if [ -x "$work/probe" ]; then
        for k in default mapped; do
            names+=("probe_$k")
            timeout "$memcheck_s" "$sanitizer" --tool memcheck --error-exitcode 9 \
                "$work/probe" $k 100 >"$out/memcheck_probe_$k.log" 2>&1 &
            pids+=($!)
        done
    fi
    rcs=()
    for pid in "${pids[@]}"; do
        wait "$pid"
        rcs+=($?)
    done
    for i in "${!names[@]}"; do
        n=${names[$i]} rc=${rcs[$i]} log="$out/memcheck_${names[$i]}.log"
        sum=$(grep -Eo "ERROR SUMMARY: [0-9]+ errors?" "$log" | tail -n 1)
        res=$(grep -E "^[0-9]+ passed|^probe " "$log" | tail -n 1)
        if [ "$rc" -eq 0 ]; then
            lines+=("memcheck $n: ok (${sum:-no summary}; $res)")
        else
            why="rc=$rc"
            [ "$rc" -eq 124 ] && why="timed out after $memcheck_s s"
            [ "$rc" -eq 9 ] && why="memory errors reported"
            [ "$rc" -eq 77 ] && why="exit 77: no CUDA device"
            lines+=("memcheck $n: FAILED ($why; ${sum:-no summary}; $(grep -E "^FATAL|^FAIL |^probe " "$log" | head -n 1); $res) log: $log")
            bad=1
        fi
    done
    echo "memcheck: $((SECONDS - t1)) s"
fi

(cd "$out" && tar czf logs.tgz ./*.log machine.txt)
echo "total: $((SECONDS - t0)) s"
echo "== copy_paths, 1 KiB and 8 KiB chunks (ratio_raw: gbs over the raw baseline of the method used); tiny_tasks, scheduler caps 512/4M against 2048/16M"
printf '%s\n' "${table[@]}"
echo "== verdicts"
printf '%s\n' "${lines[@]}"
exit "$bad"
