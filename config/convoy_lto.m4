# CONVOY_LTO
# ----------
#   --disable-lto   build without link-time optimization
#   --enable-lto    require it (configure fails where the compiler cannot)
# On by default where $CC compiles and links with it and builds fat objects (gcc; clang
# makes bitcode alone), and off by default with --enable-sanitizers (builds for checking,
# not speed). Why: the progress thread and the insertion call many small functions of
# other files per flow (the coherence word, events, device memory, the core's
# completion), which only the link can inline. Counted by bench/host_profile.py on sim
# (doc/results.md, 2026-12-04 night): 11% fewer instructions a task on the progress
# thread, 10% on the inserting thread.
# The flags go into CFLAGS and LDFLAGS, as the sanitizers' do, so that every compile and
# every libtool link uses them. -ffat-lto-objects keeps each object's ordinary code as
# well: an archiver or a linker without the LTO plugin still builds and links, and so does
# a program linked with the installed libconvoy.a without -flto (with -flto, it needs the
# gcc that built it).
AC_DEFUN([CONVOY_LTO], [
AC_REQUIRE([AC_PROG_CC])
AC_REQUIRE([CONVOY_SANITIZERS])
AC_ARG_ENABLE([lto],
    [AS_HELP_STRING([--disable-lto],
        [build without link-time optimization @<:@default: on where the compiler links
         with -flto, off with --enable-sanitizers@:>@])],
    [], [enable_lto=auto])
AS_CASE([$enable_lto], [yes|no|auto], [],
    [AC_MSG_ERROR([--enable-lto takes yes or no, got '$enable_lto'])])

convoy_lto=no
convoy_lto_why=
AS_IF([test "x$enable_lto" = xno], [convoy_lto_why="--disable-lto"],
      [test "x$enable_lto" = xauto && test -n "$convoy_sanitizers"],
      [convoy_lto_why="off with sanitizers; --enable-lto to force it"],
      [
    convoy_save_CFLAGS=$CFLAGS
    convoy_save_LDFLAGS=$LDFLAGS
    for convoy_lto_flag in "-flto=auto" "-flto"; do
        AC_MSG_CHECKING([whether $CC compiles and links with $convoy_lto_flag -ffat-lto-objects])
        dnl -Werror: clang takes -ffat-lto-objects with a warning and makes bitcode alone,
        dnl which no linker without its plugin reads (an installed libconvoy.a included).
        CFLAGS="$convoy_save_CFLAGS $convoy_lto_flag -ffat-lto-objects -Werror"
        LDFLAGS="$convoy_save_LDFLAGS $convoy_lto_flag"
        AC_LINK_IFELSE([AC_LANG_PROGRAM([[static int f(int x) { return x + 1; }]],
                                        [[return f(0) - 1;]])],
            [AC_MSG_RESULT([yes]); convoy_lto=yes],
            [AC_MSG_RESULT([no])])
        AS_IF([test "x$convoy_lto" = xyes], [break])
    done
    AS_IF([test "x$convoy_lto" = xyes],
        [CFLAGS="$convoy_save_CFLAGS $convoy_lto_flag -ffat-lto-objects"
         convoy_lto_why="$convoy_lto_flag"],
        [CFLAGS=$convoy_save_CFLAGS
         LDFLAGS=$convoy_save_LDFLAGS
         convoy_lto_why="$CC does not build fat LTO objects"
         AS_IF([test "x$enable_lto" = xyes],
             [AC_MSG_ERROR([--enable-lto: $CC cannot compile and link with -flto -ffat-lto-objects])])])
])
])
