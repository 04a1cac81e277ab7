# CONVOY_COMPILER_FLAGS
# ---------------------
# The C dialect and warnings every convoy object is compiled with. They go into
# CONVOY_CFLAGS (used in AM_CFLAGS), not CFLAGS, so that configure's own test programs
# are not compiled with -Werror and the user's CFLAGS stay the user's.
#   --enable-werror   add -Werror (CI builds with it)
AC_DEFUN([CONVOY_COMPILER_FLAGS], [
AC_REQUIRE([AC_PROG_CC])
AC_ARG_ENABLE([werror],
    [AS_HELP_STRING([--enable-werror], [treat compiler warnings as errors @<:@default=no@:>@])],
    [], [enable_werror=no])
AS_CASE([$enable_werror], [yes|no], [],
    [AC_MSG_ERROR([--enable-werror takes no value, got '$enable_werror'])])

CONVOY_CFLAGS="-std=gnu11 -Wall -Wextra"
AS_IF([test "x$enable_werror" = xyes], [CONVOY_CFLAGS="$CONVOY_CFLAGS -Werror"])
AC_MSG_CHECKING([whether $CC accepts $CONVOY_CFLAGS])
convoy_save_CFLAGS=$CFLAGS
CFLAGS="$CFLAGS $CONVOY_CFLAGS"
AC_COMPILE_IFELSE([AC_LANG_PROGRAM([], [])],
    [AC_MSG_RESULT([yes])],
    [AC_MSG_RESULT([no])
     AC_MSG_ERROR([$CC does not accept $CONVOY_CFLAGS; convoy needs a C11 compiler (gcc or clang)])])
CFLAGS=$convoy_save_CFLAGS
AC_SUBST([CONVOY_CFLAGS])
])
