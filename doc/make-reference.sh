#!/bin/sh
# Regenerate doc/reference.md from doc/reference.md.in and convoy-info's parameter tables:
#   doc/make-reference.sh BUILD_DIR/tools/convoy-info
# (configure with CUDA and HIP, so that their components' parameters are listed too).
set -eu
info=${1:?usage: doc/make-reference.sh PATH/TO/convoy-info}
here=$(dirname "$0")
tables=$("$info" --markdown)
awk -v tables="$tables" '{ if ($0 == "@PARAMS@") print tables; else print }' \
    "$here/reference.md.in" >"$here/reference.md"
