#!/bin/bash
# The wgmma body for W*p = 32..63 from 40 us of context reads (t40) instead of 50 (base).
D=results/h100/half-tile
mkdir -p /tmp/b $OUT/r; for v in base t40; do gunzip -c .bin/$v.gz > /tmp/b/$v; chmod +x /tmp/b/$v; done
for pass in 1 2; do for v in base t40; do
  timeout 140 /tmp/b/$v sweep --suite $D/ab.suite --verify --min-time 0.1 --out $OUT/r/ab-$v-$pass.csv > $OUT/r/ab-$v-$pass.log 2>&1
  echo "$pass $v rc=$? $(date +%s)" >> $OUT/r/rc.txt
done; done
cat $OUT/r/rc.txt
cd $OUT && tar czf all.tgz r && rm -rf r
