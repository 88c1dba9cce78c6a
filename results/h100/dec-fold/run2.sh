#!/bin/bash
# single: the decode tiles as items of one warpgroup each, alternating (single.patch), against base and pairs.
D=results/h100/dec-fold
mkdir -p /tmp/b $OUT/r; for v in base fold single; do gunzip -c .bin/$v.gz > /tmp/b/$v; chmod +x /tmp/b/$v; done
( time timeout 90 /tmp/b/single verify --suite results/h200/dec-tile-cost/verify.suite --kernels bifurcated,auto ) > $OUT/r/verify-dec-single.log 2>&1; rc=$?; echo "verify-dec rc=$rc" >> $OUT/r/rc.txt
grep "^#" $OUT/r/verify-dec-single.log | tail -1
if [ $rc -eq 0 ]; then
for pass in 1 2; do for v in base fold single; do
  timeout 100 /tmp/b/$v sweep --suite $D/ab.suite --min-time 0.1 --out $OUT/r/ab-$v-$pass.csv > $OUT/r/ab-$v-$pass.log 2>&1
  echo "$pass $v rc=$? $(date +%s)" >> $OUT/r/rc.txt
done; done
( time timeout 200 /tmp/b/single verify --suite full --kernels bifurcated,auto ) > $OUT/r/verify-full-single.log 2>&1; echo "verify-full rc=$?" >> $OUT/r/rc.txt
grep "^#" $OUT/r/verify-full-single.log | tail -1
fi
cat $OUT/r/rc.txt
cd $OUT && tar czf all.tgz r && rm -rf r
