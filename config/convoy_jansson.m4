# CONVOY_CHECK_JANSSON
# --------------------
# jansson (a JSON library) is what convoy-trace parses traces with. It is optional: without
# it convoy-trace and its tests are not built (the runtime still writes traces).
# Sets JANSSON_CFLAGS, JANSSON_LIBS and the conditional HAVE_JANSSON.
AC_DEFUN([CONVOY_CHECK_JANSSON], [
PKG_CHECK_MODULES([JANSSON], [jansson >= 2.10],
    [convoy_have_jansson=yes],
    [convoy_have_jansson=no
     AC_MSG_NOTICE([jansson >= 2.10 not found: convoy-trace will not be built (on Debian: apt-get install libjansson-dev)])])
AM_CONDITIONAL([HAVE_JANSSON], [test "x$convoy_have_jansson" = xyes])
])
