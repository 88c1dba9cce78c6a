#!/bin/bash
# Tile pool for fused's split grids: verify on the GPU, A/B against the base, the multi-block sweep, and a profile.
set -u
exec > >(tee "$OUT/run1.log") 2>&1
for b in pool base; do gunzip -c .bin/attnbench-$b.gz > /tmp/$b; chmod +x /tmp/$b; done
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,power.draw,temperature.gpu --format=csv
/tmp/pool peak | tee $OUT/peak.txt
mkdir -p $OUT/csv
T0=$(date +%s)
for i in 1 2 3; do for b in pool base; do
  timeout 120 /tmp/$b sweep --suite results/h200/tile-pool/auto.suite --out $OUT/csv/ab-$b-$i.csv > /dev/null 2>&1 || echo "fail $b $i"
done; done
echo "ab done $(( $(date +%s) - T0 )) s"
timeout 200 /tmp/pool verify --suite full --kernels fused,auto > $OUT/verify-full-fused-auto.log 2>&1; echo "verify rc $?"; tail -n 2 $OUT/verify-full-fused-auto.log
echo "verify done $(( $(date +%s) - T0 )) s"
timeout 150 /tmp/pool sweep --suite bench/suites/multiblock.suite --out $OUT/csv/multiblock-pool.csv > $OUT/multiblock-pool.log 2>&1; echo "mb rc $?"
echo "mb done $(( $(date +%s) - T0 )) s"
tar czf $OUT/csv.tgz -C $OUT csv
if which ncu > /dev/null 2>&1; then
  timeout 100 ncu --kernel-name regex:attn_wgmma_ctx --launch-skip 2 --launch-count 1 --section SpeedOfLight --section WarpStateStats --section SchedulerStats --section ComputeWorkloadAnalysis --section LaunchStats --section Occupancy /tmp/pool run --kernel bifurcated --kv-heads 1 --beam 512 --ctx 8k --iters 3 --warmup 1 > $OUT/ncu-mqa512-8k.txt 2>&1; echo "ncu rc $?"
fi
echo "all done $(( $(date +%s) - T0 )) s"
