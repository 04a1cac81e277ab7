# CONVOY_VERSION_SPLIT
# --------------------
# Splits AC_INIT's version (MAJOR.MINOR.PATCH) into the numbers include/convoy_version.h
# and the CMake package files are made from, and records how configure was run.
# Results:
#   CONVOY_VERSION_MAJOR, _MINOR, _PATCH   AC_SUBST, decimal numbers (0 when absent)
#   CONVOY_CONFIGURE_ARGS                  config.h, the arguments given to configure
#   CONVOY_HWLOC_BUILD_VERSION             config.h, hwloc's version as pkg-config saw it
#   CONVOY_BUILD_CUDA, CONVOY_BUILD_HIP    AC_SUBST, 1 when that device is built, else 0
#                                          (for the CMake package file)
# Call after CONVOY_CHECK_HWLOC, _CUDA and _HIP; add include/convoy_version.h to
# AC_CONFIG_FILES.
AC_DEFUN([CONVOY_VERSION_SPLIT], [
convoy_v_rest=$PACKAGE_VERSION
CONVOY_VERSION_MAJOR=`echo "$convoy_v_rest" | sed -n 's/^\([[0-9]]*\).*/\1/p'`
CONVOY_VERSION_MINOR=`echo "$convoy_v_rest" | sed -n 's/^[[0-9]]*\.\([[0-9]]*\).*/\1/p'`
CONVOY_VERSION_PATCH=`echo "$convoy_v_rest" | sed -n 's/^[[0-9]]*\.[[0-9]]*\.\([[0-9]]*\).*/\1/p'`
AS_IF([test -z "$CONVOY_VERSION_MAJOR"],
    [AC_MSG_ERROR([the version '$PACKAGE_VERSION' does not start with a number])])
: ${CONVOY_VERSION_MINOR:=0}
: ${CONVOY_VERSION_PATCH:=0}
AC_SUBST([CONVOY_VERSION_MAJOR])
AC_SUBST([CONVOY_VERSION_MINOR])
AC_SUBST([CONVOY_VERSION_PATCH])
dnl ac_configure_args holds the arguments quoted for the shell; quotes and backslashes
dnl are escaped once more for the C string.
convoy_v_args=`echo "$ac_configure_args" | sed 's/^ *//; s/\\\\/\\\\\\\\/g; s/"/\\\\"/g'`
AC_DEFINE_UNQUOTED([CONVOY_CONFIGURE_ARGS], ["$convoy_v_args"],
    [The arguments configure was run with.])
AC_SUBST([CONVOY_BUILD_CUDA], [${convoy_have_cuda:-0}])
AC_SUBST([CONVOY_BUILD_HIP], [${convoy_have_hip:-0}])
AC_DEFINE_UNQUOTED([CONVOY_HWLOC_BUILD_VERSION], ["${convoy_hwloc_version:-unknown}"],
    [hwloc's version as configure found it.])
])
