#!/bin/sh
# Proves that under `taskset -c 1` convoy keeps to CPU 1: convoy-info shows one worker
# bound to PU 1 (and the progress threads within PU 1), and a program started that way
# binds its one CPU worker to PU 1. Skipped (77) without taskset or a CPU 1.
set -u
info=${CONVOY_INFO:-tools/convoy-info}
example=${CONVOY_EXAMPLE:-doc/example}
command -v taskset >/dev/null 2>&1 || { echo "no taskset: skipped"; exit 77; }
taskset -c 1 true 2>/dev/null || { echo "cannot run on CPU 1 here: skipped"; exit 77; }
for v in $(env | sed -n 's/^\(CONVOY_[A-Z_0-9]*\)=.*/\1/p'); do
    case $v in CONVOY_INFO | CONVOY_EXAMPLE) ;; *) unset "$v" ;; esac
done
fails=0
out=$(taskset -c 1 "$info" --parsable)
for want in bind.process=1 bind.workers=1 bind.worker.0=1 bind.progress=1; do
    if printf '%s\n' "$out" | grep -qx "$want"; then
        echo "ok: convoy-info under taskset -c 1: $want"
    else
        echo "FAIL: convoy-info under taskset -c 1 does not print $want:"
        printf '%s\n' "$out" | grep '^bind\.'
        fails=$((fails + 1))
    fi
done
log=$(CONVOY_DEVICES=sim CONVOY_VERBOSE=debug taskset -c 1 "$example" 2>&1)
if printf '%s\n' "$log" | grep -q "CPU worker 0 bound to PUs 1\$" &&
    ! printf '%s\n' "$log" | grep -q "CPU worker 1 "; then
    echo "ok: the program's one CPU worker is bound to PU 1"
else
    echo "FAIL: the program's workers under taskset -c 1:"
    printf '%s\n' "$log" | grep "CPU worker"
    fails=$((fails + 1))
fi
exit "$fails"
