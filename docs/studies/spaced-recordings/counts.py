"""Each run's verdicts from exact_plant.sh's result files: the counts per outcome, the sight of each
unchanged figure, and every figure that was not caught (planted) or not unchanged. Usage:
    python docs/studies/spaced-recordings/counts.py OUT_DIR 1 2 3
"""

import json,collections,sys
out=sys.argv[1]
for run in sys.argv[2:]:
    for kind in ("unchanged","planted-10pct"):
        d=json.load(open(f"{out}/run{run}-{kind}.json"))
        c=collections.Counter(); det=[]; sees=[]
        for r in d['results']:
            v=r['verdict']['time']; c[v['outcome']]+=1
            if v['outcome']=='unchanged' and v.get('detectable'): sees.append(v['detectable'])
            det.append((r['test'].split('[')[1][:-1], v['outcome'], round((v['ratio'] or 0)*100-100,1), (v.get('abstention') or {}).get('why'), v.get('detectable') and round(v['detectable']*100,1)))
        print(run, kind, dict(c), "sees", sorted(round(x*100,1) for x in sees))
        for x in det:
            if x[1]!='regressed' or kind=='unchanged': print('   ',x)
