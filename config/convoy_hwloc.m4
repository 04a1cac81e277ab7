# CONVOY_CHECK_HWLOC
# ------------------
# hwloc is required: CPU workers and device progress threads are bound with it.
# Sets HWLOC_CFLAGS and HWLOC_LIBS (pkg-config module "hwloc").
AC_DEFUN([CONVOY_CHECK_HWLOC], [
PKG_CHECK_MODULES([HWLOC], [hwloc],
    [],
    [AC_MSG_ERROR([hwloc was not found by pkg-config ($HWLOC_PKG_ERRORS).
convoy requires hwloc; on Debian and Ubuntu install the package libhwloc-dev
(apt-get install libhwloc-dev), or set PKG_CONFIG_PATH to the folder holding hwloc.pc.])])
convoy_hwloc_version=`$PKG_CONFIG --modversion hwloc 2>/dev/null`
])
