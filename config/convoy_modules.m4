# CONVOY_CHECK_MODULES
# --------------------
#   --disable-modules  build the CUDA and HIP device components into libconvoy, which
#                      then needs their runtimes to load (for static linking); by default
#                      they are modules, convoy_cuda.so and convoy_hip.so in
#                      $(pkglibdir), that libconvoy opens with dlopen at init, so that
#                      libconvoy loads where a vendor runtime is missing (doc/modules.md)
#
# Modules need shared libraries and dlopen: without either (--disable-shared, no
# dlopen) the components are built in, with a notice. A static libconvoy.a built beside
# the shared library has the loader too: a program linked with it statically loads the
# modules as well. After LT_INIT, CONVOY_CHECK_CUDA and CONVOY_CHECK_HIP.
#
# Results:
#   CONVOY_HAVE_MODULES    config.h, 1 when the loader is built (with or without a GPU
#                          component to load), else 0
#   CONVOY_MODULES         automake conditional, the same
#   CONVOY_MODULE_LDFLAGS  linker flags for modules: -Wl,-z,defs where the linker has it,
#                          so that a module naming a symbol it does not carry fails to
#                          link rather than to load
#   DL_LIBS                -ldl where dlopen is not in libc
#   CONVOY_DEVICE_PRIVATE_LIBS  what a static link of libconvoy needs for its devices
#                          (convoy.pc's Libs.private): DL_LIBS with modules, else the
#                          CUDA and HIP runtimes' link flags
AC_DEFUN([CONVOY_CHECK_MODULES], [
AC_REQUIRE([LT_INIT])
AC_ARG_ENABLE([modules],
    [AS_HELP_STRING([--disable-modules],
        [build the CUDA and HIP device components into libconvoy instead of as modules
         loaded at run time (for static linking) @<:@default=modules@:>@])],
    [], [enable_modules=yes])

convoy_modules=no
convoy_modules_why=
CONVOY_MODULE_LDFLAGS=
DL_LIBS=
AS_IF([test "x$enable_modules" = xno],
    [convoy_modules_why="--disable-modules"],
    [test "x$enable_shared" = xno],
    [convoy_modules_why="--disable-shared"],
    [convoy_save_LIBS=$LIBS
     AC_SEARCH_LIBS([dlopen], [dl],
        [convoy_modules=yes
         AS_IF([test "x$ac_cv_search_dlopen" != "xnone required"],
            [DL_LIBS=$ac_cv_search_dlopen])],
        [convoy_modules_why="no dlopen"])
     LIBS=$convoy_save_LIBS])
AS_IF([test "$convoy_modules" = no && test "x$enable_modules" != xno],
    [AC_MSG_NOTICE([building the device components into libconvoy: $convoy_modules_why])])

AS_IF([test "$convoy_modules" = yes], [
    AC_MSG_CHECKING([whether the linker accepts -Wl,-z,defs])
    convoy_save_LDFLAGS=$LDFLAGS
    LDFLAGS="$LDFLAGS -Wl,-z,defs"
    AC_LINK_IFELSE([AC_LANG_PROGRAM([], [])],
        [AC_MSG_RESULT([yes]); CONVOY_MODULE_LDFLAGS="-Wl,-z,defs"],
        [AC_MSG_RESULT([no])])
    LDFLAGS=$convoy_save_LDFLAGS
])

AS_IF([test "$convoy_modules" = yes],
    [convoy_have_modules=1
     CONVOY_DEVICE_PRIVATE_LIBS=$DL_LIBS],
    [convoy_have_modules=0
     CONVOY_DEVICE_PRIVATE_LIBS=`echo $CUDA_LDFLAGS $CUDA_LIBS $HIP_LDFLAGS $HIP_LIBS`])
AC_DEFINE_UNQUOTED([CONVOY_HAVE_MODULES], [$convoy_have_modules],
    [Define to 1 when the GPU device components are modules loaded at run time, 0 when
     they are part of libconvoy.])
AM_CONDITIONAL([CONVOY_MODULES], [test "$convoy_modules" = yes])
AC_SUBST([CONVOY_MODULE_LDFLAGS])
AC_SUBST([DL_LIBS])
AC_SUBST([CONVOY_DEVICE_PRIVATE_LIBS])
])
