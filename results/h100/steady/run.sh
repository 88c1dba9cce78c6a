#!/bin/sh
# Same-plan spread of bifurcated and auto on the largest rows, by warm-up and window:
#   results/h100/steady/run.sh   (from the repository root; B the binary, files to $OUT)
set -u
B=${B:-build/attnbench} S=results/h100/steady/large.suite
mkdir -p /tmp/st
for i in 1 2; do
  $B sweep --suite $S --verify --out /tmp/st/default-$i.csv > /tmp/st/default-$i.log 2>&1
  $B sweep --suite $S --verify --warmup 300 --out /tmp/st/warm300-$i.csv > /tmp/st/warm300-$i.log 2>&1
  $B sweep --suite $S --verify --min-time 0.5 --out /tmp/st/window05-$i.csv > /tmp/st/window05-$i.log 2>&1
done
tar czf $OUT/steady.tgz -C /tmp st
python3 - <<'PY'
import csv,glob
for f in sorted(glob.glob('/tmp/st/*.csv')):
    by={}
    for r in csv.DictReader(open(f)): by.setdefault((r['kv_heads'],r['beam'],r['ctx']),{})[r['kernel']]=r
    rs=sorted(float(d['auto']['median_us'])/float(d['bifurcated']['median_us']) for d in by.values() if 'auto' in d and 'bifurcated' in d)
    big=sum(abs(x-1)>0.05 for x in rs)
    print(f.split('/')[-1], 'n=%d min %.3f max %.3f mean|dev| %.4f over5%%: %d'%(len(rs),rs[0],rs[-1],sum(abs(x-1) for x in rs)/len(rs),big),
          'sum bif %.0f'%sum(float(d['bifurcated']['median_us']) for d in by.values()))
PY
