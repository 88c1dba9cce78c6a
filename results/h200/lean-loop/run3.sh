#!/bin/bash
# The KEYSPLIT loop (strided affine copies) with Q in registers, two S chains, the conditional O rescale and affine row addresses: A/B against the base, verify, multi-block sweep.
set -u
exec > >(tee "$OUT/run3.log") 2>&1
for b in lean base; do gunzip -c .bin/attnbench-$b.gz > /tmp/$b; chmod +x /tmp/$b; done
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,power.draw,temperature.gpu --format=csv
/tmp/lean peak | tee $OUT/peak.txt
mkdir -p $OUT/csv
T0=$(date +%s)
for i in 1 2 3; do for b in lean base; do
  timeout 120 /tmp/$b sweep --suite results/h200/lean-loop/auto.suite --out $OUT/csv/ab-$b-$i.csv > /dev/null 2>&1 || echo "fail $b $i"
  timeout 120 /tmp/$b sweep --suite results/h200/lean-loop/bif.suite --out $OUT/csv/bif-$b-$i.csv > /dev/null 2>&1 || echo "fail bif $b $i"
done; done
echo "ab done $(( $(date +%s) - T0 )) s"
timeout 240 /tmp/lean verify --suite full > $OUT/verify-full.log 2>&1; echo "verify rc $?"; tail -n 2 $OUT/verify-full.log
echo "verify done $(( $(date +%s) - T0 )) s"
timeout 150 /tmp/lean sweep --suite bench/suites/multiblock.suite --out $OUT/csv/multiblock-lean.csv > $OUT/multiblock-lean.log 2>&1; echo "mb rc $?"
echo "mb done $(( $(date +%s) - T0 )) s"
tar czf $OUT/csv.tgz -C $OUT csv
echo "all done $(( $(date +%s) - T0 )) s"
