# CONVOY_CHECK_CUDA
# -----------------
#   --with-cuda[=DIR]      CUDA toolkit in DIR; without DIR or without the option, try
#                          /usr/local/cuda and go on without CUDA if it is not usable;
#                          with --with-cuda or --with-cuda=DIR a missing piece is an error
#   --without-cuda         do not build the CUDA device
#   --with-cuda-arch=LIST  GPU architectures, e.g. "80 90" (default) or "90a": nvcc makes
#                          SASS for each and PTX for the last one
#   NVCC, NVCCFLAGS        precious variables; NVCCFLAGS defaults to -O3 plus the gencode
#                          options of --with-cuda-arch
#
# CUDA is usable when DIR/include has cuda_runtime.h, DIR/bin has nvcc (or NVCC is set),
# a C program links with -lcudart from DIR/lib64 (or DIR/lib), and an nvcc-compiled
# kernel launcher links into a C program.
#
# Results:
#   CONVOY_HAVE_CUDA        config.h, 0 or 1
#   CONVOY_CUDA_VERSION     config.h, CUDART_VERSION (e.g. 13000) or 0
#   CONVOY_HAVE_CUDA_BATCH  config.h, 1 when CUDART_VERSION >= 12080 and the runtime
#                           declares cudaMemcpyBatchAsync, else 0
#   HAVE_CUDA               automake conditional
#   CUDA_CPPFLAGS           -IDIR/include
#   CUDA_LDFLAGS            -LDIR/lib64, plus -Wl,-rpath,DIR/lib64 when the dynamic loader
#                           does not find libcudart by itself
#   CUDA_LIBS               -lcudart, plus -lstdc++ when the host code nvcc generates needs
#                           it (it does with gcc: static-local guards, personality routine)
#   CUDA_DRIVER_LIBS        how to link libcuda for code that calls the driver API
#                           directly: -lcuda, or -LDIR/lib64/stubs -lcuda when only the
#                           toolkit's stub is present. Not part of CUDA_LIBS: libcudart
#                           loads the driver at run time, and a program linked with the
#                           stub does not start at all on a machine without a driver
#                           (where the GPU tests must exit 77 instead).
#   NVCC, NVCCFLAGS
AC_DEFUN([CONVOY_CHECK_CUDA], [
AC_REQUIRE([AC_PROG_CC])
AC_ARG_WITH([cuda],
    [AS_HELP_STRING([--with-cuda@<:@=DIR@:>@],
        [build the CUDA device with the toolkit in DIR @<:@default=check /usr/local/cuda@:>@])],
    [], [with_cuda=check])
AC_ARG_WITH([cuda-arch],
    [AS_HELP_STRING([--with-cuda-arch=LIST],
        [GPU architectures for nvcc: SASS for each, PTX for the last @<:@default="80 90"@:>@])],
    [], [with_cuda_arch=])
AC_ARG_VAR([NVCC], [CUDA compiler (default: DIR/bin/nvcc of --with-cuda)])
AC_ARG_VAR([NVCCFLAGS], [flags for nvcc (default: -O3 and the gencode options of --with-cuda-arch)])

convoy_have_cuda=0
convoy_cuda_version=0
convoy_have_cuda_batch=0
convoy_cuda_why=
CUDA_CPPFLAGS=
CUDA_LDFLAGS=
CUDA_LIBS=
CUDA_DRIVER_LIBS=

AS_CASE([$with_cuda],
    [no], [convoy_cuda_why="--without-cuda"],
    [yes|check], [convoy_cuda_dir=/usr/local/cuda],
    [convoy_cuda_dir=$with_cuda])
AS_CASE([$with_cuda], [no|check], [convoy_cuda_required=no], [convoy_cuda_required=yes])

dnl nvcc flags: gencode options from the architecture list.
AS_IF([test "x$with_cuda_arch" = xyes || test "x$with_cuda_arch" = xno],
    [AC_MSG_ERROR([--with-cuda-arch needs a list of architectures, e.g. --with-cuda-arch="80 90"])])
convoy_cuda_archs=`echo "${with_cuda_arch:-80 90}" | tr ',' ' ' | sed -e 's/sm_//g' -e 's/compute_//g'`
convoy_cuda_gencode=
convoy_cuda_last_arch=
for convoy_arch in $convoy_cuda_archs; do
    convoy_cuda_gencode="$convoy_cuda_gencode -gencode=arch=compute_$convoy_arch,code=sm_$convoy_arch"
    convoy_cuda_last_arch=$convoy_arch
done
AS_IF([test -z "$convoy_cuda_last_arch"], [AC_MSG_ERROR([--with-cuda-arch: empty architecture list])])
convoy_cuda_gencode="$convoy_cuda_gencode -gencode=arch=compute_$convoy_cuda_last_arch,code=compute_$convoy_cuda_last_arch"
AS_IF([test "${NVCCFLAGS+set}" = set],
    [AS_IF([test -n "$with_cuda_arch"], [NVCCFLAGS="$NVCCFLAGS$convoy_cuda_gencode"])],
    [NVCCFLAGS="-O3$convoy_cuda_gencode"])

AS_IF([test -z "$convoy_cuda_why"], [
    AC_MSG_CHECKING([for the CUDA toolkit in $convoy_cuda_dir])
    AS_IF([test -f "$convoy_cuda_dir/include/cuda_runtime.h"],
        [AC_MSG_RESULT([yes])],
        [AC_MSG_RESULT([no])
         convoy_cuda_why="no $convoy_cuda_dir/include/cuda_runtime.h"])
])

AS_IF([test -z "$convoy_cuda_why"], [
    AS_IF([test -d "$convoy_cuda_dir/lib64"],
        [convoy_cuda_libdir=$convoy_cuda_dir/lib64],
        [convoy_cuda_libdir=$convoy_cuda_dir/lib])
    convoy_save_CPPFLAGS=$CPPFLAGS
    convoy_save_LDFLAGS=$LDFLAGS
    convoy_save_LIBS=$LIBS
    CPPFLAGS="$CPPFLAGS -I$convoy_cuda_dir/include"
    LDFLAGS="$LDFLAGS -L$convoy_cuda_libdir"

    AC_MSG_CHECKING([for cuda_runtime.h])
    AC_COMPILE_IFELSE([AC_LANG_PROGRAM([[#include <cuda_runtime.h>]], [[]])],
        [AC_MSG_RESULT([yes])],
        [AC_MSG_RESULT([no])
         convoy_cuda_why="cuda_runtime.h not usable in $convoy_cuda_dir/include"])

    AS_IF([test -z "$convoy_cuda_why"], [
        AC_MSG_CHECKING([for CUDART_VERSION])
        AC_COMPUTE_INT([convoy_cuda_version], [CUDART_VERSION],
            [[#include <cuda_runtime_api.h>]], [convoy_cuda_version=0])
        AC_MSG_RESULT([$convoy_cuda_version])
        AS_IF([test "$convoy_cuda_version" -eq 0 2>/dev/null],
            [convoy_cuda_why="CUDART_VERSION not found"])
    ])

    AS_IF([test -z "$convoy_cuda_why"], [
        AS_IF([test -z "$NVCC"],
            [AC_PATH_PROG([NVCC], [nvcc], [], [$convoy_cuda_dir/bin])])
        AS_IF([test -z "$NVCC"], [convoy_cuda_why="no nvcc in $convoy_cuda_dir/bin"])
    ])

    AS_IF([test -z "$convoy_cuda_why"], [
        AC_MSG_CHECKING([for cudaGetDeviceCount in -lcudart])
        LIBS="-lcudart $convoy_save_LIBS"
        AC_LINK_IFELSE([AC_LANG_PROGRAM([[#include <cuda_runtime_api.h>]],
                [[int n = 0; return (int)cudaGetDeviceCount(&n);]])],
            [AC_MSG_RESULT([yes])],
            [AC_MSG_RESULT([no])
             convoy_cuda_why="cannot link with -lcudart from $convoy_cuda_libdir"])
    ])

    dnl Does the dynamic loader find libcudart without help? If not, record its folder
    dnl in the binaries (libtool passes -Wl,-rpath through).
    convoy_cuda_rpath=
    AS_IF([test -z "$convoy_cuda_why"], [
        AC_MSG_CHECKING([whether the dynamic loader finds libcudart])
        AC_RUN_IFELSE([AC_LANG_PROGRAM([[#include <cuda_runtime_api.h>]],
                [[void *volatile f = (void *)cudaGetDeviceCount; return f == 0;]])],
            [AC_MSG_RESULT([yes])],
            [AC_MSG_RESULT([no, adding an rpath])
             convoy_cuda_rpath="-Wl,-rpath,$convoy_cuda_libdir"],
            [AC_MSG_RESULT([cross compiling, adding an rpath])
             convoy_cuda_rpath="-Wl,-rpath,$convoy_cuda_libdir"])
    ])

    dnl Compile a kernel and its launcher with nvcc and NVCCFLAGS, and link it with the
    dnl C compiler as libtool will: this checks the architectures and the host compiler
    dnl nvcc uses, and finds out whether nvcc's host code needs libstdc++.
    convoy_cuda_stdcxx=
    AS_IF([test -z "$convoy_cuda_why"], [
        AC_MSG_CHECKING([whether $NVCC compiles a kernel with $NVCCFLAGS])
        cat > conftest_cuda.cu <<CONVOY_EOF
#include <cuda_runtime.h>
__global__ static void conftest_kernel(int *p) { p[[threadIdx.x]] += 1; }
extern "C" int conftest_launch(int *p) {
    conftest_kernel<<<1, 32>>>(p);
    return (int)cudaGetLastError();
}
CONVOY_EOF
        convoy_nvcc_cmd="$NVCC $NVCCFLAGS -c conftest_cuda.cu -o conftest_cuda.$ac_objext"
        _AS_ECHO_LOG([$convoy_nvcc_cmd])
        AS_IF([$convoy_nvcc_cmd >&AS_MESSAGE_LOG_FD 2>&1 && test -s conftest_cuda.$ac_objext],
            [AC_MSG_RESULT([yes])],
            [AC_MSG_RESULT([no])
             convoy_cuda_why="$NVCC failed with $NVCCFLAGS (see config.log)"])
    ])
    AS_IF([test -z "$convoy_cuda_why"], [
        AC_MSG_CHECKING([how to link nvcc objects with $CC])
        convoy_cuda_linked=no
        for convoy_cuda_extra in "" "-lstdc++"; do
            LIBS="conftest_cuda.$ac_objext -lcudart $convoy_cuda_extra $convoy_save_LIBS"
            AC_LINK_IFELSE([AC_LANG_PROGRAM([[int conftest_launch(int *p);]],
                    [[return conftest_launch(0);]])],
                [convoy_cuda_linked=yes; convoy_cuda_stdcxx=$convoy_cuda_extra; break])
        done
        rm -f conftest_cuda.cu conftest_cuda.$ac_objext
        AS_IF([test "$convoy_cuda_linked" = yes],
            [AC_MSG_RESULT([-lcudart $convoy_cuda_stdcxx])],
            [AC_MSG_RESULT([failed])
             convoy_cuda_why="cannot link nvcc objects with $CC (see config.log)"])
    ])

    AS_IF([test -z "$convoy_cuda_why"], [
        AS_IF([test "$convoy_cuda_version" -ge 12080],
            [AC_CHECK_DECL([cudaMemcpyBatchAsync], [convoy_have_cuda_batch=1], [],
                [[#include <cuda_runtime_api.h>]])])

        dnl The driver library, for code that calls cu* directly (see above).
        AC_MSG_CHECKING([how to link the CUDA driver library])
        LIBS="-lcuda $convoy_save_LIBS"
        AC_LINK_IFELSE([AC_LANG_PROGRAM([[#include <cuda.h>]], [[return (int)cuInit(0);]])],
            [CUDA_DRIVER_LIBS="-lcuda"],
            [LDFLAGS="$LDFLAGS -L$convoy_cuda_libdir/stubs"
             AC_LINK_IFELSE([AC_LANG_PROGRAM([[#include <cuda.h>]], [[return (int)cuInit(0);]])],
                [CUDA_DRIVER_LIBS="-L$convoy_cuda_libdir/stubs -lcuda"])])
        AC_MSG_RESULT([${CUDA_DRIVER_LIBS:-not found}])

        convoy_have_cuda=1
        CUDA_CPPFLAGS="-I$convoy_cuda_dir/include"
        CUDA_LDFLAGS="-L$convoy_cuda_libdir${convoy_cuda_rpath:+ $convoy_cuda_rpath}"
        CUDA_LIBS="-lcudart${convoy_cuda_stdcxx:+ $convoy_cuda_stdcxx}"
    ])
    CPPFLAGS=$convoy_save_CPPFLAGS
    LDFLAGS=$convoy_save_LDFLAGS
    LIBS=$convoy_save_LIBS
])

AS_IF([test "$convoy_have_cuda" = 0], [
    convoy_cuda_version=0
    convoy_have_cuda_batch=0
    AS_IF([test "$convoy_cuda_required" = yes],
        [AC_MSG_ERROR([--with-cuda=$with_cuda was given but CUDA is not usable: $convoy_cuda_why])])
    AS_IF([test "x$with_cuda" != xno],
        [AC_MSG_NOTICE([building without CUDA: $convoy_cuda_why])])
])

AC_DEFINE_UNQUOTED([CONVOY_HAVE_CUDA], [$convoy_have_cuda],
    [Define to 1 to build the CUDA device, 0 otherwise.])
AC_DEFINE_UNQUOTED([CONVOY_CUDA_VERSION], [$convoy_cuda_version],
    [CUDART_VERSION of the CUDA runtime built against, 0 without CUDA.])
AC_DEFINE_UNQUOTED([CONVOY_HAVE_CUDA_BATCH], [$convoy_have_cuda_batch],
    [Define to 1 when the CUDA runtime has cudaMemcpyBatchAsync (12.8 and later), 0 otherwise.])
AM_CONDITIONAL([HAVE_CUDA], [test "$convoy_have_cuda" = 1])
AC_SUBST([CUDA_CPPFLAGS])
AC_SUBST([CUDA_LDFLAGS])
AC_SUBST([CUDA_LIBS])
AC_SUBST([CUDA_DRIVER_LIBS])
])
