#!/bin/sh
# Proves that convoy-trace merge puts two per-rank traces in one valid trace: rank k's
# pids become k * 1000 + pid and its processes 'rank k: NAME', flow ids stay unique,
# times are aligned on the traces' clock_origin_ns, and the merged file summarises to
# the sum of the inputs' messages; and that its failures are clear: one input only, no
# -o, an unreadable input, a pid it cannot keep apart (each exit 2, naming the problem,
# leaving no output file).
set -u
trace=${CONVOY_TRACE_TOOL:-tools/convoy-trace}
[ -x "$trace" ] || { echo "convoy-trace is not built (no jansson): skipped"; exit 77; }
tmp=${TMPDIR:-/tmp}/convoy-trace-merge.$$
mkdir -p "$tmp"
trap 'rm -rf "$tmp"' EXIT
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }
# A rank's trace: its messages to the other rank, a flow arrow, origin $2 ns.
rank_trace() {
    cat >"$1" <<JSON
{"traceEvents":[
{"ph":"M","name":"process_name","pid":1,"tid":0,"args":{"name":"cpus"}},
{"ph":"M","name":"thread_name","pid":1,"tid":32766,"args":{"name":"messages"}},
{"ph":"X","name":"k","cat":"cpu","pid":1,"tid":1,"ts":5,"dur":2,"args":{"ring":-1,"task":1,"tasks":1}},
{"ph":"i","name":"send","cat":"message","pid":1,"tid":32766,"ts":10,"s":"t","args":{"peer":$3,"flows":3,"bytes":100}},
{"ph":"i","name":"receive","cat":"message","pid":1,"tid":32766,"ts":12,"s":"t","args":{"peer":$3,"flows":2,"bytes":60}},
{"ph":"s","name":"dep","cat":"dep","pid":1,"tid":32767,"ts":7,"id":1,"bp":"e","args":{"task":1,"successor":2}},
{"ph":"f","name":"dep","cat":"dep","pid":1,"tid":32767,"ts":8,"id":1,"bp":"e","args":{"task":1,"successor":2}}
],"otherData":{"convoy_version":"0.1.0","clock_origin_ns":$2}}
JSON
}
rank_trace "$tmp/r0.json" 1000000 1
rank_trace "$tmp/r1.json" 1500000 0
"$trace" merge "$tmp/r0.json" "$tmp/r1.json" -o "$tmp/all.json" || fail "merge exited $?"
[ -f "$tmp/all.json.part" ] && fail "a temporary file was left"
m=$(cat "$tmp/all.json")
for want in '"pid":1,' '"pid":1001,' '"rank 0: cpus"' '"rank 1: cpus"' '"id":2,' '"id":3,' \
    '"clocks_aligned":true' '"clock_origin_ns":1000000'; do
    case $m in *"$want"*) ;; *) fail "the merged trace lacks $want" ;; esac
done
# Rank 1 started 500 us after rank 0: its send at ts 10 lands at 510.
case $m in *'"ts":510'*) ;; *) fail "rank 1's times were not shifted by 500 us" ;; esac
"$trace" summary "$tmp/all.json" >"$tmp/sum.txt" || fail "summary of the merge exited $?"
grep -Eq '^ *messages sent +2$' "$tmp/sum.txt" || fail "messages sent: $(cat "$tmp/sum.txt")"
grep -Eq '^ *flows received +4$' "$tmp/sum.txt" || fail "flows received: $(cat "$tmp/sum.txt")"
# Failures.
expect_fail() { # expect_fail WHAT_IT_SAYS ARGS...
    says=$1
    shift
    rm -f "$tmp/bad.json"
    "$trace" merge "$@" >"$tmp/err.txt" 2>&1
    rc=$?
    [ $rc -eq 2 ] || fail "merge $* exited $rc, not 2"
    grep -q -- "$says" "$tmp/err.txt" || fail "merge $*: '$(head -1 "$tmp/err.txt")' does not say '$says'"
    [ -e "$tmp/bad.json" ] || [ -e "$tmp/bad.json.part" ] && fail "merge $* left an output file"
}
expect_fail "two trace files or more" "$tmp/r0.json" -o "$tmp/bad.json"
expect_fail "two trace files or more" "$tmp/r0.json" "$tmp/r1.json"
expect_fail "needs a value" "$tmp/r0.json" "$tmp/r1.json" -o
expect_fail "unknown option --frob" "$tmp/r0.json" "$tmp/r1.json" --frob -o "$tmp/bad.json"
expect_fail "$tmp/nope.json: cannot open" "$tmp/r0.json" "$tmp/nope.json" -o "$tmp/bad.json"
printf '{"traceEvents":[{"ph":"X","name":"n","pid":1000,"tid":1,"ts":1,"dur":1}]}' >"$tmp/big.json"
expect_fail "pid 1000, outside 0..999" "$tmp/r0.json" "$tmp/big.json" -o "$tmp/bad.json"
# Without clock_origin_ns (traces before it): merged, each on its own origin, said so.
printf '{"traceEvents":[{"ph":"X","name":"n","pid":1,"tid":1,"ts":1,"dur":1}]}' >"$tmp/old.json"
"$trace" merge "$tmp/r0.json" "$tmp/old.json" -o "$tmp/all2.json" 2>"$tmp/err2.txt" ||
    fail "merge with an old trace exited $?"
grep -q "each keeps its own time origin" "$tmp/err2.txt" || fail "no note on the clocks"
grep -q '"clocks_aligned":false' "$tmp/all2.json" || fail "clocks_aligned is not false"
[ $fails -eq 0 ] && echo "trace_merge: all checks passed"
[ $fails -eq 0 ]
