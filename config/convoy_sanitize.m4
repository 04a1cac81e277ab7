# CONVOY_SANITIZERS
# -----------------
#   --enable-sanitizers=LIST   LIST is comma separated: address, undefined, thread, leak;
#                              "yes" means address,undefined. thread cannot be combined
#                              with address or leak.
# Adds -fsanitize=LIST -fno-omit-frame-pointer -g to CFLAGS and LDFLAGS, so that every
# compile and every (libtool) link uses them. Objects compiled by nvcc are not
# instrumented; CI builds its sanitizer configurations --without-cuda --without-hip.
AC_DEFUN([CONVOY_SANITIZERS], [
AC_REQUIRE([AC_PROG_CC])
AC_ARG_ENABLE([sanitizers],
    [AS_HELP_STRING([--enable-sanitizers@<:@=LIST@:>@],
        [build with the compiler's sanitizers, LIST among address,undefined,thread,leak
         (yes = address,undefined) @<:@default=no@:>@])],
    [], [enable_sanitizers=no])
AS_CASE([$enable_sanitizers],
    [no|""], [convoy_sanitizers=],
    [yes], [convoy_sanitizers=address,undefined],
    [convoy_sanitizers=$enable_sanitizers])

AS_IF([test -n "$convoy_sanitizers"], [
    convoy_san_thread=no
    convoy_san_addr=no
    for convoy_san in `echo "$convoy_sanitizers" | tr ',' ' '`; do
        AS_CASE([$convoy_san],
            [thread], [convoy_san_thread=yes],
            [address|leak], [convoy_san_addr=yes],
            [undefined], [],
            [AC_MSG_ERROR([--enable-sanitizers: unknown sanitizer '$convoy_san' (known: address, undefined, thread, leak)])])
    done
    AS_IF([test "$convoy_san_thread$convoy_san_addr" = yesyes],
        [AC_MSG_ERROR([--enable-sanitizers: thread cannot be combined with address or leak])])

    convoy_san_flags="-fsanitize=$convoy_sanitizers -fno-omit-frame-pointer -g"
    AC_MSG_CHECKING([whether $CC can build and link with $convoy_san_flags])
    convoy_save_CFLAGS=$CFLAGS
    convoy_save_LDFLAGS=$LDFLAGS
    CFLAGS="$CFLAGS $convoy_san_flags"
    LDFLAGS="$LDFLAGS $convoy_san_flags"
    AC_LINK_IFELSE([AC_LANG_PROGRAM([], [])],
        [AC_MSG_RESULT([yes])],
        [AC_MSG_RESULT([no])
         CFLAGS=$convoy_save_CFLAGS
         LDFLAGS=$convoy_save_LDFLAGS
         AC_MSG_ERROR([$CC cannot link with $convoy_san_flags (on Debian with gcc, the runtimes are libasan8, libubsan1 and libtsan2, installed with gcc)])])
])

])
