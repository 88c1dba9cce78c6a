#!/bin/bash
# early release of decode-tile slots (er) and er + non-owner skip (skip), against HEAD (base)
mkdir -p /tmp/b $OUT/r; for v in base er skip; do gunzip -c .bin/$v.gz > /tmp/b/$v; chmod +x /tmp/b/$v; done
S=results/h200/dec-tile-cost
( time timeout 150 /tmp/b/skip verify --suite $S/verify.suite --kernels bifurcated,auto ) > $OUT/r/verify-skip.log 2>&1; echo "skip verify rc=$?" >> $OUT/r/rc.txt
for pass in 1 2; do for v in base er skip; do
  timeout 80 /tmp/b/$v sweep --suite results/h100/dec-tile-serial/ab.suite --min-time 0.1 --out $OUT/r/ab-$v-$pass.csv > $OUT/r/ab-$v-$pass.log 2>&1
  echo "$pass $v rc=$? $(date +%s)" >> $OUT/r/rc.txt
done; done
( time timeout 150 /tmp/b/er verify --suite $S/verify.suite --kernels bifurcated,auto ) > $OUT/r/verify-er.log 2>&1; echo "er verify rc=$?" >> $OUT/r/rc.txt
cd $OUT && tar czf all.tgz r && rm -rf r
