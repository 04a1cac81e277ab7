#!/bin/sh
# Generate configure, Makefile.in and the rest from configure.ac, Makefile.am and
# config/*.m4. Needs autoconf, automake, libtool and pkg-config (for its PKG_* macros).
set -e
cd "$(dirname "$0")"
mkdir -p m4
autoreconf -fi "$@"
