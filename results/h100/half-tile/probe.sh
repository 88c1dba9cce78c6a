#!/bin/bash
# base (wgmma for W*p = 32..63 from 50 us of context reads) against t0 (always) and r16 (also W*p = 16..31).
D=results/h100/half-tile
mkdir -p /tmp/b $OUT/r; for v in base t0 r16; do gunzip -c .bin/$v.gz > /tmp/b/$v; chmod +x /tmp/b/$v; done
for pass in 1 2; do for v in base t0 r16; do
  timeout 120 /tmp/b/$v sweep --suite $D/probe.suite --verify --min-time 0.1 --out $OUT/r/probe-$v-$pass.csv > $OUT/r/probe-$v-$pass.log 2>&1
  echo "$pass $v rc=$? $(date +%s)" >> $OUT/r/rc.txt
done; done
cat $OUT/r/rc.txt
cd $OUT && tar czf all.tgz r && rm -rf r
