#!/usr/bin/env python3
"""host_profile: the runtime's own host cost per task, counted rather than timed.

Runs bench/tiny_tasks on the sim device with every sim cost at 0 under valgrind's
callgrind, counting only its timed windows (bench_timed_begin/end in
bench/bench_common.h), twice: with RUNS_A and with RUNS_B timed runs. The difference of
the two, divided by the tasks of the extra runs, is what one task costs each thread in
steady state: the warm-up run, the start and the end cancel out. Valgrind runs one
thread at a time; with its fair scheduling the progress thread frees the last run's
device copies while the program sets up the next run, as it does on a machine with
cores to spare, and repeated profiles agree to within 0.4% (without it, 3.9k to 6.3k
instructions a task on the progress thread, as those frees fell in a window or not).

It counts instructions (Ir), data reads and writes, and the misses of a modelled cache:
a 48 KiB L1 and a 2 MiB L2, as each core of the H200 host's Xeon has. The model is one
cache that every thread shares, so a thread's lines can be evicted by another's, and a
line another core last wrote counts as a hit: it ranks where a thread's misses come from
more than it predicts their cost. Counts do not vary from run to run the way times do on
a shared machine, so a change of a few percent on one thread shows here, where tasks/s on
the GPU machine needs tens of runs to resolve it.

What it leaves out: the GPU runtime's calls (the sim device stands in for them; its
functions are those of device/sim/, and its threads are the "sim" row), waits, and what
only a second core costs. doc/tracing.md says how to read it.

Usage: bench/host_profile.py [--build DIR] [--tasks N] [--flow-bytes B] [--runs-a A]
           [--runs-b B] [--top K] [--keep DIR] [-- tiny_tasks options...]
Last line: host_profile tasks=N flow_bytes=B program_ir=.. progress_ir=.. progress_l1_misses=..
           progress_l2_misses=.. workers_ir=.. sim_ir=.. program_locked=.. progress_locked=..
           verified=yes|no (per task; locked: - where objdump could not count them)
"""

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile

EVENTS = ["Ir", "Dr", "Dw", "I1mr", "D1mr", "D1mw", "ILmr", "DLmr", "DLmw"]
SIM_ZERO = {
    "CONVOY_DEVICES": "sim",
    "CONVOY_SIM_SUBMIT_US": "0",
    "CONVOY_SIM_COPY_US": "0",
    "CONVOY_SIM_SINGLE_COPY_US": "0",
    "CONVOY_SIM_LAUNCH_US": "0",
    "CONVOY_SIM_PAGEABLE_US": "0",
    "CONVOY_SIM_BANDWIDTH_GBS": "1000000",
}
# A thread's role, by the first of these functions its profile holds (callgrind numbers
# the threads' files by creation, and only the main thread's, 1, is the same in any run).
ROLES = [
    ("progress", "progress_main"),
    ("workers", "worker_main"),
    ("sim", "sim_stream_main"),
]


def fail(msg):
    print("host_profile: " + msg, file=sys.stderr)
    sys.exit(2)


def cannot(msg):
    """This build or this valgrind cannot be profiled (exit 3: tests/host_profile.sh skips)."""
    print("host_profile: " + msg, file=sys.stderr)
    sys.exit(3)


def profile(args, runs, out_dir, tag):
    """Run tiny_tasks under callgrind; returns (the profile files, whether it verified)."""
    base = os.path.join(out_dir, tag)
    env = {k: v for k, v in os.environ.items() if not k.startswith("CONVOY_")}
    env.update(SIM_ZERO)
    prog = os.path.join(args.build, "bench", "tiny_tasks")
    cmd = [
        "valgrind", "--tool=callgrind", "--fair-sched=yes", "--separate-threads=yes", "--cache-sim=yes",
        "--D1=49152,12,64", "--LL=2097152,16,64", "--instr-atstart=no",
        "--dump-instr=yes", "--compress-pos=no", "--compress-strings=no",
        "--callgrind-out-file=" + base,
        prog, "--tasks", str(args.tasks),
        "--runs", str(runs), "--flow-bytes", str(args.flow_bytes),
    ] + args.extra
    p = subprocess.run(cmd, env=env, capture_output=True, text=True)
    lines = [l for l in p.stdout.splitlines() if l.startswith("tiny_tasks ")]
    if re.search(r"unhandled dwarf|corrupted debuginfo", p.stderr, re.IGNORECASE):
        sys.stderr.write(p.stderr[-1500:])
        cannot("valgrind cannot read the debug information of %s (clang's DWARF 5 needs "
               "valgrind 3.20 or later; build with -gdwarf-4)" % prog)
    if p.returncode != 0 or len(lines) != runs:
        sys.stderr.write(p.stdout[-2000:] + p.stderr[-3000:])
        fail("%s exited %d with %d of %d run lines" % (" ".join(cmd), p.returncode,
                                                       len(lines), runs))
    files = sorted(f for f in os.listdir(out_dir) if f.startswith(tag + "-"))
    ok = all("verified=yes" in l for l in lines)
    return [os.path.join(out_dir, f) for f in files], ok


def annotate(path, *options):
    """callgrind_annotate's listing of one thread's profile, every function. It runs in the
    profile's directory: from a source tree it finds the sources, and printed a function's
    inclusive cost twice."""
    p = subprocess.run(["callgrind_annotate", "--auto=no", "--threshold=100", "--show-percs=no"]
                       + list(options) + [path],
                       capture_output=True, text=True, cwd=os.path.dirname(path) or ".")
    if p.returncode != 0:
        fail("callgrind_annotate %s: %s" % (path, p.stderr.strip()))
    return p.stdout


def locked_addresses(obj, cache={}):
    """The addresses of obj's locked instructions (a lock prefix, or xchg with memory, which
    locks without one: an operand in parentheses or behind a segment), as objdump lists
    them; None without objdump or obj."""
    if obj not in cache:
        cache[obj] = None
        if shutil.which("objdump") is not None and os.path.exists(obj):
            p = subprocess.run(["objdump", "-d", "--no-show-raw-insn", obj],
                               capture_output=True, text=True)
            ins = re.compile(r"^\s+([0-9a-f]+):\s+(lock\s|xchg\S*\s.*[(:])")
            cache[obj] = {int(m.group(1), 16) for m in map(ins.match, p.stdout.splitlines()) if m}
    return cache[obj]


def locked(path):
    """Locked instructions one thread's profile executed, per function: {name: count}; None
    where an object could not be read. A locked instruction (an atomic read-modify-write)
    takes tens of cycles where its line is at hand and a transfer where another core holds
    it, which an instruction count weighs as one. The profile's cost lines start with an
    instruction's address in its object (--dump-instr=yes, uncompressed); the line after a
    calls= line is the call's inclusive cost, not the caller's own."""
    counts, obj, fn, after_call = {}, None, None, False
    for line in open(path):
        if line.startswith("ob="):
            obj = line[3:].strip()
        elif line.startswith("fn="):
            fn = line[3:].strip()
        elif line.startswith("calls="):
            after_call = True
        elif line.startswith("0x"):
            if after_call:
                after_call = False
                continue
            addrs = locked_addresses(obj) if obj else None
            if addrs is None:
                return None
            f = line.split()
            if int(f[0], 16) in addrs and len(f) > 2:
                counts[fn] = counts.get(fn, 0) + int(f[2])
    return counts


def add_into(dest, key, vals):
    """dest[key] += vals, element by element."""
    acc = dest.setdefault(key, [0] * len(vals))
    for i, v in enumerate(vals):
        acc[i] += v


def functions(path):
    """Self cost per function of one thread's profile: {name: [events]}."""
    out = annotate(path, "--inclusive=no", "--show=" + ",".join(EVENTS))
    costs = {}
    row = re.compile(r"^\s*((?:[\d,]+|\.)(?:\s+(?:[\d,]+|\.)){%d})\s+(\S.*)$" % (len(EVENTS) - 1))
    for line in out.splitlines():
        m = row.match(line)
        if m is None or ":" not in m.group(2):
            continue
        name = re.sub(r"\s*\[.*\]$", "", m.group(2)).strip()
        name = re.sub(r"^(.*?/)?\.\./", "", name)  # the build directory's ../ prefix
        add_into(costs, name, [0 if v == "." else int(v.replace(",", "")) for v in m.group(1).split()])
    return costs


def bare(name):
    """A function's name without its file, object or recursion mark: 'finish_member'."""
    name = re.sub(r"\s*\[.*\]$", "", name).strip()
    name = re.sub(r"'\d+$", "", name.rsplit(":", 1)[-1])
    return re.sub(r"(\.(lto_priv|constprop|isra|part|cold)(\.\d+)?)+$", "", name)


def tree(path):
    """Inclusive Ir and L2 misses per function, and per call from one function to another:
    ({function: [Ir, L2]}, {(caller, callee): [Ir, L2]}), by bare name. callgrind lists the
    code a function inlined from a header as entries of their own (pipeline_impl.h:
    convoy__ring_start), already inside the function's inclusive cost, and without its
    object file's name: those add their calls, not their inclusive costs."""
    out = annotate(path, "--inclusive=yes", "--tree=calling", "--show=Ir,DLmr,DLmw")
    incl, edges, cur = {}, {}, None
    row = re.compile(r"^\s*((?:[\d,]+|\.)\s+(?:[\d,]+|\.)\s+(?:[\d,]+|\.))\s+([*>])\s+(\S+)(.*)$")
    for line in out.splitlines():
        m = row.match(line)
        if m is None:
            continue
        v = [0 if x == "." else int(x.replace(",", "")) for x in m.group(1).split()]
        cost = [v[0], v[1] + v[2]]
        fn = bare(m.group(3))
        if m.group(2) == "*":
            cur = fn
            if "[" not in m.group(4):
                continue  # a header's inlined part: counted in the function's own entry
            dest, key = incl, fn
        elif cur is not None:
            dest, key = edges, (cur, fn)
        else:
            continue
        add_into(dest, key, cost)
    return incl, edges


# The progress thread's parts, named as progress_profile names them (doc/tracing.md), from
# inclusive costs: (part, [(sign, function or (caller, callee))]).
PHASES = [
    ("reserve", [(1, "convoy__ring_start"), (-1, ("convoy__ring_start", "stage_in")),
                 (-1, ("convoy__ring_start", "convoy__launch_group")),
                 (-1, ("convoy__ring_start", "convoy__transfer_start"))]),
    ("stage", [(1, ("convoy__ring_start", "stage_in")),
               (-1, ("stage_in", "convoy__stage_issue"))]),
    ("issue", [(1, ("stage_in", "convoy__stage_issue"))]),
    ("launch", [(1, "convoy__launch_group")]),
    ("finish", [(1, "finish_member"), (-1, ("finish_member", "convoy__task_complete_in"))]),
    ("complete", [(1, ("finish_member", "convoy__task_complete_in"))]),
    ("transfers", [(1, "convoy__transfer_progress"),
                   (1, ("convoy__ring_start", "convoy__transfer_start"))]),
    ("eager", [(1, "convoy__push_eager")]),
    ("outbound", [(1, "convoy__outbound_poll")]),
    ("pop", [(1, "batch_pop")]),
]


def phases(files_a, files_b, per):
    """The parts of the progress threads whose profiles are files_a and files_b, per task:
    [(part, Ir, L2 misses)]; None where the build inlined their functions."""
    def load(files):
        incl, edges = {}, {}
        for f in files:
            i, e = tree(f)
            for src, dst in ((i, incl), (e, edges)):
                for k, v in src.items():
                    add_into(dst, k, v)
        return incl, edges

    (ia, ea), (ib, eb) = load(files_a), load(files_b)
    if not all(fn in ib for fn in ("convoy__ring_start", "stage_in", "finish_member")):
        return None  # inlined into their callers: a build with link-time optimisation
    out = []
    for part, terms in PHASES:
        t = [0.0, 0.0]
        for sign, key in terms:
            da, db = (ea, eb) if isinstance(key, tuple) else (ia, ib)
            va, vb = da.get(key, [0, 0]), db.get(key, [0, 0])
            t = [t[i] + sign * (vb[i] - va[i]) / per for i in range(2)]
        out.append((part, t[0], t[1]))
    return out


def role_of(fns, path=""):
    if path.endswith("-01"):
        return "program"  # thread 1: the one that runs main, inserts and waits
    names = " ".join(fns)
    for role, fn in ROLES:
        if ":" + fn in names:
            return role
    return "other"


def by_role(files):
    """({role: {function: [events]}} summed over the threads of each role, the files of the
    progress threads, and {role: {function: [locked instructions]}}, None where they could
    not be counted)."""
    roles, progress, locks = {}, [], {}
    for f in files:
        fns = functions(f)
        role = role_of(fns, f)
        if role == "progress":
            progress.append(f)
        dest = roles.setdefault(role, {})
        for name, vals in fns.items():
            add_into(dest, name, vals)
        lk = locked(f) if locks is not None else None
        if lk is None:
            locks = None
            continue
        for name, n in lk.items():
            add_into(locks.setdefault(role, {}), name, [n])
    return roles, progress, locks


def diff(a, b, per):
    """b - a per task, per function."""
    out = {}
    for name in set(a) | set(b):
        va, vb = a.get(name, [0] * len(EVENTS)), b.get(name, [0] * len(EVENTS))
        out[name] = [(y - x) / per for x, y in zip(va, vb)]
    return out


def total(fns):
    t = [0.0] * len(EVENTS)
    for vals in fns.values():
        t = [x + y for x, y in zip(t, vals)]
    return t


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--build", default=".", help="the build directory (default: .)")
    ap.add_argument("--tasks", type=int, default=4096)
    ap.add_argument("--flow-bytes", type=int, default=1024)
    ap.add_argument("--runs-a", type=int, default=2)
    ap.add_argument("--runs-b", type=int, default=6)
    ap.add_argument("--top", type=int, default=25, help="functions listed per thread role")
    ap.add_argument("--keep", help="keep the profiles in this directory")
    ap.add_argument("extra", nargs="*", help="after --: more tiny_tasks options")
    args = ap.parse_args()
    if args.tasks < 1 or args.flow_bytes < 1:
        fail("--tasks and --flow-bytes must be positive (%d, %d)" % (args.tasks, args.flow_bytes))
    if not 1 <= args.runs_a < args.runs_b:
        fail("--runs-a %d and --runs-b %d: need 1 <= A < B" % (args.runs_a, args.runs_b))
    for tool in ("valgrind", "callgrind_annotate"):
        if shutil.which(tool) is None:
            fail("%s is not installed (Debian: apt-get install valgrind)" % tool)
    if not os.access(os.path.join(args.build, "bench", "tiny_tasks"), os.X_OK):
        fail("no bench/tiny_tasks under --build %s" % args.build)

    out_dir = args.keep or tempfile.mkdtemp(prefix="convoy-host-profile.")
    os.makedirs(out_dir, exist_ok=True)
    for f in os.listdir(out_dir):  # a kept directory's last profiles would be summed in
        if re.match(r"^[ab](-\d+)?$", f):
            os.remove(os.path.join(out_dir, f))
    try:
        fa, ok_a = profile(args, args.runs_a, out_dir, "a")
        fb, ok_b = profile(args, args.runs_b, out_dir, "b")
        per = float(args.tasks * (args.runs_b - args.runs_a))
        (ra, pa, la), (rb, pb, lb) = by_role(fa), by_role(fb)
        parts = phases(pa, pb, per)
        if sum(total(rb.get("program", {}))) == 0:
            cannot("nothing was counted: %s/bench/tiny_tasks was built without valgrind's "
                   "headers (valgrind/callgrind.h), whose client requests mark its timed "
                   "runs" % args.build)
    finally:
        if not args.keep:
            shutil.rmtree(out_dir, ignore_errors=True)

    print("host_profile: tiny_tasks --tasks %d --flow-bytes %d %s on sim (costs 0), "
          "timed runs %d - %d, per task:" % (args.tasks, args.flow_bytes, " ".join(args.extra),
                                            args.runs_b, args.runs_a))
    head = "%-9s %8s %8s %8s %8s %8s %8s" % ("thread", "Ir", "Dr", "Dw", "L1miss", "L2miss",
                                              "locked")
    print(head)
    per_task = {role: diff(ra.get(role, {}), fns, per) for role, fns in rb.items()}
    locks = None
    if la is not None and lb is not None:
        locks = {}
        for role in set(la) | set(lb):
            a, b = la.get(role, {}), lb.get(role, {})
            locks[role] = {n: (b.get(n, [0])[0] - a.get(n, [0])[0]) / per for n in set(a) | set(b)}
    totals, locked_total = {}, {}
    for role in ["program", "progress", "workers", "sim", "other"]:
        if role not in per_task:
            continue
        t = total(per_task[role])
        totals[role] = t
        locked_total[role] = sum(locks.get(role, {}).values()) if locks is not None else None
        e = dict(zip(EVENTS, t))
        print("%-9s %8.0f %8.0f %8.0f %8.1f %8.1f %8s" % (
            role, e["Ir"], e["Dr"], e["Dw"], e["D1mr"] + e["D1mw"], e["DLmr"] + e["DLmw"],
            "-" if locked_total[role] is None else "%.1f" % locked_total[role]))
    if "progress" in totals and parts is None:
        print("\nprogress thread, by part: not in this build, which inlines the parts' "
              "functions\ninto their callers (configure --disable-lto for them)")
    elif "progress" in totals:
        print("\nprogress thread, by part (progress_profile's names: reserve is the rest of a "
              "ring's start;\nstage and finish without issue and complete; inclusive, per task):")
        print("%-10s %8s %8s" % ("part", "Ir", "L2miss"))
        for part, ir, l2 in parts:
            print("%-10s %8.0f %8.1f" % (part, ir, l2))
    for role in ["progress", "program"]:
        if role not in per_task:
            continue
        d = per_task[role]
        print("\n%s thread, by function (self cost per task):" % role)
        print("%8s %8s %8s  %s" % ("Ir", "L1miss", "L2miss", "function"))
        rows = sorted(d.items(), key=lambda kv: -kv[1][0])
        for name, v in rows[:args.top]:
            e = dict(zip(EVENTS, v))
            print("%8.0f %8.2f %8.2f  %s" % (e["Ir"], e["D1mr"] + e["D1mw"],
                                            e["DLmr"] + e["DLmw"], name))

    for role in ["progress", "program"]:
        if locks is None or not locks.get(role):
            continue
        print("\n%s thread, locked instructions by function (per task):" % role)
        for name, n in sorted(locks[role].items(), key=lambda kv: -kv[1])[:12]:
            if n >= 0.05:
                print("%8.2f  %s" % (n, name))
    if locks is None:
        print("\nlocked instructions: not counted (objdump could not read every object)")

    def get(role, *evs):
        t = dict(zip(EVENTS, totals.get(role, [0.0] * len(EVENTS))))
        return sum(t[e] for e in evs)

    print("\nhost_profile tasks=%d flow_bytes=%d program_ir=%.0f progress_ir=%.0f "
          "progress_l1_misses=%.1f progress_l2_misses=%.1f workers_ir=%.0f sim_ir=%.0f "
          "program_locked=%s progress_locked=%s verified=%s" % (
              args.tasks, args.flow_bytes, get("program", "Ir"), get("progress", "Ir"),
              get("progress", "D1mr", "D1mw"), get("progress", "DLmr", "DLmw"),
              get("workers", "Ir"), get("sim", "Ir"),
              *["-" if locked_total.get(r) is None else "%.1f" % locked_total[r]
                for r in ("program", "progress")],
              "yes" if ok_a and ok_b else "no"))


if __name__ == "__main__":
    main()
