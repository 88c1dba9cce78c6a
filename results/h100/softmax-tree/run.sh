#!/bin/bash
# "new": the wgmma context body's softmax row max and row sum as pairwise trees (the working tree
# of the commit that made them so) against "base" (75f1c5b), alternated three times on one H100
# after verify-full for bifurcated; then Nsight Compute's warp-stall sampling of the context body
# of both (stalls.txt: its summary), and the bifurcated-paged sweep with base
# (results/h100/bifurcated-paged.csv).
set -u
exec > >(tee "$OUT/run.log") 2>&1
gunzip -c .bin/attnbench-tree.gz > /tmp/new; gunzip -c .bin/attnbench.gz > /tmp/base; chmod +x /tmp/new /tmp/base
/tmp/new --version; /tmp/base --version
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,power.draw,temperature.gpu --format=csv
T0=$(date +%s)
mkdir -p $OUT/csv
timeout 150 /tmp/new verify --suite full --kernels bifurcated > $OUT/csv/verify-full-bifurcated.log 2>&1; echo "verify rc $?"; tail -n 1 $OUT/csv/verify-full-bifurcated.log
echo "verify done $(( $(date +%s) - T0 )) s"
for i in 1 2 3; do for b in new base; do
  timeout 100 /tmp/$b sweep --suite results/h100/softmax-tree/configs.suite --out $OUT/csv/bif-$b-$i.csv > /dev/null 2>&1 || echo "fail $b $i"
done; done
echo "ab done $(( $(date +%s) - T0 )) s"
for b in new base; do
ncu --section SourceCounters --section WarpStateStats --clock-control none --profile-from-start off -k regex:attn_wgmma -c 1 -f -o /tmp/src-$b \
   /tmp/$b run --kernel bifurcated --kv-heads 1 --ctx 32k --beam 1024 --gen 128 --profile --iters 2 --warmup 1 > $OUT/csv/ncu-$b.log 2>&1
ncu --import /tmp/src-$b.ncu-rep --page source --csv --print-source sass > $OUT/csv/src-$b.csv 2> $OUT/csv/src-$b.err
ncu --import /tmp/src-$b.ncu-rep --page details > $OUT/csv/src-$b.txt 2>&1
done
echo "ncu done $(( $(date +%s) - T0 )) s"
timeout 200 /tmp/base sweep --suite bifurcated-paged --verify --out $OUT/csv/bifurcated-paged.csv > $OUT/csv/bifurcated-paged.log 2>&1; echo "paged rc $?"
echo "paged done $(( $(date +%s) - T0 )) s"
tar czf $OUT/csv.tgz -C $OUT csv
