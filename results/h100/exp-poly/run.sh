#!/bin/bash
# A/B of the share of the wgmma softmax's exponentials computed by poly_exp2
# (WG_EXP_POLY of 8: 0 = all on MUFU, as before), each build from the same commit.
D=results/h100/exp-poly
mkdir -p /tmp/b $OUT/r; for v in p0 p2 p3 p4; do gunzip -c .bin/$v.gz > /tmp/b/$v; chmod +x /tmp/b/$v; done
nvidia-smi --query-gpu=name,clocks.sm,power.draw --format=csv > $OUT/r/gpu.txt
( time timeout 200 /tmp/b/p3 verify --suite full --kernels bifurcated,auto ) > $OUT/r/verify-full-p3.log 2>&1; echo "verify p3 rc=$?" >> $OUT/r/rc.txt
for v in p2 p4; do ( time timeout 60 /tmp/b/$v verify --suite results/h200/dec-tile-cost/verify.suite --kernels bifurcated ) > $OUT/r/verify-dec-$v.log 2>&1; echo "verify $v rc=$?" >> $OUT/r/rc.txt; done
tail -2 $OUT/r/verify-*.log
for pass in 1 2; do for v in p0 p2 p3 p4; do
  timeout 100 /tmp/b/$v sweep --suite $D/ab.suite --min-time 0.1 --out $OUT/r/ab-$v-$pass.csv > $OUT/r/ab-$v-$pass.log 2>&1
  echo "$pass $v rc=$? $(date +%s)" >> $OUT/r/rc.txt
done; done
for v in p0 p3; do timeout 90 ncu --clock-control none -k regex:attn_wgmma -c 1 --section ComputeWorkloadAnalysis --section WarpStateStats --section SchedulerStats --section SpeedOfLight --metrics sm__inst_executed_pipe_xu.avg.pct_of_peak_sustained_active,sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active,sm__pipe_fma_cycles_active.avg.pct_of_peak_sustained_active,sm__pipe_alu_cycles_active.avg.pct_of_peak_sustained_active /tmp/b/$v run --kernel bifurcated --heads 32 --kv-heads 1 --beam 512 --ctx 8k --gen 128 --iters 3 --warmup 1 > $OUT/r/ncu-mqa-w512-8k-$v.txt 2>&1; echo "ncu $v rc=$?" >> $OUT/r/rc.txt; done
cat $OUT/r/rc.txt
cd $OUT && tar czf all.tgz r && rm -rf r
