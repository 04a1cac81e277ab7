# CONVOY_CHECK_ZE
# ---------------
#   --with-ze[=DIR]    Level Zero loader in DIR; without DIR or without the option, try
#                      /usr (Debian 12's libze-dev, loader 1.8.12) and go on without
#                      Level Zero if it is not usable; with --with-ze or --with-ze=DIR a
#                      missing piece is an error
#   --without-ze       do not build the Level Zero device
#
# convoy's Level Zero device (device/ze/, doc/level-zero.md) is plain C against
# <level_zero/ze_api.h>, linked with -lze_loader. After CONVOY_CHECK_MODULES: where the
# components are built into libconvoy (--disable-modules), the loader joins
# CONVOY_DEVICE_PRIVATE_LIBS (convoy.pc's Libs.private) and DIR's include folder joins
# CPPFLAGS (the component's files are then part of libconvoy's own sources).
#
# Results:
#   CONVOY_HAVE_ZE     config.h, 0 or 1
#   HAVE_ZE            automake conditional
#   ZE_CPPFLAGS        [-IDIR/include]
#   ZE_LDFLAGS         [-LDIR/lib] [-Wl,-rpath,DIR/lib]
#   ZE_LIBS            -lze_loader
AC_DEFUN([CONVOY_CHECK_ZE], [
AC_REQUIRE([AC_PROG_CC])
AC_ARG_WITH([ze],
    [AS_HELP_STRING([--with-ze@<:@=DIR@:>@],
        [build the Level Zero device with the loader in DIR @<:@default=check /usr@:>@])],
    [], [with_ze=check])

convoy_have_ze=0
convoy_ze_why=
ZE_CPPFLAGS=
ZE_LDFLAGS=
ZE_LIBS=
AS_CASE([$with_ze],
    [no], [convoy_ze_dir=; convoy_ze_why="--without-ze"],
    [yes|check], [convoy_ze_dir=/usr],
    [convoy_ze_dir=$with_ze])
AS_CASE([$with_ze], [no|check], [convoy_ze_required=no], [convoy_ze_required=yes])

AS_IF([test -n "$convoy_ze_dir"], [
    dnl /usr's folders are searched already (see convoy_hip.m4).
    AS_IF([test "$convoy_ze_dir" != /usr],
        [AS_IF([test -d "$convoy_ze_dir/lib64" && test ! -d "$convoy_ze_dir/lib"],
            [convoy_ze_libdir=$convoy_ze_dir/lib64],
            [convoy_ze_libdir=$convoy_ze_dir/lib])
         convoy_ze_cppflags="-I$convoy_ze_dir/include"
         convoy_ze_ldflags="-L$convoy_ze_libdir -Wl,-rpath,$convoy_ze_libdir"],
        [convoy_ze_cppflags=
         convoy_ze_ldflags=])
    convoy_save_CPPFLAGS=$CPPFLAGS
    convoy_save_LDFLAGS=$LDFLAGS
    convoy_save_LIBS=$LIBS
    CPPFLAGS="$CPPFLAGS $convoy_ze_cppflags"
    LDFLAGS="$LDFLAGS $convoy_ze_ldflags"
    LIBS="-lze_loader $LIBS"
    AC_MSG_CHECKING([for level_zero/ze_api.h in $convoy_ze_dir])
    AS_IF([test -f "$convoy_ze_dir/include/level_zero/ze_api.h"],
        [AC_COMPILE_IFELSE([AC_LANG_PROGRAM([[#include <level_zero/ze_api.h>]], [[]])],
            [AC_MSG_RESULT([yes])],
            [AC_MSG_RESULT([not usable])
             convoy_ze_why="level_zero/ze_api.h does not compile (see config.log)"])],
        [AC_MSG_RESULT([no])
         convoy_ze_why="no include/level_zero/ze_api.h"])
    AS_IF([test -z "$convoy_ze_why"], [
        AC_MSG_CHECKING([for zeInit in -lze_loader])
        AC_LINK_IFELSE([AC_LANG_PROGRAM([[#include <level_zero/ze_api.h>]],
                [[return (int)zeInit(ZE_INIT_FLAG_GPU_ONLY);]])],
            [AC_MSG_RESULT([yes])
             convoy_have_ze=1
             ZE_CPPFLAGS=$convoy_ze_cppflags
             ZE_LDFLAGS=$convoy_ze_ldflags
             ZE_LIBS=-lze_loader],
            [AC_MSG_RESULT([no])
             convoy_ze_why="cannot link with -lze_loader"])
    ])
    CPPFLAGS=$convoy_save_CPPFLAGS
    LDFLAGS=$convoy_save_LDFLAGS
    LIBS=$convoy_save_LIBS
])

AS_IF([test "$convoy_have_ze" = 0], [
    AS_IF([test "$convoy_ze_required" = yes],
        [AC_MSG_ERROR([--with-ze=$with_ze was given but Level Zero is not usable: $convoy_ze_why (on Debian: apt-get install libze-dev)])])
    AS_IF([test "x$with_ze" != xno],
        [AC_MSG_NOTICE([building without Level Zero: $convoy_ze_dir: $convoy_ze_why])])
], [
    AC_MSG_NOTICE([Level Zero device: yes (it has run on no Intel GPU: doc/level-zero.md)])
    AS_IF([test "x$convoy_modules" != xyes], [
        CPPFLAGS="$CPPFLAGS $ZE_CPPFLAGS"
        CONVOY_DEVICE_PRIVATE_LIBS=`echo $CONVOY_DEVICE_PRIVATE_LIBS $ZE_LDFLAGS $ZE_LIBS`
    ])
])

AC_DEFINE_UNQUOTED([CONVOY_HAVE_ZE], [$convoy_have_ze],
    [Define to 1 to build the Level Zero device, 0 otherwise.])
AM_CONDITIONAL([HAVE_ZE], [test "$convoy_have_ze" = 1])
AC_SUBST([ZE_CPPFLAGS])
AC_SUBST([ZE_LDFLAGS])
AC_SUBST([ZE_LIBS])
])
