# CONVOY_CHECK_CHECK
# ------------------
# The Check unit-test framework is optional: without it the Check suites are not built,
# and `make check` still builds and runs the other test programs.
# Sets CHECK_CFLAGS, CHECK_LIBS and the conditional HAVE_CHECK.
AC_DEFUN([CONVOY_CHECK_CHECK], [
PKG_CHECK_MODULES([CHECK], [check >= 0.9.10],
    [convoy_have_check=yes],
    [convoy_have_check=no
     AC_MSG_NOTICE([Check >= 0.9.10 not found: the unit-test suites will not be built (on Debian: apt-get install check)])])
AM_CONDITIONAL([HAVE_CHECK], [test "x$convoy_have_check" = xyes])
])
