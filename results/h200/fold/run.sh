#!/bin/sh
# The epilogue fold against the revision before it, on one GPU:
#   results/h200/fold/run.sh STEP...   (from the repository root; files go to $OUT)
# Steps: verify (verify-full for bifurcated and auto), ab (ab.suite alternated twice,
# the revision before first), and any bench/suites/SUITE name (swept with --verify).
# A: the revision before's binary, B: this one's (both built on the CPU machine).
set -u
B=${B:-build/attnbench} A=${A:-build/base/attnbench} S=results/h200/fold/ab.suite
{ nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu,power.limit --format=csv; $B peak; } > $OUT/gpu.txt 2>&1
cat $OUT/gpu.txt
for step in "$@"; do
  case $step in
  verify)
    ( time $B verify --suite bench/suites/verify-full.suite --kernels bifurcated,auto ) > $OUT/verify-full.log 2>&1
    tail -n 5 $OUT/verify-full.log ;;
  ab)
    mkdir -p /tmp/ab
    for i in 1 2; do
      $A sweep --suite $S --out /tmp/ab/ab-base-$i.csv > /tmp/ab/ab-base-$i.log 2>&1
      $B sweep --suite $S --out /tmp/ab/ab-fold-$i.csv > /tmp/ab/ab-fold-$i.log 2>&1
    done
    tar czf $OUT/ab.tgz -C /tmp ab
    python3 - <<'PY'
import csv,glob
def load(f): return {(r['kv_heads'],r['beam'],r['ctx'],r['cache']):float(r['median_us']) for r in csv.DictReader(open(f)) if r['status']=='ok'}
b=[load(f) for f in sorted(glob.glob('/tmp/ab/ab-base-*.csv'))]; n=[load(f) for f in sorted(glob.glob('/tmp/ab/ab-fold-*.csv'))]
for k in b[0]:
    print(k, ' '.join('%.1f'%x[k] for x in b), '->', ' '.join('%.1f'%x[k] for x in n), '%+.1f%%'%(100*(sum(x[k] for x in n)/sum(x[k] for x in b)-1)))
PY
    ;;
  *)
    ( time $B sweep --suite bench/suites/$step.suite --verify --out $OUT/$step.csv ) > $OUT/$step.log 2>&1
    tail -n 5 $OUT/$step.log ;;
  esac
done
