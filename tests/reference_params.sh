#!/bin/sh
# Proves that doc/reference.md documents every parameter convoy-info knows (so a new
# knob cannot ship undocumented): each name in `convoy-info --markdown` must appear there.
set -eu
info=${CONVOY_INFO:-tools/convoy-info}
ref=${srcdir:-.}/doc/reference.md
missing=0
for name in $("$info" --markdown | sed -n 's/^| `\([a-z_0-9]*\)`.*/\1/p'); do
    if ! grep -q "\`$name\`" "$ref"; then
        echo "doc/reference.md does not document parameter '$name' (run doc/make-reference.sh)"
        missing=$((missing + 1))
    fi
done
[ "$missing" -eq 0 ] && echo "every parameter is documented"
exit "$missing"
