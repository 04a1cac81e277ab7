# CONVOY_CHECK_MPI
# ----------------
#   --with-mpi[=auto|yes|no]  the distributed mode (dist/, doc/dist.md) over MPI
#                      (Open MPI on Debian: openmpi-bin, libopenmpi-dev).
#                      auto (the default): use MPI when `mpicc --showme` or
#                      `pkg-config ompi-c` gives flags that compile and link an MPI
#                      program, else build without; yes: a missing MPI is an error;
#                      no: build without.
#
# Results:
#   CONVOY_HAVE_MPI    config.h, 0 or 1
#   HAVE_MPI           automake conditional
#   MPI_CPPFLAGS       the include flags of MPI
#   MPI_LIBS           the link flags of MPI (join libconvoy's link and convoy.pc's
#                      Libs.private)
#   MPIEXEC            mpirun (the tests run through it; empty when not found)
AC_DEFUN([CONVOY_CHECK_MPI], [
AC_REQUIRE([AC_PROG_CC])
AC_REQUIRE([PKG_PROG_PKG_CONFIG])
AC_ARG_WITH([mpi],
    [AS_HELP_STRING([--with-mpi@<:@=auto|yes|no@:>@],
        [build the distributed mode over MPI @<:@default=auto@:>@])],
    [], [with_mpi=auto])
AS_CASE([$with_mpi], [auto|yes|no], [],
    [AC_MSG_ERROR([--with-mpi=$with_mpi: allowed values are auto, yes and no])])

convoy_have_mpi=0
convoy_mpi_why=
MPI_CPPFLAGS=
MPI_LIBS=
AS_IF([test "$with_mpi" = no], [convoy_mpi_why="--without-mpi"], [
    AC_PATH_PROG([MPICC_PATH], [mpicc])
    convoy_mpi_cppflags=
    convoy_mpi_libs=
    AS_IF([test -n "$MPICC_PATH"],
        [convoy_mpi_cppflags=`$MPICC_PATH --showme:compile 2>/dev/null`
         convoy_mpi_libs=`$MPICC_PATH --showme:link 2>/dev/null`])
    AS_IF([test -z "$convoy_mpi_libs" && test -n "$PKG_CONFIG"],
        [AS_IF([$PKG_CONFIG --exists ompi-c],
            [convoy_mpi_cppflags=`$PKG_CONFIG --cflags ompi-c`
             convoy_mpi_libs=`$PKG_CONFIG --libs ompi-c`])])
    AS_IF([test -z "$convoy_mpi_libs"],
        [convoy_mpi_why="neither mpicc --showme nor pkg-config ompi-c gave MPI's flags"], [
        convoy_save_CPPFLAGS=$CPPFLAGS
        convoy_save_LIBS=$LIBS
        CPPFLAGS="$CPPFLAGS $convoy_mpi_cppflags"
        LIBS="$convoy_mpi_libs $LIBS"
        AC_MSG_CHECKING([for MPI_Init_thread with $convoy_mpi_libs])
        AC_LINK_IFELSE([AC_LANG_PROGRAM([[#include <mpi.h>]],
                [[int p; return MPI_Init_thread(0, 0, MPI_THREAD_MULTIPLE, &p);]])],
            [AC_MSG_RESULT([yes])
             convoy_have_mpi=1
             MPI_CPPFLAGS=$convoy_mpi_cppflags
             MPI_LIBS=$convoy_mpi_libs],
            [AC_MSG_RESULT([no])
             convoy_mpi_why="an MPI program does not link (see config.log)"])
        CPPFLAGS=$convoy_save_CPPFLAGS
        LIBS=$convoy_save_LIBS
    ])
])
AS_IF([test "$convoy_have_mpi" = 1],
    [CONVOY_DEVICE_PRIVATE_LIBS=`echo $CONVOY_DEVICE_PRIVATE_LIBS $MPI_LIBS`])
AS_IF([test "$convoy_have_mpi" = 0 && test "$with_mpi" = yes],
    [AC_MSG_ERROR([--with-mpi: $convoy_mpi_why])])
AC_PATH_PROG([MPIEXEC], [mpirun])
AC_DEFINE_UNQUOTED([CONVOY_HAVE_MPI], [$convoy_have_mpi],
    [Define to 1 when the distributed mode (MPI) is built.])
AM_CONDITIONAL([HAVE_MPI], [test "$convoy_have_mpi" = 1])
AC_SUBST([MPI_CPPFLAGS])
AC_SUBST([MPI_LIBS])
AC_SUBST([MPIEXEC])
])
