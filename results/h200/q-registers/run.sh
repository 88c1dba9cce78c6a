#!/bin/bash
# Q held in registers for S = Q K in the wgmma context body (q-registers.patch on 54b0dd8, the binary
# "qreg", reporting 245ebe8) against 3c2c2a1 ("base"), alternated three times on one H200, after
# verify-full for bifurcated with the new binary. Both binaries built on the CPU machine, stripped
# and gzipped under .bin/. (The run also swept the multiblock suite with "qreg", whose fused is
# 54b0dd8's; that CSV is not kept, results/h200/multiblock.csv is 54b0dd8's own.)
set -u
exec > >(tee "$OUT/run1.log") 2>&1
for b in qreg base; do gunzip -c .bin/attnbench-$b.gz > /tmp/$b; chmod +x /tmp/$b; done
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,power.draw,temperature.gpu --format=csv
/tmp/qreg peak | tee $OUT/peak.txt
timeout 150 /tmp/qreg verify --suite full --kernels bifurcated > $OUT/verify-bif.log 2>&1   # > verify-bifurcated.log
mkdir -p $OUT/csv
for i in 1 2 3; do for b in qreg base; do
  timeout 100 /tmp/$b sweep --suite results/h200/q-registers/configs.suite --out $OUT/csv/bif-$b-$i.csv > /dev/null 2>&1 || echo "fail $b $i"
done; done
