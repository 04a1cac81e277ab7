#!/bin/sh
# Runs tests/check_ze with the fake Level Zero loader (tests/fake_ze.c, built as
# tests/fakeze/.libs/libze_loader.so.1) in front of the real one, so that the Level
# Zero component, module or built in, runs without an Intel GPU. Exits 77 (skipped) in
# a build without the component (or without Check).
set -eu
fake=$(pwd)/tests/fakeze/.libs
if [ ! -x tests/check_ze ] || [ ! -f "$fake/libze_loader.so.1" ]; then
    echo "check_ze: the Level Zero component is not built here"
    exit 77
fi
LD_LIBRARY_PATH=$fake${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export LD_LIBRARY_PATH
exec tests/check_ze
