# CONVOY_CHECK_HIP
# ----------------
#   --with-hip[=DIR]   HIP runtime in DIR; without DIR or without the option, try /usr
#                      (Debian's libamdhip64-dev) and then /opt/rocm, and go on without
#                      HIP if neither is usable; with --with-hip or --with-hip=DIR a
#                      missing piece is an error
#   --without-hip      do not build the HIP device
#
# convoy's HIP device is plain C compiled by the C compiler with -D__HIP_PLATFORM_AMD__
# against <hip/hip_runtime_api.h> and linked with -lamdhip64: no hipcc is needed.
#
# Results:
#   CONVOY_HAVE_HIP        config.h, 0 or 1
#   CONVOY_HIP_VERSION     config.h, HIP_VERSION (major*10000000 + minor*100000 + patch) or 0
#   CONVOY_HAVE_HIP_BATCH  config.h, 1 when HIP_VERSION >= 70100000 and the runtime declares
#                          hipMemcpyBatchAsync, else 0
#   HAVE_HIP               automake conditional
#   HIP_CPPFLAGS           -D__HIP_PLATFORM_AMD__ [-IDIR/include]
#   HIP_LDFLAGS            [-LDIR/lib] [-Wl,-rpath,DIR/lib]
#   HIP_LIBS               -lamdhip64
AC_DEFUN([CONVOY_CHECK_HIP], [
AC_REQUIRE([AC_PROG_CC])
AC_ARG_WITH([hip],
    [AS_HELP_STRING([--with-hip@<:@=DIR@:>@],
        [build the HIP device with the HIP runtime in DIR @<:@default=check /usr, /opt/rocm@:>@])],
    [], [with_hip=check])

convoy_have_hip=0
convoy_hip_version=0
convoy_have_hip_batch=0
convoy_hip_why=
HIP_CPPFLAGS=
HIP_LDFLAGS=
HIP_LIBS=

AS_CASE([$with_hip],
    [no], [convoy_hip_dirs=; convoy_hip_why="--without-hip"],
    [yes|check], [convoy_hip_dirs="/usr /opt/rocm"],
    [convoy_hip_dirs=$with_hip])
AS_CASE([$with_hip], [no|check], [convoy_hip_required=no], [convoy_hip_required=yes])

convoy_hip_whys=
convoy_save_CPPFLAGS=$CPPFLAGS
convoy_save_LDFLAGS=$LDFLAGS
convoy_save_LIBS=$LIBS
for convoy_hip_dir in $convoy_hip_dirs; do
    dnl /usr/include and /usr/lib/<triplet> are searched already: naming them with -I or
    dnl -L would change the order in which every other header and library is found.
    AS_IF([test "$convoy_hip_dir" = /usr],
        [convoy_hip_cppflags="-D__HIP_PLATFORM_AMD__"
         convoy_hip_ldflags=],
        [AS_IF([test -d "$convoy_hip_dir/lib64" && test ! -d "$convoy_hip_dir/lib"],
            [convoy_hip_libdir=$convoy_hip_dir/lib64],
            [convoy_hip_libdir=$convoy_hip_dir/lib])
         convoy_hip_cppflags="-D__HIP_PLATFORM_AMD__ -I$convoy_hip_dir/include"
         convoy_hip_ldflags="-L$convoy_hip_libdir"])
    CPPFLAGS="$convoy_save_CPPFLAGS $convoy_hip_cppflags"
    LDFLAGS="$convoy_save_LDFLAGS $convoy_hip_ldflags"
    LIBS="-lamdhip64 $convoy_save_LIBS"

    convoy_hip_why=
    AC_MSG_CHECKING([for hip/hip_runtime_api.h in $convoy_hip_dir])
    dnl The file test keeps a DIR without HIP from passing on the strength of /usr's.
    AS_IF([test -f "$convoy_hip_dir/include/hip/hip_runtime_api.h"],
        [AC_COMPILE_IFELSE([AC_LANG_PROGRAM([[#include <hip/hip_runtime_api.h>]], [[]])],
            [AC_MSG_RESULT([yes])],
            [AC_MSG_RESULT([not usable])
             convoy_hip_why="hip/hip_runtime_api.h does not compile (see config.log)"])],
        [AC_MSG_RESULT([no])
         convoy_hip_why="no include/hip/hip_runtime_api.h"])

    AS_IF([test -z "$convoy_hip_why"], [
        AC_MSG_CHECKING([for hipGetDeviceCount in -lamdhip64])
        AC_LINK_IFELSE([AC_LANG_PROGRAM([[#include <hip/hip_runtime_api.h>]],
                [[int n = 0; return (int)hipGetDeviceCount(&n);]])],
            [AC_MSG_RESULT([yes])],
            [AC_MSG_RESULT([no])
             convoy_hip_why="cannot link with -lamdhip64"])
    ])

    AS_IF([test -z "$convoy_hip_why"], [
        AC_MSG_CHECKING([for HIP_VERSION])
        AC_COMPUTE_INT([convoy_hip_version], [HIP_VERSION],
            [[#include <hip/hip_version.h>]], [convoy_hip_version=0])
        AC_MSG_RESULT([$convoy_hip_version])
        AS_IF([test "$convoy_hip_version" -eq 0 2>/dev/null],
            [convoy_hip_why="HIP_VERSION not found"])
    ])

    AS_IF([test -z "$convoy_hip_why" && test -n "$convoy_hip_ldflags"], [
        AC_MSG_CHECKING([whether the dynamic loader finds libamdhip64])
        AC_RUN_IFELSE([AC_LANG_PROGRAM([[#include <hip/hip_runtime_api.h>]],
                [[void *volatile f = (void *)hipGetDeviceCount; return f == 0;]])],
            [AC_MSG_RESULT([yes])],
            [AC_MSG_RESULT([no, adding an rpath])
             convoy_hip_ldflags="$convoy_hip_ldflags -Wl,-rpath,$convoy_hip_libdir"],
            [AC_MSG_RESULT([cross compiling, adding an rpath])
             convoy_hip_ldflags="$convoy_hip_ldflags -Wl,-rpath,$convoy_hip_libdir"])
    ])

    AS_IF([test -z "$convoy_hip_why"], [
        AS_IF([test "$convoy_hip_version" -ge 70100000],
            [AC_MSG_CHECKING([whether hipMemcpyBatchAsync is declared])
             AC_COMPILE_IFELSE([AC_LANG_PROGRAM([[#include <hip/hip_runtime_api.h>]],
                    [[(void)hipMemcpyBatchAsync;]])],
                [AC_MSG_RESULT([yes]); convoy_have_hip_batch=1],
                [AC_MSG_RESULT([no])])])
        convoy_have_hip=1
        HIP_CPPFLAGS=$convoy_hip_cppflags
        HIP_LDFLAGS=$convoy_hip_ldflags
        HIP_LIBS=-lamdhip64
        break
    ])
    convoy_hip_whys="${convoy_hip_whys:+$convoy_hip_whys; }$convoy_hip_dir: $convoy_hip_why"
done
CPPFLAGS=$convoy_save_CPPFLAGS
LDFLAGS=$convoy_save_LDFLAGS
LIBS=$convoy_save_LIBS

AS_IF([test "$convoy_have_hip" = 0], [
    AS_IF([test -n "$convoy_hip_whys"], [convoy_hip_why=$convoy_hip_whys])
    convoy_hip_version=0
    convoy_have_hip_batch=0
    AS_IF([test "$convoy_hip_required" = yes],
        [AC_MSG_ERROR([--with-hip=$with_hip was given but HIP is not usable: $convoy_hip_why (on Debian: apt-get install libamdhip64-dev)])])
    AS_IF([test "x$with_hip" != xno],
        [AC_MSG_NOTICE([building without HIP: $convoy_hip_why])])
])

AC_DEFINE_UNQUOTED([CONVOY_HAVE_HIP], [$convoy_have_hip],
    [Define to 1 to build the HIP device, 0 otherwise.])
AC_DEFINE_UNQUOTED([CONVOY_HIP_VERSION], [$convoy_hip_version],
    [HIP_VERSION of the HIP runtime built against, 0 without HIP.])
AC_DEFINE_UNQUOTED([CONVOY_HAVE_HIP_BATCH], [$convoy_have_hip_batch],
    [Define to 1 when the HIP runtime has hipMemcpyBatchAsync (7.1 and later), 0 otherwise.])
AM_CONDITIONAL([HAVE_HIP], [test "$convoy_have_hip" = 1])
AC_SUBST([HIP_CPPFLAGS])
AC_SUBST([HIP_LDFLAGS])
AC_SUBST([HIP_LIBS])
])
