#!/bin/bash
mkdir -p /tmp/b $OUT/r; for v in base new; do gunzip -c .bin/$v.gz > /tmp/b/$v; chmod +x /tmp/b/$v; done
nvidia-smi --query-gpu=name,clocks.sm,power.draw --format=csv > $OUT/r/gpu.txt
( time timeout 200 /tmp/b/new verify --suite results/h200/dec-tile-cost/verify.suite --kernels bifurcated,auto ) > $OUT/r/verify-new.log 2>&1; echo "verify rc=$?" >> $OUT/r/rc.txt
tail -3 $OUT/r/verify-new.log
for pass in 1 2; do for v in base new; do
  timeout 150 /tmp/b/$v sweep --suite results/h100/dec-in-producer/ab.suite --min-time 0.1 --out $OUT/r/ab-$v-$pass.csv > $OUT/r/ab-$v-$pass.log 2>&1
  echo "$pass $v rc=$? $(date +%s)" >> $OUT/r/rc.txt
done; done
cat $OUT/r/rc.txt
cd $OUT && tar czf all.tgz r && rm -rf r
