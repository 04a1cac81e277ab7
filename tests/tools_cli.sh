#!/bin/sh
# Proves that the tools' command lines behave as their man pages say: convoy-info exits 2
# on an unknown option or argument, 1 on an invalid --convoy-* value or CONVOY_* variable
# (naming it), prints its version, the allowed values of each parameter, the build
# section, the devices=auto line and a NAME=VALUE parsable form; convoy-trace's plot
# options go through getopt_long (unknown option and missing value: exit 2), and a plot
# window with no event exits 2 without writing the picture.
set -u
info=${CONVOY_INFO:-tools/convoy-info}
trace=${CONVOY_TRACE_TOOL:-tools/convoy-trace}
tmp=${TMPDIR:-/tmp}/convoy-tools-cli.$$
mkdir -p "$tmp"
trap 'rm -rf "$tmp"' EXIT
# A developer's CONVOY_* settings would change the outputs checked here.
for v in $(env | sed -n 's/^\(CONVOY_[A-Z_0-9]*\)=.*/\1/p'); do unset "$v"; done
fails=0

# expect RC PATTERN CMD...: CMD exits RC and its stdout+stderr match the grep pattern
# (an empty pattern: any output).
expect() {
    want_rc=$1
    pattern=$2
    shift 2
    "$@" >"$tmp/out" 2>&1
    rc=$?
    if [ "$rc" -ne "$want_rc" ]; then
        echo "FAIL: '$*' exited $rc, expected $want_rc:"
        sed 's/^/    /' "$tmp/out" | head -20
        fails=$((fails + 1))
    elif [ -n "$pattern" ] && ! grep -q -e "$pattern" "$tmp/out"; then
        echo "FAIL: '$*' printed no line matching '$pattern':"
        sed 's/^/    /' "$tmp/out" | head -20
        fails=$((fails + 1))
    else
        echo "ok: '$*' exit $rc, '$pattern'"
    fi
}

version=$(sed -n 's/^#define PACKAGE_VERSION "\(.*\)"/\1/p' config.h)
expect 2 "unknown option '--bogus'" "$info" --bogus
expect 2 "unknown option" "$info" -x
expect 2 "unexpected argument 'extra'" "$info" extra
expect 2 "exclude each other" "$info" --parsable --markdown
expect 0 "^convoy-info (convoy) $version\$" "$info" --version
expect 0 "^usage: convoy-info" "$info" --help
expect 1 "value 'fastest' is not a scheduler; allowed: fifo, batch" "$info" --convoy-sched=fastest
expect 1 "names no device 'gpu'" "$info" --convoy-devices=sim,gpu
expect 1 "unknown parameter 'no_such_knob'" "$info" --convoy-no_such_knob=1
expect 1 "nthreads" "$info" --convoy-nthreads=-3
expect 1 "value 'FIFO' is not a scheduler.*CONVOY_SCHED" env CONVOY_SCHED=FIFO "$info"
expect 0 "allowed: fifo|batch" "$info"
expect 0 "allowed: error|warn|info|debug|trace" "$info"
expect 0 "^  configure " "$info"
expect 0 "^  device kinds  cpu sim" "$info"
expect 0 "^devices=auto selects here: host" "$info"
expect 0 "current batch.*(core, option)" "$info" --convoy-sched=batch
expect 0 "^version=$version\$" "$info" --parsable
expect 0 "^build.device.sim=1\$" "$info" -p
expect 0 "^devices.auto=host" "$info" -p
expect 0 "^CONVOY_SCHED=batch\$" env CONVOY_SCHED=batch "$info" -p
expect 0 "^param.sched.source=environment\$" env CONVOY_SCHED=batch "$info" -p
# Every line of the parsable form is NAME=VALUE.
"$info" --parsable >"$tmp/p" 2>&1
if grep -v -q '^[A-Za-z_][A-Za-z_0-9.]*=' "$tmp/p"; then
    echo "FAIL: lines of --parsable that are not NAME=VALUE:"
    grep -v '^[A-Za-z_][A-Za-z_0-9.]*=' "$tmp/p" | head
    fails=$((fails + 1))
fi

if [ -x "$trace" ]; then
    expect 0 "^convoy-trace (convoy) $version\$" "$trace" --version
    expect 2 "unknown command 'bogus'" "$trace" bogus
    expect 2 "unknown option --bogus" "$trace" plot x.json -o x.svg --bogus
    expect 2 "needs a value" "$trace" plot x.json -o
    expect 2 "--width needs a number, not 'wide'" "$trace" plot x.json -o x.svg --width wide
    expect 2 "plot takes one trace file" "$trace" plot a.json b.json -o x.svg
    # A window counts from the first event; an empty one is an error and writes nothing.
    if CONVOY_DEVICES=sim CONVOY_TRACE="$tmp/run.json" ${CONVOY_EXAMPLE:-doc/example} \
        >"$tmp/example.out" 2>&1; then
        expect 0 "" "$trace" plot "$tmp/run.json" -o "$tmp/w.svg" --from 0 --to 1000
        expect 2 "no event between 1e+09 and 2e+09 us" "$trace" plot "$tmp/run.json" \
            -o "$tmp/empty.svg" --from 1e9 --to 2e9
        if [ -e "$tmp/empty.svg" ]; then
            echo "FAIL: an empty window left $tmp/empty.svg"
            fails=$((fails + 1))
        fi
    else
        echo "FAIL: doc/example could not make a trace:"
        cat "$tmp/example.out"
        fails=$((fails + 1))
    fi
fi

[ "$fails" -eq 0 ] && echo "all tool command lines behave"
exit "$fails"
