#!/usr/bin/env python3
# The rounds of a traced mixed_latency run, one by one: per round, in us from its first
# 'work' insertion, its rings (the progress thread's steps for each, and when its members
# completed) and its CPU successors (which worker ran them, when, how far apart), then
# medians over the baseline rounds (32 work tasks; a round with the large task has 33).
# Usage: CONVOY_TRACE=t.json bench/mixed_latency --rounds 20; bench/mixed_latency_rounds.py t.json
import json, sys, collections, statistics as st
d = json.load(open(sys.argv[1]))
ev = d['traceEvents'] if isinstance(d, dict) else d
inst = collections.defaultdict(dict); cls = {}; ring_of = {}
for e in ev:
    if e.get('cat') == 'task' and e.get('ph') == 'i':
        a = e['args']; inst[a['task']][e['name']] = e['ts']; cls[a['task']] = a['class']
        if a.get('ring', -1) >= 0: ring_of[a['task']] = a['ring']
run = {}
for e in ev:
    if e.get('cat') == 'cpu' and e.get('ph') == 'X' and 'task' in e.get('args', {}):
        run[e['args']['task']] = (e['ts'], e['dur'], e['tid'])
steps = collections.defaultdict(list)
for e in ev:
    if e.get('cat') == 'progress' and e.get('ph') == 'X' and e['args'].get('ring', -1) >= 0:
        steps[e['args']['ring']].append((e['ts'], e['dur'], e['name']))
works = sorted((inst[k]['inserted'], k) for k, v in cls.items() if v == 'work' and 'inserted' in inst[k])
rounds = []; cur = []
for ts, k in works:
    if cur and ts - inst[cur[-1]]['inserted'] > 200: rounds.append(cur); cur = []
    cur.append(k)
if cur: rounds.append(cur)
S = collections.defaultdict(list)
for r in rounds:
    if len(r) != 32: continue
    t0 = inst[r[0]]['inserted']
    rel = lambda x: x - t0
    rings = sorted(set(ring_of.get(k, -1) for k in r) - {-1})
    print('round: ins end %.1f' % rel(inst[r[-1]]['inserted']))
    for g in rings:
        mem = [k for k in r if ring_of.get(k) == g]
        sl = sorted(steps[g])
        txt = ' '.join('%s@%.0f+%.0f' % (n, rel(ts), du) for ts, du, n in sl)
        comp = [inst[k].get('completed') for k in mem if inst[k].get('completed')]
        print('  ring n=%d ins %.0f-%.0f | %s | compl %.0f-%.0f' % (len(mem), rel(inst[mem[0]]['inserted']),
              rel(inst[mem[-1]]['inserted']), txt, rel(min(comp)), rel(max(comp))))
        if len(mem) >= 8:
            first_c = min([ts for ts, du, n in sl if n == 'complete'] or [1e18])
            blk = [(ts, du) for ts, du, n in sl if n in ('reserve', 'stage-in', 'launch', 'push behind') and ts < first_c]
            if blk:
                S['big ring start at'].append(rel(blk[0][0]))
                S['big ring start takes'].append(max(ts + du for ts, du in blk) - blk[0][0])
                S['big ring first complete'].append(rel(first_c))
    succ = [k + 1 for k in r if cls.get(k + 1) == 'successor' and k + 1 in run]
    byw = collections.defaultdict(list)
    for s in succ: byw[run[s][2]].append(run[s])
    for w, lst in sorted(byw.items()):
        lst.sort()
        gaps = [lst[i + 1][0] - lst[i][0] for i in range(len(lst) - 1)]
        print('  worker %d: %d succ, run %.0f-%.0f, chore p50 %.2f, start-to-start p50 %.2f' % (
            w, len(lst), rel(lst[0][0]), rel(lst[-1][0] + lst[-1][1]), st.median(x[1] for x in lst),
            st.median(gaps) if gaps else 0))
        S['chore'] += [x[1] for x in lst]; S['start-to-start'] += gaps
    rdy = sorted(rel(inst[s]['ready']) for s in succ if 'ready' in inst[s])
    lat = sorted(run[k + 1][0] - inst[k]['inserted'] for k in r if k + 1 in run)
    if rdy:
        print('  succ ready %.0f-%.0f; latency p50 %.1f' % (rdy[0], rdy[-1], st.median(lat)))
        S['succ ready first'].append(rdy[0]); S['succ ready last'].append(rdy[-1])
    S['workers used'].append(len(byw)); S['latency p50'].append(st.median(lat))
    S['ins end'].append(rel(inst[r[-1]]['inserted']))
    S['succ run last end'].append(max(rel(x[0] + x[1]) for l in byw.values() for x in l))
print('== medians over baseline rounds')
for k, v in S.items():
    if v: print('%-24s n=%4d p10 %7.2f p50 %7.2f p90 %7.2f' % (k, len(v), sorted(v)[len(v) // 10], st.median(v), sorted(v)[9 * len(v) // 10]))
