#!/bin/bash
cd "$(dirname "$0")/.."
for b in old new; do gunzip -c .bin/$b.gz > /tmp/ab_$b; chmod +x /tmp/ab_$b; done
mkdir -p $OUT/r; R=$OUT/r
timeout 100 /tmp/ab_new verify --suite probe/incta.suite --kernels bifurcated > $R/verify-incta.log 2>&1; echo "rc=$?" >> $R/verify-incta.log
timeout 150 /tmp/ab_new verify --suite probe/verify2.suite --kernels bifurcated > $R/verify2.log 2>&1; echo "rc=$?" >> $R/verify2.log
end=$((SECONDS + 360))
for pass in 1 2; do
 for v in old pd0 w0; do
  left=$((end - SECONDS)); [ $left -gt 5 ] || break 2
  case $v in old) exe=/tmp/ab_old;; pd0) exe="env PROBE_PD=0 /tmp/ab_new";; pd2) exe="env PROBE_PD=2 /tmp/ab_new";; w0) exe="env PROBE_WIDE=1 /tmp/ab_new";; noin) exe="env PROBE_NOINCTA=1 /tmp/ab_new";; pd16) exe="env PROBE_PD=16 /tmp/ab_new";; pdm1) exe="env PROBE_PD=-1 /tmp/ab_new";; w4) exe="env PROBE_WIDE=1 PROBE_PD=4 /tmp/ab_new";; esac
  timeout $left $exe sweep --suite probe/ab5.suite --min-time 0.1 --out $R/$v-$pass.csv > /dev/null 2>>$R/err.log
 done
done
cd $R && python3 - > summary.txt <<'PY'
import csv,glob,collections
d=collections.defaultdict(dict)
for f in sorted(glob.glob('*-*.csv')):
    v=f[:-4]
    for r in csv.DictReader(open(f)):
        d[(r['attn'],r['cache'][:5],r['ctx'],r['beam'])][v]=float(r['median_us']) if r['status']=='ok' else -1
vs=sorted({v for k in d for v in d[k]})
print('row', *vs)
for k in d: print(*k, *[f"{d[k].get(v,0):.1f}" for v in vs])
PY
cd $OUT && tar czf all.tgz r && rm -rf r
