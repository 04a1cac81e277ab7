#!/bin/sh
# Compile the C files of device/cuda/ and device/hip/ against the stand-in vendor headers
# of tests/ports/include (hwloc's tests/hwloc/ports way), once per runtime version whose
# branches differ, so that code paths no machine here has (CUDA 12.8/12.9's
# cudaMemcpyBatchAsync with failIdx, HIP >= 7.1's hipMemcpyBatchAsync, ROCm 6's pointer
# attributes) are compile-checked, without nvcc or a vendor SDK:
#   tests/ports/check.sh [CC]      (CC defaults to $CC, then cc)
# Each variant gets its own config.h with the CONVOY_* results configure would give for
# that version. Prints one line per variant; exits non-zero if any file fails.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)
cc=${1:-${CC:-cc}}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
flags="-std=gnu11 -Wall -Wextra -Werror -fsyntax-only"
status=0

# variant NAME VENDOR VERSION BATCH: compile device/VENDOR/*.c with that runtime.
variant() {
    name=$1 vendor=$2 version=$3 batch=$4
    mkdir -p "$tmp/$name"
    {
        echo '#define PACKAGE_VERSION "ports"'
        echo '#define CONVOY_HAVE_MODULES 1'
        if [ "$vendor" = cuda ]; then
            echo "#define CONVOY_HAVE_CUDA 1"
            echo "#define CONVOY_CUDA_VERSION $version"
            echo "#define CONVOY_HAVE_CUDA_BATCH $batch"
        else
            echo "#define CONVOY_HAVE_HIP 1"
            echo "#define CONVOY_HIP_VERSION $version"
            echo "#define CONVOY_HAVE_HIP_BATCH $batch"
        fi
    } >"$tmp/$name/config.h"
    # convoy.h includes convoy_version.h, which configure writes into a build folder.
    sed -e 's/@CONVOY_VERSION_MAJOR@/0/' -e 's/@CONVOY_VERSION_MINOR@/0/' \
        -e 's/@CONVOY_VERSION_PATCH@/0/' -e 's/@PACKAGE_VERSION@/ports/' \
        "$top/include/convoy_version.h.in" >"$tmp/$name/convoy_version.h"
    port=CONVOY_PORT_CUDART
    [ "$vendor" = hip ] && port=CONVOY_PORT_HIP
    n=0
    failed=0
    for f in "$top"/device/"$vendor"/*.c; do
        n=$((n + 1))
        # shellcheck disable=SC2086
        if ! $cc $flags -D"$port=$version" -D__HIP_PLATFORM_AMD__ -I"$tmp/$name" \
            -I"$here/include" -I"$top" -I"$top/include" "$f"; then
            echo "ports: $name: $f does not compile" >&2
            failed=$((failed + 1))
        fi
    done
    echo "ports: $name ($vendor $version, batch $batch): $((n - failed)) of $n files compile"
    [ "$failed" -eq 0 ] || status=1
}

variant cuda-12.0 cuda 12000 0
variant cuda-12.8 cuda 12080 1
variant cuda-12.9 cuda 12090 1
variant cuda-13.0 cuda 13000 1
variant hip-5.2 hip 50200000 0
variant hip-6.4 hip 60400000 0
variant hip-7.1 hip 70100000 1
exit $status
