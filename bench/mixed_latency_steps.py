#!/usr/bin/env python3
# The steps of mixed_latency's latency, from a trace of it (CONVOY_TRACE=t.json
# bench/mixed_latency --rounds 5): each small task ("work") and its CPU successor (the
# task inserted right after it), p10/p50/p90 us of inserted -> ready -> staged-in ->
# executed -> completed -> successor ready -> successor running (doc/results.md).
# Usage: bench/mixed_latency_steps.py TRACE.json
import json,sys,collections
d=json.load(open(sys.argv[1]))
ev=d['traceEvents'] if isinstance(d,dict) else d
t=collections.defaultdict(dict); cls={}
for e in ev:
    if e.get('cat')=='task' and e.get('ph')=='i':
        a=e['args']; t[a['task']][e['name']]=e['ts']; cls[a['task']]=a['class']
# successor run start: cpu X events 'successor' with args task?
run={}
for e in ev:
    if e.get('cat')=='cpu' and e.get('ph')=='X':
        a=e.get('args',{})
        if 'task' in a: run[a['task']]=e['ts']
works=sorted(k for k,v in cls.items() if v=='work')
succ=sorted(k for k,v in cls.items() if v=='successor')
# pair: successor id = work id + 1 (inserted right after)
pairs=[(w,w+1) for w in works if cls.get(w+1)=='successor']
steps=collections.defaultdict(list)
def add(name,a,b):
    if a is not None and b is not None: steps[name].append(b-a)
for w,s in pairs:
    W=t[w];S=t[s]
    add('inserted->ready',W.get('inserted'),W.get('ready'))
    add('ready->staged-in',W.get('ready'),W.get('staged-in'))
    add('staged-in->executed',W.get('staged-in'),W.get('executed'))
    add('executed->completed',W.get('executed'),W.get('completed'))
    add('completed->succ ready',W.get('completed'),S.get('ready'))
    add('succ ready->running',S.get('ready'),run.get(s))
    add('TOTAL inserted->succ running',W.get('inserted'),run.get(s))
def pct(v,p): v=sorted(v); return v[min(len(v)-1,int(p*len(v)))]
print(len(pairs),'pairs')
for k in ['inserted->ready','ready->staged-in','staged-in->executed','executed->completed','completed->succ ready','succ ready->running','TOTAL inserted->succ running']:
    v=steps[k]
    if v: print('%-30s n=%4d p10 %7.1f p50 %7.1f p90 %7.1f'%(k,len(v),pct(v,.1),pct(v,.5),pct(v,.9)))
