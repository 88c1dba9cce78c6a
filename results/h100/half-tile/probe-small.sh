#!/bin/bash
# W*p = 1..15: base and r16 (mma.sync body) against r1 (the wgmma body at any W*p).
D=results/h100/half-tile
mkdir -p /tmp/b $OUT/r; for v in base r16 r1; do gunzip -c .bin/$v.gz > /tmp/b/$v; chmod +x /tmp/b/$v; done
for pass in 1 2; do for v in base r1; do
  timeout 120 /tmp/b/$v sweep --suite $D/probe-small.suite --verify --min-time 0.1 --out $OUT/r/small-$v-$pass.csv > $OUT/r/small-$v-$pass.log 2>&1
  echo "$pass $v rc=$? $(date +%s)" >> $OUT/r/rc.txt
done; done
cat $OUT/r/rc.txt
cd $OUT && tar czf all.tgz r && rm -rf r
