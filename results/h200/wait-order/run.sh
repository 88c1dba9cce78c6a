#!/bin/bash
# 7ea16da ("new": the wait for P V behind the softmax) against 3c2c2a1 ("base", the same context body
# before it), alternated three times on one H200 after verify-full for bifurcated and auto; then
# the bifurcated sweep with "new" (not kept: the committed bifurcated.csv is a later revision's).
set -u
exec > >(tee "$OUT/run.log") 2>&1
gunzip -c .bin/attnbench-final.gz > /tmp/new; gunzip -c .bin/attnbench-base.gz > /tmp/base; chmod +x /tmp/new /tmp/base
/tmp/new --version
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,power.draw,temperature.gpu --format=csv
T0=$(date +%s)
mkdir -p $OUT/csv
timeout 150 /tmp/new verify --suite full --kernels bifurcated,auto > $OUT/csv/verify-full-bifurcated-auto.log 2>&1; echo "verify rc $?"; tail -n 1 $OUT/csv/verify-full-bifurcated-auto.log
echo "verify done $(( $(date +%s) - T0 )) s"
for i in 1 2 3; do for b in new base; do
  timeout 100 /tmp/$b sweep --suite results/h200/wait-order/configs.suite --out $OUT/csv/bif-$b-$i.csv > /dev/null 2>&1 || echo "fail $b $i"
done; done
echo "ab done $(( $(date +%s) - T0 )) s"
timeout 220 /tmp/new sweep --suite bifurcated --verify --out $OUT/csv/bifurcated.csv > $OUT/csv/bifurcated.log 2>&1; echo "bif rc $?"
echo "bif done $(( $(date +%s) - T0 )) s"
tar czf $OUT/csv.tgz -C $OUT csv
