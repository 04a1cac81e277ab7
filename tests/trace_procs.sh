#!/bin/sh
# Proves that two processes started together with one CONVOY_TRACE=DIR/run-%p.json each
# write a trace of their own (two files, each named after its pid, each a valid trace
# that convoy-trace reads), and leave no temporary file. With CONVOY_VALIDATE_TRACE set
# to a checker script (e.g. validate_trace.py), each file is also checked with it.
set -u
example=${CONVOY_EXAMPLE:-doc/example}
trace=${CONVOY_TRACE_TOOL:-tools/convoy-trace}
[ -x "$trace" ] || { echo "convoy-trace is not built (no jansson): skipped"; exit 77; }
tmp=${TMPDIR:-/tmp}/convoy-trace-procs.$$
mkdir -p "$tmp"
trap 'rm -rf "$tmp"' EXIT
for v in $(env | sed -n 's/^\(CONVOY_[A-Z_0-9]*\)=.*/\1/p'); do
    [ "$v" = CONVOY_VALIDATE_TRACE ] || [ "$v" = CONVOY_EXAMPLE ] || [ "$v" = CONVOY_TRACE_TOOL ] ||
        unset "$v"
done
CONVOY_DEVICES=sim CONVOY_NTHREADS=1 CONVOY_TRACE_FLOWS=1 CONVOY_TRACE="$tmp/run-%p.json" \
    "$example" >"$tmp/a.out" 2>&1 &
a=$!
CONVOY_DEVICES=sim CONVOY_NTHREADS=1 CONVOY_TRACE_FLOWS=1 CONVOY_TRACE="$tmp/run-%p.json" \
    "$example" >"$tmp/b.out" 2>&1 &
b=$!
fails=0
wait $a || { echo "FAIL: process $a exited $?"; cat "$tmp/a.out"; fails=$((fails + 1)); }
wait $b || { echo "FAIL: process $b exited $?"; cat "$tmp/b.out"; fails=$((fails + 1)); }
for pid in $a $b; do
    f=$tmp/run-$pid.json
    if [ ! -f "$f" ]; then
        echo "FAIL: no trace $f"
        fails=$((fails + 1))
    elif ! "$trace" summary "$f" >"$tmp/summary" 2>&1; then
        echo "FAIL: convoy-trace does not read $f:"
        cat "$tmp/summary"
        fails=$((fails + 1))
    elif [ -n "${CONVOY_VALIDATE_TRACE:-}" ] && ! python3 "$CONVOY_VALIDATE_TRACE" "$f"; then
        echo "FAIL: $CONVOY_VALIDATE_TRACE rejects $f"
        fails=$((fails + 1))
    else
        echo "ok: $f is a trace of its own"
    fi
done
n=$(ls "$tmp" | grep -c '\.json')
if [ "$n" -ne 2 ]; then
    echo "FAIL: $n .json files in $tmp, expected 2:"
    ls "$tmp"
    fails=$((fails + 1))
fi
exit "$fails"
