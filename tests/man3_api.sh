#!/bin/sh
# Proves that doc/convoy.3 lists every function convoy.h declares (so that a new call
# cannot ship without its line in the installed manual page).
set -u
hdr=${srcdir:-.}/include/convoy.h
man=${srcdir:-.}/doc/convoy.3
missing=0
for f in $(grep -oE '\bconvoy_[a-z_]+\(' "$hdr" | tr -d '(' | sort -u); do
    if ! grep -q "$f(" "$man"; then
        echo "doc/convoy.3 does not list $f"
        missing=$((missing + 1))
    fi
done
[ "$missing" -eq 0 ] && echo "doc/convoy.3 lists every function of convoy.h"
exit "$missing"
