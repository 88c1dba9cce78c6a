#!/bin/bash
# Decode tiles folded into the wgmma pipeline (fold) against the transposed-GEMM decode tiles (base, e61dc77's kernels).
D=results/h100/dec-fold
mkdir -p /tmp/b $OUT/r; for v in base fold; do gunzip -c .bin/$v.gz > /tmp/b/$v; chmod +x /tmp/b/$v; done
nvidia-smi --query-gpu=name,clocks.sm,power.draw --format=csv > $OUT/r/gpu.txt
( time timeout 90 /tmp/b/fold verify --suite results/h200/dec-tile-cost/verify.suite --kernels bifurcated,auto ) > $OUT/r/verify-dec.log 2>&1; rc=$?; echo "verify-dec rc=$rc" >> $OUT/r/rc.txt
grep "^#" $OUT/r/verify-dec.log | tail -1
if [ $rc -eq 0 ]; then
( time timeout 200 /tmp/b/fold verify --suite full --kernels bifurcated,auto ) > $OUT/r/verify-full.log 2>&1; echo "verify-full rc=$?" >> $OUT/r/rc.txt
grep "^#" $OUT/r/verify-full.log | tail -1
for pass in 1 2; do for v in base fold; do
  timeout 100 /tmp/b/$v sweep --suite $D/ab.suite --min-time 0.1 --out $OUT/r/ab-$v-$pass.csv > $OUT/r/ab-$v-$pass.log 2>&1
  echo "$pass $v rc=$? $(date +%s)" >> $OUT/r/rc.txt
done; done
timeout 60 compute-sanitizer --tool racecheck /tmp/b/fold run --kernel bifurcated --heads 32 --kv-heads 8 --beam 40 --ctx 2000 --gen 7 --cache paged --block-size 64 --iters 1 --warmup 0 --verify > $OUT/r/racecheck.log 2>&1; echo "racecheck rc=$?" >> $OUT/r/rc.txt
timeout 60 compute-sanitizer --tool memcheck /tmp/b/fold run --kernel bifurcated --heads 32 --kv-heads 4 --beam 33 --ctx 3001 --gen 200 --cache paged --block-size 64 --iters 1 --warmup 0 --verify > $OUT/r/memcheck.log 2>&1; echo "memcheck rc=$?" >> $OUT/r/rc.txt
fi
cat $OUT/r/rc.txt
cd $OUT && tar czf all.tgz r && rm -rf r
